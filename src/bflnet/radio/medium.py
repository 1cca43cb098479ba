"""The shared radio medium: overlapping transmissions, SINR at each receiver, decided at
the end of the packet.

Every transmission is a :class:`Transmission` from one node to one or more receivers
(a unicast or a broadcast). While it is on the air, each of its receivers holds a
:class:`Reception` that tracks the interference at that receiver: the sum of the powers
received from every other transmission on the air whose sender is within the
interference range (:meth:`RadioSpec.effective_interference_range_m`), each under its own
path loss, shadowing and block-fading draw (one per transmission and receiver, from the
sender's stream ``radio.<node>``). Transmitters near a node are found with a k-d tree of
the positions, built once (again when nodes have moved), so a packet costs the number of
nodes near its sender and receivers, not the number of nodes.

When the packet ends, each reception is decided on the *largest* interference it saw, so
the packet is received iff its SINR stayed at or above the threshold over the whole
packet. A lost reception is ``"half_duplex"`` (its receiver transmitted while it was on
the air, or was transmitting when it began), ``"collision"`` (the SNR alone would have
passed: interference made it fail) or ``"outage"`` (fading and path loss alone). Each
``half_duplex`` or ``collision`` loss is a row (``event="mac"``, ``kind="collision"``,
``node`` = sender, ``peer`` = receiver, ``cause``); with ``record_messages`` every
transmission is also a ``tx`` row (``node``, ``start_s``, ``end_s``, ``bits``,
``receivers``, ``received``).

Two transmissions that overlap by less than :data:`EPS_S` do not interfere (back-to-back
slots whose boundaries differ by rounding).

Carrier sense (for CSMA): :meth:`SharedMedium.busy` says whether a transmitter other than
the node is on the air within ``sense_range_m`` of it; :meth:`SharedMedium.on_busy` and
:meth:`SharedMedium.on_idle` give events for the next change.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy

from bflnet.radio.spec import RadioSpec

#: Overlaps shorter than this (seconds) are not overlaps.
EPS_S = 1e-9


class Reception:
    """One receiver of one transmission: its signal power, the interference now and the
    largest seen, and why it is already lost (``None``: not yet)."""

    __slots__ = ("interference", "lost", "node", "parts", "peak", "signal", "tx")

    def __init__(self, tx: Transmission, node: int, signal: float) -> None:
        self.tx, self.node, self.signal = tx, node, signal
        self.interference = self.peak = 0.0
        self.parts: dict[int, float] = {}  # interfering transmission's sender -> power
        self.lost: str | None = None

    def add(self, sender: int, power: float) -> None:
        self.parts[sender] = power
        self.interference += power
        if self.interference > self.peak:
            self.peak = self.interference

    def remove(self, sender: int) -> None:
        power = self.parts.pop(sender, None)
        if power is not None:
            self.interference = self.interference - power if self.parts else 0.0


class Transmission:
    """One packet on the air: ``sender`` and ``receivers`` are node indices of the medium;
    ``outcome`` (``{receiver: received}``) and ``causes`` (``{receiver: cause}`` of the
    lost ones) are set when it ends."""

    __slots__ = ("bits", "causes", "end", "gains", "meta", "outcome", "receivers",
                 "receptions", "sender", "start")

    def __init__(self, sender: int, receivers: Sequence[int], start: float, end: float,
                 bits: int, meta: dict[str, Any] | None) -> None:
        self.sender, self.receivers = sender, list(receivers)
        self.start, self.end, self.bits, self.meta = start, end, bits, meta
        self.gains: dict[int, float] = {}
        self.receptions: list[Reception] = []
        self.outcome: dict[int, bool] | None = None
        self.causes: dict[int, str] = {}


class SharedMedium:
    """The air of one run (module docstring). ``ids`` are the node ids in index order;
    ``positions`` a ``(K, 2)`` array or a zero-argument function returning the current one
    (moving nodes: a new array object whenever they moved); ``stream(name)`` makes the
    named random streams; ``key`` fixes the run's shadowing."""

    def __init__(self, env: simpy.Environment, spec: RadioSpec, ids: Sequence[Any],
                 positions: np.ndarray | Callable[[], np.ndarray],
                 stream: Callable[[str], np.random.Generator], recorder: Any, *,
                 key: int = 0, sense_range_m: float | None = None) -> None:
        self.env, self.spec, self.recorder = env, spec, recorder
        self.ids = list(ids)
        self.index = {node: i for i, node in enumerate(self.ids)}
        k = len(self.ids)
        self._source = positions
        self._stream, self._rngs = stream, [None] * k
        self.key = int(key)
        self.range_m = spec.effective_interference_range_m()
        self.sense_range_m = sense_range_m
        self.noise = spec.noise_mw
        self.threshold = spec.threshold
        self._tx_mw = spec.tx_mw
        self._loss = spec.pathloss
        self._fading = spec.fading
        if spec.fading == "rician":
            kf = spec.rician_k
            self._los = math.sqrt(kf / (kf + 1.0))
            self._scatter = math.sqrt(0.5 / (kf + 1.0))
        self.active: dict[int, Transmission] = {}
        self.rx_at: list[list[Reception]] = [[] for _ in range(k)]
        self.tx_count = np.zeros(k, dtype=np.int64)
        self.rx_count = np.zeros(k, dtype=np.int64)
        self.busy_count = np.zeros(k, dtype=np.int64)
        self._ends: list[tuple[float, int, Transmission]] = []
        self._seq = 0
        self._busy_waiters: dict[int, simpy.Event] = {}
        self._idle_waiters: dict[int, simpy.Event] = {}
        self._xy_array: np.ndarray | None = None
        #: ``{node index: (tank, watts)}``: receivers charged for their receptions.
        self.rx_energy: dict[int, tuple[Any, float]] = {}
        #: Transmissions that started at ``_fresh_time`` (carrier sense cannot hear them
        #: yet: nodes that decide in the same instant all transmit).
        self._fresh: list[Transmission] = []
        self._fresh_time = -math.inf
        self._refresh()
        #: Transmissions started so far.
        self.transmissions = 0

    # ------------------------------------------------------------------ geometry
    def positions(self) -> np.ndarray:
        """The current ``(K, 2)`` positions."""
        self._refresh()
        assert self._xy_array is not None
        return self._xy_array

    def _refresh(self) -> None:
        """Rebuild the k-d tree and forget the cached neighbourhoods if nodes moved."""
        xy = self._source() if callable(self._source) else self._source
        if xy is self._xy_array:
            return
        from scipy.spatial import cKDTree  # lazily: scipy.spatial is slow to import

        xy = np.asarray(xy, dtype=np.float64)
        if xy.shape != (len(self.ids), 2) or not np.isfinite(xy).all():
            raise ValueError(f"positions: must be a finite ({len(self.ids)}, 2) array, got "
                             f"shape {xy.shape}")
        self._xy_array = xy
        self._xy = xy.tolist()
        self._tree = cKDTree(xy)
        self._near: list[np.ndarray | None] = [None] * len(self.ids)
        self._sense: list[np.ndarray | None] = [None] * len(self.ids)
        #: Per node, ``{other node within range: mean received power (mW)}``.
        self._mean: list[dict[int, float] | None] = [None] * len(self.ids)

    def distance(self, a: int, b: int) -> float:
        pa, pb = self._xy[a], self._xy[b]
        return math.hypot(pa[0] - pb[0], pa[1] - pb[1])

    def near(self, i: int) -> np.ndarray:
        """Indices of the nodes within the interference range of node ``i`` (itself too)."""
        found = self._near[i]
        if found is None:
            if math.isinf(self.range_m):
                found = np.arange(len(self.ids))
            else:
                found = np.asarray(self._tree.query_ball_point(self._xy[i], self.range_m),
                                   dtype=np.int64)
            self._near[i] = found
        return found

    def sensed_by(self, i: int) -> np.ndarray:
        """Indices of the other nodes within ``sense_range_m`` of node ``i``."""
        found = self._sense[i]
        if found is None:
            r = self.sense_range_m
            if r is None:
                raise ValueError("sense_range_m: carrier sense needs a sense range")
            got = (np.arange(len(self.ids)) if math.isinf(r) else
                   np.asarray(self._tree.query_ball_point(self._xy[i], r), dtype=np.int64))
            found = self._sense[i] = got[got != i]
        return found

    def mean_gain(self, a: int, b: int) -> float:
        """Mean power gain (path loss and the pair's shadowing) from ``a`` to ``b``."""
        loss = self._loss
        return loss.gain(self.distance(a, b)) * loss.shadowing_gain(self.key, a, b)

    def mean_powers(self, a: int) -> dict[int, float]:
        """``{b: mean power (mW) of a's signal at b}`` for every ``b`` within range of ``a``
        (computed at once, kept until nodes move)."""
        found = self._mean[a]
        if found is None:
            near = self.near(a)
            xy = self._xy_array
            assert xy is not None
            d = np.hypot(*(xy[near] - xy[a]).T)
            loss = self._loss
            power = (self._tx_mw * loss.gains(d)
                     * loss.shadowing_gains(self.key, a, near))
            found = self._mean[a] = dict(zip(near.tolist(), power.tolist(), strict=True))
        return found

    def _rng(self, i: int) -> np.random.Generator:
        rng = self._rngs[i]
        if rng is None:
            rng = self._rngs[i] = self._stream(f"radio.{self.ids[i]}")
        return rng

    def _fade(self, i: int) -> float:
        """One block-fading power gain (mean 1) from node ``i``'s stream."""
        kind = self._fading
        if kind == "rayleigh":
            return float(self._rng(i).standard_exponential())
        if kind == "rician":
            rng, s = self._rng(i), self._scatter
            re = self._los + s * rng.standard_normal()
            im = s * rng.standard_normal()
            return re * re + im * im
        return 1.0

    def _fades(self, i: int, n: int) -> list[float]:
        """``n`` block-fading power gains from node ``i``'s stream."""
        kind = self._fading
        if kind == "rayleigh":
            return self._rng(i).standard_exponential(n).tolist()
        if kind == "rician":
            rng, s = self._rng(i), self._scatter
            re = self._los + s * rng.standard_normal(n)
            im = s * rng.standard_normal(n)
            return (re * re + im * im).tolist()
        return [1.0] * n

    def power_at(self, tx: Transmission, node: int) -> float:
        """The power (mW) of ``tx`` at ``node``: one fading draw per transmission and node."""
        power = tx.gains.get(node)
        if power is None:
            mean = self.mean_powers(tx.sender).get(node)
            if mean is None:  # beyond the interference range (a far unicast receiver)
                mean = self._tx_mw * self.mean_gain(tx.sender, node)
            power = tx.gains[node] = mean * self._fade(tx.sender)
        return power

    # ------------------------------------------------------------------ transmissions
    def start(self, sender: int, receivers: Sequence[int], airtime_s: float, bits: int,
              meta: dict[str, Any] | None = None) -> Transmission:
        """Put a packet on the air now for ``airtime_s`` seconds."""
        now = self.env.now
        self._expire(now)
        self._refresh()
        if self.tx_count[sender]:
            raise RuntimeError(f"node {self.ids[sender]!r} is already transmitting (one "
                               f"radio: its transmissions are queued)")
        tx = Transmission(sender, receivers, now, now + airtime_s, bits, meta)
        for rec in self.rx_at[sender]:  # half-duplex: it can no longer receive
            rec.lost = "half_duplex"
        near = self.near(sender)
        if self.rx_count.any():
            hit = near[self.rx_count[near] > 0]
            hit = hit[hit != sender].tolist()
            if hit:  # its power at every node receiving nearby, drawn at once
                mean, gains = self.mean_powers(sender), tx.gains
                for n, fade in zip(hit, self._fades(sender, len(hit)), strict=True):
                    power = gains[n] = mean[n] * fade
                    for rec in self.rx_at[n]:
                        rec.add(sender, power)
        tx_count, active = self.tx_count, self.active
        for r in tx.receivers:
            rec = Reception(tx, r, self.power_at(tx, r))
            if tx_count[r]:
                rec.lost = "half_duplex"
            if active:
                around = self.near(r)
                for k in around[tx_count[around] > 0].tolist():
                    if k != sender:
                        rec.add(k, self.power_at(active[k], r))
            tx.receptions.append(rec)
            self.rx_at[r].append(rec)
            self.rx_count[r] += 1
        tx_count[sender] += 1
        active[sender] = tx
        self._seq += 1
        self.transmissions += 1
        heapq.heappush(self._ends, (tx.end, self._seq, tx))
        if self.sense_range_m is not None:
            if self._fresh_time != now:
                self._fresh, self._fresh_time = [], now
            self._fresh.append(tx)
            sensed = self.sensed_by(sender)
            self.busy_count[sensed] += 1
            waiters = self._busy_waiters
            if waiters:
                for n in sensed.tolist():
                    event = waiters.pop(n, None)
                    if event is not None and not event.triggered:
                        event.succeed()
        return tx

    def finish(self, tx: Transmission) -> dict[int, bool]:
        """The outcome of ``tx`` (``{receiver: received}``), at or after its end."""
        if tx.outcome is None:
            self._expire(max(self.env.now, tx.end))
        assert tx.outcome is not None
        return tx.outcome

    def _expire(self, now: float) -> None:
        ends = self._ends
        while ends and ends[0][0] <= now + EPS_S:
            self._decide(heapq.heappop(ends)[2])

    def _decide(self, tx: Transmission) -> None:
        """Decide every reception of ``tx`` on its peak interference; take its power off
        the receptions still on the air; free the carrier."""
        sender = tx.sender
        del self.active[sender]
        self.tx_count[sender] -= 1
        noise, threshold = self.noise, self.threshold
        outcome: dict[int, bool] = {}
        for rec in tx.receptions:
            r = rec.node
            self.rx_at[r].remove(rec)
            self.rx_count[r] -= 1
            if rec.lost is None and rec.signal < threshold * (noise + rec.peak):
                rec.lost = "collision" if rec.signal >= threshold * noise else "outage"
            outcome[r] = rec.lost is None
            if rec.lost is not None:
                tx.causes[r] = rec.lost
            if self.rx_energy and r in self.rx_energy and rec.lost != "half_duplex":
                tank, watts = self.rx_energy[r]
                tank.spend(watts * (tx.end - tx.start), self.env.now, "receive")
        tx.outcome = outcome
        rx_at = self.rx_at
        for n in tx.gains:  # every node where this transmission's power was counted
            for rec in rx_at[n]:
                rec.remove(sender)
        if self.sense_range_m is not None:
            sensed = self.sensed_by(sender)
            busy = self.busy_count
            busy[sensed] -= 1
            waiters = self._idle_waiters
            if waiters:
                for n in sensed[busy[sensed] == 0].tolist():
                    event = waiters.pop(n, None)
                    if event is not None:
                        event.succeed()
        self._record(tx)

    def _record(self, tx: Transmission) -> None:
        rec, ids, meta = self.recorder, self.ids, tx.meta or {}
        for r, cause in tx.causes.items():
            if cause != "outage":
                rec.record("mac", node=ids[tx.sender], peer=ids[r], kind="collision",
                           cause=cause, **meta)
        if rec.record_messages:
            rec.record("tx", node=ids[tx.sender], start_s=tx.start, end_s=tx.end,
                       bits=tx.bits, receivers=len(tx.receivers),
                       received=sum(tx.outcome.values()) if tx.outcome else 0, **meta)

    # ------------------------------------------------------------------ carrier sense
    def busy(self, node: int, *, hear_now: bool = True) -> bool:
        """Whether another transmitter within ``sense_range_m`` of ``node`` is on the air;
        with ``hear_now=False`` one that starts at this very instant is not counted (a
        node deciding in the same instant cannot have heard it)."""
        now = self.env.now
        self._expire(now)
        count = int(self.busy_count[node])
        if count and not hear_now and self._fresh_time == now:
            r = self.sense_range_m
            assert r is not None
            count -= sum(1 for tx in self._fresh
                         if tx.outcome is None and self.distance(tx.sender, node) <= r)
        return count > 0

    def on_busy(self, node: int, event: simpy.Event | None = None) -> simpy.Event:
        """An event (``event``, or a new one) that fires when a transmitter within sense
        range starts (unless something else triggered it first)."""
        if event is None:
            event = self._busy_waiters.get(node)
            if event is not None and not event.triggered:
                return event
            event = self.env.event()
        self._busy_waiters[node] = event
        return event

    def on_idle(self, node: int) -> simpy.Event:
        """An event that fires when the last transmitter within sense range ends (at once
        if none is on the air)."""
        event = self._idle_waiters.get(node)
        if event is None:
            event = self._idle_waiters[node] = self.env.event()
        if not self.busy(node) and not event.triggered:
            del self._idle_waiters[node]
            event.succeed()
        return event

    def cancel_waits(self, node: int) -> None:
        """Forget ``node``'s pending busy/idle events."""
        self._busy_waiters.pop(node, None)
        self._idle_waiters.pop(node, None)
