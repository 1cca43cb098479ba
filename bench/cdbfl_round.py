"""Benchmark: one CD-BFL round against the same round's local forward and backward passes.

One synchronous round of :class:`bflnet.learners.langevin.cdbfl.CDBFL` through the consensus
protocol (K devices on a complete graph, Metropolis-Hastings weights, top-k keeping 1 %,
the simulator's links and records, no evaluation) on synthetic radar maps with the
LeNet-5 (``d = 1 419 146``), L local steps of a minibatch of B maps per device. The
reference is the learning alone: K·L calls of the model's log-likelihood gradient (a
forward and a backward pass) on minibatches of the same size, with nothing else. The
ratio round / reference is what compression, mixing, noise, minibatch sampling and
bookkeeping add (target: at most 1.3).

A round's time is the difference between runs of ``--rounds`` + 1 and 1 rounds, divided by
``--rounds`` (so set-up and the first round's allocations are left out); the reference
is timed in the same repeat, and the printed ratio is the median of the per-repeat ratios.

    python bench/cdbfl_round.py [--K 10] [--local-steps 8] [--batch 10] [--rounds 2]
                                [--repeat 3] [--threads 1] [--model lenet|lenet-2.7m]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from bflnet.data.radar import MAP_SHAPE, radar_maps
from bflnet.learners.hyper import CDBFLParams
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.learners.models.lenet import BayesianLeNet
from bflnet.protocols.coding.codecs import TopKCodec
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Simulation


def setup(args: argparse.Namespace) -> tuple[BayesianLeNet, dict[int, tuple]]:
    rng = np.random.default_rng(0)
    x, y = radar_maps(args.K * args.per_node, rng)
    x = x.reshape(len(y), -1)
    nodes = {k: (x[k * args.per_node:(k + 1) * args.per_node],
                 y[k * args.per_node:(k + 1) * args.per_node]) for k in range(args.K)}
    model = (BayesianLeNet.cdbfl(*MAP_SHAPE) if args.model == "lenet-2.7m"
             else BayesianLeNet(*MAP_SHAPE))
    return model, nodes


def time_rounds(model: BayesianLeNet, nodes: dict, args: argparse.Namespace, rounds: int
                ) -> float:
    """Wall seconds of a whole simulation of ``rounds`` rounds (set-up included)."""
    params = CDBFLParams(local_steps=args.local_steps, batch_size=args.batch, burn_in=10**6)
    learner = CDBFL(model, nodes, params)
    graph = make_graph("complete", args.K, np.random.default_rng(0))
    k = max(1, round(0.01 * model.d))
    start = time.perf_counter()
    sim = Simulation(1, name="bench")
    sim.build_network(graph)
    sim.run(ConsensusProtocol(learner, metropolis_hastings_weights(graph, sparse=True),
                              StopRule(max_iterations=rounds),
                              codec=TopKCodec(k=k, value_bits=32), eval_every=10**6))
    return time.perf_counter() - start


def time_learning(model: BayesianLeNet, nodes: dict, args: argparse.Namespace) -> float:
    """Wall seconds of K·L log-likelihood gradients (forward + backward) on B maps."""
    gen = torch.Generator().manual_seed(0)
    theta = model.init_particles(1, gen)
    batches = [(torch.as_tensor(x[:args.batch]), torch.as_tensor(y[:args.batch]))
               for x, y in nodes.values()]
    start = time.perf_counter()
    for xb, yb in batches:
        for _ in range(args.local_steps):
            model.log_likelihood_grad(theta, xb, yb)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--per-node", type=int, default=50)
    parser.add_argument("--local-steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", choices=("lenet", "lenet-2.7m"), default="lenet")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, nodes = setup(args)
    print(f"CD-BFL round: K = {args.K}, {args.model} (d = {model.d:,}), L = {args.local_steps},"
          f" batch {args.batch}, top-1 %, {args.threads} thread(s)")
    time_learning(model, nodes, args)  # warm-up
    ratios, round_s, learn_s = [], [], []
    for _ in range(args.repeat):
        one = time_rounds(model, nodes, args, 1)
        many = time_rounds(model, nodes, args, args.rounds + 1)
        per_round = (many - one) / args.rounds
        learning = time_learning(model, nodes, args)
        round_s.append(per_round)
        learn_s.append(learning)
        ratios.append(per_round / learning)
    print(f"  one round:                    {statistics.median(round_s):7.3f} s")
    print(f"  its forward + backward alone: {statistics.median(learn_s):7.3f} s "
          f"({args.K * args.local_steps} gradients of {args.batch} maps)")
    print(f"  ratio {statistics.median(ratios):.2f} (target <= 1.3; per repeat: "
          f"{', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
