"""Benchmark: the cost of one transmission on the shared medium against independent links.

Synchronous gossip (consensus averaging, one float64 a message) on a random geometric
graph of constant density (radius 30 m, about 10 neighbours a node, the area grows with
K) for K = 16, 256, 1024. Both runs use Rayleigh block fading over the same distances:
``medium=links`` (each link its own channel, decided when handed over) and
``medium=shared`` (SINR at the end of each packet, half-duplex, under each MAC). The cost
of a transmission is the marginal wall-clock time of the rounds after the first (as many
as make about ``--messages`` messages, ten times as many for the cheap links; the
network's set-up is not timed) divided by the packets put on the air in them
(retransmissions included). With ``--phy`` an 802.11 preset (the default, ``80211b``) a
packet is a data frame exchange: the frame, and for a unicast its ACK after SIFS, DIFS
and the frozen back-off; the cost is per data frame exchange (its ACK included), the
target at most 10 × links; with ``--phy ideal`` (the medium without 802.11 timing) at
most 3 × links. Either way flat in K within ± 50 % (interference is summed over the
transmitters near a receiver, found with a k-d tree, not over all K).

A second part saturates ``n`` = 5 ... 50 stations in one collision domain (as in
scripts/dcf_saturation.py: each always has a 1023-byte frame for an access point 5 m
away, CSMA, no retry limit; 20 dBm, so that every station senses every other, with the
benchmark's Rayleigh fading and the preset's error model) and prints the cost per data
frame exchange against the same stations sending over independent links; the same
target, and flat in ``n``. Times are the process's CPU time (on a shared machine
wall-clock time counts the other processes' turns too), the least of ``--repeat``
measurements; the ratios are measured in the same process.

With ``--coherence-time S`` the shared medium is measured again with fading correlated
in time (``coherence_time_s=S``, ``--fading-model``), against the memoryless medium
(target: at most ``COHERENT`` times its cost).

    python bench/medium_cost.py [--sizes 16 256 1024] [--messages 20000]
                                [--mac none tdma csma aloha] [--repeat 2]
                                [--phy 80211b] [--stations 5 10 20 50]
                                [--coherence-time S [--fading-model block|gauss-markov]]

prints, per K and MAC, both costs, their ratio and whether the target is met, then the
flatness of each MAC's cost over K, then the saturated stations' costs.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import time
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from bflnet.channels import RayleighChannel
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.radio import MACS, LogDistance, RadioSpec, SharedMediumSpec, make_mac
from bflnet.radio.phy import PHYS
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

RADIUS_M, DEGREE = 30.0, 10.0
#: Shared at most this many times the links' cost (with an 802.11 preset, per data frame
#: exchange; ``ideal``: per packet), flat in K within this fraction.
TARGETS, FLAT = {"ideal": 3.0, "dcf": 10.0}, 0.5
#: The saturated stations' payload (bits).
PAYLOAD_BITS = 1023 * 8
#: With a coherence time, the shared medium at most this many times its memoryless cost.
COHERENT = 1.5
#: Mean SNR 10 dB at the graph's radius (the threshold is 0 dB: radio range 65 m, carrier
#: sense as far, interference counted up to 139 m).
RADIO = RadioSpec(tx_power_dbm=-12.7, bandwidth_hz=1e6, noise_figure_db=7.0,
                  coding_rate=1.0, sinr_threshold_db=0.0,
                  pathloss=LogDistance(3.0, 1.0, 40.0), fading="rayleigh")


def geometric_graph(K: int) -> nx.Graph:
    """K uniform points in a square sized for ``DEGREE`` neighbours within ``RADIUS_M``
    (drawn again until connected)."""
    side = math.sqrt(K * math.pi * RADIUS_M ** 2 / DEGREE)
    rng = np.random.default_rng(K)
    while True:
        xy = rng.uniform(0.0, side, size=(K, 2))
        pos = {k: (float(x), float(y)) for k, (x, y) in enumerate(xy)}
        graph = nx.random_geometric_graph(K, RADIUS_M, pos=pos)
        if nx.is_connected(graph):
            return graph


def radio(phy: str) -> RadioSpec:
    """The benchmark's radio under the PHY preset ``phy``."""
    return dataclasses.replace(RADIO, phy=phy)


def saturated_radio(phy: str) -> RadioSpec:
    """The saturated stations' radio: :func:`radio` at 20 dBm (as scripts/dcf_saturation.py),
    so that they are one collision domain: two stations 10 m apart hear each other at
    -50 dBm, 30 dB above any preset's preamble-detection threshold (at the benchmark's
    -12.7 dBm they would be -83 dBm, below it: hidden from each other)."""
    return dataclasses.replace(RADIO, phy=phy, tx_power_dbm=20.0)


