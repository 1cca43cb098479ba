"""What ``bflnet plot-network`` draws, built from one of three sources:

* a scenario name (with ``--set`` and ``--seed``): the network its runs build, through
  the same functions and seed (``config.run_networks``, ``config.run_graph``,
  ``Simulation(seed).build_network``), without running the learning; one panel per
  topology the run uses (``gfvl-beta-bernoulli`` runs several; of the networks of one
  topology, such as ``d2d-medium``'s settings, the first on a shared medium); a
  parameter-server scenario draws its K agents around the server;
* a result table written by bflnet (``.csv`` with its sidecar, ``.parquet``, or a sweep):
  the network of the config and seed stored with it and of one run's setting (its
  ``mac``, ``broadcast``, ``graph``), and the table's events for that run (the random
  walk's token holders, gossip exchanges, node and link outages, the shared medium's
  packets and losses);
* a graph file (``.graphml``, ``.gml``, ``.txt``, ``.edgelist``, ``.csv`` edge list): the
  graph alone, at the positions the file gives (``x``/``y`` or ``pos``, checked).

Link quality, where the config makes it differ between links, is the mean SNR of each
link in dB as the built network has it (fading channels on a graph with positions, or
``medium=shared``); a table of a run that recorded its messages gives the mean
transmission attempts per message of each link instead. On a shared medium the picture
shows the medium (:mod:`bflnet.cli.network_medium`).
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
from bflnet.cli.network_medium import (
    FADING,
    add_activity,
    built_network,
    check_focus,
    link_snr_db,
    medium_picture,
    medium_summary,
    node_positions,
)
from bflnet.protocols.graphs.topologies import (
    EDGE_LIST_SUFFIXES,
    GML_SUFFIXES,
    GRAPHML_SUFFIXES,
)
from bflnet.radio.positions import graph_has_positions

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


def channel_summary(settings: Any) -> str:
    """A few words on independent links: ``fixed channel, 1 Mbit/s, loss 0.1``,
    ``rayleigh channel, 60 dB mean SNR at 1 m``."""
    name = getattr(settings, "channel", "")
    if name == "fixed":
        text = f"fixed channel, {settings.rate_bps / 1e6:g} Mbit/s"
        return text + (f", loss {settings.loss_prob:g}" if settings.loss_prob else "")
    if name in FADING:
        return f"{name} channel, {settings.mean_snr_db:.3g} dB mean SNR at 1 m"
    return f"{name} channel" if name else ""


def pick_networks(networks: Sequence[Any]) -> tuple[list[Any], str]:
    """One network per topology (the first on a shared medium, else the first), and a
    note naming the one drawn when a topology has several (``d2d-medium``'s settings)."""
    picked, note = [], ""
    for topology in dict.fromkeys(n.topology for n in networks):
        same = [n for n in networks if n.topology == topology]
        shared = [n for n in same if n.settings.medium == "shared"]
        chosen = (shared or same)[0]
        picked.append(chosen)
        if len(same) > 1:
            note = (f"drew {chosen.label}, one of the {len(same)} networks the runs build "
                    f"({', '.join(n.label for n in same)}); --set picks others, and a "
                    f"result table draws the network of the run picked with --where/--run")
    return picked, note


def scenario_pictures(name: str, overrides: Mapping[str, Any], seed: int,
                      events: pd.DataFrame | None = None, graph_name: str | None = None,
                      title: str = "", chosen: Mapping[str, Any] | None = None,
                      node: int | None = None) -> list[NetworkPicture]:
    """One picture per topology of scenario ``name`` under ``overrides`` and ``seed``
    (``graph_name``: that topology only; ``chosen``: the setting columns of a table's run,
    which pick its network), built as its runs build them (``config.run_networks``,
    ``config.run_graph``, ``Simulation(seed).build_network``); ``node``: the node whose
    ranges are drawn on a shared medium."""
    from bflnet.runs.registry import get_scenario

    scenario = get_scenario(name)
    config = scenario.config(dict(overrides))
    scenario.check_resources(config)
    graphs = config.graphs_in_use() if hasattr(config, "graphs_in_use") else ()
    if not graphs:
        import networkx as nx

        if node is not None:
            raise ValueError(f"--node: {name} has no D2D graph (its agents talk to a server)")
        k = int(getattr(config, "K", 2))
        if k > MAX_NODES:
            raise ValueError(f"K: {k} agents; plot-network draws at most {MAX_NODES}")
        return [NetworkPicture(nx.empty_graph(k), server=True, events=events,
                               title=title or f"{name}: {k} agents and the parameter server")]
    chosen = {**(chosen or {}), **({"graph": graph_name} if graph_name else {})}
    networks = config.run_networks(chosen)
    if not networks:
        shown = ", ".join(f"{k}={v}" for k, v in chosen.items())
        raise ValueError(f"file: the run ({shown}) matches no network of {name}'s config")
    picked, note = pick_networks(networks)
    pictures = []
    for net in picked:
        head = title or f"{name}, seed {seed}" + (f": {net.label}" if net.label else "")
        pictures.append(_picture(config, net, seed, events, head, node))
        if note and events is None:
            pictures[-1].notes.append(note)
    return pictures


def _picture(config: Any, net: Any, seed: int, events: pd.DataFrame | None, head: str,
             node: int | None) -> NetworkPicture:
    """The picture of one of the runs' networks."""
    settings = net.settings
    nodes = settings.graph_size(net.topology).nodes
    if nodes > MAX_NODES:
        raise ValueError(f"K: a graph of {nodes:.0f} nodes; plot-network draws at most "
                         f"{MAX_NODES}")
    graph = config.run_graph(seed, net.topology)
    network = built_network(settings, graph, seed)
    positions = node_positions(network, graph)
    snr = link_snr_db(network, graph) if positions is not None else None
    medium = medium_picture(network, settings, node)
    check_focus(node, graph, medium)
    notes = add_activity(medium, events) if medium is not None and events is not None else []
    area = (f", area {settings.area_m:.4g} m" if positions is not None and (
        net.topology == "random-geometric" or (medium is not None and not graph_has_positions(
            graph))) else "")
    links = medium_summary(settings, network, named=bool(net.label)) or \
        channel_summary(settings)
    lines = [head, f"{net.topology}, K = {graph.number_of_nodes()}{area}", links]
    picture = NetworkPicture(graph, positions, snr, "mean SNR of the link (dB)" if snr else "",
                             events=events, title="\n".join(lines), medium=medium)
    picture.notes.extend(notes)
    return picture


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
    """The columns constant within every run of ``frame`` that vary over its rows, with
    their values in ``run`` (its settings: ``downtime = 0.2``, ``run = 3``; not a count
    that stayed 0 in this run but moves in others)."""
    first = run.iloc[0]
    candidates = [c for c in frame.columns
                  if c not in NOT_SETTINGS and not c.startswith(("cum_", "theory_"))
                  and run[c].notna().all() and run[c].nunique() == 1
                  and frame[c].nunique() > 1]
    if not candidates:
        return {}
    number = (frame["event"] == "init").cumsum() if "event" in frame.columns else 0
    within = frame[candidates].groupby(number).nunique(dropna=False).max()
    return {c: first[c] for c in candidates if within[c] <= 1}


def table_pictures(path: str, filters: Sequence[str], run_index: int,
                   node: int | None = None) -> tuple[list[NetworkPicture], str]:
    """The picture of run ``run_index`` (0: the first) among the runs of the table at
    ``path`` left by ``filters``, and a note naming the run drawn; ``node``: the node
    whose ranges are drawn on a shared medium."""
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
    if len(settings) > 1:  # the run's id repeats its settings
        settings.pop("run_id", None)
    label = ", ".join(f"{k} = {format_value(v)}" for k, v in settings.items())
    title = f"{Path(path).name}: {record['scenario']}, seed {seed}" + \
        (f"\n{label}" if label else "")
    pictures = scenario_pictures(record["scenario"], overrides, seed, events=run,
                                 graph_name=graph_name, title=title,
                                 chosen=run_setting(run), node=node)
    attempts = measured_attempts(run)
    if attempts:
        for picture in pictures:
            picture.quality, picture.quality_label = attempts, ATTEMPTS_LABEL
    note = (f"drew run {run_index} of {len(runs)} ({label or 'the first'}); --run N or "
            f"--where col=value picks another" if len(runs) > 1 else "")
    return pictures[:1], note


def run_setting(run: pd.DataFrame) -> dict[str, Any]:
    """The columns of a run that pick its network among its scenario's (``mac``,
    ``broadcast``, ``message_bits``, ``graph``), where the run has one value."""
    out = {}
    for column in ("mac", "broadcast", "message_bits", "graph"):
        if column in run.columns and run[column].nunique() == 1:
            value = _plain(run[column].iloc[0])
            if column == "broadcast" and isinstance(value, str):
                value = value.strip().lower() in ("true", "1", "yes")
            out[column] = value
    return out


ATTEMPTS_LABEL = "transmission attempts per message (measured)"


def measured_attempts(run: pd.DataFrame) -> dict[tuple[int, int], float]:
    """Mean transmission attempts per message of each link (either direction) from the
    ``message`` rows of a run that recorded its messages (empty: none)."""
    if not {"event", "node", "peer", "attempts"} <= set(run.columns):
        return {}
    rows = run[run["event"] == "message"]
    rows = rows.assign(peer=pd.to_numeric(rows["peer"], errors="coerce"))  # "*": broadcast
    rows = rows.dropna(subset=["node", "peer", "attempts"])
    if rows.empty:
        return {}
    a = rows[["node", "peer"]].min(axis=1).astype(int)
    b = rows[["node", "peer"]].max(axis=1).astype(int)
    means = rows["attempts"].astype(float).groupby([a, b]).mean()
    return {(int(u), int(v)): float(m) for (u, v), m in means.items()}


def _plain(value: Any) -> Any:
    """A numpy scalar from a table as a Python value (for a config)."""
    return value.item() if hasattr(value, "item") else value
