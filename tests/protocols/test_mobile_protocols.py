"""The live graph drives the protocols: the Metropolis-Hastings walk hops to live neighbours
with a doubly stochastic transition matrix, the synchronous consensus recomputes its mixing
matrix at each change, and with mobility off (or nodes that never move) every frame is the
one of the static network."""

import numpy as np
import pytest
import scipy.sparse as sp

from bflnet.channels import FixedRateChannel
from bflnet.faults.mobility import RandomWaypoint
from bflnet.learners.base import GlobalStateLearner, Update, Work
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import (
    check_mixing,
    max_degree_weights,
    metropolis_hastings_weights,
    mixing_from_edges,
)
from bflnet.protocols.graphs.topologies import random_geometric
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.protocols.live_walk import LiveMetropolisHastingsWalk
from bflnet.protocols.random_walk import RandomWalkProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation
from bflnet.simulator.compute import FixedStepTime
from bflnet.simulator.live_graph import Mobility

AREA = 100.0


def rgg(k=16, radius=35.0, seed=0):
    return random_geometric(k, radius, AREA, np.random.default_rng(seed))


def moving(radius=35.0, speed=(3.0, 8.0), update_s=0.2):
    return Mobility(RandomWaypoint(AREA, *speed, 0.5), radius, update_s)


# ------------------------------------------------------------------ mixing of any graph


@pytest.mark.parametrize(("name", "static"), [("metropolis-hastings", metropolis_hastings_weights),
                                              ("max-degree", max_degree_weights)])
def test_mixing_from_edges_equals_the_graph_builders_on_a_connected_graph(name, static):
    g = rgg()
    u, v = np.array(sorted((min(e), max(e)) for e in g.edges)).T
    assert np.array_equal(mixing_from_edges(name, 16, u, v), static(g))


def test_mixing_of_a_disconnected_graph_is_doubly_stochastic_and_isolated_nodes_keep_theirs():
    W = mixing_from_edges("metropolis-hastings", 5, np.array([0, 1]), np.array([1, 2]))
    check_mixing(W)
    assert W[3, 3] == W[4, 4] == 1.0 and W[3].sum() == 1.0
    with pytest.raises(ValueError, match="^name: uniform weights need the complete graph"):
        mixing_from_edges("uniform", 5, np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="^name: unknown mixing"):
        mixing_from_edges("nope", 5, np.array([0]), np.array([1]))


# ------------------------------------------------------------------ the walk


def live_network(seed=0, mobility=None, **kwargs):
    sim = Simulation(seed)
    net = sim.build_network(rgg(), mobility=mobility or moving(), **kwargs)
    return sim, net


def test_the_live_walk_matrix_is_doubly_stochastic_with_uniform_stationary_law():
    _, net = live_network()
    live, walk = net.live, LiveMetropolisHastingsWalk(net.live)
    versions = set()
    for n in range(1, 200):
        live.update(n * 0.2)
        if live.version in versions:
            continue
        versions.add(live.version)
        P = walk.transition_matrix()
        assert (P >= 0).all() and np.allclose(P, P.T, atol=0)
        assert np.allclose(P.sum(axis=1), 1, atol=1e-12)
        assert np.allclose(P.sum(axis=0), 1, atol=1e-12)
        pi = walk.stationary_distribution()
        assert np.allclose(pi @ P, pi, atol=1e-12)
        u, v = live.edges()
        off = P - np.diag(np.diag(P))
        assert set(zip(*np.nonzero(np.triu(off)), strict=True)) == set(
            zip(u.tolist(), v.tolist(), strict=True))
    assert len(versions) > 10


def test_the_live_walk_draws_its_matrix_rows():
    _, net = live_network()
    live, walk = net.live, LiveMetropolisHastingsWalk(net.live)
    live.update(5.0)
    P = walk.transition_matrix()
    rng = np.random.default_rng(0)
    for node in (0, 7):
        draws = np.bincount([walk.next_node(node, rng) for _ in range(20_000)], minlength=16)
        expected = 20_000 * P[node]
        used = expected > 0
        assert draws[~used].sum() == 0
        # chi-square within a generous bound for the few cells
        chi2 = ((draws[used] - expected[used]) ** 2 / expected[used]).sum()
        assert chi2 < 30


def test_on_a_graph_that_never_moves_the_live_walk_is_the_static_walk():
    _, net = live_network(mobility=moving(speed=(0.0, 0.0)))
    static = MetropolisHastingsWalk(rgg())
    live = LiveMetropolisHastingsWalk(net.live)
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    node_a = node_b = 4
    for _ in range(2000):
        node_a, node_b = static.next_node(node_a, a), live.next_node(node_b, b)
        assert node_a == node_b


class Carrier(GlobalStateLearner):
    """Carries two zeros; one step a visit."""

    def init(self, rng):
        return np.zeros(2)

    def local_update(self, agent, state, agent_state, rng):
        return Update(state, Work(steps=1), agent)

    def merge(self, state, updates):
        return state


def test_the_token_hops_only_to_live_neighbours():
    sim, net = live_network(compute=FixedStepTime(0.05), channel=FixedRateChannel(1e6, 0.01))
    walk = LiveMetropolisHastingsWalk(net.live)
    hops = []
    step = walk.next_node

    def next_node(current, rng):
        nxt = step(current, rng)
        assert nxt == current or nxt in net.live.adjacency[current]
        hops.append((current, nxt))
        return nxt

    walk.next_node = next_node
    frame = sim.run(RandomWalkProtocol(Carrier(), walk, StopRule(max_time_s=30.0))).frame
    assert (frame.cause == "mobility").any()
    moves = [h for h in hops if h[0] != h[1]]
    assert len(moves) > 50


