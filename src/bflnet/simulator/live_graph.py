"""The live graph of moving nodes: an edge wherever two nodes are within radio range.

A :class:`Mobility` says how nodes move (a motion model such as
:class:`~bflnet.faults.mobility.RandomWaypoint`), the radio range ``radius_m`` and how often
positions are updated (``update_s``). ``Network(mobility=...)`` builds one
:class:`LiveGraph` per run: every ``update_s`` seconds of simulated time it moves all nodes
at once (a ``(K, 2)`` array), finds the pairs within ``radius_m`` (a k-d tree, O(K + E)),
applies the edges that appeared and vanished to its :attr:`LiveGraph.graph`,
:attr:`LiveGraph.adjacency` and :attr:`LiveGraph.neighbours`, bumps :attr:`LiveGraph.version`,
writes a ``fault`` row per change (``kind`` ``link_up`` / ``link_down``, ``node``, ``peer``,
``cause="mobility"``) and tells its listeners (the network: links for new pairs and
distances of fading channels; protocols read ``version``). Between updates the graph is
constant: a message handed to a link while its edge is live is sent whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import networkx as nx
import numpy as np
import simpy

from bflnet.faults.mobility import MAX_VALUE, RandomWaypoint
from bflnet.simulator.graph_check import validate_graph
from bflnet.simulator.recorder import Recorder
from bflnet.simulator.rng import RngStreams
from bflnet.validation.checks import check_real

#: ``listener(added, removed, moved)``: pairs ``(n, 2)`` that appeared and vanished (``u <
#: v``), and a length-``K`` mask of the nodes that moved.
Listener = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


@dataclass(frozen=True)
class Mobility:
    """How nodes move (``model``), the radio range ``radius_m`` within which two nodes
    share an edge, and the period ``update_s`` of the position updates."""

    model: RandomWaypoint
    radius_m: float
    update_s: float

    def __post_init__(self) -> None:
        if not callable(getattr(self.model, "motion", None)):
            raise ValueError(f"model: must be a mobility model such as RandomWaypoint, got "
                             f"{type(self.model).__name__}")
        check_real("radius_m", self.radius_m, gt=0, le=MAX_VALUE)
        check_real("update_s", self.update_s, gt=0, le=MAX_VALUE)


def graph_positions(graph: nx.Graph) -> np.ndarray:
    """The ``(K, 2)`` array of the nodes' ``"pos"`` attributes (nodes ``0..K-1``)."""
    k = validate_graph(graph)
    pos = [graph.nodes[i].get("pos") for i in range(k)]
    if any(p is None or len(p) != 2 for p in pos):
        raise ValueError("mobility: needs a graph whose nodes carry 2-D positions ('pos'), "
                         "e.g. graph=random-geometric")
    return np.array(pos, dtype=np.float64)


class LiveGraph:
    """The graph of one run's moving nodes (see the module docstring).

    ``graph`` gives the nodes and their start positions (``"pos"``); its edges must be
    the pairs within ``radius_m`` (as a random geometric graph's are). Node ``k`` moves
    with draws from the stream ``mobility.<k>``.
    """

    def __init__(self, graph: nx.Graph, spec: Mobility, streams: RngStreams) -> None:
        start = graph_positions(graph)
        k = start.shape[0]
        self.spec = spec
        self.K = k
        self.motion = spec.model.motion(start, [streams.numpy(f"mobility.{i}")
                                                for i in range(k)])
        self.positions = start
        self.keys = self._pair_keys(start)
        given = np.sort(np.array([min(u, v) * k + max(u, v) for u, v in graph.edges],
                                 dtype=np.int64))
        if not np.array_equal(given, self.keys):
            raise ValueError(f"mobility: the graph's edges must be the pairs within radius_m="
                             f"{spec.radius_m:g} of its positions (a random geometric graph "
                             f"of that radius)")
        self.graph = nx.Graph()
        self.graph.add_nodes_from(range(k))
        u, v = self.edges()
        self.graph.add_edges_from(zip(u.tolist(), v.tolist(), strict=True))
        #: ``{node: frozenset of live neighbours}`` (entries replaced in place).
        self.adjacency: dict[int, frozenset[int]] = {
            i: frozenset(self.graph.adj[i]) for i in range(k)}
        #: ``{node: sorted tuple of live neighbours}`` (entries replaced in place).
        self.neighbours: dict[int, tuple[int, ...]] = {
            i: tuple(sorted(self.adjacency[i])) for i in range(k)}
        #: Bumped at every change of the edges.
        self.version = 0
        self.listeners: list[Listener] = []

    def _pair_keys(self, positions: np.ndarray) -> np.ndarray:
        """Sorted keys ``u * K + v`` (``u < v``) of the pairs within ``radius_m``."""
        from scipy.spatial import cKDTree  # lazily: scipy.spatial is slow to import
        pairs = cKDTree(positions).query_pairs(self.spec.radius_m, output_type="ndarray")
        keys = pairs[:, 0].astype(np.int64) * self.K + pairs[:, 1]
        keys.sort()
        return keys

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The live edges as two index arrays ``(u, v)`` with ``u < v``, sorted."""
        return self.keys // self.K, self.keys % self.K

    def distance(self, u: int, v: int) -> float:
        """The current distance in metres between nodes ``u`` and ``v``."""
        return float(np.hypot(*(self.positions[u] - self.positions[v])))

    def update(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Move every node to its position at time ``t``; apply and return the pairs
        ``(added, removed)`` (each ``(n, 2)``, ``u < v``) and tell the listeners."""
        pos = self.motion.positions(t)
        moved = (pos != self.positions).any(axis=1)
        self.positions = pos
        none = np.empty((0, 2), dtype=np.int64)
        if not moved.any():
            return none, none
        keys = self._pair_keys(pos)
        k = self.K
        added_keys = np.setdiff1d(keys, self.keys, assume_unique=True)
        removed_keys = np.setdiff1d(self.keys, keys, assume_unique=True)
        self.keys = keys
        added = np.stack([added_keys // k, added_keys % k], axis=1)
        removed = np.stack([removed_keys // k, removed_keys % k], axis=1)
        if added.size or removed.size:
            self.graph.remove_edges_from(removed.tolist())
            self.graph.add_edges_from(added.tolist())
            for i in np.unique(np.concatenate([added.ravel(), removed.ravel()])).tolist():
                self.adjacency[i] = frozenset(self.graph.adj[i])
                self.neighbours[i] = tuple(sorted(self.adjacency[i]))
            self.version += 1
        for listener in self.listeners:
            listener(added, removed, moved)
        return added, removed

    def process(self, env: simpy.Environment, recorder: Recorder) -> Iterator[simpy.Event]:
        """SimPy process: an update every ``update_s`` seconds, a ``fault`` row per edge
        that vanished (``link_down``) or appeared (``link_up``)."""
        step = self.spec.update_s
        n = 1
        while True:
            yield env.timeout(n * step - env.now)
            added, removed = self.update(env.now)
            for kind, pairs in (("link_down", removed), ("link_up", added)):
                for u, v in pairs.tolist():
                    recorder.record("fault", node=u, peer=v, kind=kind, cause="mobility")
            n += 1
