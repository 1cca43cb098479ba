"""The Metropolis-Hastings walk over a live graph of moving nodes.

:class:`LiveMetropolisHastingsWalk` follows eq. (5) of G-FVL like
:class:`~bflnet.protocols.graphs.walks.MetropolisHastingsWalk`, but reads the neighbours and
degrees of the :class:`~bflnet.simulator.live_graph.LiveGraph` at each decision, so the next
hop is always a live neighbour with the Metropolis-Hastings weights of the graph as it is
then: ``P[k, j] = min(1/d_k, 1/d_j)`` on live edges, an isolated node stays put. ``P`` is
symmetric, hence doubly stochastic, at every instant: the uniform distribution stays
stationary however the graph changes. On a graph that never changes it draws the same
path as the static walk (one uniform per decision, sorted neighbours).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class LiveMetropolisHastingsWalk:
    """Metropolis-Hastings next-hop rule on ``live`` (a ``LiveGraph``; build the walk per
    run, after the network, as ``LiveMetropolisHastingsWalk(net.live)``).

    >>> import networkx as nx
    >>> from bflnet.faults.mobility import RandomWaypoint
    >>> from bflnet.simulator import Simulation
    >>> from bflnet.simulator.live_graph import Mobility
    >>> g = nx.random_geometric_graph(5, 0.8, pos={k: (k / 5, 0.5) for k in range(5)})
    >>> sim = Simulation(0)
    >>> net = sim.build_network(g, mobility=Mobility(RandomWaypoint(1.0, 0.0, 0.0), 0.8, 1.0))
    >>> walk = LiveMetropolisHastingsWalk(net.live)
    >>> walk.transition_matrix().sum(axis=0).round(12).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """

    name = "metropolis-hastings"

    def __init__(self, live: Any) -> None:
        if not hasattr(live, "neighbours") or not hasattr(live, "edges"):
            raise ValueError(f"live: must be a LiveGraph (Network(mobility=...).live), got "
                             f"{type(live).__name__}")
        self.live = live
        self.K = int(live.K)

    def first_node(self, rng: np.random.Generator) -> int:
        """A uniformly chosen starting node."""
        return int(rng.integers(self.K))

    def next_node(self, current: int, rng: np.random.Generator) -> int:
        """Propose a uniform live neighbour ``j``, accept with ``min(1, d_k / d_j)``."""
        neighbours = self.live.neighbours
        nbrs = neighbours[current]
        n = len(nbrs)
        if n == 0:
            return current
        x = rng.random() * n
        i = int(x)
        if i == n:
            i -= 1
        j = nbrs[i]
        return j if x - i < min(1.0, n / len(neighbours[j])) else current

    def transition_matrix(self) -> np.ndarray:
        """Dense ``K x K`` transition matrix on the current live graph."""
        u, v = self.live.edges()
        deg = np.bincount(np.concatenate([u, v]), minlength=self.K)
        p = 1.0 / np.maximum(deg[u], deg[v])
        P = np.zeros((self.K, self.K))
        P[u, v] = p
        P[v, u] = p
        P[np.arange(self.K), np.arange(self.K)] = 1.0 - P.sum(axis=1)
        return P

    def stationary_distribution(self) -> np.ndarray:
        """Uniform (``P`` is symmetric at every instant)."""
        return np.full(self.K, 1.0 / self.K)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K})"
