"""Benchmark: a FedAvg round through the parameter server against a plain torch loop.

K = 10 agents × 6000 Fashion-MNIST training images (random values of that shape where the
files are absent; the dense arithmetic does not depend on them), the letter's 784-100-10 MLP,
60 SGD steps of 100 examples per agent, every agent every round, an ideal network, no
evaluation. Three timings in the same run, each the median over ``--repeat`` repeats:

* **batched** (the default, ``batch_agents=True``): the ten agents' models are one stack
  in the layout of the hand-written SGD step (``MLPSGDStack``: W1 stored transposed for
  the update, no autograd, no gradient buffer, the W1 update written by its product), run
  one agent at a time on CPU (its weights stay in cache), the minibatch indices of all
  steps drawn when the update starts;
* **sequential** (``batch_agents=False``): one autograd ``local_update`` per agent;
* **plain loop**: ``torch.nn`` (Linear-ReLU-Linear), ``cross_entropy``, ``torch.optim.SGD``,
  ``randperm`` minibatches, the ten agents one after the other, the mean of their weights
  at the end: the same arithmetic with nothing of bflnet.

A protocol round's time is the difference between runs of ``--rounds`` + 1 and 1 rounds,
divided by ``--rounds`` (set-up and the first round's allocations left out); the three are
interleaved within each repeat. With one thread the clock is the thread's CPU time (on a
shared machine the time spent waiting for a core is not counted), with more the wall
clock. The target: batched ≤ 0.6 × the plain loop.

:func:`measure` returns the medians as a dict (for other scripts).

    python bench/fedavg_round.py [--rounds 2] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import networkx as nx
import torch

from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.hyper import FedAvgParams
from bflnet.learners.models.classifiers import BayesianMLP
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Simulation

K, N_K, N_IN, HIDDEN, CLASSES, STEPS, BATCH, LR = 10, 6000, 784, 100, 10, 60, 100, 0.1


def agent_data(seed: int = 0) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """The first K × 6000 Fashion-MNIST training images, 6000 per agent, where the files are
    found; else random values of that shape (:data:`SOURCE` says which)."""
    global SOURCE
    from bflnet.data.vision import DatasetNotFoundError, load_fashion_mnist

    try:
        x, y = load_fashion_mnist(split="train")
        SOURCE = "Fashion-MNIST"
        return {k: (torch.from_numpy(x[k * N_K:(k + 1) * N_K]).clone(),
                    torch.from_numpy(y[k * N_K:(k + 1) * N_K]).clone()) for k in range(K)}
    except DatasetNotFoundError:  # a synthetic set of the same shape
        gen = torch.Generator().manual_seed(seed)
        SOURCE = "random values of Fashion-MNIST's shape"
        return {k: (torch.rand(N_K, N_IN, generator=gen),
                    torch.randint(CLASSES, (N_K,), generator=gen)) for k in range(K)}


SOURCE = "not loaded"
#: The clock: the calling thread's CPU time with one thread (robust on a shared machine:
#: waiting for a core is not counted), the wall clock with more.
CLOCK = time.thread_time


def protocol_seconds(data: dict, rounds: int, batched: bool) -> float:
    """Seconds (:data:`CLOCK`) of a whole parameter-server run of ``rounds`` rounds."""
    params = FedAvgParams(local_steps=STEPS, lr=LR, batch_size=BATCH, batch_agents=batched)
    learner = FedAvg(BayesianMLP(N_IN, HIDDEN, CLASSES), data, params)
    start = CLOCK()
    sim = Simulation(0, name="bench")
    sim.build_network(nx.empty_graph(K), server=True)
    sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=rounds),
                                    selector=AllAgents()))
    return CLOCK() - start


def plain_round(data: dict, gen: torch.Generator) -> float:
    """Seconds (:data:`CLOCK`) of one round of the plain torch loop."""
    net = torch.nn.Sequential(torch.nn.Linear(N_IN, HIDDEN), torch.nn.ReLU(),
                              torch.nn.Linear(HIDDEN, CLASSES))
    start = CLOCK()
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
    return CLOCK() - start


def measure(rounds: int = 2, repeat: int = 3, threads: int = 1) -> dict[str, float]:
    """Median seconds per round of the plain loop, the sequential and the batched path,
    and the batched / plain and sequential / plain ratios (median over the repeats)."""
    global CLOCK
    torch.set_num_threads(threads)
    CLOCK = time.thread_time if threads == 1 else time.perf_counter
    data = agent_data()
    gen = torch.Generator().manual_seed(1)
    plain_round(data, gen)  # warm-ups: a steady round leaves out first-call costs
    protocol_seconds(data, 1, True)
    protocol_seconds(data, 1, False)
    seq, bat, plain = [], [], []
    for _ in range(repeat):
        bat.append((protocol_seconds(data, rounds + 1, True)
                    - protocol_seconds(data, 1, True)) / rounds)
        plain.append(statistics.median(plain_round(data, gen) for _ in range(rounds)))
        seq.append((protocol_seconds(data, rounds + 1, False)
                    - protocol_seconds(data, 1, False)) / rounds)
    return {"plain_s": statistics.median(plain), "sequential_s": statistics.median(seq),
            "batched_s": statistics.median(bat),
            "batched_ratio": statistics.median(b / p for b, p in zip(bat, plain, strict=True)),
            "sequential_ratio": statistics.median(s / p for s, p in zip(seq, plain,
                                                                        strict=True)),
            "batched_ratios": [b / p for b, p in zip(bat, plain, strict=True)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1 or args.repeat < 1 or args.threads < 1:
        parser.error("--rounds, --repeat and --threads must be >= 1")
    r = measure(args.rounds, args.repeat, args.threads)
    print(f"FedAvg round: K = {K} x {N_K} examples ({SOURCE}), {N_IN}-{HIDDEN}-{CLASSES}, "
          f"{STEPS} SGD steps of {BATCH} per agent, {args.threads} thread(s), median of "
          f"{args.repeat}")
    print(f"  plain torch loop:                    {r['plain_s']:.3f} s")
    print(f"  bflnet, sequential (batch_agents=False): {r['sequential_s']:.3f} s  "
          f"({r['sequential_ratio']:.2f} x plain)")
    print(f"  bflnet, batched (the default):       {r['batched_s']:.3f} s  "
          f"({r['batched_ratio']:.2f} x plain; target <= 0.6; per repeat: "
          + ", ".join(f"{x:.2f}" for x in r["batched_ratios"]) + ")")


if __name__ == "__main__":
    main()