def test_a_static_walk_on_a_moving_network_is_refused():
    sim, _ = live_network()
    with pytest.raises(ValueError, match="^walk: a network with mobility needs a walk"):
        sim.run(RandomWalkProtocol(Carrier(), MetropolisHastingsWalk(rgg()),
                                   StopRule(max_iterations=3)))


# ------------------------------------------------------------------ synchronous consensus


def test_consensus_recomputes_its_mixing_matrix_at_each_change():
    x0 = np.random.default_rng(0).standard_normal(16)
    sim, net = live_network(channel=FixedRateChannel(1e6, 0.005))
    live = net.live
    checked = []
    protocol = ConsensusProtocol(ConsensusAveraging(dict(enumerate(x0))),
                                 "metropolis-hastings", StopRule(max_time_s=20.0))

    def check(added, removed, moved):  # every matrix in use is a valid mixing matrix
        W = protocol.current_weights
        if W is not None:
            checked.append(W)
            check_mixing(W)
            assert np.array_equal(W, W.T)

    live.listeners.append(check)
    result = sim.run(protocol)
    frame = result.frame
    changes = frame[frame.event == "fault"].time_s.nunique()
    assert changes > 10
    assert 1 < protocol.recomputed <= changes + 1 and len(checked) > 10
    W = protocol.current_weights
    check_mixing(W)
    assert np.allclose(W.sum(axis=1), 1) and np.array_equal(W, W.T)
    rounds = frame[frame.event == "round"]
    assert np.allclose(rounds.mean_value, x0.mean(), rtol=0, atol=1e-13)
    assert rounds.max_deviation.iloc[-1] < 1e-6


def test_the_last_matrix_matches_the_live_graph_when_it_last_changed():
    x0 = np.arange(16.0)
    sim, net = live_network(channel=FixedRateChannel(1e6, 0.005),
                            mobility=moving(update_s=1.0))
    live = net.live
    protocol = ConsensusProtocol(ConsensusAveraging(dict(enumerate(x0))),
                                 "max-degree", StopRule(max_time_s=10.5))
    sim.run(protocol)
    u, v = live.edges()
    assert np.array_equal(protocol.current_weights,
                          mixing_from_edges("max-degree", 16, u, v))


def test_a_fixed_matrix_on_a_moving_network_is_refused():
    sim, _ = live_network()
    W = metropolis_hastings_weights(rgg())
    with pytest.raises(ValueError, match="^weights: a network with mobility needs a mixing"):
        sim.run(ConsensusProtocol(ConsensusAveraging(), W, StopRule(max_iterations=2)))
    with pytest.raises(ValueError, match="^weights: unknown mixing rule"):
        ConsensusProtocol(ConsensusAveraging(), "nope", StopRule(max_iterations=2))


# ------------------------------------------------------------------ off is the old path


def consensus_frame(weights, mobility=None, **build):
    graph = rgg()
    sim = Simulation(2, record_messages=True)
    sim.build_network(graph, channel=FixedRateChannel(1e6, 0.002, loss_prob=0.2),
                      max_attempts=1, **build, **({} if mobility is None else
                                                  {"mobility": mobility}))
    W = metropolis_hastings_weights(graph) if weights == "matrix" else weights
    return sim.run(ConsensusProtocol(ConsensusAveraging(), W,
                                     StopRule(max_iterations=60))).frame


def walk_frame(live, **build):
    graph = rgg()
    sim = Simulation(2, record_messages=True)
    net = sim.build_network(graph, channel=FixedRateChannel(1e6, 0.002, loss_prob=0.2),
                            **build)
    walk = LiveMetropolisHastingsWalk(net.live) if live else MetropolisHastingsWalk(graph)
    return sim.run(RandomWalkProtocol(Carrier(), walk, StopRule(max_iterations=300))).frame


def test_mobility_off_gives_the_frames_of_the_default_path():
    default = consensus_frame("matrix")
    assert default.equals(consensus_frame("matrix", mobility=None))
    assert default.equals(consensus_frame("metropolis-hastings"))
    assert walk_frame(False).equals(walk_frame(False, mobility=None))


def test_nodes_that_never_move_give_the_frames_of_the_static_network():
    still = moving(speed=(0.0, 0.0))
    assert consensus_frame("matrix").equals(consensus_frame("metropolis-hastings", still))
    assert walk_frame(False).equals(walk_frame(True, mobility=still))


def test_a_large_moving_network_mixes_with_a_sparse_matrix():
    graph = random_geometric(2500, 5.0, AREA, np.random.default_rng(0))
    sim = Simulation(0)
    sim.build_network(graph, channel=FixedRateChannel(1e6, 0.05),
                      mobility=Mobility(RandomWaypoint(AREA, 1.0, 2.0), 5.0, 0.01))
    protocol = ConsensusProtocol(ConsensusAveraging(), "metropolis-hastings",
                                 StopRule(max_iterations=2))
    sim.run(protocol)
    W = protocol.current_weights
    assert sp.issparse(W) and W.shape == (2500, 2500) and protocol.recomputed >= 2
    check_mixing(W)
