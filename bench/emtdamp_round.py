"""Benchmark: one EM-TDAMP round at MNIST's shape, clients one by one against batched.

784-128-10, probit-product likelihood, batch 100, ``τ_max = 10``, the default 5 DAMP
sweeps per minibatch, ``K = 10`` clients of ``--points`` synthetic images each (MNIST's
shape: pixels in [0, 1], about 19 % non-zero like MNIST's, centred by their mean; the
work per minibatch does not depend on the pixel values). One round = every client's
``local_update`` (or one ``local_update_batch``) from the same prior, plus the server's
merge. Modes, timed alternately in the same process (``--repeat`` rounds each after a
warm-up round):

* ``one-by-one``: ``batch_agents=False``, float64 (each client's TDAMP alone);
* ``batched``: the default, float64 (the clients' passes as one batch, bit for bit the
  same updates);
* ``batched-f32``: ``dtype=float32``.

The per-round time is linear in the images per client (minibatches × sweeps), so the
60 000-image round (``--points 6000``) is projected from a smaller ``--points`` as
``t × 6000 / points``; ``--points 6000`` measures it.

    python bench/emtdamp_round.py [--points 600] [--repeat 3] [--threads 1]
        [--modes one-by-one,batched,batched-f32]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.hyper import EMTDAMPParams

SIZES = (784, 128, 10)
MODES = {"one-by-one": {"batch_agents": False}, "batched": {},
         "batched-f32": {"dtype": "float32"}}
FULL = 60_000


def mnist_shaped(clients: int, points: int, seed: int = 0) -> dict[int, tuple]:
    """``clients`` shards of ``points`` synthetic 28 × 28 images and labels, centred."""
    rng = np.random.default_rng(seed)
    images = rng.random((clients * points, 784)) * (rng.random((clients * points, 784)) < 0.19)
    images -= images.mean(0)
    labels = rng.integers(0, 10, clients * points)
    return {k: (images[k * points:(k + 1) * points], labels[k * points:(k + 1) * points])
            for k in range(clients)}


def make_round(mode: str, data: dict[int, tuple], tau_max: int):
    """A function running one round of ``mode`` (all clients and the merge)."""
    # (batch_agents is absent from code older than the batched clients: one by one there)
    extra = {k: v for k, v in MODES[mode].items()
             if k != "batch_agents" or k in EMTDAMPParams.__dataclass_fields__}
    params = EMTDAMPParams(likelihood="probit", batch_size=100, tau_max=tau_max, **extra)
    learner = EMTDAMP(SIZES, data, params)
    state = learner.init(np.random.default_rng(1))
    agents = list(data)

    def one_round() -> None:
        rngs = [np.random.default_rng(10 + a) for a in agents]
        if getattr(learner, "batches_agents", False):
            updates = learner.local_update_batch(agents, state, [None] * len(agents), rngs)
        else:
            updates = [learner.local_update(a, state, None, r)
                       for a, r in zip(agents, rngs, strict=True)]
        learner.merge(state, updates)

    return one_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=600, help="images per client")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tau-max", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    modes = args.modes.split(",")
    data = mnist_shaped(args.clients, args.points)
    rounds = {mode: make_round(mode, data, args.tau_max) for mode in modes}
    for fn in rounds.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.repeat):
        for mode, fn in rounds.items():
            start = time.perf_counter()
            fn()
            times[mode].append(time.perf_counter() - start)
    scale = FULL / (args.clients * args.points)
    images = args.clients * args.points
    print(f"K = {args.clients} x {args.points} images, tau_max = {args.tau_max}, "
          f"{args.threads} thread(s); seconds per round (each repeat), and x{scale:g} "
          f"for {FULL} images")
    base = statistics.median(times[modes[0]])
    for mode, values in times.items():
        med = statistics.median(values)
        print(f"{mode:>12}: {med:8.2f} s per round of {images} images "
              f"[{', '.join(f'{v:.2f}' for v in values)}]; {FULL} images: {med * scale:7.1f} s;"
              f" {modes[0]} / this: {base / med:.2f}")
    if len(modes) > 1:
        for mode in modes[1:]:
            ratios = [a / b for a, b in zip(times[modes[0]], times[mode], strict=True)]
            print(f"per-repeat ratio {modes[0]} / {mode}: "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}")


if __name__ == "__main__":
    main()
