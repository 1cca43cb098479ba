"""Communication graphs: NetworkX builders with one convention.

Every graph returned here is an undirected ``networkx.Graph`` whose nodes are the integers
``0..K-1``. Graphs with a geometry (``random_geometric``, or a GraphML or GML file carrying
``x``/``y`` node attributes) keep each node's position in metres as the node attribute
``"pos"`` (a tuple), so channel models can turn links into distances
(:func:`node_distance`). All randomness comes from a passed ``numpy.random.Generator``.

>>> import numpy as np
>>> g = make_graph("grid", 6, np.random.default_rng(0))
>>> g.number_of_nodes(), g.number_of_edges()
(6, 7)
>>> require_connected(g)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from bflnet.files.input_files import read_text
from bflnet.simulator.graph_check import validate_graph
from bflnet.validation.checks import check_int, check_real, is_number

GRAPH_NAMES: tuple[str, ...] = (
    "complete",
    "star",
    "ring",
    "path",
    "grid",
    "torus",
    "erdos-renyi",
    "random-geometric",
    "file",
)
"""Names accepted by :func:`make_graph`."""

EDGE_LIST_SUFFIXES: tuple[str, ...] = (".txt", ".edgelist", ".csv")
GRAPHML_SUFFIXES: tuple[str, ...] = (".graphml",)
GML_SUFFIXES: tuple[str, ...] = (".gml",)

# ------------------------------------------------------------------ validation helpers




def _check_rng(rng: Any, graph_name: str) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng: graph {graph_name!r} is random and needs a numpy.random.Generator, "
            f"got {type(rng).__name__}"
        )
    return rng


def _nx_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**32))


def require_connected(graph: nx.Graph) -> None:
    """Raise ``ValueError`` unless ``graph`` follows the convention and is connected."""
    validate_graph(graph)
    n_comp = nx.number_connected_components(graph)
    if n_comp != 1:
        raise ValueError(
            f"graph: disconnected ({n_comp} components); this protocol needs a connected graph"
        )


def node_distance(graph: nx.Graph, u: int, v: int) -> float | None:
    """Euclidean distance in metres between nodes ``u`` and ``v`` from their ``"pos"``
    attributes, or ``None`` when either node has no position."""
    pu = graph.nodes[u].get("pos")
    pv = graph.nodes[v].get("pos")
    if pu is None or pv is None:
        return None
    return math.dist(pu, pv)


# ------------------------------------------------------------------ deterministic builders


def complete(K: int) -> nx.Graph:
    """Complete graph on ``K >= 2`` nodes (every pair of agents in range)."""
    return nx.complete_graph(check_int("K", K, ge=2))


def star(K: int) -> nx.Graph:
    """Star on ``K >= 2`` nodes with hub ``0`` and leaves ``1..K-1``."""
    return nx.star_graph(check_int("K", K, ge=2) - 1)


def ring(K: int) -> nx.Graph:
    """Cycle ``0-1-...-(K-1)-0`` on ``K >= 3`` nodes."""
    return nx.cycle_graph(check_int("K", K, ge=3))


def path(K: int) -> nx.Graph:
    """Path ``0-1-...-(K-1)`` on ``K >= 2`` nodes."""
    return nx.path_graph(check_int("K", K, ge=2))


def grid(rows: int, cols: int, periodic: bool = False) -> nx.Graph:
    """``rows x cols`` lattice, 4-neighbour; a torus when ``periodic``.

    Node ``r * cols + c`` is cell ``(r, c)`` (kept as node attribute ``"label"``). A dimension
    of length <= 2 does not wrap (wrapping would duplicate an existing edge).
    """
    rows = check_int("rows", rows, ge=1)
    cols = check_int("cols", cols, ge=1)
    if rows * cols < 2:
        raise ValueError(f"rows, cols: grid needs at least 2 cells, got {rows}x{cols}")
    g = nx.grid_2d_graph(rows, cols, periodic=bool(periodic))
    return nx.convert_node_labels_to_integers(g, ordering="sorted", label_attribute="label")


def square_factors(K: int) -> tuple[int, int]:
    """The most square factorisation ``(rows, cols)`` of ``K`` with ``rows <= cols``."""
    K = check_int("K", K, ge=1)
    rows = math.isqrt(K)
    while K % rows:
        rows -= 1
    return rows, K // rows


# ------------------------------------------------------------------ random builders


def erdos_renyi(K: int, p: float, rng: np.random.Generator, max_tries: int = 1000) -> nx.Graph:
    """Connected Erdős–Rényi ``G(K, p)`` graph: resampled until connected.

    Raises ``ValueError`` when no connected sample appears in ``max_tries`` draws (the
    sharp threshold is ``p ≈ ln(K) / K``).
    """
    K = check_int("K", K, ge=2)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 < p <= 1:
        raise ValueError(f"p: must be a number in (0, 1], got {p!r}")
    max_tries = check_int("max_tries", max_tries, ge=1)
    rng = _check_rng(rng, "erdos-renyi")
    for _ in range(max_tries):
        g = nx.gnp_random_graph(K, float(p), seed=_nx_seed(rng))
        if nx.is_connected(g):
            return g
    raise ValueError(
        f"p: erdos-renyi graph with K={K}, p={p} was never connected in {max_tries} tries; "
        f"use p above ln(K)/K = {math.log(K) / K:.3g}"
    )


def random_geometric(
    K: int,
    radius_m: float,
    area_m: float,
    rng: np.random.Generator,
    max_tries: int = 1000,
) -> nx.Graph:
    """Connected random geometric graph: ``K`` agents uniform in an ``area_m x area_m``
    square, an edge between agents within ``radius_m`` of each other (radio range).

    Positions are resampled until the graph is connected; each node keeps ``"pos"``.
    """
    K = check_int("K", K, ge=2)
    radius_m = check_real("radius_m", radius_m, gt=0)
    area_m = check_real("area_m", area_m, gt=0)
    max_tries = check_int("max_tries", max_tries, ge=1)
    rng = _check_rng(rng, "random-geometric")
    for _ in range(max_tries):
        xy = rng.uniform(0.0, area_m, size=(K, 2))
        pos = {i: (float(x), float(y)) for i, (x, y) in enumerate(xy)}
        g = nx.random_geometric_graph(K, radius_m, pos=pos)
        if nx.is_connected(g):
            return g
    raise ValueError(
        f"radius_m: random geometric graph with K={K}, radius_m={radius_m}, area_m={area_m} "
        f"was never connected in {max_tries} tries; increase radius_m or K"
    )


# ------------------------------------------------------------------ files


def _parse_label(token: str) -> int | str:
    try:
        return int(token)
    except ValueError:
        return token


def _read_edge_list(p: Path) -> nx.Graph:
    lines = read_text(p, "path").splitlines()
    csv = p.suffix.lower() == ".csv"
    rows: list[tuple[int, list[str]]] = []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = [t.strip() for t in line.replace(",", " ").split()] if csv else line.split()
        rows.append((lineno, tokens))
    # a CSV header such as "source,target" (words above numeric rows) is skipped
    if (
        csv
        and len(rows) > 1
        and not any(is_number(t) for t in rows[0][1])
        and all(is_number(t) for t in rows[1][1][:2])
    ):
        rows = rows[1:]
    g = nx.Graph()
    for lineno, tokens in rows:
        if len(tokens) not in (2, 3) or (len(tokens) == 3 and not is_number(tokens[2])):
            raise ValueError(
                f"path: {str(p)!r} line {lineno}: expected 'u v' or 'u v weight', got {tokens!r}"
            )
        u, v = _parse_label(tokens[0]), _parse_label(tokens[1])
        if u == v:
            raise ValueError(f"path: {str(p)!r} line {lineno}: self-loop {u!r}-{v!r}")
        if len(tokens) == 3:
            g.add_edge(u, v, weight=float(tokens[2]))
        else:
            g.add_edge(u, v)
    return g


#: Largest absolute node coordinate a graph file may give, in metres (far beyond any radio
#: link, small enough for distances and path loss to stay finite). Negative coordinates
#: are positions like any other.
MAX_COORD_M = 1e9


def _read_graphml(p: Path) -> nx.Graph:
    try:
        raw = nx.read_graphml(p)
    except Exception as exc:  # networkx/lxml raise many kinds of parse errors
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"path: cannot parse GraphML file {str(p)!r} ({msg})") from None
    return _simple_graph(raw, p)


def _read_gml(p: Path) -> nx.Graph:
    text = read_text(p, "path")
    try:
        raw = nx.parse_gml(text, label="id")  # node ids, whatever the labels say
    except Exception as exc:  # networkx raises many kinds of parse errors
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"path: cannot parse GML file {str(p)!r} ({msg[:200]})") from None
    return _simple_graph(raw, p)


def _simple_graph(raw: nx.Graph, p: Path) -> nx.Graph:
    """A parsed GraphML or GML graph as an undirected simple graph without self-loops,
    with integer node ids where the file's ids all are distinct integers."""
    g = nx.Graph(raw)  # undirected, simple
    loops = list(nx.selfloop_edges(g))
    if loops:
        raise ValueError(f"path: {str(p)!r} has self-loop(s), e.g. {loops[0]!r}")
    ids = list(g.nodes)
    as_int = [_parse_label(str(n)) for n in ids]
    if all(isinstance(x, int) for x in as_int) and len(set(as_int)) == len(as_int):
        g = nx.relabel_nodes(g, dict(zip(ids, as_int, strict=True)))
    return g


