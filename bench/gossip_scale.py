"""Benchmark: synchronous gossip on a torus (4 neighbours) from K = 16 to K = 4096.

For each K: the set-up (the graph, Metropolis-Hastings weights as a sparse matrix, the
network's nodes and links; no spectral gap) and the marginal cost of one message,
``(t(R2 rounds) - t(R1 rounds)) / ((R2 - R1) · 4K)`` with the consensus protocol and
:class:`bflnet.learners.gossip.averaging.ConsensusAveraging` (one float64 per node) over 1 Mbit/s,
5 ms links. Targets: a message at most 2 × a random-walk hop (measured here
the same way, K = 100, 4-regular graph, a token of one float), flat within ± 25 % from
K = 16 to 4096; set-up at most 1 s at K = 4096. Prints one line per K and the ratios.

    python bench/gossip_scale.py [--sizes 16 64 256 1024 4096] [--rounds 3 13]
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

from bflnet.channels import FixedRateChannel
from bflnet.learners import GlobalStateLearner, Update
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import Simulation, Work

CHANNEL = FixedRateChannel(rate_bps=1e6, latency_s=0.005)


class Token(GlobalStateLearner):
    """One float of state, no maths (the random-walk reference)."""

    uses_agent_streams = False

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state, rng):
        return Update(state, Work(steps=1), agent)

    def merge(self, state, updates):
        return state


def gossip_time(K: int, rounds: int) -> tuple[float, float]:
    """(set-up seconds, seconds of ``rounds`` rounds) on a torus of K nodes."""
    start = time.perf_counter()
    graph = make_graph("torus", K, np.random.default_rng(0))
    weights = metropolis_hastings_weights(graph, sparse=True)
    sim = Simulation(0)
    sim.build_network(graph, channel=CHANNEL)
    protocol = ConsensusProtocol(ConsensusAveraging(), weights,
                                 StopRule(max_iterations=rounds), eval_every=10**9)
    setup = time.perf_counter() - start
    start = time.perf_counter()
    sim.run(protocol)
    return setup, time.perf_counter() - start


def hop_cost(hops: tuple[int, int]) -> float:
    """Seconds per random-walk hop, K = 100, random 4-regular graph."""
    graph = nx.random_regular_graph(4, 100, seed=0)
    walk = MetropolisHastingsWalk(graph)
    times = []
    for n in hops:
        sim = Simulation(0)
        sim.build_network(graph, channel=CHANNEL)
        start = time.perf_counter()
        sim.run(RandomWalkProtocol(Token(), walk, StopRule(max_iterations=n), eval_every=10**9))
        times.append(time.perf_counter() - start)
    return (times[1] - times[0]) / (hops[1] - hops[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256, 1024, 4096])
    parser.add_argument("--rounds", type=int, nargs=2, default=[3, 13])
    args = parser.parse_args()
    r1, r2 = args.rounds
    hop = hop_cost((2_000, 22_000))
    print(f"random-walk hop (K = 100): {1e6 * hop:.1f} µs")
    costs = {}
    for K in args.sizes:
        setup, t1 = gossip_time(K, r1)
        _, t2 = gossip_time(K, r2)
        per_message = (t2 - t1) / ((r2 - r1) * 4 * K)
        costs[K] = per_message
        print(f"K = {K:5d}: set-up {setup:6.2f} s (then {t1:5.2f} s for the protocol's start "
              f"and {r1} rounds); {1e6 * per_message:6.1f} µs per message = "
              f"{per_message / hop:.2f} x a hop (target <= 2)")
    spread = max(costs.values()) / min(costs.values())
    print(f"largest / smallest per-message cost over K: {spread:.2f} (flat: <= 1.25 / 0.75 "
          f"= 1.67)")


if __name__ == "__main__":
    main()
