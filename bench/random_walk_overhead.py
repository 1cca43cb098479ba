"""Benchmark: the simulator's overhead over raw SimPy for a random walk.

Runs the random-walk protocol with a trivial learner (K = 100, 10^5 hops, a fixed-rate
link) next to a bare SimPy loop that makes the same walk decisions and the same
compute and message timeouts, and prints the ratio of wall-clock times (target <= 1.3).

    python bench/random_walk_overhead.py [--hops N] [--K K] [--repeat R]
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np
import simpy

from bflnet.channels import FixedRateChannel
from bflnet.learners import GlobalStateLearner, Update
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import FixedStepTime, Simulation, Work

RATE, LATENCY, COMPUTE, STATE_BITS = 1e6, 0.005, 0.001, 64
ONE_STEP = Work(steps=1)


class Trivial(GlobalStateLearner):
    """One float of state, no maths: isolates the simulator's own cost."""

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state, rng):
        return Update(state, ONE_STEP, agent)

    def merge(self, state, updates):
        return state


def run_bflnet(graph: nx.Graph, hops: int, seed: int) -> float:
    sim = Simulation(seed)
    sim.build_network(graph, channel=FixedRateChannel(RATE, LATENCY),
                      compute=FixedStepTime(COMPUTE))
    protocol = RandomWalkProtocol(Trivial(), MetropolisHastingsWalk(graph),
                                  StopRule(max_iterations=hops))
    start = time.perf_counter()
    sim.run(protocol)
    return time.perf_counter() - start


def run_bare_simpy(graph: nx.Graph, hops: int, seed: int) -> float:
    walk = MetropolisHastingsWalk(graph)
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    hop_time = LATENCY + STATE_BITS / RATE

    def walker():
        current = walk.first_node(rng)
        for _ in range(hops):
            yield env.timeout(COMPUTE)
            nxt = walk.next_node(current, rng)
            if nxt != current:
                yield env.timeout(hop_time)
            current = nxt

    start = time.perf_counter()
    env.process(walker())
    env.run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=100_000)
    parser.add_argument("--K", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    graph = nx.random_regular_graph(4, args.K, seed=1)
    bare = min(run_bare_simpy(graph, args.hops, s) for s in range(args.repeat))
    ours = min(run_bflnet(graph, args.hops, s) for s in range(args.repeat))
    print(f"bare SimPy : {bare:.3f} s for {args.hops} hops, K = {args.K}")
    print(f"bflnet     : {ours:.3f} s")
    print(f"ratio      : {ours / bare:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
