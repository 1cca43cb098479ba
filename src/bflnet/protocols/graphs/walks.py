"""Next-node rules for a token (the global state) walking over a communication graph.

A walk is built once from a connected graph (nodes ``0..K-1``) and precomputes each node's
neighbours as tuples, so :meth:`Walk.next_node`, called ~10^5 times per run, costs one
``rng.random()`` call and no array allocation. Each walk also exposes its transition matrix
``P`` (row-stochastic, ``P[k, j]`` = probability the token moves from ``k`` to ``j``) and its
stationary distribution, which the analysis code uses for cover-time theory.

Rules:

- ``metropolis-hastings`` — eq. (5) of G-FVL: from ``k`` propose a uniformly chosen
  neighbour ``j`` and move with probability ``min(1, deg(k)/deg(j))``, else stay. ``P`` is
  symmetric, hence doubly stochastic, so every agent is visited equally often in the long run.
- ``uniform-neighbour`` — simple random walk: move to a uniformly chosen neighbour; agents are
  visited in proportion to their degree.
- ``round-robin`` — a fixed cyclic order of all agents. The next agent need not be a
  neighbour; the protocol then routes the token over a shortest path (relaying through the
  intermediate agents), which this class does not model.

>>> import numpy as np
>>> from bflnet.protocols.graphs.topologies import star
>>> walk = make_walk("metropolis-hastings", star(5))
>>> rng = np.random.default_rng(0)
>>> k = walk.first_node(rng)
>>> k = walk.next_node(k, rng)
>>> bool(np.allclose(walk.stationary_distribution(), 0.2))
True
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from bflnet.protocols.graphs.topologies import require_connected
from bflnet.protocols.graphs.walk_names import WALK_NAMES


class Walk(ABC):
    """A next-node rule on a connected graph with nodes ``0..K-1``.

    >>> import numpy as np
    >>> from bflnet.protocols.graphs.topologies import ring
    >>> walk = UniformNeighbourWalk(ring(4))
    >>> walk.next_node(0, np.random.default_rng(1)) in (1, 3)
    True
    >>> walk.transition_matrix().sum(axis=1).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    name: str = ""

    def __init__(self, graph: nx.Graph) -> None:
        require_connected(graph)
        k = graph.number_of_nodes()
        if k < 2:
            raise ValueError(f"graph: a walk needs at least 2 nodes, got {k}")
        self.graph = graph
        self.K = k
        # sorted for a deterministic draw order independent of edge insertion order
        self._neighbours: tuple[tuple[int, ...], ...] = tuple(
            tuple(sorted(int(j) for j in graph.adj[i])) for i in range(k)
        )
        self._degree: tuple[int, ...] = tuple(len(n) for n in self._neighbours)

    def neighbours(self, node: int) -> tuple[int, ...]:
        """The neighbours of ``node`` (sorted)."""
        return self._neighbours[node]

    def degree(self, node: int) -> int:
        """Degree of ``node``."""
        return self._degree[node]

    def first_node(self, rng: np.random.Generator) -> int:
        """A uniformly chosen starting node."""
        return int(rng.integers(self.K))

    @abstractmethod
    def next_node(self, current: int, rng: np.random.Generator) -> int:
        """The node the token visits after ``current`` (may equal ``current`` for lazy
        rules)."""

    @abstractmethod
    def transition_matrix(self) -> np.ndarray:
        """Dense ``K x K`` row-stochastic transition matrix ``P`` (float64)."""

    @abstractmethod
    def stationary_distribution(self) -> np.ndarray:
        """Long-run fraction of visits per node, a length-``K`` probability vector."""

    def sample_path(
        self, steps: int, rng: np.random.Generator, start: int | None = None
    ) -> list[int]:
        """The visited nodes ``[start, x_1, ..., x_steps]`` (``start`` uniform if None)."""
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
            raise ValueError(f"steps: must be an integer >= 0, got {steps!r}")
        node = self.first_node(rng) if start is None else self._check_node("start", start)
        out = [node]
        nxt = self.next_node
        for _ in range(steps):
            node = nxt(node, rng)
            out.append(node)
        return out

    def _check_node(self, field: str, node: Any) -> int:
        if (
            isinstance(node, bool)
            or not isinstance(node, int | np.integer)
            or not (0 <= node < self.K)
        ):
            raise ValueError(f"{field}: must be a node in 0..{self.K - 1}, got {node!r}")
        return int(node)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K})"


