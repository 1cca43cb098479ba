"""The parameter server's per-round deadline: updates that arrive late are dropped from the
merge and written down; with no deadline the run is the plain synchronous one."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents, UniformSelector
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation, Work
from bflnet.simulator.compute import LogNormalTime, TraceTime


class SumOfAgents(GlobalStateLearner):
    """State: one slot per agent; an agent's update adds its id + 1 to its slot."""

    combines = Combines.ADDITIVE

    def __init__(self, K):
        self.K = K

    def init(self, rng):
        return np.zeros(self.K)

    def local_update(self, agent, state, agent_state=None, rng=None):
        return Update(np.eye(self.K)[agent] * (agent + 1), Work(steps=1))

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def evaluate(self, state):
        return {"total": float(state.sum())}


def run(K, stop, compute, selector=None, seed=0, **protocol):
    sim = Simulation(seed)
    sim.build_network(nx.empty_graph(K), server=True, compute=compute,
                      channel=protocol.pop("channel", None))
    learner = SumOfAgents(K)
    result = sim.run(ParameterServerProtocol(learner, stop, selector=selector or AllAgents(),
                                             **protocol))
    return result


def test_no_deadline_is_the_plain_synchronous_run():
    kwargs = dict(compute=LogNormalTime(0.1, sigma=1.0), selector=UniformSelector(3),
                  channel=FixedRateChannel(1e4, 0.01, loss_prob=0.2), seed=4)
    plain = run(6, StopRule(max_iterations=30), **kwargs).frame
    explicit = run(6, StopRule(max_iterations=30), deadline_s=None, **kwargs).frame
    pd.testing.assert_frame_equal(plain, explicit, check_exact=True)
    assert "late" not in plain.columns and "late_update" not in set(plain.event)
    assert len(plain[plain.event == "iteration"]) == 30


def test_late_updates_are_dropped_recorded_and_their_agent_skipped_while_busy():
    # ideal links; agent k always computes 1, 2, 5 seconds; deadline 3 s
    trace = TraceTime({"0": [1.0], "1": [2.0], "2": [5.0]})
    result = run(3, StopRule(max_iterations=3), trace, deadline_s=3.0)
    frame = result.frame
    it = frame[frame.event == "iteration"]
    # round 1 closes at its deadline (t=3) without agent 2; round 2 (t=3..5) skips agent 2,
    # busy until t=5, and ends when agents 0 and 1 are in; round 3 closes at t=8
    assert it.time_s.tolist() == [3.0, 5.0, 8.0]
    assert it.updates.tolist() == [2, 2, 2]
    assert it.late.tolist() == [1, 0, 1]
    assert it.busy.tolist() == [0, 1, 0]
    assert it.total.tolist() == [3.0, 6.0, 9.0]  # agent 2's slot (3 per update) never grows
    late = frame[frame.event == "late_update"]
    assert late.node.tolist() == [2]
    assert late.time_s.tolist() == [5.0]
    assert late["round"].tolist() == [1]
    assert late.lateness_s.tolist() == [2.0]
    assert late.sent_s.tolist() == [5.0] and late.download_s.tolist() == [0.0]
    merged = frame[frame.event == "merged_update"]
    assert merged.node.tolist() == [0, 1, 0, 1, 0, 1]
    assert merged.arrived_s.tolist() == [1.0, 2.0, 4.0, 5.0, 6.0, 7.0]
    assert (merged.staleness == 0).all()


def test_a_round_whose_agents_are_all_busy_lasts_the_deadline():
    trace = TraceTime({"0": [10.0]})
    frame = run(1, StopRule(max_iterations=4), trace, deadline_s=4.0).frame
    it = frame[frame.event == "iteration"]
    assert it.time_s.tolist() == [4.0, 8.0, 12.0, 16.0]  # busy from t=0 to t=10
    assert it.busy.tolist() == [0, 1, 1, 0]
    assert it.late.tolist() == [1, 0, 0, 1]
    late = frame[frame.event == "late_update"]
    assert late.time_s.tolist() == [10.0] and late.lateness_s.tolist() == [6.0]


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), 1e308])
def test_a_bad_deadline_names_the_field(value):
    with pytest.raises(ValueError, match="^deadline_s: must be a finite number"):
        ParameterServerProtocol(SumOfAgents(2), StopRule(max_iterations=1), deadline_s=value)


def test_same_seed_same_frame_with_a_deadline():
    kwargs = dict(compute=LogNormalTime(0.1, sigma=1.0), deadline_s=0.15,
                  channel=FixedRateChannel(1e4, 0.01, loss_prob=0.2), seed=9)
    a = run(5, StopRule(max_iterations=20), **kwargs).frame
    b = run(5, StopRule(max_iterations=20), **kwargs).frame
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.late.sum() > 0 and (a.event == "late_update").any()
