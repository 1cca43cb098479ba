"""Does a change to EM-TDAMP's client keep every number bit for bit? A learner-level check.

Runs two rounds (every client's update from the same state, then the merge) of five
configurations, in float32 and float64: MNIST-shaped probit with K = 10 clients
(784-128-10), the paper mode (``ρ₀ = 0.5``), ``activity_update="round"`` with
``init_slab="zero"``, a Gaussian regression with ``variance_clip="extrinsic"``, and
clients one by one (``batch_agents=False``). ``save`` stores every payload part, clip
count and merged state; ``compare`` runs the same with the code now importable and
reports the tensors that differ (none: "identical"). Save with the old code first, e.g.
``git stash`` or another checkout on ``PYTHONPATH``. The MNIST images are the packaged
subset (or the IDX files), tiled as in ``bench/emtdamp_round.py``.

    PYTHONPATH=<old>/src python scripts/emtdamp_same_bits.py save /tmp/before.pt
    PYTHONPATH=src python scripts/emtdamp_same_bits.py compare /tmp/before.pt
    PYTHONPATH=src python scripts/emtdamp_same_bits.py compare /tmp/before.pt --threads 2 \
        --client-group 10

``--client-group`` sets ``client_group`` (the default of the code run otherwise; code older
than the setting ignores it: every client in one batch) and ``--threads`` how many client
groups run at once (torch's own thread count for code older than the groups).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from emtdamp_round import mnist_tiled  # type: ignore[import-not-found]

from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.hyper import EMTDAMPParams


def regression(clients: int, count: int, seed: int = 0) -> dict[int, tuple]:
    """``clients`` shards of a 13-input, 2-output nonlinear regression."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(13, 2))
    out = {}
    for k in range(clients):
        x = rng.normal(size=(count, 13))
        out[k] = (x, np.tanh(x @ weights) + 0.1 * rng.normal(size=(count, 2)))
    return out


PAPER = {"sparsity_mode": "paper", "initial_activity": 0.5, "target_density": 0.5}
CONFIGS = {
    "mnist": ({"likelihood": "probit", "batch_size": 100, "tau_max": 2}, (784, 128, 10),
              lambda: mnist_tiled(10, 200)),
    "mnist-paper": ({"likelihood": "probit", "batch_size": 100, "tau_max": 2, **PAPER},
                    (784, 128, 10), lambda: mnist_tiled(4, 150)),
    "mnist-round": ({"likelihood": "probit", "batch_size": 50, "tau_max": 2, **PAPER,
                     "activity_update": "round", "init_slab": "zero"}, (784, 32, 10),
                    lambda: mnist_tiled(3, 100)),
    "regression": ({"likelihood": "gaussian", "batch_size": 25, "tau_max": 3,
                    "variance_clip": "extrinsic"}, (13, 16, 8, 2), lambda: regression(4, 50)),
    "one-by-one": ({"likelihood": "gaussian", "batch_size": 20, "tau_max": 2,
                    "batch_agents": False, "initial_activity": 0.7, "target_density": 0.5},
                   (13, 16, 2), lambda: regression(3, 40)),
}


def run(dtype: str, extra: dict | None = None, threads: int = 1) -> dict[str, torch.Tensor]:
    """Every number of two rounds of each configuration, by name."""
    out: dict[str, torch.Tensor] = {}
    # (settings absent from older code are left out: their default there)
    extra = {k: v for k, v in (extra or {}).items() if k in EMTDAMPParams.__dataclass_fields__}
    groups = "threads" in inspect.signature(EMTDAMP.__init__).parameters
    for name, (params, sizes, data_fn) in CONFIGS.items():
        data = data_fn()
        learner = EMTDAMP(sizes, data, EMTDAMPParams(dtype=dtype, **params, **extra),
                          **({"threads": threads} if groups else {}))
        state = learner.init(np.random.default_rng(1))
        agents = list(data)
        for r in range(2):
            rngs = [np.random.default_rng(100 * r + 10 + a) for a in agents]
            if learner.batches_agents:
                updates = learner.local_update_batch(agents, state, [None] * len(agents), rngs)
            else:
                updates = [learner.local_update(a, state, None, g)
                           for a, g in zip(agents, rngs, strict=True)]
            for u in updates:
                for key, value in u.payload.items():
                    out[f"{dtype}/{name}/r{r}/a{u.agent}/{key}"] = value.clone()
                for key, value in u.metrics.items():
                    out[f"{dtype}/{name}/r{r}/a{u.agent}/metric/{key}"] = torch.tensor(value)
            state = learner.merge(state, updates)
            for key, value in state.items():
                out[f"{dtype}/{name}/r{r}/state/{key}"] = torch.as_tensor(value).clone()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "compare"))
    parser.add_argument("file")
    parser.add_argument("--threads", type=int, default=1,
                        help="client groups at once (older code: torch threads)")
    parser.add_argument("--client-group", type=int, default=None,
                        help="client_group (default: the code's default)")
    args = parser.parse_args()
    groups = "threads" in inspect.signature(EMTDAMP.__init__).parameters
    torch.set_num_threads(1 if groups else args.threads)
    extra = {"client_group": args.client_group} if args.client_group is not None else None
    numbers = {**run("float32", extra, args.threads), **run("float64", extra, args.threads)}
    if args.action == "save":
        torch.save(numbers, args.file)
        print(f"saved {len(numbers)} tensors")
        return
    reference = torch.load(args.file)
    if reference.keys() != numbers.keys():
        sys.exit("compare: the runs hold different tensors (another script version?)")
    differ: dict[str, list[float]] = {}
    for key, old in reference.items():
        new = numbers[key]
        if torch.equal(old, new) or (old.isnan().all() and new.isnan().all()):
            continue
        rel = float(((old.double() - new.double()).abs()
                     / old.double().abs().clamp(min=1e-300)).max())
        differ.setdefault("/".join(key.split("/")[:2]), []).append(rel)
    if not differ:
        print(f"identical ({len(reference)} tensors)")
        return
    print(f"{sum(map(len, differ.values()))} of {len(reference)} tensors differ")
    for group, rels in differ.items():
        print(f"  {group}: {len(rels)} differ, largest relative difference {max(rels):.2e}")


if __name__ == "__main__":
    main()
