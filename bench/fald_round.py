"""Benchmark: the devices' local steps of one ota-langevin round (TorchFALD), batched
devices against one device after the other, in the same process.

The scenario's defaults: K = 10 devices × 300 Fashion-MNIST training images (random
values of that shape where the files are absent; the arithmetic does not depend on them),
the 784-100-10 Bayesian MLP, 2 local Langevin steps on minibatches of 50, step 1e-4.
Two timings of ``TorchFALD.local_updates`` (every device's change from the same sample),
interleaved within each repeat, each the median over ``--rounds`` calls:

* **batched** (the default, ``batch_agents=True``): the ten devices as one stack, per step
  one fused forward, backward and update (``BayesianMLP.sgd_step``) and one addition of
  every device's noise;
* **one by one** (``batch_agents=False``): each device's steps in turn.

With one thread the clock is the thread's CPU time (on a shared machine the time spent
waiting for a core is not counted), with more the wall clock. Prints the medians and the
batched / one-by-one ratio of each repeat.

    python bench/fald_round.py [--rounds 20] [--repeat 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from bflnet.learners.langevin.fald_torch import TorchFALD
from bflnet.learners.models.classifiers import BayesianMLP

K, POINTS, HIDDEN, BATCH, STEPS, ETA = 10, 300, 100, 50, 2, 1e-4


def device_data() -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], str]:
    """The first K × 300 Fashion-MNIST training images, or random values of that shape,
    and which."""
    from bflnet.data.vision import DatasetNotFoundError, load_fashion_mnist

    try:
        x, y = load_fashion_mnist(split="train")
        source = "Fashion-MNIST"
    except DatasetNotFoundError:
        rng = np.random.default_rng(0)
        x = rng.random((K * POINTS, 784), dtype=np.float32)
        y = rng.integers(0, 10, K * POINTS)
        source = "random values of Fashion-MNIST's shape"
    return {k: (x[k * POINTS:(k + 1) * POINTS], y[k * POINTS:(k + 1) * POINTS])
            for k in range(K)}, source


def median_seconds(learner: TorchFALD, theta: np.ndarray, calls: int, clock) -> float:
    """Median seconds of ``calls`` calls of ``local_updates`` (fresh streams each)."""
    times = []
    for i in range(calls):
        rngs = [np.random.default_rng([i, k]) for k in range(K)]
        start = clock()
        learner.local_updates(theta, rngs)
        times.append(clock() - start)
    return statistics.median(times)


def measure(rounds: int = 20, repeat: int = 5, threads: int = 1) -> dict:
    """Median seconds of both paths and the batched / one-by-one ratio of each repeat."""
    torch.set_num_threads(threads)
    clock = time.thread_time if threads == 1 else time.perf_counter
    data, source = device_data()
    model = BayesianMLP(784, HIDDEN, 10, prior_var=1.0)
    batched = TorchFALD(model, data, step_size=ETA, local_steps=STEPS, batch_size=BATCH)
    looped = TorchFALD(model, data, step_size=ETA, local_steps=STEPS, batch_size=BATCH,
                       batch_agents=False)
    theta = batched.init(np.random.default_rng(0), (model.d,))
    for learner in (batched, looped):  # warm-up
        median_seconds(learner, theta, 2, clock)
    new, old = [], []
    for _ in range(repeat):
        new.append(median_seconds(batched, theta, rounds, clock))
        old.append(median_seconds(looped, theta, rounds, clock))
    return {"source": source, "batched_s": statistics.median(new),
            "one_by_one_s": statistics.median(old),
            "ratios": [a / b for a, b in zip(new, old, strict=True)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1 or args.repeat < 1 or args.threads < 1:
        parser.error("--rounds, --repeat and --threads must be >= 1")
    r = measure(args.rounds, args.repeat, args.threads)
    ratios = r["ratios"]
    print(f"TorchFALD local steps of a round: K = {K} x {POINTS} images ({r['source']}), "
          f"784-{HIDDEN}-10, {STEPS} steps of {BATCH}, {args.threads} thread(s), median "
          f"of {args.rounds} calls, {args.repeat} repeats")
    print(f"  one by one (batch_agents=False): {r['one_by_one_s'] * 1e3:.1f} ms")
    print(f"  batched (the default):           {r['batched_s'] * 1e3:.1f} ms  "
          f"({statistics.median(ratios):.2f} x one by one; per repeat: "
          + ", ".join(f"{x:.2f}" for x in ratios) + ")")


if __name__ == "__main__":
    main()
