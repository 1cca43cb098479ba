"""The shared radio medium: overlapping transmissions, SINR at each receiver, decided at
the end of the packet.

Every transmission is a :class:`Transmission` from one node to one or more receivers
(a unicast or a broadcast). While it is on the air, its power is counted at every node
within the interference range of its sender
(:meth:`RadioSpec.effective_interference_range_m`), each under its own path loss,
shadowing and block-fading draw (one per transmission and node, from the medium's
stream ``radio.fading``, drawn in blocks; with a coherence time, the fade of the pair at
the packet's start, :mod:`bflnet.radio.phy.coherence`): every node keeps the *total* power of the
transmissions on the air near it, added when one starts and taken off when it ends, in
one vectorised step over the nodes in range. Those nodes are found with a k-d tree of
the positions, built once (again when nodes have moved), so a packet costs the number of
nodes near its sender, not the number of nodes.

A reception's interference is its receiver's total less its own signal. Since a total
only rises when a transmission starts, each node also keeps the largest total of its
current *segment* (since the last reception began there); a reception that begins
folds the segment's peak into the receptions already on the air at that node, so each
reception knows the largest total over exactly its own time on the air (not with
``reception="mcs"``, below, which keeps every interval instead).

When the packet ends, each reception is decided on the *largest* interference it saw, so
the packet is received iff its SINR stayed at or above the threshold over the whole
packet (with ``reception="per"``: it is lost with the packet error rate of that lowest
SINR, :func:`~bflnet.radio.spec.packet_error_rate`, by one uniform draw ``u`` of the
stream ``radio.reception``; a loss is a ``collision`` when the same ``u`` would have
passed at the SNR alone). A lost reception is ``"half_duplex"`` (its receiver transmitted
while it was on the air, or was transmitting when it began), ``"collision"`` (the SNR
alone would have passed: interference made it fail) or ``"outage"`` (fading and path
loss alone). Each
``half_duplex`` or ``collision`` loss is a row (``event="mac"``, ``kind="collision"``,
``node`` = sender, ``peer`` = receiver, ``cause``); with ``record_messages`` every
transmission is also a ``tx`` row (``node``, ``start_s``, ``end_s``, ``bits``,
``receivers``, ``received``).

With ``reception="mcs"`` (the default with a PHY preset) a reception also keeps its
receiver's total from each time it changed while the packet is on the air (a
transmission starting or ending near it; only receivers with a reception on the air pay),
so the packet is decided on the SINR of each interval of it: lost iff one draw ``u`` of
``radio.reception`` is below the packet error rate of the PHY's error model for its MCS
(:mod:`bflnet.radio.phy.errors`); a reception whose preamble is not detected, or that
starts while its receiver is locked on another frame and does not capture it, is lost
when it starts. :meth:`SharedMedium.data_mcs` picks a data frame's MCS (the radio's
``data_rate``, or per link with ``auto``).

Two transmissions that overlap by less than :data:`EPS_S` do not interfere (back-to-back
slots whose boundaries differ by rounding).

Carrier sense (for CSMA): :meth:`SharedMedium.busy` says whether a transmitter other than
the node is on the air within ``sense_range_m`` of it; a ``carrier`` listener (the CSMA
back-offs, :mod:`bflnet.radio.backoff`) is told which nodes' carrier became busy when a
transmission starts and idle when one ends. With a PHY preset (``RadioSpec.phy``,
:mod:`bflnet.radio.phy.timing`) a node's own transmissions keep its carrier busy too (a node
sending an ACK does not count its back-off down), and each node keeps when its carrier
last became idle and whether that busy period was errored (two sensed transmissions
overlapped): :meth:`SharedMedium.ready_at` is when its back-off may count again, after
DIFS, or EIFS after an errored period. With a PHY preset and ``power_sense`` (instead of
``sense_range_m``) the carrier is sensed by received power, energy and preamble
detection on the medium's own totals and draws (:mod:`bflnet.radio.phy.sensing`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy

from bflnet.radio.phy.coherence import coherent_fading
from bflnet.radio.phy.errors import AUTO_TARGET_PER, CAPTURE_MARGIN, PREAMBLE_SNR, error_model
from bflnet.radio.phy.mcs import Mcs
from bflnet.radio.phy.sensing import PowerSense, release
from bflnet.radio.spec import RadioSpec, packet_error_rate

#: Overlaps shorter than this (seconds) are not overlaps.
EPS_S = 1e-9
#: Fading gains drawn at a time.
FADE_BLOCK = 1 << 14
#: Uniforms of the stream ``radio.reception`` drawn at a time.
UNIFORM_BLOCK = 256


class Reception:
    """One receiver of one transmission: its signal power, whether that power is counted
    in the receiver's total (its sender is within the interference range), the largest
    total seen before the receiver's current segment (``acc``: module docstring), and why
    it is already lost (``None``: not yet); with ``reception="mcs"``, ``log``: the
    receiver's total from each time it changed while the packet is on the air (``[t0,
    total0, t1, total1, ...]``) and whether the receiver is ``locked`` on it (its preamble
    was detected, :mod:`bflnet.radio.phy.errors`). It does not point back to its transmission:
    without that reference cycle a packet's objects are freed as soon as it is decided,
    not by the cyclic garbage collector (whose collections, over every object of a large
    network, cost 10-16 µs a packet at K = 256, see docs/benchmarks.md)."""

    __slots__ = ("acc", "locked", "log", "lost", "node", "own", "signal")

    def __init__(self, node: int, signal: float, own: bool, lost: str | None = None) -> None:
        self.node = node
        self.signal = signal
        self.own = own
        self.acc = 0.0
        self.lost = lost
        self.log: list[float] | None = None
        self.locked = False


class Transmission:
    """One packet on the air: ``sender`` and ``receivers`` are node indices of the medium;
    ``outcome`` (``{receiver: received}``) and ``causes`` (``{receiver: cause}`` of the
    lost ones) are set when it ends. ``near`` and ``power``: the nodes where its power
    is counted and that power (mW, one fading draw each); ``mcs``: its MCS with
    ``reception="mcs"`` (``None``: the basic rate)."""

    __slots__ = ("bits", "causes", "end", "mcs", "meta", "near", "outcome", "place",
                 "power", "receivers", "receptions", "sender", "start")

    def __init__(self, sender: int, receivers: Sequence[int], start: float, end: float,
                 bits: int, meta: dict[str, Any] | None, mcs: Mcs | None = None,
                 near: np.ndarray | None = None, power: np.ndarray | None = None,
                 place: dict[int, int] | None = None) -> None:
        self.sender = sender
        self.receivers = list(receivers)
        self.mcs = mcs
        self.start = start
        self.end = end
        self.bits = bits
        self.meta = meta
        self.near = near
        self.power = power
        self.place = {} if place is None else place  # each of ``near``'s place in it
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
                 key: int = 0, sense_range_m: float | None = None,
                 power_sense: bool = False) -> None:
        self.env, self.spec, self.recorder = env, spec, recorder
        self.ids = list(ids)
        self.index = {node: i for i, node in enumerate(self.ids)}
        k = len(self.ids)
        self._source = positions
        self._moving = callable(positions)
        self._stream = stream
        self._fade_rng: np.random.Generator | None = None
        self._buf, self._pos = np.empty(0), 0
        self.key = int(key)
        self.range_m = spec.effective_interference_range_m()
        self.sense_range_m = sense_range_m
        self.noise = spec.noise_mw
        self.rate_bps = spec.rate_bps
        self.threshold = spec.threshold
        #: The 802.11 DCF timing (``None``: ``phy="ideal"``).
        self.timing = spec.timing
        #: DIFS and EIFS (0 without a PHY preset), kept as plain floats: read per back-off.
        self._difs_s = spec.timing.difs_s if spec.timing is not None else 0.0
        self._eifs_s = spec.timing.eifs_s if spec.timing is not None else 0.0
        #: Data frame air times ``{(bits, rate): seconds}`` (``frame_s``, computed once).
        self._frame_s: dict[tuple[int, float], float] = {}
        #: Per node (with a PHY preset): when its carrier last became idle, and whether
        #: its last busy period was errored (EIFS instead of DIFS).
        self.idle_since = [-math.inf] * k
        self.errored = [False] * k
        self._per = packet_error_rate if spec.reception == "per" else None
        self._per_rng: np.random.Generator | None = None
        self._uniforms: list[float] = []  # its draws still to use, the next one last
        #: With ``reception="mcs"``: the PHY's error model, the data frames' MCS (``None``:
        #: ``data_rate="auto"``), the MCS chosen per (sender, receiver, bits), and per node the
        #: receptions on the air there.
        model = self._model = (error_model(spec.timing) if spec.reception_rule == "mcs"
                               and spec.timing is not None else None)
        self._data_mcs = spec.mcs
        self._auto: dict[tuple[int, int, int], Mcs] = {}
        #: The nodes with a reception on the air (a few: looked up one by one), and the
        #: same as a mask for large neighbourhoods (:meth:`_log_totals`).
        self._rx_nodes: set[int] = set()
        self._rx_mask = np.zeros(k if model is not None else 0, dtype=bool)
        #: How late after a locked frame's start a stronger one may still capture its
        #: receiver (its PLCP preamble and header, and the overlap tolerance).
        self._capture_s = spec.timing.preamble_s + EPS_S if spec.timing is not None else 0.0
        self._tx_mw = spec.tx_mw
        self._loss = spec.pathloss
        self._fading = spec.fading
        if spec.fading == "rician":
            kf = spec.rician_k
            self._los = math.sqrt(kf / (kf + 1.0))
            self._scatter = math.sqrt(0.5 / (kf + 1.0))
        #: Fading correlated in time (``coherence_time_s``), or ``None`` (a fresh draw per
        #: transmission and node).
        self._coherent = coherent_fading(spec, k, lambda: stream("radio.fading"))
        self.active: dict[int, Transmission] = {}
        self.rx_at: list[list[Reception]] = [[] for _ in range(k)]
        #: Per node: 1 while it transmits (one radio), else 0.
        self.tx_count = [0] * k
        #: Per node: the transmitters within sense range of it on the air (a list: it
        #: is read and written one node at a time).
        self.busy_count = [0] * k
        #: Per node: the power (mW) of every transmission on the air counted there, and
        #: its largest value in the node's current segment (module docstring).
        self._total = np.zeros(k)
        self._peak = np.zeros(k)
        self._receiving = 0  # receptions on the air
        #: ``(end, number, transmission)`` of those on the air (``number``: ``transmissions``
        #: when it started, so that equal ends pop in start order).
        self._ends: list[tuple[float, int, Transmission]] = []
        #: Told of carrier changes (``carrier_busy(nodes)``, ``carrier_idle(nodes)``)
        #: while its ``waiting`` is not empty: the CSMA back-offs, or ``None``.
        self.carrier: Any = None
        self._xy_array: np.ndarray | None = None
        #: ``{node index: (tank, watts)}``: receivers charged for their receptions.
        self.rx_energy: dict[int, tuple[Any, float]] = {}
        #: Transmissions that started at ``_fresh_time`` (carrier sense cannot hear them
        #: yet: nodes that decide in the same instant all transmit).
        self._fresh: list[Transmission] = []
        self._fresh_time = -math.inf
        self._refresh()
        #: Transmissions started so far, and the ACKs among them (a PHY preset's).
        self.transmissions = 0
        self.acks = 0
        #: Carrier sense by received power (``power_sense``), or ``None``.
        self.power_sense: PowerSense | None = None
        if power_sense:
            if self.timing is None or sense_range_m is not None:
                raise ValueError("power_sense: needs a PHY preset (phy=80211b, 80211a or "
                                 "80211g) and no sense_range_m")
            self.power_sense = PowerSense(self, spec.ed_dbm, spec.pd_dbm)

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
        self._auto = {}
        self._tree = cKDTree(xy)
        self._near: list[np.ndarray | None] = [None] * len(self.ids)
        self._sense: list[np.ndarray | None] = [None] * len(self.ids)
        self._sense_lists: list[list[int] | None] = [None] * len(self.ids)
        self._carrier_lists: list[list[int] | None] = [None] * len(self.ids)
        #: Per node ``a``: ``(others within range, a's mean power at each (mW), {other:
        #: its place in them})``.
        self._around: list[tuple[np.ndarray, np.ndarray, dict[int, int]] | None] = \
            [None] * len(self.ids)

    def distance(self, a: int, b: int) -> float:
        pa, pb = self._xy[a], self._xy[b]
        return math.hypot(pa[0] - pb[0], pa[1] - pb[1])

    def near(self, i: int) -> np.ndarray:
        """Indices of the nodes within the interference range of node ``i`` (itself too),
        sorted."""
        found = self._near[i]
        if found is None:
            if math.isinf(self.range_m):
                found = np.arange(len(self.ids))
            else:
                found = np.sort(np.asarray(
                    self._tree.query_ball_point(self._xy[i], self.range_m), dtype=np.int64))
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

    def _sensed_list(self, i: int) -> list[int]:
        """:meth:`sensed_by` as a list (kept until nodes move)."""
        found = self._sense_lists[i]
        if found is None:
            found = self._sense_lists[i] = self.sensed_by(i).tolist()
        return found

    def _carrier_list(self, i: int) -> list[int]:
        """The nodes whose carrier a transmission of ``i`` makes busy: those that sense it
        and, with a PHY preset, ``i`` itself (sorted, kept until nodes move)."""
        found = self._carrier_lists[i]
        if found is None:
            found = self._carrier_lists[i] = sorted([*self._sensed_list(i), i])
        return found

    def ready_at(self, node: int) -> float:
        """With a PHY preset: when ``node``'s back-off may count again, DIFS (EIFS after
        an errored busy period) after its carrier last became idle."""
        return self.idle_since[node] + (self._eifs_s if self.errored[node] else self._difs_s)

    def frame_s(self, bits: int, rate_bps: float) -> float:
        """With a PHY preset: the air time of a data frame of ``bits`` payload bits at
        ``rate_bps`` (``Phy.frame_s``, kept per size and rate)."""
        key = (bits, rate_bps)
        found = self._frame_s.get(key)
        if found is None:
            timing = self.timing
            assert timing is not None
            found = self._frame_s[key] = timing.frame_s(bits, rate_bps)
        return found

    def mean_gain(self, a: int, b: int) -> float:
        """Mean power gain (path loss and the pair's shadowing) from ``a`` to ``b``."""
        loss = self._loss
        return loss.gain(self.distance(a, b)) * loss.shadowing_gain(self.key, a, b)

    def around(self, a: int) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
        """The other nodes within range of ``a``, ``a``'s mean power (mW, path loss and
        shadowing) at each, and each one's place in them (computed at once, vectorised,
        kept until nodes move)."""
        found = self._around[a]
        if found is None:
            near = self.near(a)
            near = near[near != a]
            xy = self._xy_array
            assert xy is not None
            d = np.hypot(*(xy[near] - xy[a]).T)
            loss = self._loss
            power = (self._tx_mw * loss.gains(d)
                     * loss.shadowing_gains(self.key, a, near))
            found = self._around[a] = (near, np.ascontiguousarray(power, dtype=np.float64),
                                       {n: j for j, n in enumerate(near.tolist())})
        return found

    def mean_powers(self, a: int) -> dict[int, float]:
        """``{b: mean power (mW) of a's signal at b}`` for every other ``b`` within range."""
        near, power, _ = self.around(a)
        return dict(zip(near.tolist(), power.tolist(), strict=True))

    def _gains(self, n: int) -> np.ndarray:
        """``n`` block-fading power gains (mean 1), from the stream ``radio.fading``, drawn
        in blocks of :data:`FADE_BLOCK` (a view: read it, do not keep it)."""
        buf, pos = self._buf, self._pos
        if pos + n > buf.size:
            rng = self._fade_rng
            if rng is None:
                rng = self._fade_rng = self._stream("radio.fading")
            size = max(FADE_BLOCK, n)
            if self._fading == "rayleigh":
                buf = rng.standard_exponential(size)
            else:  # rician
                s = self._scatter
                re = self._los + s * rng.standard_normal(size)
                im = s * rng.standard_normal(size)
                buf = re * re + im * im
            self._buf, pos = buf, 0
        self._pos = pos + n
        return buf[pos:pos + n]

    def _per_draw(self) -> float:
        """One uniform draw of the stream ``radio.reception`` (``reception="per"`` or
        ``"mcs"``), drawn in blocks of :data:`UNIFORM_BLOCK`: ``rng.random(n)`` gives the
        values of ``n`` calls ``rng.random()``, in order, and the stream is the medium's
        alone, so the draws are the same (one call costs about a microsecond)."""
        left = self._uniforms
        if not left:
            rng = self._per_rng
            if rng is None:
                rng = self._per_rng = self._stream("radio.reception")
            left.extend(reversed(rng.random(UNIFORM_BLOCK).tolist()))  # the next one last
        return left.pop()

    def _fade(self, a: int, b: int) -> float:
        """One block-fading power gain (mean 1) of the pair ``a``, ``b`` now."""
        if self._coherent is not None:
            return self._coherent.gain(a, b, self.env.now)
        return 1.0 if self._fading == "none" else float(self._gains(1)[0])

    def _faded(self, mean: np.ndarray) -> np.ndarray:
        """``mean`` times one block-fading power gain each."""
        return mean if self._fading == "none" else mean * self._gains(mean.size)

    # ------------------------------------------------------------------ transmissions
    def start(self, sender: int, receivers: Sequence[int], airtime_s: float, bits: int,
              meta: dict[str, Any] | None = None, *, mcs: Mcs | None = None) -> Transmission:
        """Put a packet on the air now for ``airtime_s`` seconds (at ``mcs`` with
        ``reception="mcs"``; ``None``: the basic rate)."""
        now = self.env._now  # (SimPy's field: its property costs a call)
        ends = self._ends
        if ends and ends[0][0] <= now + EPS_S:
            self._expire(now)
        if self._moving:
            self._refresh()
        tx_count = self.tx_count
        if tx_count[sender]:
            raise RuntimeError(f"node {self.ids[sender]!r} is already transmitting (one "
                               f"radio: its transmissions are queued)")
        rx_at = self.rx_at
        for rec in rx_at[sender]:  # half-duplex: it can no longer receive
            rec.lost = "half_duplex"
        near, mean, place = self._around[sender] or self.around(sender)
        # its power at every node in range, drawn at once (``_faded``, its common case
        # inlined: a slice of the block of draws)
        n, pos = mean.size, self._pos
        if self._fading == "none":
            power = mean
        elif self._coherent is not None:  # fading correlated in time: each pair's fade now
            power = mean * self._coherent.gains(sender, near, now)
        elif pos + n <= self._buf.size:
            self._pos = pos + n
            power = mean * self._buf[pos:pos + n]
        else:
            power = mean * self._gains(n)
        tx = Transmission(sender, receivers, now, now + airtime_s, bits, meta, mcs, near, power,
                          place)
        total = self._total
        model = self._model
        now_total = None
        if n:
            now_total = total[near] + power
            total[near] = now_total
            if self._receiving:  # receptions on the air
                if model is not None:  # their logs
                    self._log_totals(near, now, place)
                else:  # their segments' peaks
                    peak = self._peak
                    peak[near] = np.maximum(peak[near], now_total)
        receptions = tx.receptions
        for r in tx.receivers:
            j = place.get(r)
            if j is None:  # beyond the interference range (a far unicast receiver)
                rec = Reception(r, self._tx_mw * self.mean_gain(sender, r)
                                * self._fade(sender, r), False,
                                "half_duplex" if tx_count[r] else None)
            else:  # (``item``: the same float as ``float(power[j])``, cheaper)
                rec = Reception(r, power.item(j), True, "half_duplex" if tx_count[r] else None)
            others = rx_at[r]
            if model is not None:
                self._track(rec, others, now)
            elif others:  # a new segment at r: the receptions on the air keep its peak
                peak = self._peak
                top = peak.item(r)
                for other in others:
                    if top > other.acc:
                        other.acc = top
                peak[r] = total[r]
            else:
                self._peak[r] = total[r]
            receptions.append(rec)
            others.append(rec)
        self._receiving += len(receptions)
        tx_count[sender] = 1
        self.active[sender] = tx
        self.transmissions += 1
        heapq.heappush(ends, (tx.end, self.transmissions, tx))
        if self.sense_range_m is not None:
            if self._fresh_time != now:
                self._fresh, self._fresh_time = [], now
            self._fresh.append(tx)
            if self.timing is not None:
                self._carrier_on(sender)
                return tx
            sensed = self._sense_lists[sender] or self._sensed_list(sender)
            carrier = self.carrier
            if carrier is not None and carrier.waiting:
                carrier.carrier_busy(sensed)  # counts them too
            else:
                busy = self.busy_count
                for n in sensed:
                    busy[n] += 1
        elif self.power_sense is not None:
            self.power_sense.on(tx, now_total)
        return tx

    def _carrier_on(self, sender: int) -> None:
        """With a PHY preset: ``sender``'s transmission makes the carrier of those that
        sense it and its own busy (a second one at once makes the period errored); the
        counting back-offs among them freeze (one pass over the nodes)."""
        nodes = self._carrier_lists[sender] or self._carrier_list(sender)
        scheduler, busy, errored = self.carrier, self.busy_count, self.errored
        cd = scheduler.counting if scheduler is not None and scheduler.waiting else None
        found = []
        for n in nodes:
            count = busy[n] + 1
            busy[n] = count
            errored[n] = count > 1
            if cd is not None and cd[n]:
                found.append(n)
        if found:
            scheduler.freeze(found, sender)

    def _carrier_off(self, tx: Transmission) -> None:
        """With a PHY preset: ``tx`` ended; the carriers it kept busy go down (those that
        turn idle keep the time; the ones in back-off resume)."""
        nodes = self._carrier_lists[tx.sender] or self._carrier_list(tx.sender)
        scheduler, busy, idle = self.carrier, self.busy_count, self.idle_since
        backing = scheduler.backing if scheduler is not None and scheduler.waiting else None
        wake: list[int] = []
        release(nodes, busy, idle, tx.end, backing, wake)
        if wake:
            scheduler.wake(wake)

    def finish(self, tx: Transmission) -> dict[int, bool]:
        """The outcome of ``tx`` (``{receiver: received}``), at or after its end."""
        if tx.outcome is None:  # (``_expire`` inlined)
            now, end = self.env._now, tx.end
            limit = (now if now >= end else end) + EPS_S
            ends, decide = self._ends, self._decide
            while ends and ends[0][0] <= limit:
                decide(heapq.heappop(ends)[2])
        assert tx.outcome is not None
        return tx.outcome

    def settle(self, now: float) -> None:
        """Decide every transmission that has ended by ``now``."""
        ends = self._ends
        if ends and ends[0][0] <= now + EPS_S:
            self._expire(now)

    def _expire(self, now: float) -> None:
        ends, decide = self._ends, self._decide
        limit = now + EPS_S
        while ends and ends[0][0] <= limit:
            decide(heapq.heappop(ends)[2])

    def _decide(self, tx: Transmission) -> None:
        """Decide every reception of ``tx`` on the peak of its receiver's total (less its
        own signal), or with ``reception="mcs"`` on its log; take its power off the
        totals; free the carrier."""
        sender = tx.sender
        active = self.active
        del active[sender]
        self.tx_count[sender] = 0
        outcome: dict[int, bool] = {}
        rx_at, rx_energy = self.rx_at, self.rx_energy
        model = self._model
        receptions = tx.receptions
        if model is not None:
            rx_nodes, mask = self._rx_nodes, self._rx_mask
        else:
            noise, threshold, per = self.noise, self.threshold, self._per
            peak = self._peak
        for rec in receptions:
            r = rec.node
            at = rx_at[r]
            at.remove(rec)
            if model is not None:
                if not at:  # its last reception on the air
                    rx_nodes.discard(r)
                    mask[r] = False
                if rec.lost is None:  # one draw: lost below the PER of its intervals
                    self._decide_mcs(rec, tx)
            elif rec.lost is None:
                top = peak.item(r)
                if rec.acc > top:
                    top = rec.acc
                interference = top - rec.signal if rec.own else top
                if interference < 0.0:  # rounding: nothing else on the air
                    interference = 0.0
                if per is not None:  # one draw: lost below the PER of the lowest SINR
                    u = self._per_draw()
                    if u < per(rec.signal / (noise + interference), tx.bits):
                        rec.lost = ("collision" if u >= per(rec.signal / noise, tx.bits)
                                    else "outage")
                elif rec.signal < threshold * (noise + interference):
                    rec.lost = "collision" if rec.signal >= threshold * noise else "outage"
            lost = rec.lost
            outcome[r] = lost is None
            if lost is not None:
                tx.causes[r] = lost
            if rx_energy and r in rx_energy and lost != "half_duplex":
                tank, watts = rx_energy[r]
                tank.spend(watts * (tx.end - tx.start), self.env.now, "receive")
        tx.outcome = outcome
        self._receiving -= len(receptions)
        after = None  # the totals at tx.near after it (None: read them)
        near = tx.near
        if not active:  # nothing on the air: clear the totals' rounding
            self._total.fill(0.0)
        elif near is not None and near.size:
            total = self._total
            after = total[near] - tx.power
            total[near] = after
            if model is not None and self._receiving:
                self._log_totals(near, tx.end, tx.place)
        if self.sense_range_m is not None and self.timing is not None:
            self._carrier_off(tx)
        elif self.sense_range_m is not None:
            sensed = self._sense_lists[sender] or self._sensed_list(sender)
            carrier = self.carrier
            if carrier is not None and carrier.waiting:
                carrier.carrier_idle(sensed)  # counts them too
            else:
                busy = self.busy_count
                for n in sensed:
                    busy[n] -= 1
        elif self.power_sense is not None:
            self.power_sense.off(tx, after)
        if tx.causes or self.recorder.record_messages:
            self._record(tx)

    # ------------------------------------------------------------------ reception="mcs"
    def data_mcs(self, sender: int, receivers: Sequence[int], bits: int,
                 unicast: bool) -> Mcs | None:
        """With ``reception="mcs"``: the MCS of a data frame of ``bits`` from ``sender``:
        the radio's, or with ``data_rate="auto"`` the fastest whose packet error rate at the
        link's mean SNR (path loss and shadowing, no fading) is at most
        :data:`~bflnet.radio.phy.errors.AUTO_TARGET_PER` (a broadcast: the basic rate);
        ``None`` without ``reception="mcs"``."""
        model = self._model
        if model is None or self._data_mcs is not None:
            return self._data_mcs
        if not unicast or len(receivers) != 1:
            return model.basic
        key = (sender, receivers[0], bits)
        found = self._auto.get(key)
        if found is None:
            snr = self._tx_mw * self.mean_gain(sender, receivers[0]) / self.noise
            found = self._auto[key] = model.best(snr, bits, AUTO_TARGET_PER)
        return found

    def _log_totals(self, nodes: np.ndarray, now: float, place: dict[int, int]) -> None:
        """The totals at ``nodes`` (``place``: the same as a dict) changed at ``now``: each
        reception on the air there keeps the new one (only nodes with receptions on the
        air pay; each reception's log alone, so the order of the nodes does not matter)."""
        receiving = self._rx_nodes
        total, rx_at = self._total, self.rx_at
        if 4 * len(receiving) < nodes.size:  # few nodes receiving: each looked up
            for r in receiving:
                if r in place:
                    t = total.item(r)
                    for rec in rx_at[r]:
                        if rec.lost is None:
                            rec.log += (now, t)  # type: ignore[operator]
            return
        hit = nodes[self._rx_mask[nodes]]
        if hit.size:
            for r, t in zip(hit.tolist(), total[hit].tolist(), strict=True):
                for rec in rx_at[r]:
                    if rec.lost is None:  # (a lost one is not decided on its log)
                        rec.log += (now, t)  # type: ignore[operator]

    def _track(self, rec: Reception, others: list[Reception], now: float) -> None:
        """A reception starts at ``rec.node`` (``others``: those on the air there): its log
        starts; its preamble is detected or not, and it locks its receiver, is captured
        or lost to the frame its receiver is locked on (:mod:`bflnet.radio.phy.errors`)."""
        r = rec.node
        if not others:  # its first reception on the air
            self._rx_nodes.add(r)
            self._rx_mask[r] = True
        top = self._total.item(r)
        rec.log = [now, top]
        if rec.lost is not None:
            return
        signal, noise = rec.signal, self.noise
        interference = top - signal if rec.own else top
        if interference < 0.0:  # (as ``max(interference, 0.0)``, without the call)
            interference = 0.0
        if signal < PREAMBLE_SNR * (noise + interference):
            rec.lost = "collision" if signal >= PREAMBLE_SNR * noise else "outage"
            return
        for other in others:
            if other.locked and other.lost is None:  # its receiver follows another frame
                log = other.log
                assert log is not None
                if now - log[0] <= self._capture_s and signal >= CAPTURE_MARGIN * other.signal:
                    other.lost, other.locked = "collision", False  # captured
                    break
                rec.lost = "collision"
                return
        rec.locked = True

    def _decide_mcs(self, rec: Reception, tx: Transmission) -> None:
        """Decide a detected reception on the intervals of its log: lost iff one uniform
        draw ``u`` is below its packet error rate (no draw where that is 0); a
        ``collision`` if ``u`` would have passed at the SNR alone, else an ``outage``."""
        model = self._model
        assert model is not None and rec.log is not None
        mcs = tx.mcs or model.basic
        keep = model.success(mcs, tx.start, tx.end, rec.log, rec.signal, rec.own, self.noise)
        if keep >= 1.0:  # certain: no draw
            return
        u = self._per_draw()
        if u < 1.0 - keep:
            alone = model.success(mcs, tx.start, tx.end, [tx.start, 0.0], rec.signal, False,
                                  self.noise)
            rec.lost = "collision" if u >= 1.0 - alone else "outage"

    def _record(self, tx: Transmission) -> None:
        rec, ids, meta = self.recorder, self.ids, tx.meta
        for r, cause in tx.causes.items():
            if cause != "outage":
                row = {"node": ids[tx.sender], "peer": ids[r], "kind": "collision",
                       "cause": cause}
                if meta:
                    row.update(meta)
                rec.record_fields("mac", row)
        if rec.record_messages:
            rec.record("tx", node=ids[tx.sender], start_s=tx.start, end_s=tx.end,
                       bits=tx.bits, receivers=len(tx.receivers),
                       received=sum(tx.outcome.values()) if tx.outcome else 0,
                       **(meta or {}))

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
