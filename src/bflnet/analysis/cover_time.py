"""Cover-time and hitting-time theory of the random walk that carries the token.

Everything here takes a row-stochastic transition matrix ``P`` (``P[v, w]`` = probability
that the token goes from node ``v`` to node ``w`` in one time slot; self-loops allowed, e.g.
``MetropolisHastingsWalk(graph).transition_matrix()``) and counts **time slots**, in the
paper's notation: node ``k⁽ⁱ⁾`` is scheduled at slot ``i = 1, 2, ...``, and ``k⁽¹⁾`` is the
starting node (uniform over the nodes unless said otherwise, as in G-FVL's initialisation).
A slot in which the walk stays put (a rejected Metropolis-Hastings proposal) is a slot.

Counting conventions (the two the paper uses, kept as the paper has them):

- **Cover time** ``C`` (Sec. III-B): the number of slots *after the first* until every node
  has been scheduled at least once, ``C = min{i : {k⁽¹⁾..k⁽ⁱ⁾} = all nodes} - 1``. So
  ``C = 0`` for one node, and on the complete graph ``E[C] = (K-1) H_{K-1}`` (the coupon
  collector without the first coupon). The cover slot itself is ``C + 1``.
- **First hitting index** ``L`` (Sec. IV): the 1-based slot at which ``target`` is first
  scheduled, ``L = min{i >= 1 : k⁽ⁱ⁾ = target}``; ``L = 1`` when the walk starts at the
  target. Hence ``E[L] = 1 + Σ_v π₀(v) H(v, target)`` with ``H`` the hitting times below, and
  on the complete graph with a uniform start ``E[L] = 1/K + K - 1`` (the paper's value).
- **Hitting time** ``H(i, j)``: expected number of slots (steps) for the walk started at
  ``i`` to be at ``j``, ``H(j, j) = 0``.

>>> round(complete_graph_cover_time(10), 6)
25.460714
>>> from bflnet.protocols.graphs.topologies import complete
>>> from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
>>> P = MetropolisHastingsWalk(complete(10)).transition_matrix()
>>> round(exact_cover_time(P), 6)
25.460714
>>> round(expected_first_hitting(P, target=3), 6), complete_graph_unlearning_iterations(10)
(9.1, 9.1)
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np

from bflnet.validation.checks import check_int

#: Largest chain :func:`exact_cover_time` accepts (the state space has ``2**K * K`` states).
EXACT_COVER_MAX_K = 16

__all__ = [
    "EXACT_COVER_MAX_K",
    "MatthewsBounds",
    "complete_graph_cover_time",
    "complete_graph_retrain_iterations",
    "complete_graph_unlearning_iterations",
    "exact_cover_time",
    "expected_first_hitting",
    "harmonic_number",
    "hitting_times",
    "matthews_bounds",
    "stationary_distribution",
]


# ------------------------------------------------------------------ validation




def _reaches_all(A: np.ndarray) -> bool:
    """Whether node 0 reaches every node along the edges ``A[v, w]`` (breadth first)."""
    seen = np.zeros(A.shape[0], dtype=bool)
    seen[0] = True
    frontier = np.array([0])
    while frontier.size:
        new = A[frontier].any(axis=0) & ~seen
        seen |= new
        frontier = np.flatnonzero(new)
    return bool(seen.all())


def _irreducible(A: np.ndarray) -> bool:
    """Whether the directed graph ``A`` is strongly connected: node 0 reaches every node
    and every node reaches node 0."""
    return _reaches_all(A) and _reaches_all(A.T)


def _check_matrix(P: Any) -> np.ndarray:
    """``P`` as a float64 array; a one-line error unless square, row-stochastic and
    irreducible (every node reaches every other, which every formula here needs)."""
    try:
        P = np.array(P, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"P: must be a square numeric matrix, got {type(P).__name__}") from None
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
        raise ValueError(f"P: must be a non-empty square matrix, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < -1e-12):
        raise ValueError("P: entries must be finite and >= 0")
    sums = P.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=1e-9):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(f"P: rows must sum to 1, row {bad} sums to {sums[bad]!r}")
    if not _irreducible(P > 0):
        from scipy.sparse.csgraph import connected_components  # (a second to import)

        n_comp, _ = connected_components(P > 0, directed=True, connection="strong")
        raise ValueError(
            f"P: chain is not irreducible ({n_comp} communicating classes); "
            "the walk's graph must be connected")
    return np.clip(P, 0.0, None)


def _check_node(name: str, node: Any, K: int) -> int:
    if isinstance(node, bool) or not isinstance(node, numbers.Integral) or not 0 <= node < K:
        raise ValueError(f"{name}: must be a node in 0..{K - 1}, got {node!r}")
    return int(node)


def _start_distribution(start: Any, P: np.ndarray) -> np.ndarray:
    """``start``: ``None``/``"uniform"`` (uniform over nodes), ``"stationary"`` (``P``'s
    stationary distribution), a node index, or a length-``K`` probability vector."""
    K = P.shape[0]
    if isinstance(start, str) and start == "stationary":
        return _stationary(P)
    if start is None or (isinstance(start, str) and start == "uniform"):
        return np.full(K, 1.0 / K)
    if isinstance(start, numbers.Integral) and not isinstance(start, bool):
        out = np.zeros(K)
        out[_check_node("start", start, K)] = 1.0
        return out
    if isinstance(start, str):
        raise ValueError(
            f"start: must be 'uniform', 'stationary', a node or a probability vector, "
            f"got {start!r}")
    try:
        p = np.asarray(start, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"start: must be 'uniform', 'stationary', a node or a probability "
                         f"vector, got {type(start).__name__}") from None
    if p.shape != (K,) or np.any(p < 0) or not np.isclose(p.sum(), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"start: a probability vector must have {K} non-negative entries "
                         "summing to 1")
    return p


# ------------------------------------------------------------------ closed forms


def harmonic_number(n: int) -> float:
    """``H_n = 1 + 1/2 + ... + 1/n`` (``H_0 = 0``)."""
    n = check_int("n", n, ge=0)
    return math.fsum(1.0 / i for i in range(1, n + 1))


def complete_graph_cover_time(K: int) -> float:
    """Expected cover time on the complete graph, ``Σ_{i=1}^{K-1} (K-1)/(K-i) = (K-1) H_{K-1}``.

    Counts the slots after the first (see the module docstring); Metropolis-Hastings and the
    simple random walk coincide on the complete graph (uniform neighbour, no self-loops).
    ``K = 1`` gives 0.
    """
    K = check_int("K", K, ge=1)
    return math.fsum((K - 1) / (K - i) for i in range(1, K))


def complete_graph_unlearning_iterations(K: int) -> float:
    """Expected 1-based slot ``E[L] = 1/K + K - 1`` at which a given agent is first
    scheduled on the complete graph, the start ``k⁽¹⁾`` being uniform (Sec. IV).

    ``P(L = 1) = 1/K`` and ``P(L = l) = (1/K) ((K-2)/(K-1))^(l-2)`` for ``l >= 2``; the
    unlearned posterior ``η - η_k`` exists at the end of slot ``L``. Equals
    ``expected_first_hitting(P, target)`` for the complete graph's ``P``.
    """
    K = check_int("K", K, ge=2)
    return 1.0 / K + K - 1


def complete_graph_retrain_iterations(K: int) -> float:
    """``Σ_{i=1}^{K-2} (K-2)/(K-1-i) = (K-2) H_{K-2}`` (Sec. IV): expected slots, after the
    first, for retraining from scratch to cover the ``K-1`` remaining agents of a complete
    graph, i.e. ``complete_graph_cover_time(K - 1)``.

    Note the paper's two conventions differ by one: this count excludes the first slot
    (the retrained posterior is ready at slot ``value + 1``), while
    :func:`complete_graph_unlearning_iterations` is a 1-based slot index.
    """
    K = check_int("K", K, ge=2)
    return math.fsum((K - 2) / (K - 1 - i) for i in range(1, K - 1))


# ------------------------------------------------------------------ Markov-chain theory


def stationary_distribution(P: Any) -> np.ndarray:
    """The stationary distribution ``π`` (``π P = π``, ``Σ π = 1``) of an irreducible ``P``."""
    P = _check_matrix(P)
    return _stationary(P)


def _stationary(P: np.ndarray) -> np.ndarray:
    K = P.shape[0]
    A = (np.eye(K) - P).T
    A[-1, :] = 1.0
    b = np.zeros(K)
    b[-1] = 1.0
    pi = np.linalg.solve(A, b)
    return pi / pi.sum()


def hitting_times(P: Any) -> np.ndarray:
    """Matrix ``H`` of expected first-hitting times: ``H[i, j]`` = expected number of slots
    for the walk started at ``i`` to be at ``j`` (``H[j, j] = 0``).

    Uses the fundamental matrix ``Z = (I - P + 1 π^T)^{-1}``:
    ``H[i, j] = (Z[j, j] - Z[i, j]) / π[j]`` (one ``K x K`` inversion).

    >>> import numpy as np
    >>> hitting_times(np.array([[0.0, 1.0], [1.0, 0.0]])).round(12).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    P = _check_matrix(P)
    K = P.shape[0]
    pi = _stationary(P)
    Z = np.linalg.inv(np.eye(K) - P + np.outer(np.ones(K), pi))
    H = (np.diag(Z)[None, :] - Z) / pi[None, :]
    np.fill_diagonal(H, 0.0)
    return H


