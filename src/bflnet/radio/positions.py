"""Where the nodes are: every node gets a position in metres.

A graph whose nodes all carry ``"pos"`` (the random geometric graph, a GraphML file with
numeric ``x``/``y``) keeps those positions. Any other graph is laid out in the square
``[0, area_m]^2``: ``"random"`` (uniform, from the run's stream ``positions``),
``"circle"`` (evenly on the inscribed circle, in node order) or ``"grid"`` (row by row on
the smallest square grid that holds them). Moving nodes take their live positions from
the run's :class:`~bflnet.simulator.live_graph.LiveGraph`; the server, if any, sits at
the centre of the area.

>>> import networkx as nx
>>> xy = node_positions(nx.path_graph(4), area_m=10.0, layout="grid")
>>> xy.tolist()
[[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bflnet.validation.checks import check_real

LAYOUTS = ("random", "circle", "grid")
#: Largest side of the area accepted (metres).
MAX_AREA_M = 1e9


def graph_has_positions(graph: Any) -> bool:
    """Whether every node of ``graph`` carries a 2-D ``"pos"``."""
    return graph.number_of_nodes() > 0 and all(
        len(data.get("pos") or ()) == 2 for _, data in graph.nodes(data=True))


def node_positions(graph: Any, *, area_m: float = 100.0, layout: str = "random",
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """The ``(K, 2)`` positions of ``graph``'s nodes in graph-node order (module docs).

    A one-line ``ValueError`` for a non-finite position, an unknown layout, or a random
    layout without a stream."""
    area_m = check_real("area_m", area_m, gt=0, le=MAX_AREA_M)
    nodes = list(graph.nodes)
    if graph_has_positions(graph):
        xy = np.array([graph.nodes[n]["pos"] for n in nodes], dtype=np.float64)
        if not np.isfinite(xy).all():
            raise ValueError("pos: every node position must be finite")
        return xy
    k = len(nodes)
    if layout == "random":
        if rng is None:
            raise ValueError("layout: 'random' needs a random stream")
        return rng.uniform(0.0, area_m, size=(k, 2))
    if layout == "circle":
        angle = 2.0 * math.pi * np.arange(k) / max(k, 1)
        half = area_m / 2.0
        return np.stack([half + half * np.cos(angle), half + half * np.sin(angle)], axis=1)
    if layout == "grid":
        side = max(1, math.ceil(math.sqrt(k)))
        step = area_m / max(side - 1, 1)
        idx = np.arange(k)
        return np.stack([(idx % side) * step, (idx // side) * step], axis=1).astype(np.float64)
    raise ValueError(f"layout: must be one of {', '.join(LAYOUTS)}, got {layout!r}")
