"""The D2D graph's settings: its topology and size, and building it.

:class:`GraphSettings` is the graph layer of
:class:`bflnet.scenarios.shared.network_settings.NetworkSettings`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bflnet.runs.config import param
from bflnet.runs.graph_size import GraphSize, estimate
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.validation.limits import MIN_METRES

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

GRAPHS = ("complete", "star", "ring", "path", "grid", "torus", "erdos-renyi",
          "random-geometric", "file")
#: The fields that describe the D2D graph.
GRAPH_FIELDS = ("graph", "K", "edge_prob", "radius_m", "area_m", "graph_file")
#: Most agents of a graph: NetworkX and the simulated links hold ~3 kB per node and edge,
#: and several scenarios build dense K x K matrices (the resource check refuses the
#: sizes that do not fit this machine).
MAX_K = 10**6
#: Largest distance in metres (radio range, area side, link distance): far beyond any
#: radio link, and small enough for path loss and geometry to stay finite.
MAX_METRES = 1e7


def graph_is(*names: str) -> Callable[[GraphSettings], bool]:
    """Whether some topology in use is one of ``names``."""
    return lambda s: any(g in names for g in s.graphs_in_use())


#: The graph fields read only with some topologies: field -> (is it read under these
#: settings?, the settings that read it). ``area_m`` is read by the shared medium too
#: (:data:`bflnet.scenarios.shared.network_settings.USED_ONLY_WITH`).
GRAPH_USED_ONLY_WITH: dict[str, tuple[Callable[[GraphSettings], bool], str]] = {
    "K": (lambda s: any(g != "file" for g in s.graphs_in_use()) or not s.graphs_in_use(),
          "a graph other than file (the file decides the number of agents)"),
    "edge_prob": (graph_is("erdos-renyi"), "graph=erdos-renyi"),
    "radius_m": (graph_is("random-geometric"), "graph=random-geometric"),
    "graph_file": (graph_is("file"), "graph=file"),
}


@dataclass(frozen=True)
class GraphSettings:
    """The D2D graph: its topology, number of agents and geometry; estimates its size and
    builds it."""

    graph: str = param("ring", "topology of the D2D graph", choices=GRAPHS)
    K: int = param(20, "number of agents (graph=file: the file decides, an error if set)", ge=2,
                   le=MAX_K)
    edge_prob: float = param(0.3, "edge probability (erdos-renyi)", gt=0, le=1)
    radius_m: float = param(radio_default("radius_m"), "radio range in metres "
                            "(random-geometric)", ge=MIN_METRES, le=MAX_METRES)
    area_m: float = param(radio_default("area_m"), "side of the square area in metres "
                          "(random-geometric; medium=shared: where nodes without positions "
                          "are laid out, a server at its centre)", ge=MIN_METRES,
                          le=MAX_METRES)
    graph_file: str | None = param(None, "edge list, GraphML or GML file (graph=file)")

    def graphs_in_use(self) -> tuple[str, ...]:
        """The topologies the run builds (``()``: no D2D graph, e.g. a parameter server)."""
        return (self.graph,)

    def graph_size(self, graph: str | None = None) -> GraphSize:
        """Upper estimates of the nodes and edges of ``graph`` (default: the first topology
        in use; none: the K agents of a parameter server), before it is built."""
        graphs = self.graphs_in_use()
        if graph is None and not graphs:
            return GraphSize(float(self.K), float(self.K), float(self.K), ("K",))
        return estimate(graph or graphs[0], self.K, edge_prob=self.edge_prob,
                        radius_m=self.radius_m, area_m=self.area_m,
                        graph_file=self.graph_file)

    def agents(self) -> float:
        """The most agents any topology of the run has (an estimate for a graph file)."""
        graphs = self.graphs_in_use() or (None,)
        return max(self.graph_size(g).nodes for g in graphs)

    def build_graph(self, rng: np.random.Generator) -> nx.Graph:
        """The topology (connectivity is checked by the protocol that needs it)."""
        from bflnet.protocols.graphs.topologies import make_graph  # lazily: networkx
        params: dict[str, Any] = {}
        if self.graph == "erdos-renyi":
            params["p"] = self.edge_prob
        elif self.graph == "random-geometric":
            params.update(radius_m=self.radius_m, area_m=self.area_m)
        elif self.graph == "file":
            if self.graph_file is None:
                raise ValueError("graph_file: must be set when graph=file")
            params["path"] = self.graph_file
            return make_graph("file", None, rng, **params)  # K comes from the file
        return make_graph(self.graph, self.K, rng, **params)
