"""Random-walk rules: closed-form transition matrices, stationary behaviour, cover time."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from bflnet.protocols.graphs.topologies import complete, path, ring, star
from bflnet.protocols.graphs.walks import (
    WALK_NAMES,
    MetropolisHastingsWalk,
    RoundRobinWalk,
    UniformNeighbourWalk,
    make_walk,
)

STAR = star(6)  # hub degree 5, leaves degree 1
LOLLIPOP = nx.lollipop_graph(4, 3)  # K4 with a 3-node tail: degrees 3,3,3,4,2,2,1
NON_REGULAR = [pytest.param(STAR, id="star6"), pytest.param(LOLLIPOP, id="lollipop4-3")]


def asymptotic_sd(P: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Per-node asymptotic standard deviation of sqrt(n) * (visit frequency - pi), from the
    fundamental matrix Z = (I - P + 1 pi^T)^-1: sigma_i^2 = pi_i (2 Z_ii - 1 - pi_i)."""
    K = len(pi)
    Z = np.linalg.inv(np.eye(K) - P + np.outer(np.ones(K), pi))
    return np.sqrt(pi * (2 * np.diag(Z) - 1 - pi))


# ------------------------------------------------------------------ transition matrices


@pytest.mark.parametrize("name", WALK_NAMES)
@pytest.mark.parametrize("graph", [*NON_REGULAR, pytest.param(ring(5), id="ring5")])
def test_transition_matrix_is_row_stochastic_with_stationary_pi(name, graph):
    walk = make_walk(name, graph)
    P = walk.transition_matrix()
    pi = walk.stationary_distribution()
    K = graph.number_of_nodes()
    assert P.shape == (K, K) and P.dtype == np.float64
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(pi.sum(), 1.0)
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    # moves only along edges (round-robin excepted: it may jump and is routed)
    if name != "round-robin":
        A = nx.to_numpy_array(graph, nodelist=range(K)) + np.eye(K)
        assert np.all(P[A == 0] == 0)


@pytest.mark.parametrize("graph", [*NON_REGULAR, pytest.param(path(5), id="path5")])
def test_metropolis_hastings_matrix_is_symmetric_closed_form(graph):
    walk = MetropolisHastingsWalk(graph)
    P = walk.transition_matrix()
    np.testing.assert_allclose(P, P.T, atol=1e-15)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)  # doubly stochastic
    deg = dict(graph.degree())
    for k, j in graph.edges:
        assert P[k, j] == pytest.approx(min(1 / deg[k], 1 / deg[j]))
    np.testing.assert_allclose(walk.stationary_distribution(), 1 / graph.number_of_nodes())


def test_metropolis_hastings_on_star_by_hand():
    P = MetropolisHastingsWalk(star(6)).transition_matrix()
    # hub -> each leaf 1/5, never stays; leaf -> hub proposed always, accepted w.p. 1/5
    expected = np.zeros((6, 6))
    expected[0, 1:] = 0.2
    expected[1:, 0] = 0.2
    expected[np.arange(1, 6), np.arange(1, 6)] = 0.8
    np.testing.assert_allclose(P, expected, atol=1e-15)


def test_uniform_neighbour_stationary_is_degree_proportional():
    walk = UniformNeighbourWalk(LOLLIPOP)
    deg = np.array([d for _, d in sorted(LOLLIPOP.degree())], dtype=float)
    np.testing.assert_allclose(walk.stationary_distribution(), deg / deg.sum())
    np.testing.assert_allclose(
        walk.transition_matrix(),
        nx.to_numpy_array(LOLLIPOP, nodelist=range(7)) / deg[:, None],
    )


# ------------------------------------------------------------------ simulated behaviour


@pytest.mark.parametrize("name", ["metropolis-hastings", "uniform-neighbour"])
@pytest.mark.parametrize("graph", NON_REGULAR)
def test_one_step_frequencies_match_transition_matrix(name, graph):
    walk = make_walk(name, graph)
    P = walk.transition_matrix()
    rng = np.random.default_rng(11)
    n = 20_000
    for k in range(graph.number_of_nodes()):
        counts = np.bincount(
            [walk.next_node(k, rng) for _ in range(n)], minlength=graph.number_of_nodes()
        )
        support = P[k] > 0
        assert counts[~support].sum() == 0
        if support.sum() > 1:
            p_value = stats.chisquare(counts[support], n * P[k, support]).pvalue
            assert p_value > 1e-4, (k, counts, n * P[k])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("graph", NON_REGULAR)
def test_metropolis_hastings_long_run_visits_are_uniform(graph, seed):
    """Eq. (5) makes every agent equally often visited even on non-regular graphs; the
    tolerance is 4 asymptotic (autocorrelation-aware) standard deviations."""
    walk = MetropolisHastingsWalk(graph)
    K = graph.number_of_nodes()
    n = 100_000
    visits = walk.sample_path(n, np.random.default_rng(seed), start=K - 1)[1:]
    freq = np.bincount(visits, minlength=K) / n
    pi = np.full(K, 1 / K)
    sd = asymptotic_sd(walk.transition_matrix(), pi) / math.sqrt(n)
    assert np.all(np.abs(freq - pi) < 4 * sd), (freq, 4 * sd)


@pytest.mark.parametrize("seed", range(3))
def test_uniform_neighbour_long_run_visits_follow_degree(seed):
    walk = UniformNeighbourWalk(LOLLIPOP)
    n = 100_000
    visits = walk.sample_path(n, np.random.default_rng(seed), start=0)[1:]
    freq = np.bincount(visits, minlength=7) / n
    pi = walk.stationary_distribution()
    sd = asymptotic_sd(walk.transition_matrix(), pi) / math.sqrt(n)
    assert np.all(np.abs(freq - pi) < 4 * sd)
    # and it is visibly not uniform, unlike Metropolis-Hastings
    assert freq[3] > 2 * freq[6]


