"""Benchmark: one DSVGD round on a small model.

The shape of the DSVGD paper's covertype experiment: logistic regression with 54 features
and 2 classes (``d = 110``), K = 2 agents × 232 404 rows, N_p = 6 particles, 200 SVGD
steps and 200 distillation steps of minibatch 100, then the posterior predictive on
116 203 test rows. The values are random (the timing does not depend on them). A round
is one agent's ``local_update`` (a steady visit: the agent already has local particles,
so the distillation runs), the server's ``merge`` and ``evaluate``; the agents alternate
as under the random walk on two nodes. The learner is driven directly (the simulator's
share of a round is microseconds, see bench/random_walk_overhead.py).

Prints the median round over ``--rounds`` rounds after two warm-up rounds, its parts,
and the ratio to the target (0.08 s); with one thread the clock is the thread's CPU time
(on a shared machine the time spent waiting for a core is not counted). :func:`measure`
returns the medians as a dict (for other scripts).

    python bench/dsvgd_small_round.py [--rounds 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from bflnet.learners.hyper import DSVGDParams
from bflnet.learners.models.classifiers import LogisticRegression
from bflnet.learners.particles.dsvgd import DSVGD

FEATURES, CLASSES, ROWS, TEST_ROWS, PARTICLES = 54, 2, 232_404, 116_203, 6
TARGET_S = 0.08


def setup(seed: int = 0) -> DSVGD:
    rng = np.random.default_rng(seed)

    def rows(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.from_numpy(rng.standard_normal((n, FEATURES), dtype=np.float32)),
                torch.from_numpy(rng.integers(0, CLASSES, n)))

    data = {k: rows(ROWS) for k in range(2)}
    params = DSVGDParams(local_steps=200, distill_iters=200, batch_size=100)
    return DSVGD(LogisticRegression(FEATURES, CLASSES), data, PARTICLES, params,
                 eval_data=rows(TEST_ROWS))


def measure(rounds: int = 10, threads: int = 1) -> dict[str, float]:
    """Median seconds of a round and of its parts (``update``, ``merge``, ``evaluate``,
    ``round``) over ``rounds`` steady rounds; the clock is the thread's CPU time with one
    thread (waiting for a core on a shared machine is not counted), else the wall clock."""
    torch.set_num_threads(threads)
    clock = time.thread_time if threads == 1 else time.perf_counter
    learner = setup()
    theta = learner.init(np.random.default_rng(1))
    factors = {k: learner.init_agent(k, None) for k in range(2)}
    streams = {k: np.random.default_rng(10 + k) for k in range(2)}
    parts: dict[str, list[float]] = {"update": [], "merge": [], "evaluate": [], "round": []}
    for i in range(rounds + 2):
        agent = i % 2
        t0 = clock()
        update = learner.local_update(agent, theta, factors[agent], streams[agent])
        t1 = clock()
        theta = learner.merge(theta, [update])
        factors[agent] = update.agent_state
        t2 = clock()
        learner.evaluate(theta)
        t3 = clock()
        if i >= 2:  # both agents have local particles: steady visits
            for name, value in (("update", t1 - t0), ("merge", t2 - t1),
                                ("evaluate", t3 - t2), ("round", t3 - t0)):
                parts[name].append(value)
    return {name: statistics.median(values) for name, values in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1 or args.threads < 1:
        parser.error("--rounds and --threads must be >= 1")
    med = measure(args.rounds, args.threads)
    print(f"DSVGD round, small model: logistic regression d = {FEATURES * CLASSES + CLASSES}, "
          f"K = 2 x {ROWS} rows, N_p = {PARTICLES}, 200 + 200 steps of batch 100, evaluation "
          f"on {TEST_ROWS} rows, {args.threads} thread(s), median of {args.rounds}")
    print(f"  local update (SVGD + distillation): {med['update']:.3f} s")
    print(f"  merge:                              {med['merge']:.4f} s")
    print(f"  evaluate:                           {med['evaluate']:.3f} s")
    print(f"  round:                              {med['round']:.3f} s  "
          f"({med['round'] / TARGET_S:.2f} x the target {TARGET_S} s)")


if __name__ == "__main__":
    main()
