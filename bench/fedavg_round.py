"""Benchmark: a FedAvg round through the parameter server against a plain torch loop.

The shape: K = 10 agents × 6000 examples of 784 features (Fashion-MNIST's shape;
the values are random, the timing does not depend on them), the letter's 784-100-10 MLP,
60 SGD steps of 100 examples per agent, every agent every round, an ideal network, no
evaluation. Three timings in the same run, each the median over ``--repeat`` repeats:

* **sequential**: :class:`bflnet.learners.fedavg.FedAvg` under
  :class:`bflnet.protocols.parameter_server.ParameterServerProtocol`, one
  ``local_update`` per agent (autograd, the documented reproductions' path);
* **batched**: the same with ``batch_agents=True``: the ten agents' models are one stack
  and each step is one batched forward and backward (the model's hand-written gradient);
* **plain loop**: ``torch.nn`` (Linear-ReLU-Linear), ``cross_entropy``, ``torch.optim.SGD``,
  ``randperm`` minibatches, the ten agents one after the other, the mean of their weights
  at the end: the same arithmetic with nothing of bflnet.

A protocol round's time is the difference between runs of ``--rounds`` + 1 and 1 rounds,
divided by ``--rounds`` (set-up and the first round's allocations left out). The target:
batched ≤ 0.6 × the plain loop.

    python bench/fedavg_round.py [--rounds 2] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import networkx as nx
import torch

from bflnet.learners.fedavg import FedAvg
from bflnet.learners.hyper import FedAvgParams
from bflnet.learners.models import BayesianMLP
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Simulation

K, N_K, N_IN, HIDDEN, CLASSES, STEPS, BATCH, LR = 10, 6000, 784, 100, 10, 60, 100, 0.1


def agent_data(seed: int = 0) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return {k: (torch.rand(N_K, N_IN, generator=gen),
                torch.randint(CLASSES, (N_K,), generator=gen)) for k in range(K)}


def protocol_seconds(data: dict, rounds: int, batched: bool) -> float:
    """Wall seconds of a whole parameter-server run of ``rounds`` rounds."""
    params = FedAvgParams(local_steps=STEPS, lr=LR, batch_size=BATCH, batch_agents=batched)
    learner = FedAvg(BayesianMLP(N_IN, HIDDEN, CLASSES), data, params)
    start = time.perf_counter()
    sim = Simulation(0, name="bench")
    sim.build_network(nx.empty_graph(K), server=True)
    sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=rounds),
                                    selector=AllAgents()))
    return time.perf_counter() - start


def plain_round(data: dict, gen: torch.Generator) -> float:
    """Wall seconds of one round of the plain torch loop."""
    net = torch.nn.Sequential(torch.nn.Linear(N_IN, HIDDEN), torch.nn.ReLU(),
                              torch.nn.Linear(HIDDEN, CLASSES))
    start = time.perf_counter()
    global_state = [p.detach().clone() for p in net.parameters()]
    total = [torch.zeros_like(p) for p in global_state]
    for k in range(K):
        x, y = data[k]
        with torch.no_grad():
            for p, g in zip(net.parameters(), global_state, strict=True):
                p.copy_(g)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        for _ in range(STEPS):
            idx = torch.randperm(N_K, generator=gen)[:BATCH]
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        for t, p in zip(total, net.parameters(), strict=True):
            t.add_(p.detach())
    for t in total:
        t.div_(K)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1 or args.repeat < 1 or args.threads < 1:
        parser.error("--rounds, --repeat and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    data = agent_data()
    gen = torch.Generator().manual_seed(1)
    plain_round(data, gen)  # warm-up
    seq, bat, plain = [], [], []
    for _ in range(args.repeat):
        seq.append((protocol_seconds(data, args.rounds + 1, False)
                    - protocol_seconds(data, 1, False)) / args.rounds)
        bat.append((protocol_seconds(data, args.rounds + 1, True)
                    - protocol_seconds(data, 1, True)) / args.rounds)
        plain.append(statistics.median(plain_round(data, gen) for _ in range(args.rounds)))
    ratios = [b / p for b, p in zip(bat, plain, strict=True)]
    print(f"FedAvg round: K = {K} x {N_K} examples, {N_IN}-{HIDDEN}-{CLASSES}, {STEPS} SGD "
          f"steps of {BATCH} per agent, {args.threads} thread(s), median of {args.repeat}")
    print(f"  plain torch loop:               {statistics.median(plain):.3f} s")
    print(f"  bflnet, sequential agents:      {statistics.median(seq):.3f} s  "
          f"({statistics.median(s / p for s, p in zip(seq, plain, strict=True)):.2f} x plain)")
    print(f"  bflnet, batched agents:         {statistics.median(bat):.3f} s  "
          f"({statistics.median(ratios):.2f} x plain; target <= 0.6; per repeat: "
          + ", ".join(f"{r:.2f}" for r in ratios) + ")")


if __name__ == "__main__":
    main()