def run(graph: nx.Graph, rounds: int, medium: SharedMediumSpec | None
        ) -> tuple[float, int, int]:
    """(CPU seconds, packets on the air, rows) of ``rounds`` rounds (the run alone, not
    the set-up); with a PHY preset the packets are the data frames (each one's exchange,
    its ACK included), not the ACKs."""
    sim = Simulation(0)
    mean_snr_at_1m = RADIO.mean_snr_db(1.0)
    template = RayleighChannel(1e6, mean_snr_at_1m, coding_rate=1.0)

    def channel(src, dst):
        a, b = graph.nodes[src]["pos"], graph.nodes[dst]["pos"]
        return template.with_distance(max(math.dist(a, b), 1e-3))

    net = sim.build_network(graph, channel=channel, medium=medium, mtu_bits=12_000)
    learner = ConsensusAveraging({k: float(k) for k in graph})
    start = time.process_time()
    sim.run(ConsensusProtocol(learner, "metropolis-hastings", StopRule(max_iterations=rounds),
                              eval_every=10**9))
    seconds = time.process_time() - start
    if net.air is not None:
        packets = net.air.medium.transmissions - net.air.medium.acks
    else:
        packets = 2 * graph.number_of_edges() * rounds  # one attempt a message here
    return seconds, packets, len(sim.recorder.rows)


def cost(graph: nx.Graph, medium: SharedMediumSpec | None, messages: int,
         repeat: int) -> tuple[float, float]:
    """CPU seconds and rows (the MAC's ``backoff``, ``defer`` and ``collision`` rows) per
    packet on the air of the rounds after the first (about ``messages`` messages); the
    least time of ``repeat`` measurements (the least disturbed by the load)."""
    r1 = 1
    r2 = r1 + max(1, math.ceil(messages / (2 * graph.number_of_edges())))
    best, rows = math.inf, 0.0
    for _ in range(repeat):
        t1, n1, w1 = run(graph, r1, medium)
        t2, n2, w2 = run(graph, r2, medium)
        best = min(best, (t2 - t1) / max(n2 - n1, 1))
        rows = (w2 - w1) / max(n2 - n1, 1)
    return best, rows


def saturated_network(n: int, medium: SharedMediumSpec | None, frames: int,
                      seed: int = 1) -> tuple[Simulation, Any, list[int]]:
    """``n`` saturated stations around an access point (node 0, each station 5 m away),
    each process sending 1023-byte frames to it until about ``frames`` frames were sent
    between them; ``(simulation, network, [frames sent])``, not run yet."""
    angle = 2 * np.pi * np.arange(n) / n
    g = nx.Graph()
    g.add_node(0, pos=(0.0, 0.0))
    g.add_nodes_from((k + 1, {"pos": (5 * math.cos(a), 5 * math.sin(a))})
                     for k, a in enumerate(angle))
    g.add_edges_from((0, k) for k in range(1, n + 1))
    sim = Simulation(seed)
    template = RayleighChannel(1e6, RADIO.mean_snr_db(1.0), coding_rate=1.0)
    net = sim.build_network(g, channel=lambda s, d: template.with_distance(5.0),
                            medium=medium, mtu_bits=PAYLOAD_BITS)
    sent = [0]

    def station(src: int):
        link = net.links[(src, 0)]
        while sent[0] < frames:
            d = yield from link.send(Message(src, 0, "x", None, PAYLOAD_BITS),
                                     deliver=False)
            sent[0] += d.attempts

    for k in range(1, n + 1):
        sim.env.process(station(k))
    return sim, net, sent


def saturated(n: int, medium: SharedMediumSpec | None, frames: int) -> tuple[float, int]:
    """(CPU seconds, data frames put on the air) of ``n`` saturated stations sending to
    an access point until about ``frames`` frames were sent (set-up not timed)."""
    sim, net, sent = saturated_network(n, medium, frames)
    start = time.process_time()
    sim.env.run()
    seconds = time.process_time() - start
    packets = net.air.medium.transmissions if net.air is not None else sent[0]
    if net.air is not None and medium is not None and medium.radio.phy != "ideal":
        packets = sent[0]  # data frames (the ACKs are part of their exchange)
    return seconds, packets


