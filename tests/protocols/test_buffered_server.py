"""The buffered asynchronous server (FedBuff): every agent loops download, compute,
upload; the server merges every B arrivals and records each update's staleness."""

import doctest

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols import buffered_server
from bflnet.protocols.buffered_server import BufferedServerProtocol, staleness_weight
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import FixedStepTime, Simulation, Work
from bflnet.simulator.compute import LogNormalTime, TraceTime


class PullToTargets(GlobalStateLearner):
    """State: one number; agent k's update is half the way from it to ``k``; merges
    average the deltas (weighted: ``x + (1/n) Σ a_i Δ_i``). Records the merges' weights."""

    combines = Combines.AVERAGED

    def __init__(self):
        self.weights = []

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state=None, rng=None):
        return Update(0.5 * (agent - state), Work(steps=1))

    def merge(self, state, updates):
        return state + np.mean([u.payload for u in updates], axis=0)

    def merge_weighted(self, state, updates, weights):
        self.weights.append(list(weights))
        total = sum(a * u.payload for a, u in zip(weights, updates, strict=True))
        return state + total / len(updates)

    def evaluate(self, state):
        return {"x": float(state[0])}


class NoWeights(PullToTargets):
    merge_weighted = GlobalStateLearner.merge_weighted


def run(K, stop, compute, learner=None, seed=0, channel=None, **protocol):
    sim = Simulation(seed)
    sim.build_network(nx.empty_graph(K), server=True, compute=compute, channel=channel)
    learner = learner if learner is not None else PullToTargets()
    return sim.run(BufferedServerProtocol(learner, stop, **protocol)).frame


def test_merges_every_b_arrivals_with_the_staleness_of_each_update():
    # ideal links; agent 0 computes 1 s, agent 1 3 s; B = 2
    trace = TraceTime({"0": [1.0], "1": [3.0]})
    frame = run(2, StopRule(max_iterations=3), trace, buffer_size=2)
    it = frame[frame.event == "iteration"]
    # merge 1 at t=2: agent 0's updates from t=0 and t=1 (both from version 0); merge 2 at
    # t=3: agent 1's (downloaded version 0 at t=0, staleness 1) and agent 0's (version 1);
    # merge 3 at t=5: agent 0's from t=3 and t=4 (agent 1's next arrives at t=6)
    assert it.time_s.tolist() == [2.0, 3.0, 5.0]
    assert it.iteration.tolist() == [1, 2, 3]
    assert it.updates.tolist() == [2, 2, 2]
    merged = frame[frame.event == "merged_update"]
    assert merged.node.tolist() == [0, 0, 1, 0, 0, 0]
    assert merged.downloaded_version.tolist() == [0, 0, 0, 1, 2, 2]
    assert merged.staleness.tolist() == [0, 0, 1, 0, 0, 0]
    assert merged.download_s.tolist() == [0.0, 1.0, 0.0, 2.0, 3.0, 4.0]
    assert it.staleness_max.tolist() == [0, 1, 0]
    assert it.staleness_mean.tolist() == [0.0, 0.5, 0.0]
    downloads = frame[frame.event == "download"]
    assert downloads[downloads.node == 1].time_s.tolist() == [0.0, 3.0]


def test_staleness_weights_reach_the_learners_weighted_merge():
    learner = PullToTargets()
    trace = TraceTime({"0": [1.0], "1": [3.0]})
    frame = run(2, StopRule(max_iterations=2), trace, learner=learner, buffer_size=2,
                staleness_weighted=True)
    assert learner.weights == [[1.0, 1.0], [staleness_weight(1), 1.0]]
    merged = frame[frame.event == "merged_update"]
    assert merged.weight.tolist() == pytest.approx([1.0, 1.0, 2 ** -0.5, 1.0], rel=1e-15)
    # x: 0 -> 0 + mean(0, 0) = 0 (agent 0 pulls to 0); then (1/2)(w·0.5·(1-0) + 0.5·(0-0))
    assert frame[frame.event == "iteration"].x.tolist() == pytest.approx([0.0, 0.25 * 2**-0.5])


def test_weighting_needs_a_weighted_merge_and_b_at_most_k():
    with pytest.raises(ValueError, match="^staleness_weighted: NoWeights has no weighted"):
        BufferedServerProtocol(NoWeights(), StopRule(max_iterations=1), staleness_weighted=True)
    with pytest.raises(ValueError, match=r"^buffer_size: must be <= the number of agents \(2\)"):
        run(2, StopRule(max_iterations=1), TraceTime({"0": [1.0], "1": [1.0]}), buffer_size=3)
    with pytest.raises(ValueError, match="^retry_s: must be a finite number"):
        BufferedServerProtocol(PullToTargets(), StopRule(max_iterations=1), retry_s=float("nan"))


def test_lost_messages_end_a_cycle_and_the_agent_starts_again():
    sim = Simulation(2, record_messages=True)
    sim.build_network(nx.empty_graph(3), server=True, compute=LogNormalTime(0.1, sigma=0.5),
                      channel=FixedRateChannel(1e4, 0.01, loss_prob=0.4), max_attempts=1)
    frame = sim.run(BufferedServerProtocol(PullToTargets(), StopRule(max_iterations=15),
                                           buffer_size=2)).frame
    ups = frame[(frame.event == "message") & (frame.kind == "update")]
    assert ups.dropped.sum() > 0
    merged = frame[frame.event == "merged_update"]
    # every merged update is one delivered upload (the last merge may leave some waiting)
    assert len(merged) == 30 <= (ups.dropped == 0).sum()


def test_same_seed_same_frame():
    kwargs = dict(compute=LogNormalTime(0.1, sigma=1.0), seed=5, buffer_size=2,
                  channel=FixedRateChannel(1e4, 0.01), staleness_weighted=True)
    a = run(4, StopRule(max_iterations=20), **kwargs)
    b = run(4, StopRule(max_iterations=20), **kwargs)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a[a.event == "merged_update"].staleness.max() > 0


def test_a_time_limit_stops_after_the_merge_that_passes_it():
    frame = run(3, StopRule(max_time_s=5.0), LogNormalTime(0.5, sigma=0.5, per="update"),
                seed=1, buffer_size=1)
    it = frame[frame.event == "iteration"]
    assert it.time_s.iloc[-1] >= 5.0 > it.time_s.iloc[-2]


def test_doctests():
    result = doctest.testmod(buffered_server)
    assert result.failed == 0 and result.attempted >= 2


class Undeclared(PullToTargets):
    combines = None


def test_a_buffer_of_several_updates_needs_a_declaration_that_merges_several():
    stop = StopRule(max_iterations=2)
    assert len(run(3, stop, FixedStepTime(0.01), Undeclared(), buffer_size=1)) > 0
    with pytest.raises(ValueError) as caught:
        run(3, stop, FixedStepTime(0.01), Undeclared(), buffer_size=2)
    assert str(caught.value) == (
        "buffered server: learner Undeclared declares nothing (no combines attribute); "
        "merging 2 updates at once needs combines = Combines.ADDITIVE or Combines.AVERAGED "
        "or Combines.PARTICLES (bflnet.learners.base.Combines)")
