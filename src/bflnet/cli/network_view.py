"""What ``bflnet plot-network`` draws, built from one of three sources:

* a scenario name (with ``--set`` and ``--seed``): its config builds the graph exactly as
  its run does (same seed, same random stream), without running the learning; one panel
  per topology the run uses (``gfvl-beta-bernoulli`` runs several); a parameter-server
  scenario draws its K agents around the server;
* a result table written by bflnet (``.csv`` with its sidecar, ``.parquet``, or a sweep):
  the graph of the config and seed stored with it, and the table's events for one run
  (the random walk's token holders, gossip exchanges, node and link outages);
* a graph file (``.graphml``, ``.gml``, ``.txt``, ``.edgelist``, ``.csv`` edge list): the
  graph alone, at the positions the file gives (``x``/``y`` or ``pos``, checked).

Link quality, where the config makes it differ between links, is the mean SNR of each
link in dB at its length (fading channels or ``medium=shared`` on a graph with
positions); a table of a run that recorded its messages gives the mean transmission
attempts per message of each link instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bflnet.analysis.network_plot import MAX_NODES, NetworkPicture
from bflnet.analysis.table_filter import format_value, where
from bflnet.protocols.graphs.topologies import (
    EDGE_LIST_SUFFIXES,
    GML_SUFFIXES,
    GRAPHML_SUFFIXES,
)

GRAPH_FILE_SUFFIXES = EDGE_LIST_SUFFIXES + GRAPHML_SUFFIXES + GML_SUFFIXES
TABLE_SUFFIXES = (".csv", ".parquet")
#: Columns that tell the runs of a table apart, shown in the panel's title.
RUN_COLUMNS = ("run_id", "seed", "run")
#: Columns never shown as a run's setting.
NOT_SETTINGS = {"event", "iteration", "time_s", "node", "peer", "kind", "run_seed",
                "config_hash", "outcome", "cause", "lost"}


def source_kind(source: str) -> str:
    """``table``, ``graph-file`` or ``scenario``: how ``source`` is read (a path with a
    table or graph suffix, or a sweep directory, is a file; anything else a scenario)."""
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix in TABLE_SUFFIXES or path.is_dir():
        if suffix == ".csv" and not path.with_name(path.name + ".json").exists() \
                and path.exists() and _looks_like_edge_list(path):
            return "graph-file"
        return "table"
    if suffix in GRAPH_FILE_SUFFIXES:
        return "graph-file"
    return "scenario"


def _looks_like_edge_list(path: Path) -> bool:
    """A ``.csv`` without a bflnet sidecar whose first line is two numbers or labels."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
    except OSError:
        return False
    return "," not in first and len(first.split()) in (2, 3)


def _positions(graph: Any, settings: Any, seed: int) -> dict[int, tuple[float, float]] | None:
    """Node positions: the graph's own (``pos``), else the shared medium's layout (the
    same stream as the run's), else ``None``."""
    from bflnet.radio.positions import graph_has_positions, node_positions

    if graph_has_positions(graph):
        return {n: tuple(graph.nodes[n]["pos"]) for n in graph.nodes}
    if getattr(settings, "medium", "links") == "shared":
        from bflnet.simulator.rng import RngStreams

        xy = node_positions(graph, area_m=settings.area_m, layout=settings.layout,
                            rng=RngStreams(seed).numpy("positions"))
        return {n: (float(x), float(y)) for n, (x, y) in zip(graph.nodes, xy, strict=True)}
    return None


def link_snr(graph: Any, settings: Any, positions: Mapping[int, Any] | None
             ) -> dict[tuple[int, int], float] | None:
    """Mean SNR in dB of each link at its length, when the config makes links differ (a
    fading channel or the shared medium, on a graph with positions); else ``None``."""
    if positions is None:
        return None
    if getattr(settings, "medium", "links") == "shared":
        radio = settings.medium_spec().radio
        snr = radio.mean_snr_db
    elif getattr(settings, "channel", None) in ("rayleigh", "rician"):
        channel = settings.build_channel(graph)
        return {(u, v): float(channel(u, v).mean_snr_at_distance_db)
                for u, v in graph.edges() if u != v}
    else:
        return None
    out = {}
    for u, v in graph.edges():
        d = float(np.hypot(*(np.asarray(positions[u]) - np.asarray(positions[v]))))
        out[(u, v)] = float(snr(max(d, 1e-3)))
    return out


