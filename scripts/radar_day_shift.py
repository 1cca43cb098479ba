"""How much the synthetic radar days shift (the target the synthetic maps were made
for: a model trained on day 0 should lose 5-15 accuracy points on the other days).

Trains the classic LeNet-5 (:class:`bflnet.learners.models.lenet.BayesianLeNet`'s layers as a
point estimate, plain Adam on the cross-entropy, no prior and no noise: the question is
the data set's, not a learner's) on ``--train`` day-0 maps, then measures its accuracy
on ``--test`` fresh maps of day 0 and of each of days 1..``--days``, all labels and the
critical labels 1-6 only, for ``--seeds`` world seeds. Prints a table and the mean drop;
the numbers are quoted in docs/reproductions/cdbfl.md.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/radar_day_shift.py   # ~5 min on 2 cores
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bflnet.data.radar import MAP_SHAPE, radar_maps
from bflnet.learners.models.lenet import BayesianLeNet
from bflnet.scenarios.cdbfl.common import CRITICAL_LABELS


def train(model: BayesianLeNet, x: np.ndarray, y: np.ndarray, epochs: int, seed: int
          ) -> torch.Tensor:
    """Adam on the mean cross-entropy, minibatches of 32; returns theta (1, d)."""
    gen = torch.Generator().manual_seed(seed)
    theta = model.init_particles(1, gen).requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=1e-3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    for _ in range(epochs):
        order = torch.randperm(len(yt), generator=gen)
        for i in range(0, len(yt), 32):
            idx = order[i:i + 32]
            loss = -model.log_likelihood(theta, xt[idx], yt[idx]).sum() / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return theta.detach()


def accuracy(model: BayesianLeNet, theta: torch.Tensor, x: np.ndarray, y: np.ndarray,
             labels: tuple[int, ...] | None = None) -> float:
    keep = np.isin(y, labels) if labels is not None else np.ones(len(y), bool)
    with torch.no_grad():
        probs = model.predict_proba(theta, torch.as_tensor(x[keep]))[0]
    return float((probs.argmax(1).numpy() == y[keep]).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=600)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = BayesianLeNet(*MAP_SHAPE)
    drops, drops_critical = [], []
    for world in range(args.seeds):
        start = time.perf_counter()
        x, y = radar_maps(args.train, np.random.default_rng([world, 0]), day=0,
                          world_seed=world)
        theta = train(model, x.reshape(len(y), -1), y, args.epochs, world)
        row = []
        for day in range(args.days + 1):
            xt, yt = radar_maps(args.test, np.random.default_rng([world, 1, day]), day=day,
                                world_seed=world)
            xt = xt.reshape(len(yt), -1)
            row.append((accuracy(model, theta, xt, yt),
                        accuracy(model, theta, xt, yt, CRITICAL_LABELS)))
        base, base_c = row[0]
        drops += [base - a for a, _ in row[1:]]
        drops_critical += [base_c - c for _, c in row[1:]]
        cells = "  ".join(f"day {d}: {a:.3f} / {c:.3f}" for d, (a, c) in enumerate(row))
        print(f"world {world} ({time.perf_counter() - start:.0f} s), accuracy all / "
              f"critical labels: {cells}")
    print(f"drop from day 0 to days 1..{args.days}, over {args.seeds} worlds: all labels "
          f"mean {100 * np.mean(drops):.1f} points (min {100 * min(drops):.1f}, max "
          f"{100 * max(drops):.1f}); critical labels mean {100 * np.mean(drops_critical):.1f}"
          f" (min {100 * min(drops_critical):.1f}, max {100 * max(drops_critical):.1f})")


if __name__ == "__main__":
    main()
