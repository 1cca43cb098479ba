"""Cover-time and hitting-time theory against closed forms, hand derivations and Monte Carlo."""

import doctest
import math

import networkx as nx
import numpy as np
import pytest

from bflnet.analysis import cover_time
from bflnet.analysis.cover_time import (
    complete_graph_cover_time,
    complete_graph_retrain_iterations,
    complete_graph_unlearning_iterations,
    exact_cover_time,
    expected_first_hitting,
    harmonic_number,
    hitting_times,
    matthews_bounds,
    stationary_distribution,
)
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk, UniformNeighbourWalk


def mh(graph):
    return MetropolisHastingsWalk(graph).transition_matrix()


def srw(graph):
    return UniformNeighbourWalk(graph).transition_matrix()


def simulate(P, n, rng, *, start=None, target=None):
    """Brute force: ``n`` independent copies of the chain, vectorised. Returns per copy the
    cover time (slots after the first) or, with ``target``, the 1-based first slot at
    ``target``."""
    K = len(P)
    cum = np.cumsum(P, axis=1)
    cum[:, -1] = 1.0
    current = rng.integers(K, size=n) if start is None else np.full(n, start)
    visited = np.zeros((n, K), dtype=bool)
    visited[np.arange(n), current] = True
    out = np.full(n, -1)
    slot = 1
    done = visited.all(axis=1) if target is None else current == target
    out[done] = 0 if target is None else 1
    while not done.all():
        live = ~done
        u = rng.random(live.sum())
        current[live] = (u[:, None] >= cum[current[live]]).sum(axis=1)
        visited[np.flatnonzero(live), current[live]] = True
        slot += 1
        hit = live & (visited.all(axis=1) if target is None else current == target)
        out[hit] = slot - 1 if target is None else slot
        done |= hit
    return out


def within(samples, expected, n_se):
    se = samples.std(ddof=1) / math.sqrt(len(samples))
    return abs(samples.mean() - expected) < n_se * se, samples.mean(), se


# ------------------------------------------------------------------ closed forms


@pytest.mark.parametrize("K", range(3, 11))
def test_exact_cover_time_of_the_complete_graph_is_the_coupon_collector(K):
    expected = (K - 1) * harmonic_number(K - 1)
    assert complete_graph_cover_time(K) == pytest.approx(expected, abs=1e-12)
    assert exact_cover_time(mh(nx.complete_graph(K))) == pytest.approx(expected, abs=1e-9)
    # Every start gives the same value on a vertex-transitive graph.
    assert exact_cover_time(srw(nx.complete_graph(K)), start=K - 1) == pytest.approx(
        expected, abs=1e-9)


def test_small_cases_by_hand():
    assert complete_graph_cover_time(1) == 0.0
    assert complete_graph_cover_time(2) == 1.0
    assert complete_graph_cover_time(3) == 3.0  # 2 * (1 + 1/2)
    # Path 0-1: one step always covers.
    assert exact_cover_time(srw(nx.path_graph(2))) == pytest.approx(1.0, abs=1e-12)
    # Path 0-1-2: from an end, 1 step to the middle then H(1, 2) = 3 -> 4; from the middle,
    # 1 step to an end then H(end, other end) = 4 -> 5; uniform start -> 13/3.
    P = srw(nx.path_graph(3))
    assert [exact_cover_time(P, start=v) for v in range(3)] == pytest.approx([4, 5, 4],
                                                                              abs=1e-12)
    assert exact_cover_time(P) == pytest.approx(13 / 3, abs=1e-12)
    # MH on the 3-path: the middle node has degree 2, so from an end the walk moves with
    # prob 1/2 (H = 2); the middle moves to either end with prob 1/2 each.
    # From an end: 2 slots to the middle, then H(1, 2) with P(1->1)=0: h = 1 + h0/2,
    # h0 = 2 + h -> h = 1 + 1 + h/2 -> h = 4; total 6. From the middle: 1 + H(end, far end)
    # = 1 + 2 + 4 = 7. Uniform: 19/3.
    P = mh(nx.path_graph(3))
    assert [exact_cover_time(P, start=v) for v in range(3)] == pytest.approx([6, 7, 6],
                                                                              abs=1e-12)
    assert exact_cover_time(P, start=[0.5, 0.0, 0.5]) == pytest.approx(6, abs=1e-12)


def test_exact_cover_time_of_the_ring_is_k_choose_2():
    # Cycle: the classical K(K-1)/2 from any start.
    for K in (3, 6, 9):
        assert exact_cover_time(srw(nx.cycle_graph(K))) == pytest.approx(K * (K - 1) / 2,
                                                                          abs=1e-9)


def test_exact_cover_time_of_an_mh_star_matches_brute_force_monte_carlo():
    P = mh(nx.star_graph(5))  # 6 nodes; leaves stay put with prob 4/5 (self-loops)
    assert np.diag(P)[1:] == pytest.approx(0.8)
    samples = simulate(P, 20_000, np.random.default_rng(11))
    ok, mean, se = within(samples, exact_cover_time(P), 4)
    assert ok, (mean, se, exact_cover_time(P))
    hub = simulate(P, 20_000, np.random.default_rng(12), start=0)
    ok, mean, se = within(hub, exact_cover_time(P, start=0), 4)
    assert ok, (mean, se)


def test_retrain_and_unlearning_closed_forms():
    for K in range(2, 12):
        assert complete_graph_retrain_iterations(K) == pytest.approx(
            complete_graph_cover_time(K - 1), abs=1e-12)
        assert complete_graph_retrain_iterations(K) == pytest.approx(
            (K - 2) * harmonic_number(K - 2), abs=1e-12)
        assert complete_graph_unlearning_iterations(K) == 1 / K + K - 1
    assert complete_graph_retrain_iterations(4) == pytest.approx(2 / 2 + 2 / 1)


