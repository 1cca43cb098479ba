"""Pictures of a network: the graph at its node positions (a spring layout when it has
none), link quality as the links' colour, and, from a run's table, the random walk's
path or the gossip exchanges, with outages marked; a timeline under the graph shows
the same events against simulated time. On a shared radio medium, the medium too
(:mod:`bflnet.analysis.medium_layer`): packets sent and receptions lost per node, the
TDMA slots, a chosen node's ranges.

:class:`NetworkPicture` holds what is drawn; :mod:`bflnet.cli.network_view` fills
it from a scenario's config, a result table or a graph file.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from bflnet.analysis.facets import new_figure
from bflnet.analysis.medium_layer import MediumPicture, draw_medium_nodes, draw_ranges

#: Largest graph drawn (nodes).
MAX_NODES = 5000
#: Graphs without positions up to this size get a spring layout (a circle beyond).
MAX_SPRING = 300
#: Node numbers are written on graphs up to this size.
MAX_LABELLED = 40
#: A space that a title's line is not broken at.
NBSP = "\u00a0"
#: Characters of a title line per inch of its panel's width (medium font).
TITLE_CHARS_PER_INCH = 12
#: Node kinds of fault rows that take a node down and bring it back.
DOWN, UP = "node_down", "node_up"
LINK_DOWN = "link_down"


@dataclass
class NetworkPicture:
    """What one panel shows. ``graph``: a networkx graph on the nodes ``0..K-1``;
    ``positions``: ``{node: (x, y)}`` in metres (``None``: a spring layout); ``quality``:
    ``{(u, v): value}`` per link with ``quality_label``; ``server``: a parameter server
    linked to every node (drawn at the centre); ``events``: the run's rows (``time_s``,
    ``event``, ``node``, ``peer``, ``kind``, ``outcome``) for the walk, the exchanges and
    the outages; ``medium``: the shared radio medium (``None``: independent links);
    ``title`` above the panel."""

    graph: Any
    positions: Mapping[int, tuple[float, float]] | None = None
    quality: Mapping[tuple[int, int], float] | None = None
    quality_label: str = ""
    server: bool = False
    events: pd.DataFrame | None = None
    title: str = ""
    notes: list[str] = field(default_factory=list)
    medium: MediumPicture | None = None


def layout(picture: NetworkPicture) -> tuple[dict[int, np.ndarray], bool]:
    """``({node: xy}, in metres?)``: the picture's positions, else a spring layout
    (seeded: the same picture every time; a circle beyond :data:`MAX_SPRING` nodes)."""
    import networkx as nx

    if picture.positions is not None:
        return {n: np.asarray(p, dtype=float) for n, p in picture.positions.items()}, True
    if picture.graph.number_of_nodes() <= 2:
        return {n: np.array([float(i), 0.0]) for i, n in enumerate(picture.graph.nodes)}, False
    if picture.graph.number_of_nodes() > MAX_SPRING:
        picture.notes.append(f"more than {MAX_SPRING} nodes without positions: a circular "
                             f"layout (a spring layout would take minutes)")
        pos = nx.circular_layout(picture.graph)
    else:
        pos = nx.spring_layout(picture.graph, seed=0)
    return {n: np.asarray(p, dtype=float) for n, p in pos.items()}, False


def walk_moves(events: pd.DataFrame | None) -> pd.DataFrame:
    """The random walk's token holders in time order (``iteration``/``init`` rows that
    name a ``node``), one row per slot: ``time_s``, ``node``."""
    if events is None or "node" not in events.columns or "event" not in events.columns:
        return pd.DataFrame(columns=["time_s", "node"])
    rows = events[events["event"].isin(("init", "iteration"))].dropna(subset=["node"])
    return rows[["time_s", "node"]].astype({"node": int})


def exchanges(events: pd.DataFrame | None) -> pd.DataFrame:
    """Gossip exchanges (``exchange`` rows, or ``message`` rows of a run that recorded its
    messages): ``time_s``, ``node``, ``peer``, ``ok``."""
    if events is None or not {"node", "peer", "event"} <= set(events.columns):
        return pd.DataFrame(columns=["time_s", "node", "peer", "ok"])
    rows = events[events["event"].isin(("exchange", "message"))]
    rows = rows.assign(peer=pd.to_numeric(rows["peer"], errors="coerce"))  # "*": broadcast
    rows = rows.dropna(subset=["node", "peer"])
    ok = (rows["outcome"].fillna("ok") == "ok") if "outcome" in rows.columns \
        else pd.Series(True, index=rows.index)
    out = rows[["time_s", "node", "peer"]].astype({"node": int, "peer": int})
    return out.assign(ok=ok.to_numpy())


def outages(events: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(node intervals, link downs)``: per node ``node``, ``start``, ``end`` (``end``:
    the node's ``node_up``, else the last time of the events), and the ``link_down``
    rows (``time_s``, ``node``, ``peer``)."""
    empty = (pd.DataFrame(columns=["node", "start", "end"]),
             pd.DataFrame(columns=["time_s", "node", "peer"]))
    if events is None or not {"event", "kind", "node"} <= set(events.columns):
        return empty
    faults = events[events["event"] == "fault"].dropna(subset=["node"])
    end_of_run = float(events["time_s"].max()) if len(events) else 0.0
    intervals = []
    for node, rows in faults[faults["kind"].isin((DOWN, UP))].groupby("node", sort=True):
        start = None
        for kind, t in zip(rows["kind"], rows["time_s"], strict=True):
            if kind == DOWN and start is None:
                start = float(t)
            elif kind == UP and start is not None:
                intervals.append((int(node), start, float(t)))
                start = None
        if start is not None:
            intervals.append((int(node), start, end_of_run))
    links = faults[faults["kind"] == LINK_DOWN]
    links = links.dropna(subset=["peer"]) if "peer" in links.columns else links.iloc[:0]
    return (pd.DataFrame(intervals, columns=["node", "start", "end"]),
            links[["time_s", "node", "peer"]].astype({"node": int, "peer": int})
            if len(links) else empty[1])