def saturated_cost(n: int, medium: SharedMediumSpec | None, frames: int,
                   repeat: int) -> float:
    """CPU seconds per data frame exchange of :func:`saturated`, marginal over a tenth of
    ``frames`` (the least of ``repeat``)."""
    best = math.inf
    for _ in range(repeat):
        t1, n1 = saturated(n, medium, max(frames // 10, n))
        t2, n2 = saturated(n, medium, frames)
        best = min(best, (t2 - t1) / max(n2 - n1, 1))
    return best


def flatness(what: str, costs: list[float]) -> bool:
    """Print how far ``costs`` spread around their mean; whether within ± ``FLAT``."""
    c = np.array(costs)
    mean = c.mean()
    flat = bool(c.max() <= (1 + FLAT) * mean and c.min() >= (1 - FLAT) * mean)
    print(f"{what} x{c.min() / mean:.2f} .. x{c.max() / mean:.2f} of the mean "
          f"{mean * 1e6:.1f} us (flat within +-{FLAT:.0%}: {'met' if flat else 'MISSED'})")
    return flat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 256, 1024])
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages in the measured rounds (sets their number per K)")
    parser.add_argument("--mac", nargs="+", default=list(MACS), choices=list(MACS))
    parser.add_argument("--repeat", type=int, default=2,
                        help="measurements of each cost (the least is kept)")
    parser.add_argument("--phy", default="80211b", choices=list(PHYS),
                        help="the shared medium's PHY preset (ideal: no 802.11 timing)")
    parser.add_argument("--stations", type=int, nargs="*", default=[5, 10, 20, 50],
                        help="saturated stations in one collision domain (none: skip)")
    parser.add_argument("--coherence-time", type=float, default=None, metavar="S",
                        help="also measure the medium with this coherence time (seconds)")
    parser.add_argument("--fading-model", default="block",
                        choices=["block", "gauss-markov"])
    args = parser.parse_args()
    TARGET = TARGETS["ideal" if args.phy == "ideal" else "dcf"]
    what = "packet" if args.phy == "ideal" else "data frame exchange (ACK included)"
    load0, wall0, cpu0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
    print(f"load average {load0:.2f} at the start; phy={args.phy}, cost per {what}; "
          f"target: shared <= {TARGET:g} x links, flat within +-{FLAT:.0%} of the mean")
    print(f"{'K':>5s} {'edges':>6s} {'mac':>5s} {'links us/tx':>11s} {'shared us/tx':>12s} "
          f"{'ratio':>6s} {'rows/tx':>7s}  target")
    shared: dict[str, list[float]] = {mac: [] for mac in args.mac}
    misses = 0
    for K in args.sizes:
        graph = geometric_graph(K)
        # links are cheap: ten times the messages for a measurable time
        links, _ = cost(graph, None, 10 * args.messages, args.repeat)
        for mac in args.mac:
            c, rows = cost(graph, SharedMediumSpec(radio(args.phy), make_mac(mac)),
                           args.messages, args.repeat)
            shared[mac].append(c)
            ratio = c / links
            met = ratio <= TARGET
            misses += not met
            print(f"{K:5d} {graph.number_of_edges():6d} {mac:>5s} {links * 1e6:11.1f} "
                  f"{c * 1e6:12.1f} {ratio:6.2f} {rows:7.1f}  "
                  f"<= {TARGET:g}: {'met' if met else 'MISSED'}",
                  flush=True)
            if args.coherence_time is not None:
                coherent = replace(radio(args.phy), coherence_time_s=args.coherence_time,
                                   fading_model=args.fading_model)
                coh, _ = cost(graph, SharedMediumSpec(coherent, make_mac(mac)), args.messages,
                              args.repeat)
                met = coh <= COHERENT * c
                misses += not met
                print(f"{'':19s} coherence_time_s={args.coherence_time:g} "
                      f"{args.fading_model}: {coh * 1e6:.1f} us/tx, x{coh / c:.2f} of "
                      f"memoryless (<= {COHERENT:g}: {'met' if met else 'MISSED'})",
                      flush=True)
    for mac, costs in shared.items():
        if len(costs) > 1:
            misses += not flatness(f"{mac:>5s}: shared cost over K", costs)
    if args.stations:
        print(f"saturated stations (CSMA, {PAYLOAD_BITS // 8}-byte frames to an access "
              f"point): cost per {what}")
        frames = max(args.messages // 10, 200)
        costs = []
        for n in args.stations:
            links = saturated_cost(n, None, 10 * frames, args.repeat)
            medium = SharedMediumSpec(saturated_radio(args.phy),
                                      make_mac("csma", retry_limit=1000))
            c = saturated_cost(n, medium, frames, args.repeat)
            costs.append(c)
            met = c / links <= TARGET
            misses += not met
            print(f"n={n:3d} links {links * 1e6:8.1f} us  shared {c * 1e6:8.1f} us  ratio "
                  f"{c / links:6.2f}  <= {TARGET:g}: {'met' if met else 'MISSED'}",
                  flush=True)
        if len(costs) > 1:
            misses += not flatness("saturated: cost over n", costs)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    print(f"load average {os.getloadavg()[0]:.2f} at the end; {wall:.0f} s wall for "
          f"{cpu:.0f} s of CPU; {misses} target(s) missed")


if __name__ == "__main__":
    main()