def test_metropolis_hastings_from_uniform_start_stays_uniform():
    """Uniform is stationary, so the endpoint of a walk from first_node is exactly uniform:
    an exact chi-square test on independent endpoints."""
    walk = MetropolisHastingsWalk(STAR)
    rng = np.random.default_rng(5)
    ends = [walk.sample_path(3, rng)[-1] for _ in range(12_000)]
    assert stats.chisquare(np.bincount(ends, minlength=6)).pvalue > 1e-4


def test_first_node_is_uniform():
    walk = MetropolisHastingsWalk(STAR)
    rng = np.random.default_rng(2)
    draws = [walk.first_node(rng) for _ in range(12_000)]
    assert stats.chisquare(np.bincount(draws, minlength=6)).pvalue > 1e-4


@pytest.mark.parametrize("name", ["metropolis-hastings", "uniform-neighbour"])
def test_same_seed_same_path(name):
    walk = make_walk(name, LOLLIPOP)
    a = walk.sample_path(500, np.random.default_rng(9))
    b = walk.sample_path(500, np.random.default_rng(9))
    assert a == b and all(isinstance(x, int) for x in a)


def cover_steps(walk, rng) -> int:
    """Steps after the first node until every node has been visited."""
    node = walk.first_node(rng)
    seen = {node}
    steps = 0
    while len(seen) < walk.K:
        node = walk.next_node(node, rng)
        seen.add(node)
        steps += 1
    return steps


@pytest.mark.slow
@pytest.mark.parametrize("name", ["metropolis-hastings", "uniform-neighbour"])
def test_cover_time_complete_graph_matches_coupon_collector(name):
    """On K_10 each step goes to a uniform *other* node: E[cover] = (K-1) H_{K-1} = 25.46."""
    K, runs = 10, 3000
    walk = make_walk(name, complete(K))
    rng = np.random.default_rng(123)
    samples = np.array([cover_steps(walk, rng) for _ in range(runs)])
    expected = (K - 1) * sum(1 / i for i in range(1, K))
    assert expected == pytest.approx(25.46, abs=0.005)
    se = samples.std(ddof=1) / math.sqrt(runs)
    assert abs(samples.mean() - expected) < 4 * se
    # the variance also matches the sum of geometric variances
    p = [(K - i) / (K - 1) for i in range(1, K)]
    var = sum((1 - q) / q**2 for q in p)
    assert samples.var(ddof=1) == pytest.approx(var, rel=0.15)


# ------------------------------------------------------------------ round robin


def test_round_robin_default_order_cycles_through_all_nodes():
    walk = RoundRobinWalk(star(4))
    assert walk.sample_path(9, np.random.default_rng(0), start=2) == [
        2, 3, 0, 1, 2, 3, 0, 1, 2, 3
    ]  # fmt: skip


def test_round_robin_custom_order_matrix_and_no_randomness():
    walk = make_walk("round-robin", ring(5), order=[0, 2, 4, 1, 3])
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert [walk.next_node(k, rng) for k in range(5)] == [2, 3, 4, 0, 1]
    assert rng.bit_generator.state == state  # next_node draws nothing
    P = walk.transition_matrix()
    assert P[0, 2] == P[2, 4] == P[4, 1] == P[1, 3] == P[3, 0] == 1.0
    np.testing.assert_allclose(walk.stationary_distribution(), 0.2)


@pytest.mark.parametrize("order", [[0, 1, 2], [0, 1, 2, 3, 3], [0, 1, 2, 3, 5], "abcde", 7])
def test_round_robin_order_must_be_a_permutation(order):
    with pytest.raises(ValueError, match=r"^order: must be a permutation of 0\.\.4"):
        RoundRobinWalk(ring(5), order=order)


# ------------------------------------------------------------------ construction errors


@pytest.mark.parametrize("cls", [MetropolisHastingsWalk, UniformNeighbourWalk, RoundRobinWalk])
def test_walks_reject_disconnected_graphs(cls):
    g = nx.disjoint_union(ring(3), ring(4))
    with pytest.raises(ValueError) as err:
        cls(g)
    assert str(err.value) == (
        "graph: disconnected (2 components); this protocol needs a connected graph"
    )


def test_walks_need_two_nodes():
    g = nx.Graph()
    g.add_node(0)
    with pytest.raises(ValueError, match=r"^graph: a walk needs at least 2 nodes, got 1$"):
        MetropolisHastingsWalk(g)


def test_make_walk_names_and_errors():
    assert WALK_NAMES == ("metropolis-hastings", "uniform-neighbour", "round-robin")
    for name in WALK_NAMES:
        assert make_walk(name, ring(4)).name == name
    with pytest.raises(ValueError) as err:
        make_walk("levy-flight", ring(4))
    assert str(err.value) == (
        "name: unknown walk 'levy-flight'; allowed: metropolis-hastings, uniform-neighbour, "
        "round-robin"
    )
    with pytest.raises(ValueError, match=r"^params: unknown parameter\(s\) order"):
        make_walk("metropolis-hastings", ring(4), order=[0, 1, 2, 3])


def test_sample_path_validates_arguments():
    walk = UniformNeighbourWalk(ring(4))
    with pytest.raises(ValueError, match=r"^steps: must be an integer >= 0"):
        walk.sample_path(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^start: must be a node in 0\.\.3, got 4"):
        walk.sample_path(3, np.random.default_rng(0), start=4)
