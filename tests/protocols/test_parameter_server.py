"""The parameter-server pattern: downlink, local compute, uplink, merge."""

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel, IdealChannel
from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols.coding.codecs import RawCodec
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents, RoundRobinSelector, UniformSelector
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import FixedStepTime, Simulation, Work


class SumOfAgents(GlobalStateLearner):
    """State: one slot per agent; an agent's update adds its id + 1 to its slot."""

    combines = Combines.ADDITIVE

    def __init__(self, K):
        self.K = K
        self.seen = []

    def init(self, rng):
        return np.zeros(self.K)

    def local_update(self, agent, state, agent_state=None, rng=None):
        self.seen.append(agent)
        return Update(np.eye(self.K)[agent] * (agent + 1), Work(steps=2))

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def evaluate(self, state):
        return {"total": float(state.sum())}


def build(K, **kwargs):
    sim = Simulation(0, record_messages=True)
    sim.build_network(nx.empty_graph(K), server=True, **kwargs)
    return sim


def test_round_robin_iteration_timing_is_down_plus_compute_plus_up():
    sim = build(3, channel=FixedRateChannel(1e6, 0.002),
                downlink_channel=FixedRateChannel(2e6, 0.001), compute=FixedStepTime(0.01))
    learner = SumOfAgents(3)
    frame = sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=4),
                                            selector=RoundRobinSelector(1),
                                            uplink_codec=RawCodec(32))).frame
    it = frame[frame.event == "iteration"]
    down = 0.001 + 3 * 64 / 2e6
    up = 0.002 + 3 * 32 / 1e6
    assert learner.seen == [0, 1, 2, 0]
    assert np.allclose(np.diff([0.0, *it.time_s]), down + 2 * 0.01 + up, rtol=0, atol=1e-12)
    assert it.total.tolist() == [1.0, 3.0, 6.0, 7.0]
    assert it.cum_bits_up.tolist() == [96, 192, 288, 384]
    assert it.cum_bits_down.tolist() == [192, 384, 576, 768]


def test_shared_uplink_serialises_the_agents_uploads():
    kwargs = dict(channel=FixedRateChannel(1000, 0.0), downlink_channel=IdealChannel())
    times = {}
    for shared in (False, True):
        sim = build(4, shared_uplink=shared, **kwargs)
        frame = sim.run(ParameterServerProtocol(SumOfAgents(4), StopRule(max_iterations=1),
                                                selector=AllAgents())).frame
        times[shared] = frame[frame.event == "iteration"].time_s.iloc[0]
    per_upload = 4 * 64 / 1000
    assert times[False] == pytest.approx(per_upload)
    assert times[True] == pytest.approx(4 * per_upload)


def test_dropped_uploads_contribute_nothing():
    sim = build(5, channel=FixedRateChannel(1e6, loss_prob=0.5), max_attempts=1)
    frame = sim.run(ParameterServerProtocol(SumOfAgents(5), StopRule(max_iterations=50),
                                            selector=UniformSelector(2))).frame
    it = frame[frame.event == "iteration"]
    msgs = frame[(frame.event == "message") & (frame.kind == "update")]
    assert it.updates.sum() == (~msgs.dropped.astype(bool)).sum() < 100
    assert (it.scheduled == 2).all()


def test_parameter_server_needs_a_server():
    sim = Simulation(0)
    sim.build_network(nx.empty_graph(2))
    with pytest.raises(ValueError, match="needs server=True"):
        sim.run(ParameterServerProtocol(SumOfAgents(2), StopRule(max_iterations=1)))


class Undeclared(SumOfAgents):
    combines = None


@pytest.mark.parametrize("selector, merged", [(AllAgents(), 3), (UniformSelector(2), 2)])
def test_a_round_of_several_agents_needs_a_declaration_that_merges_several(selector,
                                                                          merged):
    """One agent a round runs any learner; several merged at once need ``combines``
    additive, averaged or particles: otherwise one line naming the learner."""
    frame = build(3).run(ParameterServerProtocol(Undeclared(3), StopRule(max_iterations=3)))
    assert frame.frame.total.iloc[-1] == 6.0
    with pytest.raises(ValueError) as caught:
        build(3).run(ParameterServerProtocol(Undeclared(3), StopRule(max_iterations=3),
                                             selector=selector))
    assert str(caught.value) == (
        f"parameter server: learner Undeclared declares nothing (no combines attribute); "
        f"merging {merged} updates at once needs combines = Combines.ADDITIVE or "
        f"Combines.AVERAGED or Combines.PARTICLES (bflnet.learners.base.Combines)")
