"""How large a scenario's graph will be, before it is built: nodes, edges and the work of
building it, from the graph's name and parameters, or by counting a graph file's lines
(an edge list) or tags (GraphML) without parsing it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

#: Bytes read at a time when counting a graph file.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class GraphSize:
    """Upper estimates of a graph's nodes and edges, and the elementary operations of
    building it (e.g. Erdős–Rényi draws one number per pair of nodes)."""

    nodes: float
    edges: float
    build_work: float
    #: The fields that decide the size (for the errors).
    fields: tuple[str, ...]
    #: Expected random-walk cover time in slots, for a scenario whose runs wait for it.
    cover: float = math.nan


def _cover(kind: str, k: float) -> float:
    """Rough expected cover time (slots) of a random walk on a graph of ``k`` nodes."""
    log = math.log(max(k, 2.0))
    if kind in ("ring", "path"):
        return k * k / 2.0
    if kind in ("grid", "torus"):
        return k * log * log
    if kind == "star":
        return 2.0 * k * log
    return k * log  # complete, expander-like random graphs


def estimate(graph: str, K: int, *, edge_prob: float = 1.0, radius_m: float = 0.0,
             area_m: float = 1.0, graph_file: str | None = None) -> GraphSize:
    """The size of ``graph`` with these settings (a file is counted, not parsed).

    >>> s = estimate("complete", 1000)
    >>> s.nodes, s.edges
    (1000.0, 499500.0)
    """
    k = float(K)
    pairs = k * (k - 1.0) / 2.0
    if graph == "file":
        if graph_file is None:
            return GraphSize(0.0, 0.0, 0.0, ("graph_file",))
        nodes, edges = count_graph_file(graph_file)
        return GraphSize(nodes, edges, 3.0 * (nodes + edges), ("graph_file",),
                         _cover("file", nodes))
    if graph == "complete":
        edges, work = pairs, pairs
    elif graph in ("star", "path"):
        edges, work = k - 1.0, k
    elif graph == "ring":
        edges, work = k, k
    elif graph in ("grid", "torus"):
        edges, work = 2.0 * k, 2.0 * k
    elif graph == "erdos-renyi":
        edges, work = edge_prob * pairs, pairs  # networkx draws a number per pair
        return GraphSize(k, edges, work + k + edges, ("K", "edge_prob"), _cover(graph, k))
    elif graph == "random-geometric":
        share = min(1.0, math.pi * (radius_m / area_m) ** 2) if area_m > 0 else 1.0
        check_connectable(K, radius_m, area_m, share)
        edges = share * pairs
        return GraphSize(k, edges, k + edges, ("K", "radius_m", "area_m"), _cover(graph, k))
    else:
        raise ValueError(f"graph: unknown graph {graph!r}")
    return GraphSize(k, edges, work + k, ("K", "graph"), _cover(graph, k))


#: Tries of a random geometric graph before the builder gives up (its ``max_tries``).
RGG_TRIES = 1000
#: Refuse a random geometric graph whose chance of being connected in all the tries is
#: below this.
RGG_HOPELESS = 1e-3


def check_connectable(K: int, radius_m: float, area_m: float, share: float) -> None:
    """One-line ``ValueError`` naming ``radius_m, area_m`` when a random geometric graph of
    ``K`` nodes is almost surely never connected in :data:`RGG_TRIES` tries, before any is
    drawn. A connected graph has no isolated node, and node 0 has a neighbour with
    probability at most ``(K - 1) p`` (``p = share``: a point falls within ``radius_m``),
    so ``RGG_TRIES (K - 1) p`` bounds the chance of success."""
    chance = RGG_TRIES * (K - 1) * share
    if chance < RGG_HOPELESS:
        raise ValueError(f"radius_m, area_m: a random geometric graph of K={K} nodes with "
                         f"radius_m={radius_m:g} in a square of area_m={area_m:g} is "
                         f"connected in {RGG_TRIES} tries with probability below "
                         f"{chance:.2g}; raise radius_m or K, or lower area_m")


def count_graph_file(path: str) -> tuple[float, float]:
    """``(nodes, edges)`` upper estimates of a graph file, counted without building it: an
    edge list's lines (nodes: at most two per edge); GraphML's ``<node`` and ``<edge``
    tags; GML's ``node`` and ``edge`` words. Anything but a readable regular file counts as
    empty (loading it gives the error that names it).

    Reading is in chunks of 1 MiB, so a file without line breaks costs no memory."""
    p = Path(path)
    try:
        if not p.is_file():
            return 0.0, 0.0
        if p.suffix.lower() == ".graphml":
            return float(_count_bytes(p, b"<node")), float(_count_bytes(p, b"<edge"))
        if p.suffix.lower() == ".gml":  # each node and edge is a "node [" / "edge [" block
            return float(_count_bytes(p, b"node")), float(_count_bytes(p, b"edge"))
        edges = _count_bytes(p, b"\n") + 1
    except OSError:
        return 0.0, 0.0
    return 2.0 * edges, float(edges)


def _count_bytes(p: Path, tag: bytes) -> int:
    """Occurrences of ``tag`` in the file, read in chunks (the last ``len(tag) - 1`` bytes
    of a chunk are kept, so a tag across two chunks is counted once)."""
    total, tail = 0, b""
    keep = len(tag) - 1
    with p.open("rb") as f:
        while chunk := f.read(_CHUNK):
            data = tail + chunk
            total += data.count(tag)
            tail = data[len(data) - keep:] if keep else b""
    return total
