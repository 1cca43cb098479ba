"""Consensus weight matrices: structure, closed-form spectra, convergence to the mean."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from bflnet.protocols.graphs import mixing
from bflnet.protocols.graphs.mixing import (
    MIXING_NAMES,
    check_mixing,
    make_mixing,
    max_degree_weights,
    metropolis_hastings_weights,
    spectral_gap,
    uniform_weights,
)
from bflnet.protocols.graphs.topologies import complete, grid, random_geometric, ring, star

GRAPHS = [
    pytest.param(star(7), id="star7"),
    pytest.param(nx.lollipop_graph(4, 3), id="lollipop4-3"),
    pytest.param(ring(9), id="ring9"),
    pytest.param(grid(3, 4), id="grid3x4"),
    pytest.param(random_geometric(40, 350.0, 1000.0, np.random.default_rng(4)), id="rgg40"),
]
BUILDERS = [metropolis_hastings_weights, max_degree_weights]


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("graph", GRAPHS)
def test_weights_are_symmetric_doubly_stochastic_on_the_graph(builder, graph):
    K = graph.number_of_nodes()
    W = builder(graph)
    assert isinstance(W, np.ndarray) and W.dtype == np.float64 and W.shape == (K, K)
    check_mixing(W)
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    # zero off the graph, positive on edges
    A = nx.to_numpy_array(graph, nodelist=range(K))
    off = (A == 0) & ~np.eye(K, dtype=bool)
    assert np.all(W[off] == 0) and np.all(W[A == 1] > 0)
    assert np.all(np.diag(W) >= 0)


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("graph", GRAPHS)
def test_sparse_equals_dense(builder, graph):
    S = builder(graph, sparse=True)
    assert sp.issparse(S) and S.format == "csr"
    check_mixing(S)
    np.testing.assert_allclose(S.toarray(), builder(graph), atol=1e-15)


@pytest.mark.parametrize("graph", GRAPHS)
def test_metropolis_hastings_entries(graph):
    W = metropolis_hastings_weights(graph)
    deg = dict(graph.degree())
    for i, j in graph.edges:
        assert W[i, j] == pytest.approx(1 / (1 + max(deg[i], deg[j])))
    for i in graph:
        assert W[i, i] == pytest.approx(1 - sum(W[i, j] for j in graph[i]))


@pytest.mark.parametrize("graph", GRAPHS)
def test_max_degree_entries(graph):
    W = max_degree_weights(graph)
    d_max = max(d for _, d in graph.degree())
    for i, j in graph.edges:
        assert W[i, j] == pytest.approx(1 / (d_max + 1))
    for i, d in graph.degree():
        assert W[i, i] == pytest.approx(1 - d / (d_max + 1))


# ------------------------------------------------------------------ closed-form spectra


@pytest.mark.parametrize("K", [3, 4, 5, 6, 8, 13, 50])
@pytest.mark.parametrize("sparse", [False, True])
def test_ring_spectral_gap_closed_form(K, sparse):
    """Every degree is 2, so W = (I + A) / 3 with eigenvalues (1 + 2 cos(2 pi j / K)) / 3."""
    W = metropolis_hastings_weights(ring(K), sparse=sparse)
    lam = [(1 + 2 * math.cos(2 * math.pi * j / K)) / 3 for j in range(1, K)]
    expected = 1 - max(abs(x) for x in lam)
    assert spectral_gap(W) == pytest.approx(expected, abs=1e-12)
    # the regular ring gives the same matrix under max-degree weights
    np.testing.assert_allclose(
        max_degree_weights(ring(K)), metropolis_hastings_weights(ring(K)), atol=1e-15
    )


@pytest.mark.parametrize(("rows", "cols"), [(3, 3), (3, 5), (4, 6)])
def test_torus_spectral_gap_closed_form(rows, cols):
    """4-regular torus: W = (I + A) / 5, eig(A) = 2 cos(2 pi a / r) + 2 cos(2 pi b / c)."""
    W = max_degree_weights(grid(rows, cols, periodic=True))
    lam = [
        (1 + 2 * math.cos(2 * math.pi * a / rows) + 2 * math.cos(2 * math.pi * b / cols)) / 5
        for a in range(rows)
        for b in range(cols)
        if (a, b) != (0, 0)
    ]
    assert spectral_gap(W) == pytest.approx(1 - max(abs(x) for x in lam), abs=1e-12)


@pytest.mark.parametrize("K", [3, 6, 20])
def test_star_spectral_gap_is_one_over_K(K):
    """On a star both rules give W = I - L / K; the Laplacian spectrum {0, 1, K} gives
    eigenvalues {1, 1 - 1/K, 0}."""
    for W in (metropolis_hastings_weights(star(K)), max_degree_weights(star(K))):
        assert spectral_gap(W) == pytest.approx(1 / K, abs=1e-12)


@pytest.mark.parametrize("K", [2, 5, 12])
def test_uniform_and_mh_on_complete_graph_average_in_one_round(K):
    U = uniform_weights(complete(K))
    np.testing.assert_allclose(U, np.full((K, K), 1 / K))
    np.testing.assert_allclose(metropolis_hastings_weights(complete(K)), U, atol=1e-15)
    assert spectral_gap(U) == pytest.approx(1.0, abs=1e-12)
    assert spectral_gap(uniform_weights(complete(K), sparse=True)) == pytest.approx(1.0)


def test_uniform_weights_need_complete_graph():
    with pytest.raises(ValueError) as err:
        uniform_weights(ring(5))
    assert str(err.value) == (
        "graph: uniform weights need the complete graph (10 edges for K=5), got 5 edges; "
        "use 'metropolis-hastings' or 'max-degree'"
    )


def test_disconnected_block_matrix_has_zero_gap():
    W = np.kron(np.eye(2), np.full((3, 3), 1 / 3))
    check_mixing(W)
    assert spectral_gap(W) == pytest.approx(0.0, abs=1e-12)


def test_sparse_eigensolver_path_matches_dense():
    g = random_geometric(400, 150.0, 1000.0, np.random.default_rng(7))
    W = metropolis_hastings_weights(g, sparse=True)
    dense_gap = spectral_gap(W.toarray())
    assert 0 < dense_gap < 1
    assert spectral_gap(W, dense_max=100) == pytest.approx(dense_gap, rel=1e-6)


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("graph", [*GRAPHS, pytest.param(grid(6, 7, periodic=True), id="torus6x7"),
                                   pytest.param(complete(5), id="complete5")])
def test_lanczos_gap_equals_the_dense_gap_on_small_graphs(graph, builder):
    """The Lanczos path (forced with ``dense_max=0``), from a dense or a sparse matrix,
    gives the dense eigendecomposition's gap."""
    dense = builder(graph)
    expected = spectral_gap(dense)
    assert spectral_gap(dense, dense_max=0) == pytest.approx(expected, abs=1e-9)
    assert spectral_gap(builder(graph, sparse=True), dense_max=0) == pytest.approx(
        expected, abs=1e-9)


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("graph", [*GRAPHS, pytest.param(complete(6), id="complete6"),
                                   pytest.param(nx.path_graph(30), id="path30")])
