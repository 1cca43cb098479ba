"""Fingerprints of every row of 42 shared-medium runs, to compare two versions' rows.

Each run is synchronous gossip (consensus averaging) on the random geometric graphs of
``bench/medium_cost.py`` (K = 16, 60, 256) with ``record_messages`` on (a ``tx`` row per
packet), under every MAC and some of their settings (CSMA windows 1-4 and 2-8 with a
retry limit of 2, ALOHA p = 0.02, 0.1 and 0.5), unicast and broadcast, a latency and a
16-bit MTU. Each line is ``case sha256-of-the-rows rows packets``; run it on two versions
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
    h = hashlib.sha256()
    for row in sim.recorder.rows:
        h.update(repr(sorted(row.items(), key=lambda kv: kv[0])).encode())
    return h.hexdigest()[:16], len(sim.recorder.rows), net.air.medium.transmissions


def cases() -> list[tuple[str, nx.Graph, int, SharedMediumSpec, bool, int]]:
    """``(name, graph, rounds, medium, broadcast, mtu_bits)`` of the 42 runs."""
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
                spec = SharedMediumSpec(mc.RADIO, make_mac(mac, **kw))
                out.append((f"K={K} {mac} {kw} bc={bc}", g, rounds, spec, bc, 12_000))
        spec = SharedMediumSpec(replace(mc.RADIO, latency_s=3e-5), make_mac("csma"))
        out.append((f"K={K} csma latency", g, rounds, spec, False, 12_000))
        spec = SharedMediumSpec(mc.RADIO, make_mac("csma"))
        out.append((f"K={K} csma mtu16", g, max(1, rounds // 3), spec, False, 16))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="",
                        help="run only the cases whose name contains this text")
    args = parser.parse_args()
    for name, g, rounds, spec, bc, mtu in cases():
        if args.only in name:
            print(name, *fingerprint(g, rounds, spec, bc, mtu), flush=True)


if __name__ == "__main__":
    main()