def _hitting_column(P: np.ndarray, target: int) -> np.ndarray:
    """``H[:, target]`` by one linear solve: ``(I - P_{-t,-t}) h = 1``."""
    K = P.shape[0]
    keep = np.arange(K) != target
    h = np.zeros(K)
    if K > 1:
        A = np.eye(K - 1) - P[np.ix_(keep, keep)]
        h[keep] = np.linalg.solve(A, np.ones(K - 1))
    return h


def expected_first_hitting(P: Any, target: int, start: Any = "uniform") -> float:
    """Expected 1-based slot ``E[L]``, ``L = min{i >= 1 : k⁽ⁱ⁾ = target}``, at which the walk
    first schedules ``target`` (``L = 1`` if it starts there).

    ``E[L] = 1 + Σ_v π₀(v) H(v, target)``. ``start``: ``"uniform"`` (default; G-FVL picks
    ``k⁽¹⁾`` uniformly, and for a Metropolis-Hastings walk that has run long before
    unlearning starts its position is also uniform, the stationary distribution), a node
    index, ``"stationary"`` (the walk's stationary distribution, for walks that are not
    doubly stochastic), or a probability vector over the nodes. On the complete graph with
    a uniform start this is the paper's ``1/K + K - 1``. To count the slots *after* the
    first instead (the cover-time convention), subtract 1.

    Unlearning (Sec. IV): slot 1 here is the first slot of the unlearning phase. If learning
    ran ``I`` slots and the request is served from slot ``I + 1`` on, pass the law of
    ``k⁽ᴵ⁺¹⁾``: ``start=node`` if it is known, or ``start=P[k⁽ᴵ⁾]`` (the row of the node that
    ran slot ``I``); the forgotten agent's ``η - η_k`` is then ready at the end of learning
    slot ``I + L``. Slots are counted, not seconds: multiply by the per-slot cost elsewhere.
    """
    P = _check_matrix(P)
    K = P.shape[0]
    target = _check_node("target", target, K)
    p0 = _start_distribution(start, P)
    return float(1.0 + p0 @ _hitting_column(P, target))