def window(picture: NetworkPicture, steps: int) -> float | None:
    """The time of the ``steps``-th walk move or exchange (``None``: no limit)."""
    moves, talks = walk_moves(picture.events), exchanges(picture.events)
    times = moves["time_s"] if len(moves) else talks["time_s"]
    if len(times) > steps:
        return float(times.iloc[steps])
    return None


def _edge_segments(graph: Any, xy: Mapping[int, np.ndarray],
                   edges: Sequence[tuple[int, int]]) -> np.ndarray:
    return np.array([[xy[u], xy[v]] for u, v in edges]).reshape(-1, 2, 2)


def draw_panel(fig: Figure, ax: Any, timeline: Any, picture: NetworkPicture,
               steps: int) -> None:
    """Draw ``picture`` on ``ax`` (the graph) and ``timeline`` (events against time, or
    ``None``), with the first ``steps`` walk moves or exchanges."""
    graph = picture.graph
    xy, metres = layout(picture)
    until = window(picture, steps)
    events = picture.events
    if events is not None and until is not None:
        events = events[events["time_s"] <= until]
    moves, talks = walk_moves(events), exchanges(events)
    if len(moves):  # a walk's message rows are its token moves: drawn as the walk
        talks = talks.iloc[:0]
    down, links_down = outages(events)
    edges = [(u, v) for u, v in graph.edges() if u != v]
    if picture.server:
        centre = np.mean(np.array(list(xy.values())), axis=0)
        for node in graph.nodes:
            ax.plot(*zip(centre, xy[node], strict=True), color="0.75", linewidth=0.8,
                    zorder=1)
        ax.plot(*centre, marker="s", markersize=13, color="black", zorder=4,
                linestyle="none", label="parameter server")
    segments = _edge_segments(graph, xy, edges)
    widths = np.full(len(edges), 1.2)
    if len(talks):
        counts = talks.assign(a=talks[["node", "peer"]].min(axis=1),
                              b=talks[["node", "peer"]].max(axis=1)).groupby(["a", "b"]).size()
        per_edge = np.array([counts.get((min(u, v), max(u, v)), 0) for u, v in edges])
        widths = 0.8 + 2.5 * per_edge / max(per_edge.max(), 1)
    if picture.quality:
        values = np.array([picture.quality.get((u, v), picture.quality.get((v, u), np.nan))
                           for u, v in edges], dtype=float)
        lines = LineCollection(segments, array=values, cmap="viridis", linewidths=widths,
                               zorder=1)
        ax.add_collection(lines)
        fig.colorbar(lines, ax=ax, label=picture.quality_label, shrink=0.8)
    elif len(edges):
        ax.add_collection(LineCollection(segments, colors="0.6", linewidths=widths, zorder=1))
    if len(links_down):
        pairs = sorted({(min(a, b), max(a, b)) for a, b in zip(links_down["node"],
                                                                 links_down["peer"],
                                                                 strict=True)
                        if a in xy and b in xy})
        ax.add_collection(LineCollection(_edge_segments(graph, xy, pairs), colors="tab:red",
                                         linewidths=1.2, linestyles="--", zorder=2))
        ax.plot([], [], color="tab:red", linestyle="--", label="link went down")
    nodes = list(graph.nodes)
    pts = np.array([xy[n] for n in nodes])
    size = 160 if len(nodes) <= MAX_LABELLED else max(6, 4000 / len(nodes))
    if len(moves):
        visits = moves["node"].value_counts()
        colour = np.array([visits.get(n, 0) for n in nodes], dtype=float)
        art = ax.scatter(pts[:, 0], pts[:, 1], s=size, c=colour, cmap="Oranges",
                         edgecolors="black", linewidths=0.6, zorder=3)
        fig.colorbar(art, ax=ax, label="token visits (in the window drawn)", shrink=0.8)
        path = moves["node"].to_numpy()
        if len(path) > 1:
            walk = np.array([[xy[a], xy[b]] for a, b in pairwise(path)
                             if a != b and a in xy and b in xy]).reshape(-1, 2, 2)
            if len(walk):
                shade = np.zeros((len(walk), 4))
                shade[:, 3] = np.linspace(0.25, 0.95, len(walk))
                ax.add_collection(LineCollection(walk, colors=shade, linewidths=2.6,
                                                 zorder=2))
                ax.plot([], [], color="black", linewidth=2.6,
                        label=f"walk: first {len(walk)} moves (faint: early)")
    elif picture.medium is not None:
        draw_medium_nodes(fig, ax, pts, nodes, picture.medium, size,
                          len(nodes) <= MAX_LABELLED)
    else:
        ax.scatter(pts[:, 0], pts[:, 1], s=size, color="tab:blue", edgecolors="black",
                   linewidths=0.6, zorder=3)
    if len(down):
        gone = sorted(set(down["node"]) & set(xy))
        ring = np.array([xy[n] for n in gone]).reshape(-1, 2)
        ax.scatter(ring[:, 0], ring[:, 1], s=size * 2.2, facecolors="none",
                   edgecolors="tab:red", linewidths=2, zorder=4, label="node went down")
    if len(nodes) <= MAX_LABELLED:
        for n in nodes:
            ax.annotate(str(n), xy[n], ha="center", va="center", fontsize=7, zorder=5)
    if len(talks):
        ax.plot([], [], color="0.4", linewidth=3, label="link width: exchanges or messages")
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    if picture.medium is not None:
        draw_ranges(ax, xy, picture.medium)
    if metres:
        ax.set(xlabel="x (m)", ylabel="y (m)")
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    if ax.get_legend_handles_labels()[1]:
        if picture.medium is not None:  # under the axes: the nodes fill them
            longest = max(len(t) for t in ax.get_legend_handles_labels()[1])
            ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.1),
                      ncol=2 if longest <= 45 else 1, frameon=False, labelspacing=1.4)
        else:
            ax.legend(fontsize="x-small", framealpha=0.85, markerscale=0.5)
    head, _, rest = picture.title.partition("\n")
    if until is not None:
        head += " " + f"(up to t = {until:.3g} s)".replace(" ", NBSP)  # one piece
    title = "\n".join([head, *([rest] if rest else [])])
    if picture.medium is not None and picture.medium.summary:
        title += "\n" + picture.medium.summary
    ax.set_title(fit_title(title, panel_width_in(fig, ax)), fontsize="medium")
    if timeline is not None:
        draw_timeline(timeline, moves, talks, down, links_down)