def channel_summary(settings: Any) -> str:
    """A few words on the links: ``fixed channel, 1 Mbit/s, loss 0.1``."""
    if getattr(settings, "medium", "links") == "shared":
        return f"shared medium, mac={settings.mac}, channel={settings.channel}"
    name = getattr(settings, "channel", "")
    if name == "fixed":
        text = f"fixed channel, {settings.rate_bps / 1e6:g} Mbit/s"
        return text + (f", loss {settings.loss_prob:g}" if settings.loss_prob else "")
    return f"{name} channel" if name else ""


def scenario_pictures(name: str, overrides: Mapping[str, Any], seed: int,
                      events: pd.DataFrame | None = None, graph_name: str | None = None,
                      title: str = "") -> list[NetworkPicture]:
    """One picture per topology of scenario ``name`` under ``overrides`` and ``seed``
    (``graph_name``: that topology only), built as its run builds them."""
    from bflnet.runs.registry import get_scenario
    from bflnet.simulator.rng import RngStreams

    scenario = get_scenario(name)
    config = scenario.config(dict(overrides))
    scenario.check_resources(config)
    graphs = config.graphs_in_use() if hasattr(config, "graphs_in_use") else ()
    if not graphs:
        import networkx as nx

        k = int(getattr(config, "K", 2))
        if k > MAX_NODES:
            raise ValueError(f"K: {k} agents; plot-network draws at most {MAX_NODES}")
        return [NetworkPicture(nx.empty_graph(k), server=True, events=events,
                               title=title or f"{name}: {k} agents and the parameter server")]
    if graph_name is not None:
        graphs = (graph_name,)
    pictures = []
    for topology in graphs:
        settings = config.network(graph=topology) if len(config.graphs_in_use()) > 1 \
            else config
        nodes = settings.graph_size(topology).nodes
        if nodes > MAX_NODES:
            raise ValueError(f"K: a graph of {nodes:.0f} nodes; plot-network draws at most "
                             f"{MAX_NODES}")
        graph = settings.build_graph(RngStreams(seed).numpy("graph"))
        positions = _positions(graph, settings, seed)
        snr = link_snr(graph, settings, positions)
        head = title or f"{name}, seed {seed}"
        pictures.append(NetworkPicture(
            graph, positions, snr, "mean SNR of the link (dB)" if snr else "",
            events=events,
            title=f"{head}\n{topology}, K = {graph.number_of_nodes()}, "
                  f"{channel_summary(settings)}"))
    return pictures


def graph_file_pictures(path: str) -> list[NetworkPicture]:
    """The graph of a graph file at its own positions (if any)."""
    from bflnet.protocols.graphs.topologies import load_graph
    from bflnet.radio.positions import graph_has_positions

    graph = load_graph(path)
    positions = ({n: tuple(graph.nodes[n]["pos"]) for n in graph.nodes}
                 if graph_has_positions(graph) else None)
    return [NetworkPicture(graph, positions, title=f"{Path(path).name}: "
                           f"{graph.number_of_nodes()} nodes, {graph.number_of_edges()} links")]


def split_runs(frame: pd.DataFrame) -> list[pd.DataFrame]:
    """The runs of a table in order: each starts at an ``init`` row (the whole table
    is one run when it has none)."""
    if "event" not in frame.columns:
        return [frame]
    starts = np.flatnonzero((frame["event"] == "init").to_numpy())
    if len(starts) == 0:
        return [frame]
    bounds = [*starts.tolist(), len(frame)]
    head = frame.iloc[: bounds[0]]
    runs = [frame.iloc[a:b] for a, b in itertools.pairwise(bounds)]
    if len(head):
        runs[0] = pd.concat([head, runs[0]])
    return runs