def test_shift_and_invert_gap_equals_the_dense_gap(graph, builder, monkeypatch):
    """With no restart allowed, plain Lanczos gives up and shift-and-invert next to 1 (and
    next to -1 where the diagonal allows |λ_K| > λ_2: the star, the complete graph) takes
    over; it gives the dense gap."""
    monkeypatch.setattr(mixing, "_PLAIN_MAXITER", 1)
    W = builder(graph, sparse=True)
    assert spectral_gap(W, dense_max=0) == pytest.approx(spectral_gap(W.toarray()), abs=1e-9)


def test_long_ring_above_the_dense_limit_has_the_closed_form_gap():
    """Ring of 4096 (λ_2 clusters too close to 1 for plain Lanczos): (2 - 2 cos(2 pi / K)) / 3."""
    W = metropolis_hastings_weights(ring(4096), sparse=True)
    assert spectral_gap(W) == pytest.approx((2 - 2 * math.cos(2 * math.pi / 4096)) / 3,
                                            abs=1e-13)


def test_large_spectral_gap_needs_a_stochastic_matrix():
    W = sp.identity(2500, format="csr") * 0.5
    with pytest.raises(ValueError, match=r"^W: the spectral gap of a matrix above 2000 nodes "
                                         r"needs rows summing to 1"):
        spectral_gap(W)


