"""A network's shared medium: the medium, every node's transceiver, broadcast.

``Network(medium=SharedMediumSpec(...))`` builds one :class:`Air` per run: node positions
(:mod:`bflnet.radio.positions`; the server, if any, at the centre of the area; moving
nodes at their live positions), the :class:`~bflnet.radio.medium.SharedMedium`, and a
:class:`~bflnet.radio.transceiver.Transceiver` per node with its MAC (a TDMA colouring
is computed here). Every link of the network then sends through its sender's
transceiver (``Link.send``), and :meth:`Air.broadcast` puts one message on the air for
several receivers: its bits on the air, its air time and its energy are counted once,
and each receiver gets it or not on its own SINR.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import simpy

from bflnet.radio.backoff import BackoffScheduler
from bflnet.radio.mac import Aloha, Csma, Mac, NoMac, Tdma, distance2_colouring
from bflnet.radio.medium import SharedMedium
from bflnet.radio.positions import LAYOUTS, MAX_AREA_M, node_positions
from bflnet.radio.scheduling import default_guard_s, sinr_schedule
from bflnet.radio.spec import RadioSpec
from bflnet.radio.transceiver import Transceiver
from bflnet.validation.checks import check_real


@dataclass(frozen=True)
class SharedMediumSpec:
    """What ``Network(medium=...)`` builds: every node's ``radio``, the ``mac``, and where
    nodes without positions go (``layout`` in the square of side ``area_m``)."""

    radio: RadioSpec = field(default_factory=RadioSpec)
    mac: Mac = field(default_factory=NoMac)
    layout: str = "random"
    area_m: float = 100.0

    def __post_init__(self) -> None:
        if not isinstance(self.radio, RadioSpec):
            raise ValueError(f"radio: must be a RadioSpec, got {type(self.radio).__name__}")
        if not isinstance(self.mac, (NoMac, Aloha, Tdma, Csma)):
            raise ValueError(f"mac: must be NoMac, Aloha, Tdma or Csma, got "
                             f"{type(self.mac).__name__}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: must be one of {', '.join(LAYOUTS)}, got "
                             f"{self.layout!r}")
        check_real("area_m", self.area_m, gt=0, le=MAX_AREA_M)


class Air:
    """One run's shared medium of ``network`` (module docstring)."""

    def __init__(self, network: Any, spec: SharedMediumSpec, streams: Any,
                 server_id: Any) -> None:
        """``server_id``: the node id of the server, if ``network`` has one."""
        self.spec = spec
        self.env, self.recorder = network.env, network.recorder
        agents = list(network.graph.nodes)
        server = server_id in network.nodes
        ids = [*agents, *([server_id] if server else [])]
        centre = np.full((1, 2), spec.area_m / 2.0)
        live = network.live
        if live is not None:
            if server:
                raise ValueError("medium: a shared medium with mobility has no place for the "
                                 "server")
            source: Any = lambda: live.positions  # noqa: E731
        else:
            xy = node_positions(network.graph, area_m=spec.area_m, layout=spec.layout,
                                rng=streams.numpy("positions"))
            source = np.vstack([xy, centre]) if server else xy
        key = int(streams.seed_sequence("radio.shadowing").generate_state(1, np.uint64)[0])
        radio, mac = spec.radio, spec.mac
        timing = radio.timing
        sense, power = None, False
        if isinstance(mac, Csma):  # a circle, or by received power under a PHY preset
            mac = mac.under(timing)
            sense = mac.sense_range_m
            power = sense is None and timing is not None
            if sense is None and not power:
                sense = radio.range_m
        self.medium = SharedMedium(self.env, radio, ids, source, streams.numpy,
                                   self.recorder, key=key, sense_range_m=sense,
                                   power_sense=power)
        if isinstance(mac, Csma):
            assert mac.slot_s is not None
            BackoffScheduler(self.env, self.medium, mac.slot_s, self.recorder, ids)
        self.mtu_bits = network.mtu_bits
        slot, colours, frame = 0.0, {}, 1
        #: The slot's guard time (0 for MACs without slots).
        self.guard_s = 0.0
        fitted = False
        if isinstance(mac, (Aloha, Tdma)):
            guard = self.guard_s = (mac.guard_s if mac.guard_s is not None else
                                    default_guard_s(radio.phy, self.medium.range_m))
            largest = self.slot_for(self.mtu_bits)
            what = "mtu_bits / rate"
            if timing is not None:  # the largest frame, SIFS and its ACK
                what = f"the largest frame, SIFS and its ACK under phy={radio.phy}"
            if guard:
                what += f", plus the guard time {guard:g} s"
            # with a preset, a default slot fits the run's first message (Air.fit_slot)
            fitted = mac.slot_s is None and timing is not None
            slot = mac.slot_s if mac.slot_s is not None else largest
            if slot < largest * (1 - 1e-12):
                raise ValueError(f"mac_slot_s: must be at least the air time of the largest "
                                 f"packet ({what} = {largest:g} s), got {slot:g}")
        if isinstance(mac, Tdma):
            if live is not None:
                raise ValueError("mac: tdma needs nodes that stay put (its schedule is "
                                 "coloured once), not mobility")
            colours, frame = self._colouring(network, mac)
        index = self.medium.index
        self.radios: dict[Any, Transceiver] = {
            node: Transceiver(self.env, node, index[node], self.medium, mac,
                              partial(streams.numpy, f"mac.{node}"), self.recorder,
                              mtu_bits=self.mtu_bits,
                              slot_s=slot, colour=colours.get(index[node], 0),
                              frame_slots=frame)
            for node in ids}
        if fitted:
            for r in self.radios.values():
                r.fit_slot = self.fit_slot
        #: The TDMA colour of each node index (empty for other MACs).
        self.colours: dict[int, int] = colours
        self.frame_slots = frame
        #: The ALOHA / TDMA slot (with a PHY preset and no ``slot_s``: the air time of the
        #: largest packet until the first message fits it, :meth:`fit_slot`).
        self.slot_s = slot
        for link in network.links.values():
            self.attach(link)
        for node in ids:
            tank = network.nodes[node].battery
            if tank is not None and tank.spec.rx_power_w > 0:
                self.medium.rx_energy[index[node]] = (tank, tank.spec.rx_power_w)

    def slot_for(self, bits: int) -> float:
        """An ALOHA / TDMA slot that holds a packet of ``bits``: its air time (with a PHY
        preset: the data frame, SIFS and its ACK) plus the guard time."""
        radio = self.spec.radio
        timing = radio.timing
        slot = radio.airtime_s(bits)
        if timing is not None:
            slot += timing.sifs_s + timing.ack_s
        return slot + self.guard_s

    def fit_slot(self, bits: int) -> None:
        """With a PHY preset and no ``slot_s``: the slot of every radio becomes that of the
        run's first message's largest packet, ``bits`` (:meth:`slot_for`), and a later,
        larger packet is refused (``Transceiver.slot_bits``)."""
        slot = self.slot_s = self.slot_for(bits)
        for r in self.radios.values():
            r.slot_s, r.slot_bits, r.fit_slot = slot, bits, None

    def _colouring(self, network: Any, mac: Tdma) -> tuple[dict[int, int], int]:
        medium = self.medium
        medium.positions()
        index = medium.index
        if mac.schedule_under(medium.timing) == "sinr":
            return self._sinr_schedule(network, mac)
        pairs = medium._tree.query_pairs(medium.range_m, output_type="ndarray") \
            if np.isfinite(medium.range_m) else np.array(
                [(a, b) for a in range(len(index)) for b in range(a + 1, len(index))],
                dtype=np.int64).reshape(-1, 2)
        edges = {(int(a), int(b)) for a, b in pairs.tolist()}
        edges |= {(index[s], index[d]) for s, d in network.links}
        return distance2_colouring(range(len(index)), edges, mac.frame_slots)

    def _sinr_schedule(self, network: Any, mac: Tdma) -> tuple[dict[int, int], int]:
        """The SINR schedule (:func:`~bflnet.radio.scheduling.sinr_schedule`) of the
        medium's mean powers, every node's receivers its links' destinations (with a PHY
        preset, their ACKs checked too)."""
        medium = self.medium
        index, k = medium.index, len(medium.ids)
        receivers: list[list[int]] = [[] for _ in range(k)]
        for s, d in network.links:
            receivers[index[s]].append(index[d])
        rx = [np.unique(np.asarray(r, dtype=np.int64)) for r in receivers]
        around, signals = [], []
        for t in range(k):
            near, power, place = medium.around(t)
            around.append((near, power))
            out = [r for r in rx[t].tolist() if r not in place]  # far receivers
            signals.append(np.array([medium.spec.tx_mw * medium.mean_gain(t, r)
                                     if r in out else np.nan for r in rx[t].tolist()])
                           if out else None)
        return sinr_schedule(around, rx, noise_mw=medium.noise, threshold=medium.threshold,
                             margin_db=mac.margin_db, signals=signals,
                             frame_slots=mac.frame_slots, acks=medium.timing is not None)

    def attach(self, link: Any) -> None:
        """Make ``link`` send through its sender's transceiver (a sender with a battery
        pays ``tx_power_w / rate_bps`` a bit at the radio's rate)."""
        from bflnet.faults.energy import joules_per_bit

        link.radio = self.radios[link.src]
        if link.energy is not None:
            tank = link.energy[0]
            link.energy = (tank, joules_per_bit(tank.spec, self.spec.radio))

    def broadcast(self, sender: Any, message: Any, receivers: Sequence[Any], *,
                  links: dict[tuple[Any, Any], Any], direction: str = "d2d"
                  ) -> Generator[simpy.Event, Any, dict[Any, bool]]:
        """One transmission of ``message`` from ``sender`` to every one of ``receivers``:
        ``{receiver: arrived}``. The bits on the air and the sender's energy are counted
        once; ``cum_bits_delivered`` gets the message's bits once if any receiver got it;
        with ``record_messages`` one ``message`` row (``peer="*"``, ``receivers``,
        ``received``)."""
        radio = self.radios[sender]
        start, attempts, on_air, got = yield from radio.transmit(
            receivers, message.bits, acknowledged=False, max_attempts=1)
        received = sum(got.values())
        rec = self.recorder
        rec.count_bits(on_air, delivered=received > 0, direction=direction,
                       bits_delivered=message.bits)
        energy = next((links[(sender, r)].energy for r in receivers
                       if (sender, r) in links), None)
        if energy is not None:
            tank, per_bit = energy
            tank.spend(on_air * per_bit, self.env.now, "send")
        if rec.record_messages:
            rec.record("message", node=sender, peer="*", kind=message.kind, bits=message.bits,
                       bits_on_air=on_air, attempts=attempts, receivers=len(got),
                       received=received, dropped=len(got) - received, start_s=start)
        return got
