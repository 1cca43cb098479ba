"""CSMA back-offs of every node of a shared medium, run by the medium's carrier changes.

A node in back-off counts ``counter`` idle slots of ``slot_s`` down and freezes while a
transmitter within sense range is on the air (:class:`~bflnet.radio.mac.Csma`). Instead
of waking each contender with SimPy events at every change of its carrier, the medium
tells this scheduler which nodes' carrier became busy or idle (:meth:`carrier_busy`,
:meth:`carrier_idle`): a busy carrier freezes a counting node in place (the slots that
ran out idle count; a deferral), an idle one resumes it, and the times at which
counters run out sit in one heap served by a single SimPy timer. A node's process wakes
once, when it may transmit; its back-off is then one ``backoff`` row (``cw``, the
``counter`` drawn, its ``deferrals``).

The rules are those of the event-per-change version: a node whose counter is zero
transmits unless it hears a transmission that began before this instant (two nodes
whose counters end in the same slot both transmit); a counter that runs out in the
slot in which another node starts transmits too.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import simpy

from bflnet.radio.events import timeout

#: Slots that ran out idle: ``floor(elapsed / slot + _SLOT_EPS)``.
_SLOT_EPS = 1e-6


class _Waiting:
    """One node's back-off in progress."""

    __slots__ = ("attempt", "counter", "counting", "cw", "deferrals", "done", "drawn", "gen",
                 "t0")

    def __init__(self, counter: int, attempt: int, cw: int, done: simpy.Event) -> None:
        self.counter, self.attempt, self.done = counter, attempt, done
        self.cw, self.drawn = cw, counter
        self.deferrals = 0
        self.counting = False
        self.gen = 0
        self.t0 = 0.0


class BackoffScheduler:
    """Every node's CSMA back-off on ``medium`` (module docstring); ``ids`` name the
    nodes in the rows."""

    def __init__(self, env: simpy.Environment, medium: Any, slot_s: float, recorder: Any,
                 ids: Sequence[Any]) -> None:
        self.env, self.medium, self.slot, self.recorder = env, medium, slot_s, recorder
        self.ids = list(ids)
        #: ``{node index: its back-off}`` of the nodes in back-off now.
        self.waiting: dict[int, _Waiting] = {}
        self._heap: list[tuple[float, int, int, int]] = []  # (time, seq, node, gen)
        self._seq = 0
        self._armed = math.inf  # when the timer in flight fires
        self._resume: list[int] = []  # nodes whose carrier became idle, not yet resumed
        #: Per node: whether it is counting down now (``_Waiting.counting``, as an array:
        #: a busy carrier looks only at the counting nodes among those that sense it).
        self.counting = np.zeros(len(self.ids), dtype=bool)
        medium.carrier = self

    def backoff(self, node: int, counter: int, attempt: int, cw: int) -> simpy.Event:
        """An event that fires when ``node`` may transmit, after ``counter`` idle slots
        (drawn from a window of ``cw``)."""
        done = self.env.event()
        state = self.waiting[node] = _Waiting(counter, attempt, cw, done)
        self._begin(node, state)
        return done

    def _fire(self, node: int, state: _Waiting) -> None:
        """The back-off of ``node`` ended: its row, and its process may transmit."""
        del self.waiting[node]
        state.gen += 1
        if state.counting:
            state.counting = self.counting[node] = False
        self.recorder.record_fields("mac", {
            "node": self.ids[node], "kind": "backoff", "attempt": state.attempt,
            "cw": state.cw, "counter": state.drawn, "deferrals": state.deferrals})
        state.done.succeed()

    def _begin(self, node: int, state: _Waiting) -> None:
        """Start (or resume) the countdown, or defer until the carrier is idle."""
        medium = self.medium
        now = self.env.now
        medium.settle(now)
        busy = medium.busy_count[node] > 0  # medium.busy(node), settled above
        if state.counter == 0 and not (busy and medium.busy(node, hear_now=False)):
            self._fire(node, state)
            return
        if busy:
            state.deferrals += 1
            if state.counting:
                state.counting = self.counting[node] = False
            return
        state.counting, state.t0 = True, now
        self.counting[node] = True
        state.gen += 1
        self._at(now + state.counter * self.slot, node, state.gen)

    def _at(self, t: float, node: int, gen: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, node, gen))
        if t < self._armed:
            self._armed = t
            env = self.env
            timeout(env, t - env._now).callbacks.append(self._tick)

    def _tick(self, _: Any) -> None:
        """Counters that ran out now transmit; arm the timer for the next one."""
        now, heap, get = self.env.now, self._heap, self.waiting.get
        if now < self._armed:  # a timer armed before an earlier one: superseded
            return
        self._armed = math.inf
        while heap and heap[0][0] <= now:
            _, _, node, gen = heapq.heappop(heap)
            state = get(node)
            if state is not None and state.gen == gen and state.counting:
                self._fire(node, state)
        while heap:
            t, _, node, gen = heap[0]
            state = get(node)
            if state is not None and state.gen == gen and state.counting:
                self._armed = t
                timeout(self.env, t - now).callbacks.append(self._tick)
                return
            heapq.heappop(heap)  # stale

    def carrier_busy(self, nodes: np.ndarray) -> None:
        """A transmission began within sense range of ``nodes`` (sorted): counting ones
        freeze (or transmit, if their counter ran out in this slot)."""
        counting = self.counting
        found = nodes[counting[nodes]]
        if not found.size:
            return
        waiting, now, slot = self.waiting, self.env.now, self.slot
        for n in found.tolist():
            state = waiting[n]
            elapsed = math.floor((now - state.t0) / slot + _SLOT_EPS)
            if elapsed >= state.counter:
                self._fire(n, state)
                continue
            state.counter -= elapsed
            state.counting = counting[n] = False
            state.gen += 1
            state.deferrals += 1

    def carrier_idle(self, nodes: list[int]) -> None:
        """The last transmission within sense range of ``nodes`` ended: frozen ones
        resume (in one event, after the medium has settled this instant)."""
        get = self.waiting.get
        wake = [n for n in nodes if (s := get(n)) is not None and not s.counting]
        if wake:
            if not self._resume:
                event = self.env.event()
                event.callbacks.append(self._resume_all)
                event.succeed()
            self._resume.extend(wake)

    def _resume_all(self, _: Any) -> None:
        nodes, self._resume = self._resume, []
        waiting, medium, counting = self.waiting, self.medium, self.counting
        now = self.env.now
        medium.settle(now)
        busy, slot, heap, push = medium.busy_count, self.slot, self._heap, heapq.heappush
        env, tick = self.env, self._tick
        for n in dict.fromkeys(nodes):
            state = waiting.get(n)
            if state is None or state.counting:
                continue
            if state.counter == 0:
                self._begin(n, state)
            elif busy[n]:
                state.deferrals += 1
            else:  # _begin, the carrier known idle (``_at`` inlined)
                state.counting, state.t0 = True, now
                counting[n] = True
                state.gen += 1
                self._seq += 1
                t = now + state.counter * slot
                push(heap, (t, self._seq, n, state.gen))
                if t < self._armed:  # (each earlier one its own timer: the order of
                    self._armed = t  # simultaneous events stays that of every release)
                    timeout(env, t - now).callbacks.append(tick)
