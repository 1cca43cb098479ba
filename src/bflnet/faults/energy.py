"""Energy budgets: a battery per device, drained by what it sends and what it computes.

A :class:`Battery` is the recipe (capacity, transmit power, joules per local step and per
FLOP); each run gives every device with one its own :class:`Tank`, which

* is debited ``tx_power_w · bits_on_air / rate_bps`` joules for every message the device
  sends (every attempt's bits, the ones ARQ resends and a cut message's partial bits
  included; ``rate_bps`` is the link's channel's nominal rate, so the energy per bit is
  ``tx_power_w / rate_bps``; a channel without a rate, the ideal one, costs nothing);
  receiving costs ``rx_power_w`` watts for the air time of every packet addressed to the
  device on a shared radio medium (0 by default; independent links never charge it);
* is debited ``joules_per_step · steps + joules_per_flop · flops`` for every local
  computation, when it starts;
* is an availability timeline (``is_up``, ``next_change``) that is down for good from the
  moment the battery is empty, so the device's links fail and a token holder that empties
  its battery while computing loses its update, as for any other downtime. The emptying is
  a ``fault`` row ``battery_empty`` with ``energy_j`` (the capacity spent) and ``cause``
  (``send`` or ``compute``).

A computation or a message that empties the battery is charged at its start (computing) or
its end (sending); the device dies then.

>>> tank = Battery(capacity_j=1.0, tx_power_w=0.5).tank("a", None, None)
>>> tank.spend(0.4, 1.0, "send"), tank.is_up(2.0), tank.left_j
(False, True, 0.6)
>>> tank.spend(0.7, 3.0, "compute"), tank.is_up(3.0), tank.next_change(2.0)
(True, False, 3.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bflnet.validation.checks import check_real

__all__ = ["Battery", "Tank", "battery_specs", "joules_per_bit"]


@dataclass(frozen=True)
class Battery:
    """A device's energy budget: ``capacity_j`` joules, ``tx_power_w`` watts while sending,
    ``joules_per_step`` per local step, ``joules_per_flop`` per floating-point op and
    ``rx_power_w`` watts while receiving (on a shared radio medium)."""

    capacity_j: float
    tx_power_w: float = 0.1
    joules_per_step: float = 0.0
    joules_per_flop: float = 0.0
    rx_power_w: float = 0.0

    def __post_init__(self) -> None:
        check_real("capacity_j", self.capacity_j, gt=0, le=1e30)
        check_real("tx_power_w", self.tx_power_w, ge=0, le=1e9)
        check_real("joules_per_step", self.joules_per_step, ge=0, le=1e30)
        check_real("joules_per_flop", self.joules_per_flop, ge=0, le=1e30)
        check_real("rx_power_w", self.rx_power_w, ge=0, le=1e9)

    def tank(self, node: Any, recorder: Any, env: Any) -> Tank:
        """A full battery for ``node`` in one run, writing its row to ``recorder``, on the
        clock of ``env`` (a ``simpy.Environment``)."""
        return Tank(self, node, recorder, env)


def joules_per_bit(battery: Battery, channel: Any) -> float:
    """``tx_power_w / rate_bps`` of ``channel`` (0 for a channel without a rate)."""
    rate = getattr(channel, "rate_bps", None)
    if rate is None or not rate > 0 or math.isinf(rate):
        return 0.0
    return battery.tx_power_w / float(rate)


class Tank:
    """One device's battery during one run (module docs)."""

    def __init__(self, spec: Battery, node: Any, recorder: Any, env: Any) -> None:
        self.spec, self.node, self.recorder, self.env = spec, node, recorder, env
        self.left_j = float(spec.capacity_j)
        self.empty_at = math.inf

    def spend(self, joules: float, now: float, cause: str) -> bool:
        """Take ``joules`` at time ``now``; True if the battery is empty afterwards (the
        first time: a ``battery_empty`` row)."""
        if self.empty_at < math.inf:
            return True
        if joules <= 0:
            return False
        self.left_j -= joules
        if self.left_j > 0:
            return False
        self.left_j, self.empty_at = 0.0, now
        if self.recorder is not None:
            self.recorder.record("fault", node=self.node, kind="battery_empty",
                                 energy_j=self.spec.capacity_j, cause=cause)
        return True

    def spend_work(self, steps: int, flops: float) -> bool:
        """Charge a local computation (steps and FLOPs) now, at its start."""
        spec = self.spec
        return self.spend(spec.joules_per_step * steps + spec.joules_per_flop * flops,
                          self.env.now, "compute")

    def is_up(self, t: float) -> bool:
        return t < self.empty_at

    def next_change(self, t: float) -> float:
        return self.empty_at if t < self.empty_at else math.inf


def battery_specs(energy: Any, agents: list[Any]) -> dict[Any, Battery]:
    """``{agent: Battery}`` from one battery for every agent or a mapping; one-line errors."""
    if energy is None:
        return {}
    if isinstance(energy, Battery):
        return dict.fromkeys(agents, energy)
    if not isinstance(energy, Mapping):
        raise ValueError(f"energy: must be a Battery or a mapping of agents to them, got "
                         f"{type(energy).__name__}")
    for key, spec in energy.items():
        if key not in agents:
            raise ValueError(f"energy: {key!r} is not an agent of the graph")
        if not isinstance(spec, Battery):
            raise ValueError(f"energy[{key!r}]: must be a Battery, got {type(spec).__name__}")
    return dict(energy)
