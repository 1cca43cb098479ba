"""The package's convention for graphs: undirected, nodes the integers ``0..K-1``, no
self-loops (the network, the protocols and the graph builders all check it here)."""

from __future__ import annotations

import numbers

import networkx as nx


def validate_graph(graph: nx.Graph) -> int:
    """Check the package convention and return ``K``.

    The graph must be an undirected ``networkx.Graph`` (not a multigraph) with nodes exactly
    the integers ``0..K-1`` and no self-loops. Raises a one-line ``ValueError`` otherwise.
    """
    if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
        raise ValueError(f"graph: must be an undirected networkx.Graph, got {type(graph).__name__}")
    k = graph.number_of_nodes()
    if k == 0:
        raise ValueError("graph: has no nodes")
    if any(
        isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 0 <= n < k
        for n in graph.nodes
    ):
        raise ValueError(
            f"graph: nodes must be the integers 0..{k - 1} "
            "(relabel with networkx.convert_node_labels_to_integers)"
        )
    loops = nx.number_of_selfloops(graph)
    if loops:
        raise ValueError(f"graph: has {loops} self-loop(s); self-loops are not allowed")
    return k
