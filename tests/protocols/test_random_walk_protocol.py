"""The random-walk pattern: a token hops over D2D links, told as stories."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk, RoundRobinWalk
from bflnet.protocols.random_walk import RandomWalkProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import FixedStepTime, Simulation, SimulationError, Work


class VisitCounter(GlobalStateLearner):
    """Global state = visits per agent; each visit is one local step."""

    def __init__(self, K, fail_at=None):
        self.K, self.fail_at = K, fail_at

    def init(self, rng):
        return np.zeros(self.K)

    def local_update(self, agent, state, agent_state=None, rng=None):
        if agent == self.fail_at:
            raise RuntimeError("boom")
        return Update(np.eye(self.K)[agent], Work(steps=1), agent)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def evaluate(self, state):
        return {"visited": float(np.count_nonzero(state))}


def run_walk(graph, walk, iterations, *, channel, compute_s=0.0, seed=0, start=0, **kwargs):
    sim = Simulation(seed, record_messages=True)
    sim.build_network(graph, channel=channel, compute=FixedStepTime(compute_s), **kwargs)
    protocol = RandomWalkProtocol(VisitCounter(graph.number_of_nodes()), walk,
                                  StopRule(max_iterations=iterations), start=start)
    return sim.run(protocol).frame, protocol


def test_each_hop_takes_compute_plus_latency_plus_bits_over_rate():
    # 1 Mbit/s, 5 ms, a 3-parameter float64 state (192 bits), 10 ms per local step.
    graph = nx.path_graph(3)
    frame, protocol = run_walk(graph, RoundRobinWalk(graph, order=[0, 1, 2]), 4,
                               channel=FixedRateChannel(1e6, 0.005), compute_s=0.01)
    it = frame[frame.event == "iteration"]
    hop = 0.005 + 192 / 1e6
    assert protocol.visits == [0, 1, 2, 0]
    # 0 -> 1 -> 2 are single hops; 2 -> 0 is relayed over 2 -> 1 -> 0.
    expected = np.cumsum([0.01, hop + 0.01, hop + 0.01, 2 * hop + 0.01])
    assert np.allclose(it.time_s.to_numpy(), expected, rtol=0, atol=1e-12)
    msgs = frame[frame.event == "message"]
    assert list(zip(msgs.node, msgs.peer, strict=True)) == [(0, 1), (1, 2), (2, 1), (1, 0)]
    assert it.cum_bits.tolist() == [0, 192, 384, 768]


def test_mh_walk_visits_every_node_of_a_non_regular_graph_equally_often():
    graph = nx.star_graph(4)  # hub 0 with degree 4, leaves with degree 1
    frame, protocol = run_walk(graph, MetropolisHastingsWalk(graph), 20_000,
                               channel=FixedRateChannel(1e6), seed=2)
    counts = np.bincount(protocol.visits, minlength=5)
    expected = len(protocol.visits) / 5
    # Correlated samples: allow a generous but meaningful margin around uniform.
    assert np.all(np.abs(counts - expected) < 0.06 * expected)
    # No message when the walk stays put: messages = number of moves.
    moves = sum(a != b for a, b in zip(protocol.visits, protocol.visits[1:], strict=False))
    assert (frame.event == "message").sum() == moves


def test_a_lost_token_is_resent_until_it_arrives():
    graph = nx.path_graph(2)
    frame, protocol = run_walk(graph, RoundRobinWalk(graph), 200, seed=4,
                               channel=FixedRateChannel(1e6, loss_prob=0.5), max_attempts=1)
    drops = (frame.event == "token_dropped").sum()
    msgs = frame[frame.event == "message"]
    assert drops == msgs.dropped.sum() > 0
    assert (~msgs.dropped.astype(bool)).sum() == 199  # every hop eventually delivered
    assert protocol.visits == [0, 1] * 100


def test_stop_on_simulated_time_and_on_bits():
    graph = nx.complete_graph(4)
    for stop, column, limit in ((StopRule(max_time_s=0.05), "time_s", 0.05),
                                (StopRule(max_bits=5000), "cum_bits", 5000)):
        sim = Simulation(1)
        sim.build_network(graph, channel=FixedRateChannel(1e6, 0.005))
        protocol = RandomWalkProtocol(VisitCounter(4), MetropolisHastingsWalk(graph), stop)
        frame = sim.run(protocol).frame
        values = frame[frame.event == "iteration"][column].to_numpy()
        assert values[-1] >= limit > values[-2]


def test_a_failing_learner_names_the_node_and_iteration():
    graph = nx.path_graph(3)
    sim = Simulation(0, name="demo")
    sim.build_network(graph)
    protocol = RandomWalkProtocol(VisitCounter(3, fail_at=2), RoundRobinWalk(graph),
                                  StopRule(max_iterations=10), start=0)
    with pytest.raises(SimulationError, match="^demo: learner.local_update failed at node 2, "
                                              "iteration 3: RuntimeError: boom"):
        sim.run(protocol)


def test_same_seed_same_frame():
    graph = nx.cycle_graph(6)
    a, _ = run_walk(graph, MetropolisHastingsWalk(graph), 300, seed=9,
                    channel=FixedRateChannel(1e5, 0.001, loss_prob=0.2))
    b, _ = run_walk(graph, MetropolisHastingsWalk(graph), 300, seed=9,
                    channel=FixedRateChannel(1e5, 0.001, loss_prob=0.2))
    assert a.equals(b)


@pytest.mark.parametrize("channel", [
    FixedRateChannel(rate_bps=2e4, latency_s=0.01, loss_prob=0.3),
    "gilbert-elliott",
])
def test_runs_on_a_rebound_network_equal_runs_on_fresh_ones(channel):
    """Monte-Carlo runs may share one network build (Simulation.use_network): with a
    lossy, and with a stateful (Gilbert-Elliott) channel, every run's record equals the
    record of the same seed on a network built afresh."""
    from bflnet.channels import GilbertElliottChannel

    if channel == "gilbert-elliott":
        channel = GilbertElliottChannel(rate_bps=2e4, latency_s=0.01, p_good_to_bad=0.3,
                                        p_bad_to_good=0.4)
    graph = nx.cycle_graph(6)
    walk = MetropolisHastingsWalk(graph)
    network = None
    for seed in range(4):
        fresh, _ = run_walk(graph, walk, 30, channel=channel, seed=seed)
        sim = Simulation(seed, record_messages=True)
        if network is None:
            network = sim.build_network(graph, channel=channel, compute=FixedStepTime(0.0))
        else:
            assert sim.use_network(network) is network
        protocol = RandomWalkProtocol(VisitCounter(6), walk, StopRule(max_iterations=30),
                                      start=0)
        rebound = sim.run(protocol).frame
        assert (rebound["dropped"] > 0).any() or (rebound["attempts"] > 1).any()
        pd.testing.assert_frame_equal(rebound, fresh)


def test_rebinding_keeps_shared_media_shared_and_starts_them_idle():
    sim = Simulation(0)
    net = sim.build_network(nx.path_graph(3), server=True, shared_uplink=True)
    uplinks = [link for (src, dst), link in net.links.items() if dst == "server"]
    uplinks[0].medium.busy_until = 5.0
    Simulation(1).use_network(net)
    media = {id(link.medium) for link in uplinks}
    assert len(media) == 1 and uplinks[0].medium.busy_until == 0.0
    assert len({id(link.medium) for link in net.links.values()}) == len(net.links) - 2


@pytest.mark.parametrize("uses", [True, False])
def test_agent_streams_are_made_only_for_learners_that_use_them(uses):
    """A learner with ``uses_agent_streams = False`` gets ``rng=None`` and its agents'
    streams are never made; the walk, times and bits are the same either way."""
    seen = []

    class Counter(VisitCounter):
        uses_agent_streams = uses

        def local_update(self, agent, state, agent_state=None, rng=None):
            seen.append(rng)
            return super().local_update(agent, state, agent_state, rng)

    graph = nx.cycle_graph(5)
    channel = FixedRateChannel(rate_bps=1e5, latency_s=0.01)
    sim = Simulation(4, record_messages=True)
    net = sim.build_network(graph, channel=channel)
    frame = sim.run(RandomWalkProtocol(Counter(5), MetropolisHastingsWalk(graph),
                                       StopRule(max_iterations=20), start=0)).frame
    assert len(seen) == 20
    assert all((r is None) != uses for r in seen)
    assert all((node.rng is None) != uses for node in net.nodes.values()
               if node.has_state)
    reference, _ = run_walk(graph, MetropolisHastingsWalk(graph), 20, channel=channel,
                            seed=4)
    columns = ["iteration", "node", "time_s", "cum_bits"]
    pd.testing.assert_frame_equal(frame[columns], reference[columns])