def panel_width_in(fig: Figure, ax: Any) -> float:
    """About the width in inches of ``ax`` (its column of the figure, less its colour
    bars)."""
    spec = ax.get_subplotspec()
    columns = spec.get_gridspec().ncols if spec is not None else 1
    bars = sum(1 for other in fig.axes if other.get_label() == "<colorbar>")
    return float(fig.get_figwidth()) / columns - 0.6 * bars / max(columns, 1)


def fit_title(title: str, width_in: float) -> str:
    """``title`` with each line wrapped to fit ``width_in`` inches (medium font).

    >>> fit_title("a b c d", 0.3)
    'a b\\nc d'
    """
    width = max(int(width_in * TITLE_CHARS_PER_INCH), 3)
    kept = re.sub(r"(\d) (m|dB|s|nodes)\b", rf"\1{NBSP}\2", title)  # a number and its unit
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False) or line
                      for line in kept.split("\n")).replace(NBSP, " ")


def draw_timeline(ax: Any, moves: pd.DataFrame, talks: pd.DataFrame, down: pd.DataFrame,
                  links_down: pd.DataFrame) -> None:
    """Events against simulated time, one row per node: the token holder (a step line),
    exchanges (a segment from node to peer, red when it failed), node outages (red bars),
    link downs (red ticks at both ends)."""
    if len(moves):
        ax.step(moves["time_s"], moves["node"], where="post", color="tab:purple",
                linewidth=1, label="token holder")
    if len(talks):
        for ok, colour in ((True, "tab:blue"), (False, "tab:red")):
            rows = talks[talks["ok"] == ok]
            if len(rows):
                seg = np.stack([np.column_stack([rows["time_s"], rows["node"]]),
                                np.column_stack([rows["time_s"], rows["peer"]])], axis=1)
                ax.add_collection(LineCollection(seg, colors=colour, linewidths=1.2,
                                                 alpha=0.7))
                ax.plot([], [], color=colour, label="exchange" if ok else "failed exchange")
    if len(down):
        for node, rows in down.groupby("node"):
            ax.broken_barh(list(zip(rows["start"], rows["end"] - rows["start"], strict=True)),
                           (node - 0.35, 0.7), color="tab:red", alpha=0.5)
        ax.plot([], [], color="tab:red", alpha=0.5, linewidth=6, label="node down")
    if len(links_down):
        t = np.concatenate([links_down["time_s"], links_down["time_s"]])
        n = np.concatenate([links_down["node"], links_down["peer"]])
        ax.plot(t, n, linestyle="none", marker="|", color="tab:red", markersize=5,
                label="link down")
    ax.set(xlabel="time (s)", ylabel="node")
    ax.margins(x=0.02)
    ax.autoscale_view()
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize="x-small", loc="upper right")
    ax.grid(alpha=0.3)


