"""Benchmark: the CD-BFL paper's Fig. 4 jobs (``scripts/reproduce_cdbfl.py``), projected from
their parts: one round of each method and one evaluation sweep, at the paper's settings.

Each method (CD-BFL, DSGLD, CF-FL) runs through the consensus protocol as the scenario
``cdbfl-shift`` runs it: the ≈ 2.7 M-parameter LeNet, K = 10 devices of 50 synthetic
radar maps on a complete graph, Metropolis-Hastings weights, L = 8 local steps of 10 maps
(DSGLD: one step), top-1 % for CD-BFL and CF-FL (DSGLD: float32 samples). A round is the
difference between simulations of ``--rounds`` + 1 and 1 rounds (no evaluation), divided
by ``--rounds``. A sweep is what one evaluation of the network costs: the K devices'
predictive probabilities on the scenario's 500 test maps (200 day-0, 100 critical day-0,
200 critical shifted).

A job of T = 800 rounds with ``eval_every`` 50, burn-in 700 and thin 5 makes 800 rounds
and 35 sweeps (CD-BFL, DSGLD: 15 evaluations before the first kept sample, then 20 kept
samples) or 17 (CF-FL: 17 evaluations of its current model); the nine jobs (3 seeds) are
packed longest first on ``--workers`` one-thread workers.

    python bench/cdbfl_paper_jobs.py [--rounds 1] [--repeat 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import time
from typing import Any

import numpy as np
import torch

from bflnet.data.radar import MAP_SHAPE, radar_maps
from bflnet.learners.cdbfl import CDBFL
from bflnet.learners.cffl import CFFL
from bflnet.learners.dsgld import DSGLD
from bflnet.learners.hyper import CDBFLParams, LangevinParams
from bflnet.learners.langevin import predictive_probs
from bflnet.learners.lenet import BayesianLeNet
from bflnet.protocols.codecs import RawCodec, TopKCodec
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.mixing import metropolis_hastings_weights
from bflnet.protocols.stopping import StopRule
from bflnet.protocols.topologies import make_graph
from bflnet.simulator.simulation import Simulation

K, PER_NODE, T, EVAL_MAPS = 10, 50, 800, 500
SWEEPS = {"cd-bfl": 35, "dsgld": 35, "cf-fl": 17}


def learner(method: str, model: BayesianLeNet, nodes: dict) -> tuple[Any, Any]:
    """The method's learner (no kept samples in the timed rounds) and codec."""
    if method == "dsgld":
        return DSGLD(model, nodes, LangevinParams(batch_size=10, burn_in=10**6)), RawCodec(32)
    params = CDBFLParams(local_steps=8, batch_size=10, burn_in=10**6)
    cls = CDBFL if method == "cd-bfl" else CFFL
    return cls(model, nodes, params), TopKCodec(k=max(1, round(0.01 * model.d)), value_bits=32)


def time_rounds(method: str, model: BayesianLeNet, nodes: dict, rounds: int) -> float:
    """Wall seconds of a simulation of ``rounds`` rounds (set-up included)."""
    lrn, codec = learner(method, model, nodes)
    graph = make_graph("complete", K, np.random.default_rng(0))
    start = time.perf_counter()
    sim = Simulation(1, name="bench")
    sim.build_network(graph)
    sim.run(ConsensusProtocol(lrn, metropolis_hastings_weights(graph, sparse=True),
                              StopRule(max_iterations=rounds), codec=codec, eval_every=10**6))
    return time.perf_counter() - start


def time_sweep(model: BayesianLeNet, x: torch.Tensor) -> float:
    """Wall seconds of K devices' predictive probabilities on ``x``."""
    thetas = model.init_particles(K, torch.Generator().manual_seed(1))
    start = time.perf_counter()
    for k in range(K):
        predictive_probs(model, thetas[k:k + 1], x)
    return time.perf_counter() - start


def makespan(jobs: list[float], workers: int) -> float:
    """Longest-first packing of ``jobs`` on ``workers``."""
    loads = [0.0] * workers
    for job in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + job)
    return max(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--methods", default="cd-bfl,dsgld,cf-fl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x, y = radar_maps(K * PER_NODE + EVAL_MAPS, rng)
    x = x.reshape(len(y), -1)
    nodes = {k: (x[k * PER_NODE:(k + 1) * PER_NODE], y[k * PER_NODE:(k + 1) * PER_NODE])
             for k in range(K)}
    test = torch.as_tensor(x[K * PER_NODE:], dtype=torch.float32)
    model = BayesianLeNet.cdbfl(*MAP_SHAPE)
    print(f"CD-BFL Fig. 4 jobs: LeNet d = {model.d:,}, K = {K}, T = {T}, 1 thread per worker")
    sweep = statistics.median(time_sweep(model, test) for _ in range(args.repeat))
    print(f"  evaluation sweep ({K} devices x {EVAL_MAPS} maps): {sweep:7.2f} s")
    jobs = []
    for method in args.methods.split(","):
        per_round = []
        for _ in range(args.repeat):
            one = time_rounds(method, model, nodes, 1)
            many = time_rounds(method, model, nodes, args.rounds + 1)
            per_round.append((many - one) / args.rounds)
        r = statistics.median(per_round)
        job = T * r + SWEEPS[method] * sweep
        jobs += [job] * 3
        print(f"  {method:6s}: round {r:6.2f} s; job {T} x {r:.2f} + {SWEEPS[method]} sweeps "
              f"= {job / 60:5.1f} min")
    print(f"  nine jobs: {sum(jobs) / 3600:.2f} h of compute; on {args.workers} one-thread "
          f"workers {makespan(jobs, args.workers) / 3600:.2f} h (target <= 2 h)")


if __name__ == "__main__":
    main()
