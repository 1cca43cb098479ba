"""CSMA back-offs of every node of a shared medium, run by the medium's carrier changes.

A node in back-off counts ``counter`` idle slots of ``slot_s`` down and freezes while a
transmitter within sense range is on the air (:class:`~bflnet.radio.mac.Csma`). Instead
of waking each contender with SimPy events at every change of its carrier, the medium
tells this scheduler which nodes' carrier became busy or idle (:meth:`carrier_busy`,
:meth:`carrier_idle`): a busy carrier freezes a counting node in place (the slots that
ran out idle count; a deferral), an idle one resumes it, and the times at which
counters run out are served by a single SimPy timer. A node's process wakes once, when
it may transmit; its back-off is then one ``backoff`` row (``cw``, the ``counter``
drawn, its ``deferrals``).

The rules are those of the event-per-change version: a node whose counter is zero
transmits unless it hears a transmission that began before this instant (two nodes
whose counters end in the same slot both transmit); a counter that runs out in the
slot in which another node starts transmits too.

Bookkeeping. The nodes that resume together (in one event, when their carriers went
idle at one instant) start their countdowns as one *cohort*: one entry in a heap, keyed
by the earliest run-out among its members still counting, rather than one entry per
node. Every countdown is numbered by a scheduler-wide sequence (its cohort's number);
a node's current number is 0 once it is frozen or done, so a cohort's stale members
are recognised without touching the cohort when they freeze. Run-outs at the same time
are served in the order their countdowns began (cohort number, then place in the
cohort), as one heap entry per node would serve them.

With a PHY preset (``medium.timing``, :mod:`bflnet.radio.phy.timing`) a countdown begins only
once the carrier has been idle for DIFS (EIFS after an errored busy period,
:meth:`~bflnet.radio.medium.SharedMedium.ready_at`), and a new back-off at least DIFS
after it is asked for (the node's own exchange just ended): its slots are counted from
then (``t0`` may lie ahead), a counter of zero included, and a carrier that turns busy
before ``t0`` freezes it with no slot counted. A node's own transmission (an ACK it
sends) freezes its own countdown and never makes it transmit. A node cannot sense a
transmission before its vulnerable window has passed (propagation delay, aCCATime and
aRxTxTurnaroundTime, :func:`~bflnet.radio.phy.sensing.window_s`): one whose counter
runs out within it keeps counting and transmits; the others freeze with the slots that
ran out idle before it counted.

The timer: ``_armed`` is the time of the timer in flight for the earliest run-out; a
countdown that runs out earlier arms a new timer (the one in flight stays, and does
nothing when it fires). Only the first timer made for a given time can serve the
run-outs then (it comes first among the events of that instant), so a timer is not made
again for a time that already has one in flight; and since several are often made in a
row (each resumed node whose run-out is earlier than the last), a timer's event id is
taken when it is made, but its event goes into SimPy's queue under that id only once it
is the one armed (:mod:`bflnet.radio.events`, which reads SimPy's private ``_now``,
``_queue`` and ``_eid``: the same queue keys as SimPy's own calls).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import simpy

from bflnet.radio.events import call_soon, pending, succeed, timeout_at
from bflnet.radio.phy.sensing import window_s

#: Slots that ran out idle: ``floor(elapsed / slot + _SLOT_EPS)``.
_SLOT_EPS = 1e-6


class _Waiting:
    """One node's back-off in progress (``t0``: when its current countdown began)."""

    __slots__ = ("attempt", "counter", "cw", "deferrals", "done", "drawn", "t0")

    def __init__(self, counter: int, attempt: int, cw: int, done: simpy.Event) -> None:
        self.counter, self.attempt, self.done = counter, attempt, done
        self.cw, self.drawn = cw, counter
        self.deferrals = 0
        self.t0 = 0.0


class _Cohort:
    """Countdowns that began together: ``nodes`` by run-out (``times``), ties in the
    order they began; those before ``pos`` are frozen or done."""

    __slots__ = ("nodes", "pos", "times")

    def __init__(self, nodes: list[int], times: list[float]) -> None:
        self.nodes, self.times, self.pos = nodes, times, 0