def has_events(picture: NetworkPicture) -> bool:
    """Whether the picture has a walk, exchanges or outages to show on a timeline."""
    down, links = outages(picture.events)
    return bool(len(walk_moves(picture.events)) or len(exchanges(picture.events))
                or len(down) or len(links))


def draw_network(pictures: Sequence[NetworkPicture], steps: int = 40,
                 figsize: tuple[float, float] | None = None) -> Figure:
    """One panel per picture side by side, each with its timeline under it when it has
    events; ``steps``: the walk moves or exchanges drawn (the timeline spans them)."""
    if not pictures:
        raise ValueError("nothing to draw")
    for p in pictures:
        if p.graph.number_of_nodes() > MAX_NODES:
            raise ValueError(f"graph: {p.graph.number_of_nodes()} nodes; at most {MAX_NODES} "
                             f"are drawn")
    timed = any(has_events(p) for p in pictures)
    n = len(pictures)
    if figsize is None:
        wide = 1.6 if any(p.medium is not None for p in pictures) else 0.0  # 2 colour bars
        figsize = ((5.6 if n > 1 else 6.4) * n + wide * n, (7.2 if timed else 5.2) + wide / 2)
    fig = new_figure(figsize)
    grid = fig.add_gridspec(2 if timed else 1, n, height_ratios=[3, 1.3] if timed else [1])
    for i, picture in enumerate(pictures):
        ax = fig.add_subplot(grid[0, i])
        timeline = fig.add_subplot(grid[1, i]) if timed and has_events(picture) else None
        draw_panel(fig, ax, timeline, picture, steps)
    return fig
