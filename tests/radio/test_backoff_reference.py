"""The CSMA back-off scheduler gives the rows of a plain reference: one heap entry per
countdown, and a SimPy timer (``env.timeout``) at every arm, events made by SimPy's own
calls. The scheduler's cohorts, its timers made once per time and its direct events must
change nothing: the same rows, in the same order, bit for bit."""

from __future__ import annotations

import heapq
import math
from dataclasses import replace
from types import SimpleNamespace

import networkx as nx
import pytest

import bflnet.radio.air as air
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec, make_mac
from bflnet.simulator import Simulation

RADIO = RadioSpec(tx_power_dbm=-12.7, bandwidth_hz=1e6, noise_figure_db=7.0, coding_rate=1.0,
                  sinr_threshold_db=0.0, pathloss=LogDistance(3.0, 1.0, 40.0),
                  fading="rayleigh")


class ReferenceScheduler:
    """The back-off rules of :mod:`bflnet.radio.backoff`, written plainly."""

    def __init__(self, env, medium, slot_s, recorder, ids):
        self.env, self.medium, self.slot, self.recorder = env, medium, slot_s, recorder
        self.ids = list(ids)
        self.waiting = {}
        self.counting = {}  # node: the number of its countdown
        self.heap = []  # (run-out, countdown number, node)
        self.seq = 0
        self.armed = math.inf
        self.resume = []
        medium.carrier = self

    def backoff(self, node, counter, attempt, cw):
        done = self.env.event()
        state = self.waiting[node] = SimpleNamespace(
            counter=counter, drawn=counter, attempt=attempt, cw=cw, deferrals=0, done=done,
            t0=0.0)
        self.begin(node, state)
        return done

    def fire(self, node, state):
        del self.waiting[node]
        self.counting.pop(node, None)
        self.recorder.record_fields("mac", {
            "node": self.ids[node], "kind": "backoff", "attempt": state.attempt,
            "cw": state.cw, "counter": state.drawn, "deferrals": state.deferrals})
        state.done.succeed()

    def begin(self, node, state):
        medium, now = self.medium, self.env.now
        medium.settle(now)
        busy = medium.busy_count[node] > 0
        if state.counter == 0 and not (busy and medium.busy(node, hear_now=False)):
            self.fire(node, state)
        elif busy:
            state.deferrals += 1
        else:
            self.count(node, state, now)

    def count(self, node, state, now):
        self.seq += 1
        state.t0 = now
        self.counting[node] = self.seq
        t = now + state.counter * self.slot
        heapq.heappush(self.heap, (t, self.seq, node))
        if t < self.armed:
            self.armed = t
            self.env.timeout(t - now).callbacks.append(self.tick)

    def tick(self, _):
        now = self.env.now
        if now < self.armed:
            return
        self.armed = math.inf
        while self.heap and self.heap[0][0] <= now:
            _, seq, node = heapq.heappop(self.heap)
            if self.counting.get(node) == seq:
                self.fire(node, self.waiting[node])
        while self.heap:
            t, seq, node = self.heap[0]
            if self.counting.get(node) == seq:
                self.armed = t
                self.env.timeout(t - now).callbacks.append(self.tick)
                return
            heapq.heappop(self.heap)

    def carrier_busy(self, nodes):
        busy, now = self.medium.busy_count, self.env.now
        for n in nodes:
            busy[n] += 1
        for n in nodes:
            if n in self.counting:
                del self.counting[n]
                state = self.waiting[n]
                elapsed = math.floor((now - state.t0) / self.slot + 1e-6)
                if elapsed >= state.counter:
                    self.fire(n, state)
                else:
                    state.counter -= elapsed
                    state.deferrals += 1

    def carrier_idle(self, nodes):
        busy = self.medium.busy_count
        wake = []
        for n in nodes:
            busy[n] -= 1
            if busy[n] == 0 and n in self.waiting and n not in self.counting:
                wake.append(n)
        if wake:
            if not self.resume:
                event = self.env.event()
                event.callbacks.append(self.resume_all)
                event.succeed()
            self.resume.extend(wake)

    def resume_all(self, _):
        nodes, self.resume = self.resume, []
        now = self.env.now
        self.medium.settle(now)
        for n in dict.fromkeys(nodes):
            state = self.waiting.get(n)
            if state is None or n in self.counting:
                continue
            if state.counter == 0:
                self.begin(n, state)
            elif self.medium.busy_count[n]:
                state.deferrals += 1
            else:
                self.count(n, state, now)


def graph(k: int, side: float) -> nx.Graph:
    g = nx.random_geometric_graph(k, 30.0 / side, seed=k)
    pos = {n: (side * x, side * y) for n, (x, y) in nx.get_node_attributes(g, "pos").items()}
    nx.set_node_attributes(g, pos, "pos")
    return g


def rows(g: nx.Graph, medium: SharedMediumSpec, broadcast: bool, rounds: int,
         mtu_bits: int = 12_000) -> list[dict]:
    sim = Simulation(1, record_messages=True)
    sim.build_network(g, medium=medium, mtu_bits=mtu_bits)
    learner = ConsensusAveraging({k: float(k) for k in g})
    sim.run(ConsensusProtocol(learner, "metropolis-hastings", StopRule(max_iterations=rounds),
                              eval_every=1, broadcast=broadcast))
    return sim.recorder.rows


CASES = [  # (K, side m, csma settings, radio, broadcast, rounds, mtu)
    (16, 70.0, {}, RADIO, False, 6, 12_000),
    (16, 70.0, {}, RADIO, True, 6, 12_000),
    (16, 70.0, {"cw_min": 1, "cw_max": 4, "retry_limit": 2}, RADIO, False, 6, 12_000),
    (16, 70.0, {"cw_min": 2, "cw_max": 8}, replace(RADIO, latency_s=3e-5), False, 6, 16),
    (60, 140.0, {}, RADIO, False, 3, 12_000),
    (60, 140.0, {"cw_min": 2, "cw_max": 4, "retry_limit": 1}, RADIO, True, 3, 12_000),
]


@pytest.mark.parametrize(("k", "side", "csma", "radio", "broadcast", "rounds", "mtu"), CASES)
def test_scheduler_rows_equal_the_reference(monkeypatch, k, side, csma, radio, broadcast,
                                            rounds, mtu):
    g = graph(k, side)
    medium = SharedMediumSpec(radio, make_mac("csma", **csma))
    fast = rows(g, medium, broadcast, rounds, mtu)
    monkeypatch.setattr(air, "BackoffScheduler", ReferenceScheduler)
    plain = rows(g, medium, broadcast, rounds, mtu)
    backoffs = [r for r in fast if r.get("kind") == "backoff"]
    assert len(backoffs) > 50 and any(r["deferrals"] for r in backoffs)
    assert fast == plain
