"""Consensus (gossip) weight matrices over a communication graph.

A mixing matrix ``W`` has ``W[i, j] > 0`` only for neighbours ``j`` of ``i`` (and ``i``
itself); one consensus round replaces each node's vector by ``x_i <- sum_j W[i, j] x_j``. Every
matrix built here is symmetric, doubly stochastic and non-negative, so repeated rounds converge
to the network average at a rate set by the spectral gap ``1 - max(|λ_2|, |λ_K|)``.

Matrices are dense ``float64`` arrays by default, or ``scipy.sparse.csr_array`` with
``sparse=True`` (for graphs of 10^4 nodes).

>>> from bflnet.protocols.graphs.topologies import ring
>>> W = make_mixing("metropolis-hastings", ring(4))
>>> W[0].round(3).tolist()
[0.333, 0.333, 0.0, 0.333]
>>> round(spectral_gap(W), 6)
0.666667
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from bflnet.protocols.graphs.topologies import require_connected, validate_graph

MIXING_NAMES: tuple[str, ...] = ("metropolis-hastings", "max-degree", "uniform")
"""Names accepted by :func:`make_mixing`."""

Matrix = np.ndarray | sp.csr_array


def _edges_and_degrees(graph: nx.Graph) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    require_connected(graph)
    k = graph.number_of_nodes()
    m = graph.number_of_edges()
    uv = np.fromiter((x for e in graph.edges() for x in e), dtype=np.int64, count=2 * m).reshape(
        m, 2
    )
    deg = np.fromiter((d for _, d in sorted(graph.degree())), dtype=np.int64, count=k)
    return k, uv[:, 0], uv[:, 1], deg


def _assemble(k: int, u: np.ndarray, v: np.ndarray, w: np.ndarray, sparse: bool) -> Matrix:
    """Symmetric matrix with ``w`` on edges ``(u, v)`` and the diagonal filling each row."""
    diag = 1.0 - np.bincount(u, weights=w, minlength=k) - np.bincount(v, weights=w, minlength=k)
    if sparse:
        idx = np.arange(k)
        rows = np.concatenate([u, v, idx])
        cols = np.concatenate([v, u, idx])
        data = np.concatenate([w, w, diag])
        return sp.csr_array((data, (rows, cols)), shape=(k, k), dtype=np.float64)
    W = np.zeros((k, k), dtype=np.float64)
    W[u, v] = w
    W[v, u] = w
    W[np.arange(k), np.arange(k)] = diag
    return W


def metropolis_hastings_weights(graph: nx.Graph, sparse: bool = False) -> Matrix:
    """Metropolis-Hastings weights: ``W[i, j] = 1 / (1 + max(d_i, d_j))`` on edges, the
    diagonal makes each row sum to 1. Needs only local degree information."""
    k, u, v, deg = _edges_and_degrees(graph)
    w = 1.0 / (1.0 + np.maximum(deg[u], deg[v]))
    return _assemble(k, u, v, w, sparse)


def max_degree_weights(graph: nx.Graph, sparse: bool = False) -> Matrix:
    """Max-degree weights: ``W[i, j] = 1 / (d_max + 1)`` on edges, the diagonal fills the
    row (``1 - d_i / (d_max + 1)``)."""
    k, u, v, deg = _edges_and_degrees(graph)
    w = np.full(u.shape, 1.0 / (int(deg.max()) + 1.0))
    return _assemble(k, u, v, w, sparse)


def uniform_weights(graph: nx.Graph, sparse: bool = False) -> Matrix:
    """``W = J / K`` (exact averaging in one round); valid only on the complete graph."""
    k = validate_graph(graph)
    m_full = k * (k - 1) // 2
    if graph.number_of_edges() != m_full:
        raise ValueError(
            f"graph: uniform weights need the complete graph ({m_full} edges for K={k}), "
            f"got {graph.number_of_edges()} edges; use 'metropolis-hastings' or 'max-degree'"
        )
    W = np.full((k, k), 1.0 / k)
    return sp.csr_array(W) if sparse else W


_BUILDERS = {
    "metropolis-hastings": metropolis_hastings_weights,
    "max-degree": max_degree_weights,
    "uniform": uniform_weights,
}


def make_mixing(name: str, graph: nx.Graph, sparse: bool = False) -> Matrix:
    """Build the mixing matrix called ``name`` (one of :data:`MIXING_NAMES`) for ``graph``."""
    if name not in _BUILDERS:
        raise ValueError(
            f"name: unknown mixing matrix {name!r}; allowed: {', '.join(MIXING_NAMES)}"
        )
    return _BUILDERS[name](graph, sparse=sparse)


def mixing_from_edges(name: str, k: int, u: np.ndarray, v: np.ndarray,
                      sparse: bool = False) -> Matrix:
    """The mixing matrix ``name`` of the graph on nodes ``0..k-1`` with edges ``(u[i],
    v[i])`` (each pair once), connected or not (e.g. a live graph of moving nodes): an
    isolated node keeps its own value (weight 1). ``"uniform"`` is refused unless the
    edges make the complete graph.

    >>> W = mixing_from_edges("metropolis-hastings", 3, np.array([0]), np.array([1]))
    >>> W.tolist()
    [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    """
    if name not in _BUILDERS:
        raise ValueError(
            f"name: unknown mixing matrix {name!r}; allowed: {', '.join(MIXING_NAMES)}"
        )
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    deg = np.bincount(np.concatenate([u, v]), minlength=k)
    if name == "uniform":
        if u.size != k * (k - 1) // 2:
            raise ValueError(f"name: uniform weights need the complete graph "
                             f"({k * (k - 1) // 2} edges for K={k}), got {u.size} edges")
        W = np.full((k, k), 1.0 / k)
        return sp.csr_array(W) if sparse else W
    if name == "max-degree":
        w = np.full(u.shape, 1.0 / (int(deg.max(initial=0)) + 1.0))
    else:
        w = 1.0 / (1.0 + np.maximum(deg[u], deg[v]))
    return _assemble(k, u, v, w, sparse)


def _as_square(W: Any) -> Matrix:
    W = sp.csr_array(W, dtype=np.float64) if sp.issparse(W) else np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] == 0:
        raise ValueError(f"W: must be a non-empty square matrix, got shape {W.shape}")
    return W


def _asymmetry(W: Matrix) -> float:
    """``max |W - W^T|`` for dense or sparse ``W``."""
    diff = abs(W - W.T)
    return float(diff.max()) if diff.size else 0.0


def check_mixing(W: Any, atol: float = 1e-10) -> None:
    """Raise ``ValueError`` unless ``W`` (dense or sparse) is finite, non-negative,
    symmetric and doubly stochastic, each to within ``atol``."""
    W = _as_square(W)
    data = W.data if sp.issparse(W) else W
    if not np.all(np.isfinite(data)):
        raise ValueError("W: has non-finite entries")
    if data.size and data.min() < -atol:
        raise ValueError(f"W: must be non-negative, smallest entry is {data.min():.3g}")
    asym_max = _asymmetry(W)
    if asym_max > atol:
        raise ValueError(f"W: must be symmetric, max |W - W^T| = {asym_max:.3g}")
    row_err = np.abs(np.asarray(W.sum(axis=1)).ravel() - 1.0).max()
    if row_err > atol:
        raise ValueError(f"W: rows must sum to 1, max |row sum - 1| = {row_err:.3g}")


def spectral_gap(W: Any, dense_max: int = 2000) -> float:
    """``1 - max(|λ_2|, |λ_K|)`` of a symmetric mixing matrix (eigenvalues sorted
    ``λ_1 = 1 >= λ_2 >= ... >= λ_K``): one minus the second-largest eigenvalue modulus.

    Dense eigendecomposition up to ``dense_max`` nodes. Beyond that (dense or sparse
    input, rows summing to one) the modulus comes from the Lanczos solver (ARPACK) on the
    sparse matrix with the eigenvector of all ones projected out, started from a fixed
    vector (so the same ``W`` always gives the same value); where its spectrum is too
    clustered for that to converge quickly (a long ring or path), from shift-and-invert
    Lanczos next to 1 and, when the diagonal does not rule it out, next to -1. Both agree
    with the dense value to about 1e-14. Positive iff the graph is connected.
    """
    W = _as_square(W)
    k = W.shape[0]
    if k < 2:
        raise ValueError(f"W: spectral gap needs K >= 2, got K={k}")
    if k > max(dense_max, 2):
        sparse = W if sp.issparse(W) else sp.csr_array(W)
        if _asymmetry(sparse) > 1e-10:
            raise ValueError("W: spectral gap needs a symmetric matrix")
        row_err = np.abs(np.asarray(sparse.sum(axis=1)).ravel() - 1.0).max()
        if row_err > 1e-10:
            raise ValueError(f"W: the spectral gap of a matrix above {dense_max} nodes "
                             f"needs rows summing to 1 (max |row sum - 1| = {row_err:.3g})")
        return 1.0 - _slem_lanczos(sparse)
    dense = W.toarray() if sp.issparse(W) else W
    if _asymmetry(dense) > 1e-10:
        raise ValueError("W: spectral gap needs a symmetric matrix")
    vals = np.linalg.eigvalsh(dense)  # ascending
    return 1.0 - float(max(abs(vals[-2]), abs(vals[0])))


#: Seed of the Lanczos start vector of :func:`spectral_gap` (a constant: ARPACK's own
#: start is random, and the last digits of the result would change from call to call).
_LANCZOS_START_SEED = 20_240_601
#: Restarts of plain Lanczos before :func:`spectral_gap` turns to shift-and-invert.
_PLAIN_MAXITER = 100
#: Distance of the shifts from ±1 (the factorised matrices stay non-singular).
_SHIFT_EPS = 1e-9


def _centred(x: np.ndarray) -> np.ndarray:
    """``x`` with its mean removed: projected off the all-ones eigenvector."""
    x = np.ravel(x)
    return x - x.mean()


def _largest_modulus(k: int, apply: Any, maxiter: int | None = None) -> float:
    """The largest-modulus eigenvalue of the symmetric operator ``P apply P`` (``P`` the
    projection off the all-ones vector), from a fixed start vector; ``ArpackNoConvergence``
    after ``maxiter`` restarts."""
    op = spla.LinearOperator((k, k), matvec=lambda x: _centred(apply(_centred(x))),
                             dtype=np.float64)
    start = _centred(np.random.default_rng(_LANCZOS_START_SEED).standard_normal(k))
    vals = spla.eigsh(op, k=1, which="LM", return_eigenvectors=False, v0=start,
                      maxiter=maxiter)
    return float(vals[0])


class _Solve:
    """``x -> (W + shift I)^{-1} x`` by a sparse LU factorisation."""

    def __init__(self, W: sp.csr_array, shift: float) -> None:
        self.lu = spla.splu(sp.csc_matrix(W + shift * sp.identity(W.shape[0], format="csr")))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.lu.solve(x)


def _slem_lanczos(W: sp.csr_array) -> float:
    """The second-largest eigenvalue modulus of a symmetric ``W`` with ``W 1 = 1``: the
    largest modulus once the all-ones eigenvector is projected out."""
    k = W.shape[0]
    try:
        return abs(_largest_modulus(k, lambda x: W @ x, _PLAIN_MAXITER))
    except spla.ArpackNoConvergence:
        pass
    # shift-and-invert: (W - (1 + eps) I)^{-1} maps λ_2 (nearest 1) to the largest modulus
    lam2 = 1.0 + _SHIFT_EPS + 1.0 / _largest_modulus(k, _Solve(W, -(1.0 + _SHIFT_EPS)))
    diag = W.diagonal()
    lowest = float((2 * diag - np.asarray(abs(W).sum(axis=1)).ravel()).min())  # Gershgorin
    if lowest >= -lam2:
        return abs(lam2)
    lamk = 1.0 / _largest_modulus(k, _Solve(W, 1.0 + _SHIFT_EPS)) - (1.0 + _SHIFT_EPS)
    return max(abs(lam2), abs(lamk))


def weight_rows(W: Any, nodes: list[Any]) -> dict[Any, dict[Any, float]]:
    """Each node's non-zero weights ``{node: {j: W[node, j]}}`` (the node itself included,
    even at weight 0), for a dense or sparse ``W`` whose rows and columns follow ``nodes``:
    O(non-zeros) for a sparse matrix, so a 10^4-node graph needs no dense K×K pass."""
    W = _as_square(W)
    if W.shape[0] != len(nodes):
        raise ValueError(f"weights: must be {len(nodes)}x{len(nodes)} for this graph, "
                         f"got {W.shape}")
    out: dict[Any, dict[Any, float]] = {}
    if sp.issparse(W):
        csr = sp.csr_array(W)
        indptr, indices, data = csr.indptr, csr.indices, csr.data
        for i, k in enumerate(nodes):
            lo, hi = indptr[i], indptr[i + 1]
            row = {nodes[c]: float(v) for c, v in zip(indices[lo:hi], data[lo:hi], strict=True)
                   if v != 0}
            row.setdefault(k, 0.0)
            out[k] = row
        return out
    for i, k in enumerate(nodes):
        cols = np.flatnonzero(W[i])
        row = {nodes[c]: float(W[i, c]) for c in cols}
        row.setdefault(k, 0.0)
        out[k] = row
    return out