class MetropolisHastingsWalk(Walk):
    """Eq. (5): propose a uniform neighbour ``j``, accept with ``min(1, deg(k)/deg(j))``.

    One uniform draw does both steps: its integer part (scaled by the degree) picks ``j``, and
    the fractional part decides acceptance. ``P[k, j] = min(1/deg(k), 1/deg(j))`` for
    neighbours, so ``P`` is symmetric and the stationary distribution is uniform.
    """

    name = "metropolis-hastings"

    def __init__(self, graph: nx.Graph) -> None:
        super().__init__(graph)
        deg = self._degree
        self._accept: tuple[tuple[float, ...], ...] = tuple(
            tuple(min(1.0, deg[k] / deg[j]) for j in self._neighbours[k]) for k in range(self.K)
        )

    def next_node(self, current: int, rng: np.random.Generator) -> int:
        nbrs = self._neighbours[current]
        x = rng.random() * len(nbrs)
        i = int(x)
        if i == len(nbrs):
            i -= 1
        return nbrs[i] if x - i < self._accept[current][i] else current

    def transition_matrix(self) -> np.ndarray:
        P = np.zeros((self.K, self.K))
        for k, nbrs in enumerate(self._neighbours):
            for j, a in zip(nbrs, self._accept[k], strict=True):
                P[k, j] = a / self._degree[k]
            P[k, k] = 1.0 - P[k].sum()
        return P

    def stationary_distribution(self) -> np.ndarray:
        return np.full(self.K, 1.0 / self.K)


class UniformNeighbourWalk(Walk):
    """Simple random walk: move to a uniformly chosen neighbour. Stationary distribution
    ``deg(k) / 2|E|``."""

    name = "uniform-neighbour"

    def next_node(self, current: int, rng: np.random.Generator) -> int:
        nbrs = self._neighbours[current]
        i = int(rng.random() * len(nbrs))
        return nbrs[i if i < len(nbrs) else i - 1]

    def transition_matrix(self) -> np.ndarray:
        P = np.zeros((self.K, self.K))
        for k, nbrs in enumerate(self._neighbours):
            P[k, list(nbrs)] = 1.0 / len(nbrs)
        return P

    def stationary_distribution(self) -> np.ndarray:
        deg = np.asarray(self._degree, dtype=np.float64)
        return deg / deg.sum()


class RoundRobinWalk(Walk):
    """Visits every node in the fixed cyclic ``order`` (default ``0, 1, ..., K-1``).

    Deterministic (``rng`` is ignored by :meth:`next_node`). Consecutive nodes in ``order``
    need not be neighbours: the protocol then relays the token over a shortest path, whose
    intermediate hops are not visits. ``P`` is the cyclic permutation matrix of ``order``.
    """

    name = "round-robin"

    def __init__(self, graph: nx.Graph, order: Sequence[int] | None = None) -> None:
        super().__init__(graph)
        if order is None:
            seq = tuple(range(self.K))
        else:
            try:
                seq = tuple(int(n) for n in order)
            except (TypeError, ValueError):
                raise ValueError(
                    f"order: must be a permutation of 0..{self.K - 1}, got {order!r}"
                ) from None
            if sorted(seq) != list(range(self.K)):
                raise ValueError(
                    f"order: must be a permutation of 0..{self.K - 1}, got {list(order)!r}"
                )
        self.order: tuple[int, ...] = seq
        succ = [0] * self.K
        for i, node in enumerate(seq):
            succ[node] = seq[(i + 1) % self.K]
        self._successor: tuple[int, ...] = tuple(succ)

    def next_node(self, current: int, rng: np.random.Generator) -> int:
        return self._successor[current]

    def transition_matrix(self) -> np.ndarray:
        P = np.zeros((self.K, self.K))
        P[np.arange(self.K), list(self._successor)] = 1.0
        return P

    def stationary_distribution(self) -> np.ndarray:
        return np.full(self.K, 1.0 / self.K)


_WALKS: dict[str, type[Walk]] = {
    "metropolis-hastings": MetropolisHastingsWalk,
    "uniform-neighbour": UniformNeighbourWalk,
    "round-robin": RoundRobinWalk,
}


def make_walk(name: str, graph: nx.Graph, **params: Any) -> Walk:
    """Build the walk called ``name`` (one of :data:`WALK_NAMES`) on ``graph``;
    ``round-robin`` accepts ``order``."""
    if name not in _WALKS:
        raise ValueError(f"name: unknown walk {name!r}; allowed: {', '.join(WALK_NAMES)}")
    allowed = ("order",) if name == "round-robin" else ()
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"params: unknown parameter(s) {', '.join(unknown)} for walk {name!r}; "
            f"allowed: {', '.join(allowed) if allowed else 'none'}"
        )
    return _WALKS[name](graph, **params)
