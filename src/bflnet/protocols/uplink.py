"""The parameter server's uplink when it is not per-agent links (``uplink=links``, the
default): ``aircomp``, analog over-the-air aggregation; ``digital``, a quantised digital
baseline; ``ideal``, the exact mean at no cost (the over-the-air papers' noiseless
reference). :class:`~bflnet.protocols.parameter_server.ParameterServerProtocol` takes one
of :class:`AirCompUplink`, :class:`DigitalUplink`, :class:`IdealUplink` as ``uplink``.

The scheduled agents whose updates are ready when the round's transmission starts (their
state arrived, they computed, and with a deadline they finished in time) are the round's
**participants**; their payloads (one array each, of one shape) are stacked, device
axis second to last, and:

* ``aircomp``: the fading amplitudes of the round are drawn for every agent of the
  network (stream ``aircomp.fading``), power control picks the silent participants and
  the scaling (:func:`~bflnet.radio.aircomp.plan_round`, with the learner's
  ``noise_target`` as the Langevin cap when it has one, else the full budget), the
  active ones transmit at once for ``d / bandwidth + latency`` seconds, the server
  receives the noisy sum (noise from ``aircomp.noise``) and hands the learner the
  estimated mean and the channel noise's variance on it (``merge_mean``);
* ``digital`` (:mod:`bflnet.radio.digital_uplink`): each participant quantises its
  update (stream ``codec.up.<agent>``) and sends it alone in its slot with the analog
  side's energy budget, under the same fading: with a ``link``, at the bits its channel
  supports in ``d`` real channel uses (rate adaptation, at full energy or at the
  energy-minimising point), or with a fixed ``codec``; the server averages what arrived
  (channel noise 0: the quantisation noise is not Gaussian);
* ``ideal``: the exact mean, no time, ``payload_bits`` per coordinate counted.

The learner adds what it wants on top (FALD: the rest of its Langevin noise, from the
server's stream ``learner``). Only learners whose merge is the state plus the mean of
the updates take part (``merges_mean``, :func:`~bflnet.learners.base.needs_mean_merge`).
A round in which nobody is heard leaves the state unchanged (``k_active`` 0).

**Common random numbers** (``AirCompUplink.common_noise``): the channel's noise is drawn
from the stream ``learner``, the very standard normals ideal links' Langevin noise takes
there (one array of the payload's shape per round, drawn in a silent round too), and the
learner's remainder from ``learner.remainder``; so runs of one seed over the ideal uplink
and over the air differ only where the channel does.

Each round's row gets ``k_active`` (participants heard), ``silent`` (participants not
heard), ``scale``, ``channel_var``, ``added_var``, ``clipped``, ``round_energy_j``,
``max_device_energy_j``, ``cum_energy_j`` and ``cum_channel_uses``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from bflnet.learners.base import Update
from bflnet.protocols.coding.codecs import StochasticQuantizer
from bflnet.radio.aircomp import AirCompSpec, draw_amplitudes, plan_round, transmit
from bflnet.radio.digital_uplink import (
    DigitalLink,
    Payload,
    channel_uses_for,
    plan_digital_round,
)
from bflnet.simulator.simulation import Simulation


@dataclass(frozen=True)
class AirCompUplink:
    """The analog uplink: its ``spec``, each agent's mean power gain to the server
    (``mean_gains``, in the network's agent order, e.g.
    :func:`~bflnet.radio.aircomp.mean_gains_to_server`), the payload ``clip`` norm of the
    power control, and ``common_noise`` (module docstring)."""

    spec: AirCompSpec
    mean_gains: np.ndarray
    clip: float
    common_noise: bool = False
    name = "aircomp"


@dataclass(frozen=True)
class DigitalUplink:
    """The digital baseline (module docstring): ``spec`` (its energy budget
    ``spec.energy_budget(d)``), ``mean_gains`` as for :class:`AirCompUplink`, and either
    ``link`` (rate adaptation, :class:`~bflnet.radio.digital_uplink.DigitalLink`: each
    device's bits follow its channel) or a fixed quantiser ``codec``."""

    spec: AirCompSpec
    mean_gains: np.ndarray
    codec: Any = None
    link: DigitalLink | None = None
    name = "digital"

    def __post_init__(self) -> None:
        if (self.codec is None) == (self.link is None):
            raise ValueError("uplink: a digital uplink takes either a link (rate "
                             "adaptation) or a fixed codec, not both or neither")


@dataclass(frozen=True)
class IdealUplink:
    """The exact mean of the participants' updates, no time on the air, ``payload_bits``
    per coordinate per participant counted as uplink bits."""

    payload_bits: int = 32
    name = "ideal"


Uplink = AirCompUplink | DigitalUplink | IdealUplink
UPLINKS = (AirCompUplink, DigitalUplink, IdealUplink)
#: The learner's ``merge_mean(state, mean, channel_var, rng) -> (state, added_var)``.
Merge = Callable[[Any, np.ndarray, float, np.random.Generator], tuple[Any, float]]
ZEROS = {"scale": 0.0, "channel_var": 0.0, "added_var": 0.0, "clipped": 0,
         "round_energy_j": 0.0, "max_device_energy_j": 0.0}


class UplinkRounds:
    """One run's uplink (module docstring): its streams and running totals. ``agents``:
    the network's agents (the order of ``mean_gains``); ``learner_rng``: the server's
    stream ``learner`` (the one ``init`` drew from)."""

    def __init__(self, uplink: Uplink, sim: Simulation, agents: Sequence[Any],
                 learner_rng: np.random.Generator) -> None:
        gains = getattr(uplink, "mean_gains", None)
        if gains is not None and len(gains) != len(agents):
            raise ValueError(f"mean_gains: one per agent ({len(agents)}), got {len(gains)}")
        self.uplink = uplink
        self.index = {agent: i for i, agent in enumerate(agents)}
        self.fading_rng = sim.streams.numpy("aircomp.fading")
        self.noise_rng = sim.streams.numpy("aircomp.noise")
        self.merge_rng = learner_rng
        if isinstance(uplink, AirCompUplink) and uplink.common_noise:
            self.noise_rng, self.merge_rng = learner_rng, sim.streams.numpy("learner.remainder")
        self.codec_rngs = {agent: sim.streams.numpy(f"codec.up.{agent}") for agent in agents} \
            if isinstance(uplink, DigitalUplink) else {}
        self.cum_energy = 0.0
        self.uses = 0

    def deliver(self, sim: Simulation, merge: Merge, noise_target: float | None, state: Any,
                updates: Sequence[Update]
                ) -> Generator[simpy.Event, Any, tuple[Any, list[Update], dict[str, Any]]]:
        """One round's transmission of ``updates`` (in the participants' order) and the
        merge (``merge(state, mean, channel_var, rng)``: the learner's ``merge_mean``):
        the new state, the updates heard, and the row's fields. ``noise_target``: the
        learner's (the Langevin power rule's cap), or ``None``."""
        up = self.uplink
        if isinstance(up, IdealUplink):
            return (yield from self._ideal(sim, merge, state, updates))
        if isinstance(up, DigitalUplink):
            return (yield from self._digital(sim, merge, state, updates))
        amps = draw_amplitudes(self.fading_rng, up.mean_gains, up.spec.fading)
        if not updates:  # nobody to hear: nothing goes on the air
            return state, [], self._silent(0)
        d = int(np.shape(updates[0].payload)[-1])
        x = stacked([u.payload for u in updates])
        h = amps[[self.index[u.agent] for u in updates]]
        plan = plan_round(h, up.spec, dim=d, clip=up.clip,
                          target_var=noise_target)
        yield sim.env.timeout(up.spec.airtime_s(d))
        self.uses += d
        if plan.k_active == 0:
            if up.common_noise:  # the receiver's noise, heard and dropped
                self.noise_rng.standard_normal(x.shape[:-2] + x.shape[-1:])
            return state, [], self._silent(len(updates))
        rx = transmit(plan, h, x, up.spec, self.noise_rng, clip=up.clip)
        state, added = merge(state, like(rx.mean, updates[0].payload), plan.noise_var,
                             self.merge_rng)
        energy = float(rx.energy.sum())
        self.cum_energy += energy
        heard = [u for u, on in zip(updates, plan.active, strict=True) if on]
        return state, heard, {
            "k_active": plan.k_active, "silent": len(updates) - plan.k_active,
            "scale": plan.scale, "channel_var": plan.noise_var, "added_var": added,
            "clipped": rx.clipped, "round_energy_j": energy,
            "max_device_energy_j": float(rx.energy.reshape(-1, len(updates)).sum(axis=0).max()),
            "cum_energy_j": self.cum_energy, "cum_channel_uses": self.uses}

    def _ideal(self, sim: Simulation, merge: Merge, state: Any, updates: Sequence[Update]
               ) -> Generator[simpy.Event, Any, tuple[Any, list[Update], dict[str, Any]]]:
        up = self.uplink
        assert isinstance(up, IdealUplink)
        if not updates:
            return state, [], self._silent(0)
        x = stacked([u.payload for u in updates])
        sim.recorder.count_bits(x.size * up.payload_bits, delivered=True, direction="up")
        state, added = merge(state, like(x.mean(axis=-2), updates[0].payload), 0.0, self.merge_rng)
        return state, list(updates), {
            "k_active": len(updates), "silent": 0, "scale": 1.0, "channel_var": 0.0,
            "added_var": added, "clipped": 0, "round_energy_j": 0.0,
            "max_device_energy_j": 0.0, "cum_energy_j": 0.0, "cum_channel_uses": 0}
        yield  # pragma: no cover - a generator without time on the air

    def _digital(self, sim: Simulation, merge: Merge, state: Any, updates: Sequence[Update]
                 ) -> Generator[simpy.Event, Any, tuple[Any, list[Update], dict[str, Any]]]:
        """Slots one after the other (module docstring)."""
        up = self.uplink
        assert isinstance(up, DigitalUplink)
        amps = draw_amplitudes(self.fading_rng, up.mean_gains, up.spec.fading)
        if up.link is not None:
            return (yield from self._adaptive(sim, merge, state, updates, amps))
        d = int(np.shape(updates[0].payload)[-1]) if updates else 0
        energy = up.spec.energy_budget(d)
        got, heard, slot_uses, bits_sent = [], [], 0.0, 0
        for update in updates:
            encoded = up.codec.encode(np.asarray(update.payload), self.codec_rngs[update.agent])
            n = channel_uses_for(encoded.bits, energy, float(amps[self.index[update.agent]]),
                                 up.spec.noise_power)
            if math.isfinite(n):
                got.append(up.codec.decode(encoded))
                heard.append(update)
                slot_uses += n
                bits_sent += encoded.bits
        yield sim.env.timeout(slot_uses / up.spec.bandwidth_hz + up.spec.latency_s)
        sim.recorder.count_bits(bits_sent, delivered=True, direction="up")
        round_energy = energy / up.spec.bandwidth_hz * len(got)
        self.cum_energy += round_energy
        if not got:
            return state, [], self._silent(len(updates), uses=0)
        return self._merge_heard(merge, state, updates, got, heard, round_energy,
                                 energy / up.spec.bandwidth_hz)

    def _adaptive(self, sim: Simulation, merge: Merge, state: Any, updates: Sequence[Update],
                  amps: np.ndarray
                  ) -> Generator[simpy.Event, Any, tuple[Any, list[Update], dict[str, Any]]]:
        """Rate adaptation (:func:`~bflnet.radio.digital_uplink.plan_digital_round`): each
        participant sends the bits its channel supports in its slot of ``d`` real channel
        uses, quantised without bias (:func:`unbiased_payload`, stream
        ``codec.up.<agent>``), at the link's operating point."""
        up = self.uplink
        assert isinstance(up, DigitalUplink) and up.link is not None
        if not updates:
            return state, [], self._silent(0, uses=0)
        d = int(np.shape(updates[0].payload)[-1])
        h = amps[[self.index[u.agent] for u in updates]]
        plan = plan_digital_round(h, up.spec, d, up.link)
        got, heard = [], []
        for k, update in enumerate(updates):
            if plan.heard[k]:
                got.append(unbiased_payload(np.asarray(update.payload), plan.payloads[k],
                                            self.codec_rngs[update.agent]))
                heard.append(update)
        yield sim.env.timeout(plan.airtime_s)
        sim.recorder.count_bits(plan.bits, delivered=True, direction="up")
        energy = plan.energy / up.spec.bandwidth_hz
        round_energy = float(energy.sum())
        self.cum_energy += round_energy
        if not got:
            return state, [], self._silent(len(updates), uses=0)
        return self._merge_heard(merge, state, updates, got, heard, round_energy,
                                 float(energy.max()))

    def _merge_heard(self, merge: Merge, state: Any, updates: Sequence[Update],
                     got: list[np.ndarray], heard: list[Update], round_energy: float,
                     max_energy: float) -> tuple[Any, list[Update], dict[str, Any]]:
        """A digital round's merge of what arrived (``got``, from ``heard``; channel noise
        0) and its row's fields."""
        state, added = merge(state, like(np.mean(got, axis=0), updates[0].payload), 0.0,
                             self.merge_rng)
        return state, heard, {
            "k_active": len(got), "silent": len(updates) - len(got), "scale": 1.0,
            "channel_var": 0.0, "added_var": added, "clipped": 0,
            "round_energy_j": round_energy, "max_device_energy_j": max_energy,
            "cum_energy_j": self.cum_energy, "cum_channel_uses": 0}

    def first_row(self) -> dict[str, Any]:
        """The uplink's columns on the ``init`` row: nothing sent yet."""
        return self._silent(len(self.index))

    def _silent(self, participants: int, uses: int | None = None) -> dict[str, Any]:
        return {"k_active": 0, "silent": participants, **ZEROS,
                "cum_energy_j": self.cum_energy,
                "cum_channel_uses": self.uses if uses is None else uses}


def stacked(payloads: Sequence[Any]) -> np.ndarray:
    """The payloads stacked on a device axis second to last, ``(..., n, d)``; when they
    are the consecutive slices ``base[..., i, :]`` of one array (a learner that computed
    every device's change at once), that array itself, not a copy."""
    first = payloads[0]
    base = first.base if isinstance(first, np.ndarray) else None
    if (isinstance(base, np.ndarray) and base.ndim == first.ndim + 1
            and base.shape[-2] == len(payloads)):
        views = [base[..., i, :] for i in range(len(payloads))]
        if all(isinstance(p, np.ndarray) and p.base is base and p.shape == v.shape
               and p.strides == v.strides
               and p.__array_interface__["data"][0] == v.__array_interface__["data"][0]
               for p, v in zip(payloads, views, strict=True)):
            return base
    return np.stack([np.asarray(p) for p in payloads], axis=-2)


def like(mean: np.ndarray, payload: Any) -> Any:
    """``mean`` in the payloads' own form: a torch tensor of the payload's dtype and
    device for a tensor payload, else as is."""
    if isinstance(payload, np.ndarray) or not hasattr(payload, "new_tensor"):
        return mean
    return payload.new_tensor(np.asarray(mean))


def unbiased_payload(x: np.ndarray, payload: Payload, rng: np.random.Generator
                     ) -> np.ndarray:
    """What the server decodes of ``x`` (its last axis the ``d`` coordinates) sent as
    ``payload``: every coordinate through the
    stochastic quantiser at ``payload.bits_per_coordinate`` bits, or a random subset of
    ``payload.coordinates`` of them at 2 bits scaled by ``d / m`` (unbiased either way).

    >>> x = np.array([0.5, -1.0, 0.25, 0.0])
    >>> est = [unbiased_payload(x, Payload(2, 2, 36), np.random.default_rng(s))
    ...        for s in range(4000)]
    >>> np.allclose(np.mean(est, axis=0), x, atol=0.1)
    True
    """
    d = x.shape[-1]
    quantiser = StochasticQuantizer(payload.bits_per_coordinate)
    if payload.coordinates >= d:
        return quantiser.decode(quantiser.encode(x, rng))
    keep = rng.choice(d, size=payload.coordinates, replace=False)
    out = np.zeros(x.shape, dtype=np.float64)
    out[..., keep] = (quantiser.decode(quantiser.encode(x[..., keep], rng))
                      * (d / payload.coordinates))
    return out