def test_lanczos_gap_is_the_same_on_every_call_and_matches_the_large_torus_closed_form():
    """64 x 64 torus (K = 4096, above the dense limit): W = (I + A) / 5, so the gap is
    (2 - 2 cos(2 pi / 64)) / 5; ARPACK starts from a fixed vector, so repeated calls agree
    to the last bit (a random start changes the last digits)."""
    W = metropolis_hastings_weights(grid(64, 64, periodic=True), sparse=True)
    gaps = {spectral_gap(W) for _ in range(3)}
    assert len(gaps) == 1
    assert gaps.pop() == pytest.approx((2 - 2 * math.cos(2 * math.pi / 64)) / 5, abs=1e-12)


# ------------------------------------------------------------------ consensus


@pytest.mark.parametrize("name", ["metropolis-hastings", "max-degree"])
@pytest.mark.parametrize("sparse", [False, True])
def test_consensus_converges_to_the_mean_at_the_spectral_rate(name, sparse):
    g = random_geometric(30, 400.0, 1000.0, np.random.default_rng(2))
    W = make_mixing(name, g, sparse=sparse)
    gap = spectral_gap(W)
    x = np.random.default_rng(3).normal(size=(30, 4))  # four scalars per node
    mean = x.mean(axis=0)
    err0 = np.linalg.norm(x - mean)
    for t in range(1, 301):
        x = W @ x
        np.testing.assert_allclose(x.mean(axis=0), mean, atol=1e-12)  # average preserved
        assert np.linalg.norm(x - mean) <= (1 - gap) ** t * err0 * (1 + 1e-9) + 1e-13
    np.testing.assert_allclose(x, np.broadcast_to(mean, x.shape), atol=1e-6)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("W", "match"),
    [
        (np.array([[0.5, 0.5], [0.4, 0.6]]), r"^W: must be symmetric, max \|W - W\^T\| = 0\.1$"),
        (np.array([[0.5, 0.4], [0.4, 0.5]]), r"^W: rows must sum to 1"),
        (np.array([[1.5, -0.5], [-0.5, 1.5]]), r"^W: must be non-negative"),
        (np.array([[0.5, np.nan], [np.nan, 0.5]]), r"^W: has non-finite entries$"),
        (np.ones((2, 3)) / 3, r"^W: must be a non-empty square matrix, got shape \(2, 3\)$"),
        (sp.csr_array(np.array([[0.5, 0.5], [0.4, 0.6]])), r"^W: must be symmetric"),
    ],
)
def test_check_mixing_rejects_bad_matrices(W, match):
    with pytest.raises(ValueError, match=match):
        check_mixing(W)


def test_spectral_gap_errors():
    with pytest.raises(ValueError, match=r"^W: spectral gap needs K >= 2"):
        spectral_gap(np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"^W: spectral gap needs a symmetric matrix$"):
        spectral_gap(np.array([[0.5, 0.5], [0.4, 0.6]]))


@pytest.mark.parametrize("name", MIXING_NAMES)
def test_mixing_rejects_disconnected_graphs(name):
    with pytest.raises(ValueError, match=r"^graph: (disconnected \(2 components\)|uniform)"):
        make_mixing(name, nx.disjoint_union(ring(3), ring(4)))


def test_make_mixing_names():
    assert MIXING_NAMES == ("metropolis-hastings", "max-degree", "uniform")
    g = complete(4)
    for name in MIXING_NAMES:
        check_mixing(make_mixing(name, g))
    with pytest.raises(ValueError) as err:
        make_mixing("laplacian", g)
    assert str(err.value) == (
        "name: unknown mixing matrix 'laplacian'; allowed: metropolis-hastings, max-degree, uniform"
    )
