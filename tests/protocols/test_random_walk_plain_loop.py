"""The random walk's plain loop (no faults, no mobility, no forget requests: the common
case, with its book-keeping inlined and the clock moved in place while the walk is alone)
gives the same record, state and visits as the general loop, bit for bit."""

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel, GilbertElliottChannel
from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.protocols.coding.codecs import RawCodec, StochasticQuantizer
from bflnet.protocols.graphs.walks import (
    MetropolisHastingsWalk,
    RoundRobinWalk,
    UniformNeighbourWalk,
)
from bflnet.protocols.random_walk import RandomWalkProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import FixedStepTime, LogNormalTime, Simulation, Work


class NoisyCounter(GlobalStateLearner):
    """Visits per agent plus a draw from the agent's own stream; a private per-agent
    count; metrics every evaluation."""

    def __init__(self, K):
        self.K = K

    def init(self, rng):
        return rng.normal(size=self.K)

    def init_agent(self, agent, rng):
        return int(rng.integers(5))

    def local_update(self, agent, state, agent_state, rng):
        step = np.zeros(self.K)
        step[agent] = 1.0 + rng.random()
        return Update(step, Work(steps=1 + agent_state % 3), agent, agent_state + 1)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def evaluate(self, state):
        return {"total": float(state.sum())}


def walk_record(graph, walk, stop, *, plain, channel, compute=None, codec=None,
                eval_every=1, record_messages=False, seed=5, monkeypatch=None,
                beside=False, max_attempts=8):
    if not plain:
        monkeypatch.setattr(RandomWalkProtocol, "_plain", lambda *a: False)
    sim = Simulation(seed, record_messages=record_messages)
    sim.build_network(graph, channel=channel, compute=compute or FixedStepTime(0.002),
                      max_attempts=max_attempts)
    protocol = RandomWalkProtocol(NoisyCounter(graph.number_of_nodes()), walk, stop,
                                  codec=codec, eval_every=eval_every)
    if beside:  # another process in the same clock: the walk then yields its timeouts
        def ticker():
            for _ in range(10_000):
                yield sim.env.timeout(0.0037)
        sim.env.process(ticker())
    result = sim.run(protocol)
    monkeypatch.undo()
    return result, protocol.visits


GRAPH = nx.random_regular_graph(3, 12, seed=2)
CASES = {
    "mh-lossless": dict(walk=MetropolisHastingsWalk(GRAPH), stop=StopRule(max_iterations=300),
                        channel=FixedRateChannel(1e6, 0.005)),
    "uniform-lossy-arq": dict(walk=UniformNeighbourWalk(GRAPH),
                              stop=StopRule(max_iterations=300),
                              channel=FixedRateChannel(1e6, 0.005, loss_prob=0.4),
                              record_messages=True, max_attempts=1),
    "gilbert-elliott-time": dict(walk=MetropolisHastingsWalk(GRAPH),
                                 stop=StopRule(max_time_s=0.5),
                                 channel=GilbertElliottChannel(2e6, 0.001, p_good_to_bad=0.2,
                                                               p_bad_to_good=0.3, loss_bad=0.9),
                                 compute=LogNormalTime(0.002, 0.5), max_attempts=2),
    "round-robin-relays-bits": dict(walk=RoundRobinWalk(GRAPH), stop=StopRule(max_bits=200_000),
                                    channel=FixedRateChannel(1e6, 0.005), codec=RawCodec(32),
                                    eval_every=7),
    "cover-quantised": dict(walk=MetropolisHastingsWalk(GRAPH), stop=StopRule(cover=True),
                            channel=FixedRateChannel(1e6, 0.005),
                            codec=StochasticQuantizer(n_bits=4)),
}


@pytest.mark.parametrize("beside", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_plain_loop_equals_the_general_loop(case, beside, monkeypatch):
    kwargs = CASES[case]
    plain, plain_visits = walk_record(GRAPH, plain=True, monkeypatch=monkeypatch,
                                      beside=beside, **kwargs)
    general, general_visits = walk_record(GRAPH, plain=False, monkeypatch=monkeypatch,
                                          beside=beside, **kwargs)
    assert plain.frame.equals(general.frame)
    assert list(plain.frame.columns) == list(general.frame.columns)
    assert plain.reason == general.reason
    np.testing.assert_array_equal(plain.state, general.state)
    assert plain.agent_states == general.agent_states
    assert plain_visits == general_visits
    assert len(plain.frame) > 20
    if case == "uniform-lossy-arq":
        assert (plain.frame.event == "token_dropped").sum() > 20


def test_the_plain_loop_runs_in_the_common_case(monkeypatch):
    calls = []
    original = RandomWalkProtocol._plain_walk

    def spy(self, *args):
        calls.append(1)
        return (yield from original(self, *args))

    monkeypatch.setattr(RandomWalkProtocol, "_plain_walk", spy)
    sim = Simulation(0)
    sim.build_network(GRAPH, channel=FixedRateChannel(1e6, 0.005))
    sim.run(RandomWalkProtocol(NoisyCounter(12), MetropolisHastingsWalk(GRAPH),
                               StopRule(max_iterations=5)))
    assert calls == [1]
