"""What ``bflnet draw`` reads of the network a run builds, and of the medium in a run's
rows.

The network is built as the run builds it: ``Simulation(seed).build_network(graph,
**settings.network_kwargs(graph))`` on the graph of ``config.run_graph(seed)``. Its
shared medium (if any) gives the node positions (the graph's own, else laid out from
the run's stream ``positions``), the mean SNR of each link (path loss and the pair's
shadowing), the TDMA slots and the ranges; its fading links give each link's mean SNR
at its length. A table's run gives the medium's activity: its ``tx`` rows the packets
each node sent, its ``mac`` collision rows the receptions each node lost, its counts
(``transmissions``, ``collisions``, ... of ``d2d-medium``) the run's totals.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bflnet.analysis.medium_layer import MediumPicture

FADING = ("rayleigh", "rician")
#: The medium's running counts a table may carry on its rows (``d2d-medium``).
COUNT_COLUMNS = ("transmissions", "receptions", "collisions", "backoffs", "deferrals")


def built_network(settings: Any, graph: Any, seed: int) -> Any:
    """The run's network of ``graph`` under ``settings`` with root seed ``seed``, or
    ``None`` where nothing drawn depends on it (independent links without fading, or
    fading on a graph without positions: every link alike)."""
    from bflnet.radio.positions import graph_has_positions
    from bflnet.simulator.simulation import Simulation

    shared = settings.medium == "shared"
    if not shared and not (settings.channel in FADING and graph_has_positions(graph)):
        return None
    return Simulation(seed).build_network(graph, **settings.network_kwargs(graph))


def node_positions(network: Any, graph: Any) -> dict[int, tuple[float, float]] | None:
    """Each node's position in metres: the shared medium's, else the graph's own (else
    ``None``)."""
    from bflnet.radio.positions import graph_has_positions

    if network is not None and network.air is not None:
        medium = network.air.medium
        xy = medium.positions()
        return {n: (float(xy[medium.index[n]][0]), float(xy[medium.index[n]][1]))
                for n in graph.nodes}
    if graph_has_positions(graph):
        return {n: tuple(graph.nodes[n]["pos"]) for n in graph.nodes}
    return None


def link_snr_db(network: Any, graph: Any) -> dict[tuple[int, int], float] | None:
    """Mean SNR in dB of each link of ``graph`` in the built ``network``: on the shared
    medium, the sender's mean power at the receiver (path loss and shadowing) over the
    noise; on fading links, the channel's mean SNR at the link's length; ``None``
    without either."""
    if network is None:
        return None
    edges = [(u, v) for u, v in graph.edges() if u != v]
    if network.air is not None:
        medium = network.air.medium
        spec = medium.spec
        i = medium.index
        return {(u, v): float(10.0 * math.log10(
            max(spec.tx_mw * medium.mean_gain(i[u], i[v]) / medium.noise, 1e-300)))
            for u, v in edges}
    out = {}
    for u, v in edges:
        snr = getattr(network.links[(u, v)].channel, "mean_snr_at_distance_db", None)
        if snr is None:
            return None
        out[(u, v)] = float(snr)
    return out


def medium_picture(network: Any, settings: Any, focus: int | None) -> MediumPicture | None:
    """The shared medium of the built ``network`` (``None``: independent links): its MAC,
    the TDMA slot of every node, and the ranges around ``focus``."""
    if network is None or network.air is None:
        return None
    air = network.air
    medium = air.medium
    slots = None
    if air.colours:
        slots = {n: int(air.colours.get(medium.index[n], 0)) for n in network.graph.nodes}
    radio = medium.spec
    return MediumPicture(
        mac=settings.mac, slots=slots, frame_slots=int(air.frame_slots) if slots else 0,
        radio_range_m=float(radio.range_m), sense_range_m=medium.sense_range_m,
        interference_range_m=float(medium.range_m), focus=focus)


def medium_summary(settings: Any, network: Any, named: bool = False) -> str:
    """A few words on the medium: ``shared medium: mac=tdma, unicast, 4 TDMA slots,
    rayleigh fading, 67 dB mean SNR at 1 m`` (``named``: the MAC and broadcast are named
    elsewhere, left out)."""
    air = network.air if network is not None else None
    if air is None:
        return ""
    radio = air.medium.spec
    words = [] if named else [f"mac={settings.mac}",
                              "broadcast" if settings.broadcast else "unicast"]
    if air.colours:
        words.append(f"{air.frame_slots} TDMA slots")
    words.append(f"{radio.fading} fading" if radio.fading != "none" else "no fading")
    return f"shared medium: {', '.join(words)}, {radio.mean_snr_db(1.0):.3g} dB mean SNR at 1 m"


def add_activity(medium: MediumPicture, run: pd.DataFrame) -> list[str]:
    """Fill ``medium``'s activity from a run's rows: packets sent per node (``tx`` rows;
    without them, CSMA's back-offs, one per packet), receptions lost per node (``mac``
    rows of kind ``collision``, by their receiver ``peer``) and the totals; the notes
    to print."""
    columns = set(run.columns)
    if {"transmissions", "collisions"} <= columns:  # the run's counts (d2d-medium)
        totals = {c: float(run[c].max()) for c in COUNT_COLUMNS
                  if c in columns and run[c].notna().any()}
        medium.summary = _totals_line(totals)
        return ["the table keeps the medium's totals over the run (in the title), not "
                "counts per node"]
    event = run["event"] if "event" in columns else pd.Series("", index=run.index)
    tx = run[(event == "tx") & run["node"].notna()] if "node" in columns else run.iloc[:0]
    mac = run[event == "mac"] if {"kind", "node", "peer"} <= columns else \
        pd.DataFrame(columns=["kind", "node", "peer"])
    notes = []
    backoffs = mac[mac["kind"] == "backoff"]
    if len(tx):
        medium.sent = _counts(tx["node"])
    elif len(backoffs):
        medium.sent = _counts(backoffs["node"])
        medium.sent_label = "back-offs (one per packet sent)"
        notes.append("node size: the CSMA back-offs of the table (one per packet); "
                     "record_messages=true adds a tx row per packet sent")
    else:
        notes.append("node size: the table has no tx rows (record_messages=true adds one "
                     "per packet sent)")
    medium.lost = _counts(pd.to_numeric(mac.loc[mac["kind"] == "collision", "peer"],
                                        errors="coerce"))
    sent = sum(medium.sent.values()) if medium.sent else None
    lost = sum(medium.lost.values())
    medium.summary = "over the run: " + (f"{sent:.0f} {medium.sent_label}, "
                                         if sent is not None else "") + \
        f"{lost:.0f} receptions lost"
    return notes


def _counts(nodes: pd.Series) -> dict[int, float]:
    values = pd.to_numeric(nodes, errors="coerce").dropna().astype(int)
    return {int(k): float(v) for k, v in values.value_counts().items()}


def _totals_line(totals: dict[str, Any]) -> str:
    """``over the run: 1234 packets on the air, 56 of 2345 receptions lost (2.4 %)``."""
    words = []
    if "transmissions" in totals:
        words.append(f"{totals['transmissions']:.0f} packets on the air")
    if "collisions" in totals and "receptions" in totals:
        rx = float(totals["receptions"])
        share = f" ({100.0 * totals['collisions'] / rx:.2g} %)" if rx > 0 else ""
        words.append(f"{totals['collisions']:.0f} of {rx:.0f} receptions lost{share}")
    if totals.get("backoffs"):
        words.append(f"{totals['backoffs']:.0f} back-offs")
    return "over the run: " + ", ".join(words) if words else ""


def check_focus(node: int | None, graph: Any, medium: MediumPicture | None) -> None:
    """A one-line error for a ``--node`` that is not a node of the drawn shared medium."""
    if node is None:
        return
    if medium is None:
        raise ValueError("--node: draws a node's ranges on a shared medium (medium=shared, "
                         "or a shared MAC of d2d-medium); this network has independent links")
    if node not in graph:
        nodes = np.array(sorted(graph.nodes))
        raise ValueError(f"--node: must be a node of the drawn graph ({nodes.min()}.."
                         f"{nodes.max()}), got {node}")