def _coordinate(value: Any) -> float | None:
    """``value`` as a coordinate in metres: a finite real number within
    +-:data:`MAX_COORD_M` (not a bool, not text), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        x = float(value)
    except (OverflowError, ValueError):
        return None
    return x if abs(x) <= MAX_COORD_M else None


def _node_position(n: Any, d: dict[str, Any], p: Path) -> tuple[float, float] | None:
    """The position a graph file gives node ``n``: its numeric ``x`` and ``y`` attributes,
    or its ``pos`` of two numbers; ``None`` if it gives none; a one-line ``ValueError``
    naming the file and the node for one that is not 2 finite numbers in range."""
    where = f"path: graph file {str(p)!r}: node {n!r}"
    if "x" in d or "y" in d:
        x, y = _coordinate(d.get("x")), _coordinate(d.get("y"))
        if x is None or y is None:
            raise ValueError(f"{where} must have a finite position x, y within "
                             f"+-{MAX_COORD_M:g} m, got ({_cut(d.get('x'))}, "
                             f"{_cut(d.get('y'))})")
    if "pos" in d:
        pos = d["pos"]
        xy = ([_coordinate(c) for c in pos] if isinstance(pos, list | tuple) and len(pos) == 2
              else [None])
        if None in xy:
            raise ValueError(f"{where} must have a position pos of 2 finite numbers within "
                             f"+-{MAX_COORD_M:g} m, got pos={_cut(pos)}")
        if "x" not in d and "y" not in d:
            return xy[0], xy[1]  # type: ignore[return-value]
    if "x" in d or "y" in d:
        return float(d["x"]), float(d["y"])
    return None


def _cut(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _check_positions(g: nx.Graph, p: Path) -> None:
    """Every node position in the file (numeric ``x``/``y`` node attributes, or a ``pos``
    of two numbers) must be 2 finite numbers within +-:data:`MAX_COORD_M` m, and either
    every node has one or none does; each becomes the node's ``"pos"`` tuple (one-line
    errors naming the file and the node)."""
    positions = {n: _node_position(n, d, p) for n, d in g.nodes(data=True)}
    given = [n for n, xy in positions.items() if xy is not None]
    if not given:
        return
    missing = next((n for n, xy in positions.items() if xy is None), None)
    if missing is not None:
        raise ValueError(f"path: graph file {str(p)!r}: node {missing!r} has no position "
                         f"while node {given[0]!r} has one (give every node x and y, or "
                         f"none)")
    for n, xy in positions.items():
        g.nodes[n]["pos"] = xy


def _check_weights(g: nx.Graph, p: Path) -> None:
    """Every edge ``weight`` in the file must be a finite number (not nan, inf, text)."""
    for u, v, weight in g.edges(data="weight"):
        if weight is None:
            continue
        finite = (isinstance(weight, numbers.Real) and not isinstance(weight, bool)
                  and math.isfinite(weight))
        if not finite:
            raise ValueError(f"path: graph file {str(p)!r}: the weight of edge {u!r}-{v!r} "
                             f"must be a finite number, got {weight!r}")


def load_graph(path: str | Path) -> nx.Graph:
    """Load a graph from an edge list (``.txt``, ``.edgelist``, ``.csv``: one ``u v`` per
    line, optional numeric weight, ``#`` comments), a ``.graphml`` or a ``.gml`` file.

    Nodes are relabelled ``0..K-1`` in sorted label order; the original label is kept as the
    node attribute ``"label"``. GraphML and GML nodes with numeric ``x``/``y`` (or a
    ``pos`` of two numbers) get ``"pos"``: every node or none, each 2 finite numbers
    within +-:data:`MAX_COORD_M` m, like the edge weights finite numbers (one-line errors
    naming the file and the node or edge). The graph is not required to be connected
    (protocols check that themselves).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    allowed = EDGE_LIST_SUFFIXES + GRAPHML_SUFFIXES + GML_SUFFIXES
    if suffix not in allowed:
        raise ValueError(
            f"path: unsupported graph file {str(p)!r}; allowed suffixes: {', '.join(allowed)}"
        )
    if not p.is_file():
        raise ValueError(f"path: graph file {str(p)!r} does not exist or is not a file")
    if suffix in GRAPHML_SUFFIXES:
        g = _read_graphml(p)
    elif suffix in GML_SUFFIXES:
        g = _read_gml(p)
    else:
        g = _read_edge_list(p)
    if g.number_of_edges() == 0:
        raise ValueError(f"path: graph file {str(p)!r} has no edges")
    _check_weights(g, p)
    _check_positions(g, p)
    labels = list(g.nodes)
    sortable = all(isinstance(x, int) for x in labels) or all(isinstance(x, str) for x in labels)
    return nx.convert_node_labels_to_integers(
        g, ordering="sorted" if sortable else "default", label_attribute="label"
    )


# ------------------------------------------------------------------ dispatch


def _grid_shape(K: int | None, rows: int | None, cols: int | None) -> tuple[int, int]:
    if rows is None and cols is None:
        if K is None:
            raise ValueError("K: grid needs K or rows/cols")
        return square_factors(check_int("K", K, ge=2))
    if rows is not None and cols is not None:
        rows, cols = check_int("rows", rows, ge=1), check_int("cols", cols, ge=1)
        if K is not None and rows * cols != K:
            raise ValueError(f"K: must equal rows*cols = {rows * cols}, got {K!r}")
        return rows, cols
    K = check_int("K", K, ge=2)
    given_name, given = ("rows", rows) if rows is not None else ("cols", cols)
    given = check_int(given_name, given, ge=1)
    if K % given:
        raise ValueError(f"{given_name}: must divide K={K}, got {given}")
    return (given, K // given) if given_name == "rows" else (K // given, given)


_PARAMS: dict[str, tuple[str, ...]] = {
    "complete": (),
    "star": (),
    "ring": (),
    "path": (),
    "grid": ("rows", "cols"),
    "torus": ("rows", "cols"),
    "erdos-renyi": ("p", "max_tries"),
    "random-geometric": ("radius_m", "area_m", "max_tries"),
    "file": ("path",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "erdos-renyi": ("p",),
    "random-geometric": ("radius_m", "area_m"),
    "file": ("path",),
}
_SIMPLE: dict[str, Callable[[int], nx.Graph]] = {
    "complete": complete,
    "star": star,
    "ring": ring,
    "path": path,
}


def make_graph(
    name: str, K: int | None, rng: np.random.Generator | None = None, **params: Any
) -> nx.Graph:
    """Build the graph called ``name`` (one of :data:`GRAPH_NAMES`) on ``K`` nodes.

    Parameters by name: ``grid``/``torus``: ``rows``, ``cols`` (default: the most square
    factorisation of ``K``); ``erdos-renyi``: ``p`` (and ``max_tries``); ``random-geometric``:
    ``radius_m``, ``area_m`` (and ``max_tries``); ``file``: ``path`` (``K`` may be ``None``,
    else it must match the file). ``rng`` is needed by the random graphs only.
    """
    if name not in _PARAMS:
        raise ValueError(f"name: unknown graph {name!r}; allowed: {', '.join(GRAPH_NAMES)}")
    allowed = _PARAMS[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"params: unknown parameter(s) {', '.join(unknown)} for graph {name!r}; "
            f"allowed: {', '.join(allowed) if allowed else 'none'}"
        )
    for req in _REQUIRED.get(name, ()):
        if req not in params:
            raise ValueError(f"{req}: required for graph {name!r}")
    if name in _SIMPLE:
        return _SIMPLE[name](K)  # type: ignore[arg-type]
    if name in ("grid", "torus"):
        rows, cols = _grid_shape(K, params.get("rows"), params.get("cols"))
        return grid(rows, cols, periodic=name == "torus")
    if name == "erdos-renyi":
        return erdos_renyi(K, params["p"], rng, **_opt(params, "max_tries"))  # type: ignore[arg-type]
    if name == "random-geometric":
        return random_geometric(
            K,  # type: ignore[arg-type]
            params["radius_m"],
            params["area_m"],
            rng,  # type: ignore[arg-type]
            **_opt(params, "max_tries"),
        )
    g = load_graph(params["path"])
    if K is not None and g.number_of_nodes() != K:
        raise ValueError(
            f"K: graph file {str(params['path'])!r} has {g.number_of_nodes()} nodes, got K={K!r}"
        )
    return g


def _opt(params: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: params[n] for n in names if n in params}
