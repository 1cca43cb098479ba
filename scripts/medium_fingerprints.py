"""Fingerprints of every row of 42 shared-medium runs, to compare two versions' rows.

Each run is synchronous gossip (consensus averaging) on the random geometric graphs of
``bench/medium_cost.py`` (K = 16, 60, 256) with ``record_messages`` on (a ``tx`` row per
packet), under every MAC and some of their settings (CSMA windows 1-4 and 2-8 with a
retry limit of 2, ALOHA p = 0.02, 0.1 and 0.5), unicast and broadcast, a latency and a
16-bit MTU; with ``--phy`` an 802.11 preset, the same runs under it and 14 more on the
K = 60 graph (a sense circle, a louder radio, small windows, ``data_rate="auto"``,
``reception="threshold"``, block and Gauss-Markov coherence), unicast and broadcast,
and saturated stations (``bench/medium_cost.py``'s, n = 5 and 20, and 50 with a retry
limit of 2). Each line is ``case sha256-of-the-rows rows packets``; run it on two versions
and compare the outputs (``diff``): any changed row changes a fingerprint.

    PYTHONPATH=src python scripts/medium_fingerprints.py > new.txt
    git stash; PYTHONPATH=src python scripts/medium_fingerprints.py > old.txt; git stash pop
    diff old.txt new.txt
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import medium_cost as mc
import networkx as nx

from bflnet.channels import RayleighChannel
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.radio import SharedMediumSpec, make_mac
from bflnet.simulator import Simulation


def fingerprint(graph: nx.Graph, rounds: int, medium: SharedMediumSpec, broadcast: bool,
                mtu_bits: int) -> tuple[str, int, int]:
    """(sha256 of every row, first 16 hex digits; rows; packets on the air) of one run."""
    sim = Simulation(0, record_messages=True)
    template = RayleighChannel(1e6, mc.RADIO.mean_snr_db(1.0), coding_rate=1.0)

    def channel(src, dst):
        a, b = graph.nodes[src]["pos"], graph.nodes[dst]["pos"]
        return template.with_distance(max(math.dist(a, b), 1e-3))

    net = sim.build_network(graph, channel=channel, medium=medium, mtu_bits=mtu_bits)
    learner = ConsensusAveraging({k: float(k) for k in graph})
    sim.run(ConsensusProtocol(learner, "metropolis-hastings",
                              StopRule(max_iterations=rounds), eval_every=1,
                              broadcast=broadcast))
    return rows_hash(sim.recorder.rows), len(sim.recorder.rows), net.air.medium.transmissions


def rows_hash(rows: list[dict]) -> str:
    """sha256 of ``rows`` (each one's items sorted), its first 16 hex digits."""
    h = hashlib.sha256()
    for row in rows:
        h.update(repr(sorted(row.items(), key=lambda kv: kv[0])).encode())
    return h.hexdigest()[:16]


def saturated_fingerprint(n: int, phy: str, retry_limit: int) -> tuple[str, int, int]:
    """(fingerprint, rows, packets on the air) of ``n`` saturated stations."""
    medium = SharedMediumSpec(mc.saturated_radio(phy), make_mac("csma",
                                                                  retry_limit=retry_limit))
    sim, net, _ = mc.saturated_network(n, medium, 600)
    sim.env.run()
    return rows_hash(sim.recorder.rows), len(sim.recorder.rows), net.air.medium.transmissions


def cases(phy: str = "ideal") -> list[tuple[str, nx.Graph, int, SharedMediumSpec, bool, int]]:
    """``(name, graph, rounds, medium, broadcast, mtu_bits)`` of the 42 runs under the
    PHY preset ``phy``; with an 802.11 preset, 14 more (module docstring)."""
    radio = replace(mc.RADIO, phy=phy)
    out = []
    for K, rounds in ((16, 12), (60, 5), (256, 2)):
        g = mc.geometric_graph(K)
        for mac, kw in (("csma", {}), ("aloha", {}), ("none", {}), ("tdma", {}),
                        ("csma", {"cw_min": 2, "cw_max": 8, "retry_limit": 2}),
                        ("csma", {"cw_min": 1, "cw_max": 4}),
                        ("aloha", {"p": 0.5}), ("aloha", {"p": 0.02})):
            for bc in (False, True):
                if K == 256 and (bc or kw):
                    continue
                spec = SharedMediumSpec(radio, make_mac(mac, **kw))
                out.append((f"K={K} {mac} {kw} bc={bc}", g, rounds, spec, bc, 12_000))
        spec = SharedMediumSpec(replace(radio, latency_s=3e-5), make_mac("csma"))
        out.append((f"K={K} csma latency", g, rounds, spec, False, 12_000))
        spec = SharedMediumSpec(radio, make_mac("csma"))
        out.append((f"K={K} csma mtu16", g, max(1, rounds // 3), spec, False, 16))
    if phy == "ideal":
        return out
    g = mc.geometric_graph(60)
    loud = replace(radio, tx_power_dbm=10.0)  # carrier sense by power reaches further
    for name, spec_radio, mac in (
            ("sense circle", radio, make_mac("csma", sense_range_m=40.0)),
            ("loud", loud, make_mac("csma")),
            ("loud small cw", loud, make_mac("csma", cw_min=3, cw_max=7, retry_limit=3)),
            ("auto rate", replace(loud, data_rate="auto"), make_mac("csma")),
            ("threshold", replace(loud, reception="threshold"), make_mac("csma")),
            ("block coherence", replace(radio, coherence_time_s=0.05), make_mac("csma")),
            ("gauss-markov", replace(radio, coherence_time_s=0.05,
                                     fading_model="gauss-markov"), make_mac("csma"))):
        for bc in (False, True):
            out.append((f"K=60 csma {name} bc={bc}", g, 4, SharedMediumSpec(spec_radio, mac),
                        bc, 12_000))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="",
                        help="run only the cases whose name contains this text")
    parser.add_argument("--phy", default="ideal",
                        help="the PHY preset of every run (ideal, 80211b, 80211a, 80211g)")
    args = parser.parse_args()
    for name, g, rounds, spec, bc, mtu in cases(args.phy):
        if args.only in name:
            print(name, *fingerprint(g, rounds, spec, bc, mtu), flush=True)
    if args.phy != "ideal":
        for n, limit in ((5, 1000), (20, 1000), (50, 2)):
            name = f"saturated n={n} retry_limit={limit}"
            if args.only in name:
                print(name, *saturated_fingerprint(n, args.phy, limit), flush=True)


if __name__ == "__main__":
    main()