def exact_cover_time(P: Any, start: Any = None) -> float:
    """Exact expected cover time ``E[C]`` (slots after the first until every node has been
    scheduled) of the chain ``P``, for ``K <= EXACT_COVER_MAX_K`` nodes.

    Solves the chain on (visited set ``S``, current node ``v``):
    ``E[S, v] = 0`` if ``S`` is all nodes, else
    ``E[S, v] = 1 + Σ_{w ∈ S} P[v, w] E[S, w] + Σ_{w ∉ S} P[v, w] E[S ∪ {w}, w]``,
    one batched linear system per set size, largest sets first. ``start``: ``None`` or
    ``"uniform"`` (default, as G-FVL picks ``k⁽¹⁾``), a node index, ``"stationary"``, or a
    probability vector over the nodes.
    """
    P = _check_matrix(P)
    K = P.shape[0]
    if K > EXACT_COVER_MAX_K:
        raise ValueError(
            f"P: exact cover time needs K <= {EXACT_COVER_MAX_K} nodes (2^K visited sets), "
            f"got K={K}")
    p0 = _start_distribution(start, P)
    return float(p0 @ _cover_from_each_start(P))


def _cover_from_each_start(P: np.ndarray) -> np.ndarray:
    """``E[{v}, v]`` for every node ``v``."""
    K = P.shape[0]
    n_sets = 1 << K
    masks = np.arange(n_sets, dtype=np.int64)
    bits = np.int64(1) << np.arange(K, dtype=np.int64)
    member = (masks[:, None] & bits[None, :]) != 0  # (2^K, K)
    size = member.sum(axis=1)
    E = np.zeros((n_sets, K))  # E[S, v]; meaningful for v in S only
    cols = np.arange(K)
    for m in range(K - 1, 0, -1):
        sets = masks[size == m]
        inside = member[sets]  # (n, K)
        nodes = np.nonzero(inside)[1].reshape(len(sets), m)  # sorted members of each set
        # E[S ∪ {w}, w] for w outside S (0 for w inside: those terms are the linear part)
        grown = E[sets[:, None] | bits[None, :], cols[None, :]]
        grown[inside] = 0.0
        rows = P[nodes]  # (n, m, K): P[v, :] for v in S
        b = 1.0 + np.einsum("nmk,nk->nm", rows, grown)
        A = np.eye(m)[None, :, :] - np.take_along_axis(
            rows, np.broadcast_to(nodes[:, None, :], (len(sets), m, m)), axis=2)
        E[sets[:, None], nodes] = np.linalg.solve(A, b[..., None])[..., 0]
    return E[bits, cols]


class MatthewsBounds(NamedTuple):
    """Matthews' bounds on the expected cover time (slots after the first)."""

    lower: float
    upper: float


def matthews_bounds(P: Any) -> MatthewsBounds:
    """Matthews' bounds ``lower <= E_v[C] <= upper`` for every start ``v`` (hence for any
    start distribution).

    ``upper = max_{i≠j} H(i, j) · H_{K-1}``. The general lower bound is
    ``max_A min_{i≠j ∈ A} H(i, j) · H_{|A|-1}`` over subsets ``A``; for practicality this
    computes it with ``A`` = all nodes only, ``min_{i≠j} H(i, j) · H_{K-1}``, which can be
    loose (e.g. on a star, where a leaf reaches the hub quickly). ``K = 1`` gives ``(0, 0)``.
    """
    H = hitting_times(P)
    K = H.shape[0]
    if K == 1:
        return MatthewsBounds(0.0, 0.0)
    off = H[~np.eye(K, dtype=bool)]
    h = harmonic_number(K - 1)
    return MatthewsBounds(float(off.min() * h), float(off.max() * h))