class BackoffScheduler:
    """Every node's CSMA back-off on ``medium`` (module docstring); ``ids`` name the
    nodes in the rows."""

    def __init__(self, env: simpy.Environment, medium: Any, slot_s: float, recorder: Any,
                 ids: Sequence[Any]) -> None:
        self.env, self.medium, self.slot, self.recorder = env, medium, slot_s, recorder
        self.ids = list(ids)
        k = len(self.ids)
        #: ``{node index: its back-off}`` of the nodes in back-off now.
        self.waiting: dict[int, _Waiting] = {}
        #: Cohorts: ``(earliest run-out among its counting members (or earlier: stale),
        #: cohort number, cohort)``.
        self._heap: list[tuple[float, int, _Cohort]] = []
        self._seq = 0  # the last countdown (cohort) number given
        #: Per node: the number of the countdown it is in, 0 when it is not counting
        #: (read by the carrier sense: only counting nodes are told a carrier turned
        #: busy, :meth:`freeze`); whether it is in back-off.
        self.counting = [0] * k
        self.backing = [False] * k
        self._armed = math.inf  # when the timer in flight fires
        #: ``{time: event id}`` of the timers made (module docstring), -1 once put in
        #: SimPy's queue (those passed are forgotten now and then).
        self._timers: dict[float, int] = {}
        self._resume: list[int] = []  # nodes whose carrier became idle, not yet resumed
        #: The DCF timing (``None``: no interframe spaces, ``phy="ideal"``).
        self.timing = getattr(medium, "timing", None)
        #: DIFS (with a PHY preset), a plain float.
        self._difs_s = self.timing.difs_s if self.timing is not None else 0.0
        #: Per transmitter: ``{node: vulnerable window (window_s) from it}``, kept while
        #: the positions (``medium._xy_array``, ``_windows_xy``) stay the same.
        self._windows: dict[int, dict[int, float]] = {}
        self._windows_xy: Any = None
        medium.carrier = self

    def backoff(self, node: int, counter: int, attempt: int, cw: int) -> simpy.Event:
        """An event that fires when ``node`` may transmit, after ``counter`` idle slots
        (drawn from a window of ``cw``)."""
        done = pending(self.env)
        state = self.waiting[node] = _Waiting(counter, attempt, cw, done)
        self.backing[node] = True
        self._begin(node, state)
        return done

    def _fire(self, node: int, state: _Waiting) -> None:
        """The back-off of ``node`` ended: its row, and its process may transmit."""
        succeed(self._end(node, state))

    def _end(self, node: int, state: _Waiting) -> simpy.Event:
        """The back-off of ``node`` ended: its row; its event, not triggered yet."""
        del self.waiting[node]
        self.backing[node] = False
        self.counting[node] = 0
        self.recorder.record_fields("mac", {
            "node": self.ids[node], "kind": "backoff", "attempt": state.attempt,
            "cw": state.cw, "counter": state.drawn, "deferrals": state.deferrals})
        return state.done

    def _begin(self, node: int, state: _Waiting) -> None:
        """Start (or resume) the countdown, or defer until the carrier is idle."""
        medium = self.medium
        now = self.env._now
        medium.settle(now)
        busy = medium.busy_count[node] > 0  # medium.busy(node), settled above
        if self.timing is not None:
            if busy:
                state.deferrals += 1
            else:
                self._count(node, state, max(now + self._difs_s, medium.ready_at(node)))
            return
        if state.counter == 0 and not (busy and medium.busy(node, hear_now=False)):
            self._fire(node, state)
            return
        if busy:
            state.deferrals += 1
            return
        self._seq += 1
        seq = self._seq
        t = now + state.counter * self.slot
        state.t0 = now
        self.counting[node] = seq
        heapq.heappush(self._heap, (t, seq, _Cohort([node], [t])))
        if t < self._armed:
            self._arm(t)

    def _count(self, node: int, state: _Waiting, t0: float) -> None:
        """With a PHY preset: count ``node``'s slots down from ``t0`` (now or later)."""
        self._seq += 1
        seq = self._seq
        t = t0 + state.counter * self.slot
        state.t0 = t0
        self.counting[node] = seq
        heapq.heappush(self._heap, (t, seq, _Cohort([node], [t])))
        if t < self._armed:
            self._arm(t)

    def _arm(self, t: float, queue: bool = True) -> None:
        """The earliest run-out is now ``t``: a timer for it. Only the first timer made
        for a time matters, so its event id is taken when it is first made, and its
        event is put in SimPy's queue (under that id) only while it is the one armed;
        ``queue=False``: not yet (an earlier one may follow at once, :meth:`_queue`)."""
        self._armed = t
        if queue:
            self._queue(t)
        elif t not in self._timers:
            self._timers[t] = next(self.env._eid)

    def _queue(self, t: float) -> None:
        """Put the timer made for ``t`` (now, if not made yet) in SimPy's queue."""
        env, timers = self.env, self._timers
        eid = timers.get(t)
        if eid is None:
            eid = next(env._eid)
        elif eid < 0:  # queued already
            return
        timers[t] = -1
        if t > env._now:
            timeout_at(env, t, eid, self._tick)
        else:  # (not reached: a run-out is at least a slot ahead)
            timeout_at(env, env._now, next(env._eid), self._tick)

    def _tick(self, _: Any) -> None:
        """Counters that ran out now transmit; arm the timer for the next one."""
        now, heap, cd = self.env._now, self._heap, self.counting
        if len(self._timers) > 64:  # forget the timers passed
            self._timers = {t: e for t, e in self._timers.items() if t > now}
        if now < self._armed:  # a timer armed before an earlier one: superseded
            return
        self._armed = math.inf
        due: list[tuple[float, int, int, int]] = []  # (run-out, cohort, place, node)
        pop, push = heapq.heappop, heapq.heappush
        while heap and heap[0][0] <= now:
            _, seq, cohort = pop(heap)
            nodes, times = cohort.nodes, cohort.times
            i, end = cohort.pos, len(nodes)
            while i < end:
                n = nodes[i]
                if cd[n] == seq:
                    t = times[i]
                    if t > now:
                        break
                    due.append((t, seq, i, n))
                i += 1
            if i < end:
                cohort.pos = i
                push(heap, (times[i], seq, cohort))
        if len(due) > 1:
            due.sort()
        waiting = self.waiting
        done = [self._end(n, waiting[n]) for _t, _seq, _i, n in due]
        while heap:  # the earliest run-out still to come (stale keys refreshed)
            key, seq, cohort = heap[0]
            nodes = cohort.nodes
            i, end = cohort.pos, len(nodes)
            while i < end and cd[nodes[i]] != seq:
                i += 1
            if i < end:
                t = cohort.times[i]
                cohort.pos = i
                if t == key:
                    self._arm(key)
                    break
                heapq.heapreplace(heap, (t, seq, cohort))
            else:
                pop(heap)
        if not done:
            return
        queue = self.env._queue
        if len(done) == 1 and (not queue or queue[0][0] > now):
            # Nothing else happens at this instant: the node's event would be the very
            # next one SimPy processes, so its callbacks run now, as SimPy's step would.
            event = done[0]
            callbacks, event.callbacks = event.callbacks, None
            event._ok, event._value = True, None
            for callback in callbacks:
                callback(event)
        else:
            for event in done:
                succeed(event)

    def carrier_busy(self, nodes: list[int], own: int = -1) -> None:
        """A transmission began within sense range of ``nodes`` (sorted): their busy
        counts (``medium.busy_count``) go up; counting ones freeze (or transmit, if their
        counter ran out in this slot; ``own``, the transmitting node, only freezes)."""
        busy, cd = self.medium.busy_count, self.counting
        found = []
        for n in nodes:
            busy[n] += 1
            if cd[n]:
                found.append(n)
        if found:
            self.freeze(found, own)

    def freeze(self, found: list[int], own: int = -1) -> None:
        """A transmission of ``own`` (-1: unknown) began and the carrier of the counting
        nodes ``found`` (in order) turned busy (their busy counts already up): each
        freezes with the slots that ran out idle, or transmits if its counter ran out in
        this slot or (with a PHY preset) runs out before it senses the transmission
        (:func:`~bflnet.radio.phy.sensing.window_s`)."""
        waiting, now, slot, timing = self.waiting, self.env._now, self.slot, self.timing
        cd = self.counting
        windows: dict[int, float] | None = None
        if timing is not None and own >= 0:
            xy = getattr(self.medium, "_xy_array", None)
            if xy is not self._windows_xy:  # the nodes moved: the windows again
                self._windows, self._windows_xy = {}, xy
            windows = self._windows.get(own)
            if windows is None:
                windows = self._windows[own] = {}
        # A countdown that begins a slot or more from now (still in DIFS or EIFS, as
        # after an ACK's SIFS) freezes with no slot counted: its vulnerable window (at
        # most a slot) cannot reach its start, so the general rule below would give the
        # same; checked first, it spares the busy period's many such nodes that work.
        soon = now + slot
        for n in found:
            state = waiting[n]
            t0 = state.t0
            if t0 >= soon:
                cd[n] = 0
                state.deferrals += 1
                continue
            ran = (now - t0) / slot + _SLOT_EPS
            if windows is not None and n != own:  # the vulnerable window
                if ran >= 0.0 and math.floor(ran) >= state.counter:
                    self._fire(n, state)  # it runs out now
                    continue
                # slots that run out before it senses this transmission
                window = windows.get(n)
                if window is None:
                    window = windows[n] = window_s(timing, self.medium.distance(own, n))
                ran = (now + window - state.t0) / slot - _SLOT_EPS
                if ran > state.counter:
                    continue  # it runs out first: it keeps counting, and transmits
            cd[n] = 0
            if ran >= 0.0:  # (before t0: still in DIFS or EIFS, no slot counted)
                elapsed = math.floor(ran)
                if elapsed >= state.counter and n != own:
                    self._fire(n, state)
                    continue
                state.counter -= min(elapsed, state.counter)
            state.deferrals += 1

    def carrier_idle(self, nodes: list[int]) -> None:
        """A transmission within sense range of ``nodes`` (sorted) ended: their busy
        counts go down; those in back-off whose carrier became idle resume (in one
        event, after the medium has settled this instant). None of them is counting: a
        countdown begins on an idle carrier and freezes when it turns busy."""
        busy, backing = self.medium.busy_count, self.backing
        wake = []
        for n in nodes:
            left = busy[n] - 1
            busy[n] = left
            if not left and backing[n]:
                wake.append(n)
        if wake:
            self.wake(wake)

    def wake(self, nodes: list[int]) -> None:
        """The carrier of ``nodes`` (in back-off) became idle: they resume, in one event
        after the medium has settled this instant (with those woken before in it)."""
        if not self._resume:
            call_soon(self.env, self._resume_all)
        self._resume.extend(nodes)

    def _resume_all(self, _: Any) -> None:
        nodes, self._resume = self._resume, []
        waiting, medium, cd = self.waiting, self.medium, self.counting
        now = self.env._now
        medium.settle(now)
        busy, slot, timing = medium.busy_count, self.slot, self.timing
        if timing is not None:  # medium.ready_at(n), inlined: idle since, then DIFS or EIFS
            idle, errored = medium.idle_since, medium.errored
            difs, eifs = medium._difs_s, medium._eifs_s
        self._seq += 1
        seq = self._seq  # the cohort of the nodes that count down from now
        keep: list[int] = []
        kept: list[float] = []
        for n in dict.fromkeys(nodes):
            state = waiting.get(n)
            if state is None or cd[n]:
                continue
            if state.counter == 0 and timing is None:
                self._begin(n, state)
            elif busy[n]:
                state.deferrals += 1
            else:
                if timing is None:
                    t0 = now
                else:
                    t0 = idle[n] + (eifs if errored[n] else difs)
                    if not t0 > now:  # max(now, ready_at)
                        t0 = now
                t = t0 + state.counter * slot
                state.t0 = t0
                cd[n] = seq
                keep.append(n)
                kept.append(t)
                if t < self._armed:  # each earlier one its own timer, in this order
                    self._arm(t, queue=False)
        if self._armed < math.inf:
            self._queue(self._armed)
        if keep:
            if len(keep) > 1:  # by run-out, ties in the order they began (a stable sort)
                order = sorted(range(len(kept)), key=kept.__getitem__)
                keep = [keep[i] for i in order]
                kept = [kept[i] for i in order]
            heapq.heappush(self._heap, (kept[0], seq, _Cohort(keep, kept)))
