"""Benchmark: one EM-TDAMP round at MNIST's shape, against the target of <= 60 s at 60 000
images.

784-128-10, probit-product likelihood, batch 100, ``τ_max = 10``, the default 5 DAMP
sweeps per minibatch, ``K = 10`` clients of ``--points`` images each: MNIST's own (the
IDX files if found, else the packaged 5 000-image subset, tiled to the size asked; about
19 % non-zero pixels), or with ``--data synthetic`` (and when neither is found) random
images with MNIST's share of non-zero pixels; centred by their mean, as the scenarios
do. One round = every client's ``local_update`` (or one ``local_update_batch``) from the
same prior, plus the server's merge. Modes, timed alternately in the same process
(``--repeat`` rounds each after a warm-up round), CPU time (user + system of this
process; the wall time is printed too, it is inflated by other jobs on a loaded
machine):

* ``float32``: the default (``dtype=float32``, the clients in groups of ``client_group``
  = 5, ``--threads`` groups at once, each with one torch thread);
* ``float64``: clients batched, ``dtype=float64`` (the default before float32; the
  reproductions' dtype);
* ``one-by-one``: ``batch_agents=False``, float64 (each client's TDAMP alone);
* ``float32-serial``: the default with its groups one after the other on one thread
  (``--threads`` ignored: the 1-thread reading in the same process);
* ``one-batch``: float32 with every client in one batch (``client_group = --clients``; the
  computation before the groups, on one thread).

After the warm-up round, each mode's updates are compared with those of the first mode
of the same dtype (``torch.equal`` of every payload array): ``same bits`` or ``OTHER
bits``.

The clients' time is linear in the images per client (minibatches × sweeps) and the
merge's is not, so the 60 000-image round (``--points 6000``) is projected from a smaller
``--points`` as ``(t − t_merge) × 6000 / points + t_merge``; ``--points 6000`` measures it.

``--threads N`` is how many client groups compute at once (torch itself on one thread,
the merge too; code older than the groups: torch's threads). With N > 1 the CPU time
counts every thread, so the projection of the wall time is printed too (meaningful on a
quiet machine only).

    python bench/emtdamp_round.py [--points 600] [--repeat 3] [--threads 1]
        [--modes float32,float64,one-by-one] [--data mnist|synthetic]
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import time

import numpy as np
import torch

from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.hyper import EMTDAMPParams

SIZES = (784, 128, 10)
MODES = {"float32": {"dtype": "float32"}, "float64": {"dtype": "float64"},
         "one-by-one": {"batch_agents": False, "dtype": "float64"},
         "float32-serial": {"dtype": "float32"}, "one-batch": {"dtype": "float32"}}
#: Whether the learner computes its clients in groups on threads (``threads``).
GROUPS = "threads" in inspect.signature(EMTDAMP.__init__).parameters
FULL = 60_000
TARGET_S = 60.0


def mnist_shaped(clients: int, points: int, seed: int = 0) -> dict[int, tuple]:
    """``clients`` shards of ``points`` synthetic 28 × 28 images and labels, centred."""
    rng = np.random.default_rng(seed)
    images = rng.random((clients * points, 784)) * (rng.random((clients * points, 784)) < 0.19)
    images -= images.mean(0)
    labels = rng.integers(0, 10, clients * points)
    return {k: (images[k * points:(k + 1) * points], labels[k * points:(k + 1) * points])
            for k in range(clients)}


def mnist_tiled(clients: int, points: int) -> dict[int, tuple]:
    """``clients`` shards of ``points`` MNIST training images (tiled when the set is
    smaller), centred by their mean, with their labels."""
    from bflnet.data.digits import load_digits

    digits = load_digits(np.random.default_rng(0), "mnist")
    x, y = digits.train
    reps = -(-clients * points // len(y))
    images = np.tile(x.astype(np.float64), (reps, 1))[:clients * points]
    labels = np.tile(y, reps)[:clients * points]
    images -= images.mean(0)
    return {k: (images[k * points:(k + 1) * points], labels[k * points:(k + 1) * points])
            for k in range(clients)}


def make_round(mode: str, data: dict[int, tuple], tau_max: int, threads: int,
               updates: dict[str, list]):
    """A function running one round of ``mode`` (all clients and the merge) and returning
    the merge's CPU seconds; the first round's updates go to ``updates[mode]``."""
    values = dict(MODES[mode])
    if mode == "one-batch":
        values["client_group"] = len(data)
    # (settings absent from older code are left out: their default there)
    extra = {k: v for k, v in values.items() if k in EMTDAMPParams.__dataclass_fields__}
    params = EMTDAMPParams(likelihood="probit", batch_size=100, tau_max=tau_max, **extra)
    groups = {"threads": 1 if mode == "float32-serial" else threads} if GROUPS else {}
    learner = EMTDAMP(SIZES, data, params, **groups)
    state = learner.init(np.random.default_rng(1))
    agents = list(data)

    def one_round() -> float:
        rngs = [np.random.default_rng(10 + a) for a in agents]
        if getattr(learner, "batches_agents", False):
            results = learner.local_update_batch(agents, state, [None] * len(agents), rngs)
        else:
            results = [learner.local_update(a, state, None, r)
                       for a, r in zip(agents, rngs, strict=True)]
        if mode not in updates:
            updates[mode] = results
        start = time.process_time()
        learner.merge(state, results)
        return time.process_time() - start

    return one_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=600, help="images per client")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tau-max", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", default="float32,float64")
    parser.add_argument("--data", choices=("mnist", "synthetic"), default="mnist")
    args = parser.parse_args()
    torch.set_num_threads(1 if GROUPS else args.threads)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: unknown {unknown[0]!r}; modes are {', '.join(MODES)}")
    if args.data == "mnist":
        from bflnet.data.vision import DatasetNotFoundError

        try:
            data = mnist_tiled(args.clients, args.points)
        except DatasetNotFoundError as error:
            print(f"no MNIST here ({str(error).splitlines()[0]}): synthetic images instead")
            args.data = "synthetic"
    if args.data == "synthetic":
        data = mnist_shaped(args.clients, args.points)
    print(f"load average at the start {os.getloadavg()[0]:.1f}", flush=True)
    first: dict[str, list] = {}
    rounds = {mode: make_round(mode, data, args.tau_max, args.threads, first) for mode in modes}
    for fn in rounds.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    merges: dict[str, list[float]] = {mode: [] for mode in modes}
    walls: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.repeat):
        for mode, fn in rounds.items():
            start, wall = time.process_time(), time.perf_counter()
            merges[mode].append(fn())
            times[mode].append(time.process_time() - start)
            walls[mode].append(time.perf_counter() - wall)
    scale = FULL / (args.clients * args.points)
    images = args.clients * args.points
    print(f"K = {args.clients} x {args.points} {args.data} images, tau_max = {args.tau_max}, "
          f"{args.threads} thread(s); CPU seconds per round (each repeat); {FULL} images: the "
          f"clients' part x{scale:g} plus the merge; load average {os.getloadavg()[0]:.1f}")
    base = statistics.median(times[modes[0]])
    for mode, values in times.items():
        med, merge = statistics.median(values), statistics.median(merges[mode])
        projected = (med - merge) * scale + merge
        verdict = "met" if projected <= TARGET_S else "MISSED"
        print(f"{mode:>12}: {med:8.2f} s per round of {images} images "
              f"[{', '.join(f'{v:.2f}' for v in values)}; merge {merge:.2f}; wall "
              f"{statistics.median(walls[mode]):.2f}]; {FULL} images: {projected:7.1f} s "
              f"(target <= {TARGET_S:g} s: {verdict}); this / {modes[0]}: "
              f"{med / base:.2f}")
        if args.threads > 1:  # CPU time adds the threads' time: the wall time is the figure
            wall = statistics.median(walls[mode])
            projected_wall = (wall - merge) * scale + merge
            verdict = "met" if projected_wall <= TARGET_S else "MISSED"
            print(f"{'':>12}  wall with {args.threads} threads: {FULL} images: "
                  f"{projected_wall:7.1f} s (target <= {TARGET_S:g} s: {verdict}; quiet "
                  f"machine only)")
    for mode in modes[1:]:
        dtype = MODES[mode]["dtype"]
        base_mode = next(m for m in modes if MODES[m]["dtype"] == dtype)
        if base_mode != mode:
            same = all(torch.equal(a.payload[k], b.payload[k])
                       for a, b in zip(first[base_mode], first[mode], strict=True)
                       for k in a.payload)
            print(f"{mode} against {base_mode}: {'same' if same else 'OTHER'} bits")
    for mode in modes[1:]:
        ratios = [b / a for a, b in zip(times[modes[0]], times[mode], strict=True)]
        print(f"per-repeat ratio {mode} / {modes[0]}: {', '.join(f'{r:.2f}' for r in ratios)}")


if __name__ == "__main__":
    main()