def run_settings(run: pd.DataFrame, frame: pd.DataFrame) -> dict[str, Any]:
    """The columns constant within ``run`` that vary over ``frame``'s rows (its settings:
    ``downtime = 0.2``, ``run = 3``)."""
    out = {}
    first = run.iloc[0]
    for column in frame.columns:
        if column in NOT_SETTINGS or column.startswith(("cum_", "theory_")):
            continue
        values = run[column]
        if values.notna().all() and values.nunique() == 1 and frame[column].nunique() > 1:
            out[column] = first[column]
    return out


def table_pictures(path: str, filters: Sequence[str], run_index: int) -> tuple[
        list[NetworkPicture], str]:
    """The picture of run ``run_index`` (0: the first) among the runs of the table at
    ``path`` left by ``filters``, and a note naming the run drawn."""
    from bflnet.runs.result_tables import read_table

    frame, record = read_table(path)
    if record is None or "scenario" not in record:
        raise ValueError(f"file: {path!r} has no bflnet record (scenario, config, seed) to "
                         f"build its graph from; draw a scenario or a graph file instead")
    rows = where(frame, filters) if filters else frame
    runs = split_runs(rows)
    if not 0 <= run_index < len(runs):
        raise ValueError(f"--run: must be in 0..{len(runs) - 1} (the table has {len(runs)} "
                         f"runs{' left by --where' if filters else ''}), got {run_index}")
    run = runs[run_index]
    settings = run_settings(run, frame) if len(split_runs(frame)) > 1 else {}
    if record.get("kind") == "sweep":
        grid = record.get("grid") or {}
        overrides = {**(record.get("fixed") or {}),
                     **{k: _plain(run[k].iloc[0]) for k in grid if k in run.columns}}
        seed = int(run["seed"].iloc[0]) if "seed" in run.columns else 0
    else:
        overrides, seed = dict(record.get("config") or {}), int(record.get("seed", 0))
    graph_name = None
    if "graph" in run.columns and run["graph"].nunique() == 1 and isinstance(
            run["graph"].iloc[0], str):
        graph_name = str(run["graph"].iloc[0])
    label = ", ".join(f"{k} = {format_value(v)}" for k, v in settings.items())
    title = f"{Path(path).name}: {record['scenario']}, seed {seed}" + \
        (f"\n{label}" if label else "")
    pictures = scenario_pictures(record["scenario"], overrides, seed, events=run,
                                 graph_name=graph_name, title=title)
    attempts = measured_attempts(run)
    if attempts:
        for picture in pictures:
            picture.quality, picture.quality_label = attempts, ATTEMPTS_LABEL
    note = (f"drew run {run_index} of {len(runs)} ({label or 'the first'}); --run N or "
            f"--where col=value picks another" if len(runs) > 1 else "")
    return pictures[:1], note


ATTEMPTS_LABEL = "transmission attempts per message (measured)"


def measured_attempts(run: pd.DataFrame) -> dict[tuple[int, int], float]:
    """Mean transmission attempts per message of each link (either direction) from the
    ``message`` rows of a run that recorded its messages (empty: none)."""
    if not {"event", "node", "peer", "attempts"} <= set(run.columns):
        return {}
    rows = run[run["event"] == "message"].dropna(subset=["node", "peer", "attempts"])
    if rows.empty:
        return {}
    a = rows[["node", "peer"]].min(axis=1).astype(int)
    b = rows[["node", "peer"]].max(axis=1).astype(int)
    means = rows["attempts"].astype(float).groupby([a, b]).mean()
    return {(int(u), int(v)): float(m) for (u, v), m in means.items()}


def _plain(value: Any) -> Any:
    """A numpy scalar from a table as a Python value (for a config)."""
    return value.item() if hasattr(value, "item") else value