# ------------------------------------------------------------------ hitting times


@pytest.mark.parametrize("K", (2, 5, 9))
def test_hitting_times_of_the_complete_graph(K):
    H = hitting_times(mh(nx.complete_graph(K)))
    np.testing.assert_allclose(H, (K - 1) * (1 - np.eye(K)), rtol=0, atol=1e-9)


@pytest.mark.parametrize("K", (3, 6, 11))
def test_hitting_times_of_the_ring_are_d_times_k_minus_d(K):
    H = hitting_times(srw(nx.cycle_graph(K)))
    i, j = np.indices((K, K))
    d = (j - i) % K
    np.testing.assert_allclose(H, d * (K - d), rtol=0, atol=1e-8)


def test_hitting_times_of_the_path_and_the_stationary_distribution():
    K = 7
    P = srw(nx.path_graph(K))
    assert hitting_times(P)[0, K - 1] == pytest.approx((K - 1) ** 2, abs=1e-9)
    deg = np.array([1, 2, 2, 2, 2, 2, 1])
    assert stationary_distribution(P) == pytest.approx(deg / deg.sum(), abs=1e-12)


GRAPHS = {
    "star": nx.star_graph(6),
    "path": nx.path_graph(6),
    "ring": nx.cycle_graph(7),
    "grid": nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, 4)),
    "lollipop": nx.lollipop_graph(4, 3),
    "erdos-renyi": nx.gnp_random_graph(8, 0.45, seed=3),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_matthews_bounds_bracket_the_exact_cover_time_from_every_start(name):
    graph = GRAPHS[name]
    assert nx.is_connected(graph)
    for P in (mh(graph), srw(graph)):
        lower, upper = matthews_bounds(P)
        for v in range(len(P)):
            assert lower - 1e-9 <= exact_cover_time(P, start=v) <= upper + 1e-9


def test_matthews_bounds_are_tight_on_the_complete_graph():
    lower, upper = matthews_bounds(mh(nx.complete_graph(6)))
    assert lower == pytest.approx(upper) == pytest.approx(complete_graph_cover_time(6))


# ------------------------------------------------------------------ first hitting (unlearning)


@pytest.mark.parametrize("K", (2, 3, 10, 25))
def test_expected_first_hitting_on_the_complete_graph_is_the_papers_value(K):
    P = mh(nx.complete_graph(K))
    for target in (0, K - 1):
        assert expected_first_hitting(P, target) == pytest.approx(1 / K + K - 1, abs=1e-9)
    # Started at the target: slot 1; started elsewhere: 1 + (K - 1).
    assert expected_first_hitting(P, 0, start=0) == 1.0
    assert expected_first_hitting(P, 0, start=1) == pytest.approx(K, abs=1e-9)
    # The paper's series, summed directly.
    r = (K - 2) / (K - 1)
    series = 1 / K + math.fsum(ell / K * r ** (ell - 2) for ell in range(2, 20_000))
    assert series == pytest.approx(complete_graph_unlearning_iterations(K), rel=1e-9)


def test_expected_first_hitting_agrees_with_hitting_times_and_monte_carlo():
    graph = nx.lollipop_graph(4, 3)
    P = mh(graph)
    H = hitting_times(P)
    for target in range(len(P)):
        assert expected_first_hitting(P, target) == pytest.approx(1 + H[:, target].mean())
    samples = simulate(P, 20_000, np.random.default_rng(5), target=6)
    ok, mean, se = within(samples, expected_first_hitting(P, 6), 4)
    assert ok, (mean, se)
    # Stationary start for a walk that is not doubly stochastic.
    Q = srw(graph)
    pi = stationary_distribution(Q)
    assert expected_first_hitting(Q, 0, start="stationary") == pytest.approx(
        1 + pi @ hitting_times(Q)[:, 0])


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(("call", "message"), [
    (lambda: exact_cover_time([[0.5, 0.4], [1.0, 0.0]]), "^P: rows must sum to 1"),
    (lambda: hitting_times(np.eye(3)), "^P: chain is not irreducible"),
    (lambda: exact_cover_time(np.ones((3, 2)) / 2), "^P: must be a non-empty square"),
    (lambda: exact_cover_time(mh(nx.complete_graph(17))), "^P: exact cover time needs K <= 16"),
    (lambda: expected_first_hitting(mh(nx.complete_graph(3)), 3), "^target: must be a node"),
    (lambda: exact_cover_time(mh(nx.complete_graph(3)), start="first"), "^start:"),
    (lambda: exact_cover_time(mh(nx.complete_graph(3)), start=[0.5, 0.5]), "^start:"),
    (lambda: complete_graph_cover_time(0), "^K: must be an integer >= 1"),
    (lambda: complete_graph_unlearning_iterations(1), "^K: must be an integer >= 2"),
])
def test_bad_input_gives_a_one_line_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_docstring_examples_run():
    assert doctest.testmod(cover_time).failed == 0


def test_irreducibility_check_agrees_with_scipys_strong_components():
    """The breadth-first check (no scipy import on the common path) against
    ``scipy.sparse.csgraph.connected_components`` on random directed graphs."""
    from scipy.sparse.csgraph import connected_components

    from bflnet.analysis.cover_time import _irreducible

    rng = np.random.default_rng(11)
    verdicts = set()
    for trial in range(400):
        n = int(rng.integers(1, 9))
        A = rng.random((n, n)) < rng.uniform(0.05, 0.6)
        n_comp, _ = connected_components(A, directed=True, connection="strong")
        assert _irreducible(A) == (n_comp == 1), (trial, A)
        verdicts.add(n_comp == 1)
    assert verdicts == {True, False}
