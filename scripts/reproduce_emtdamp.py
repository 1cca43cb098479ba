"""EM-TDAMP paper's Figs. 6, 7, 10 and 11 with bflnet, resumable.

Two stages, one (task, setting, ρ, method, seed) per job, ``--workers`` processes at a
time (one torch thread each):

1. **tune** — the baselines' hyper-parameters on a validation split (``evaluate_on=
   validation``: Boston holds out 20 % of the training rows, MNIST ``eval_size`` training
   images no client holds), never on the test set: Adam's ``lr`` in :data:`LRS` for every
   baseline and the group-lasso weight in :data:`LAMBDAS`, and ``ρ₀`` in :data:`RHO0S`
   for ``emtdamp-paper``, at ρ ∈ :data:`TUNE_RHOS`, seed :data:`TUNE_SEED` (not one of
   the test seeds). The chosen value minimises the mean over those ρ of the last round's
   validation loss; ``tuned.json`` records the choice and every candidate's loss.
2. **test** — every method at every ρ of ``--rhos`` with the tuned values, seeds
   ``0 .. --seeds−1``, on the test set; at ρ = 1 also ``fedavg-untuned`` (Adam at
   ``lr = 1e-3``, its default step), for the faster-convergence claim.

Methods (:data:`METHODS`): ``emtdamp-paper`` (EM-TDAMP with ``sparsity_mode=paper``: the
paper's mechanism, ``ρ₀ < 1``, one budget ``round(ρ Q_W)`` over the network, the cap
reaching it at half the rounds; docs/em-tdamp/server.md Sec. 4.5; in the ``multi`` setting the
clients update the activities once per round, ``activity_update=round``, Sec. 6.10),
``emtdamp`` (the per-layer
mode), and the three baselines, which by default keep the same network-wide budget
(``--budget-scope per-layer`` for ``T_l`` per layer).

Settings (:data:`SETTINGS`): ``single`` (Fig. 6/7: K = 1, τ_max = 1) and ``multi``
(Fig. 10/11: Boston K = 4, MNIST K = 10, τ_max = 10), for ``boston`` and ``mnist``. When
MNIST's IDX files are missing the MNIST runs use the 5 000-image fallback with the smaller
shards of :data:`MNIST_5K` (the summary names the data each experiment used).
Writes under ``out/emtdamp`` (``--quick``: ``out/emtdamp-quick``, synthetic Boston-shaped
data and small Fashion-MNIST shards, a smoke test of the pipeline):

* ``parts/<stage>-<task>-<setting>-r<ρ>-<method>[-<value>]-s<seed>.csv`` — one table per
  job; a part on disk is not re-run (``parts/timings.txt`` keeps each job's seconds);
* ``tuned.json``, ``test.csv``, ``summary.txt`` (the numbers docs/reproductions/em-tdamp.md quotes)
  and figures: test loss against rounds and against cumulative uplink bits (ρ = 1 and
  ρ = 0.2), and the last round's loss against ρ.

    .venv/bin/python scripts/reproduce_emtdamp.py --quick
    .venv/bin/python scripts/reproduce_emtdamp.py --only boston-single --workers 2
    .venv/bin/python scripts/reproduce_emtdamp.py --summary-only
    .venv/bin/python scripts/reproduce_emtdamp.py --only boston-single --rhos 1,0.2,0.1 \
        --out out/emtdamp-paper --workers 2
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from parts_runner import pm, run_parts

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("emtdamp-paper", "emtdamp", "fedavg", "group-lasso", "group-snip")
BASELINES = METHODS[2:]
#: ``emtdamp-paper``: EM-TDAMP with the paper's sparsity mechanism (docs/em-tdamp/server.md,
#: Sec. 4.5): rho_0 < 1 with Module B active, one budget over the network, the paper's
#: reset from the first merge, the cap reaching the budget at half the rounds.
PAPER_MODE = {"sparsity_mode": "paper", "initial_activity": 0.9, "sparsify_from": 1}
#: The paper mode with several minibatches per round (tau_max = 10): the clients' Module B
#: updates the activities once per round (docs/em-tdamp/pasp.md, Sec. 6.10); with the
#: per-minibatch update of eq. 27 every input group was switched off in round 1.
PAPER_MODE_MULTI = {"activity_update": "round"}
#: rho_0 candidates of the paper mode, chosen on the validation split like the baselines'
#: step sizes (the paper gives no rho_0).
RHO0S = (0.5, 0.9, 0.99)
TUNED = ("emtdamp-paper", *BASELINES)
#: The untuned Adam of the faster-convergence claim (Adam's default step).
UNTUNED_LR = 1e-3
RHOS = (1.0, 0.5, 0.3, 0.2, 0.1)
TUNE_RHOS = (1.0, 0.2)
LRS = (1e-3, 3e-3, 1e-2)
LAMBDAS = (1e-4, 1e-3, 1e-2)
TUNE_SEED = 100
SCENARIO = {"boston": "emtdamp-boston", "mnist": "emtdamp-mnist"}
METRIC = {"boston": "test_nmse", "mnist": "test_error"}
#: "Reached" thresholds of the faster-convergence claim (test NMSE, test error).
THRESHOLD = {"boston": 0.3, "mnist": 0.1}
#: The paper's settings (Sec. IV); the number of rounds is ours (the paper's figures do
#: not state it).
SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "boston": {
        "single": {"K": 1, "tau_max": 1, "rounds": 100},
        "multi": {"K": 4, "tau_max": 10, "rounds": 50},
    },
    "mnist": {
        "single": {"K": 1, "tau_max": 1, "points_per_agent": 60_000, "eval_size": 10_000,
                   "rounds": 20},
        "multi": {"K": 10, "tau_max": 10, "points_per_agent": 6_000, "eval_size": 10_000,
                  "rounds": 10},
    },
}
#: MNIST when only the 5 000-image fallback is on disk (4 000 training, 1 000 test
#: images): every client's shard is 9/10 of its share, so that tuning can hold out the
#: other 1/10 as validation with the same shard sizes.
MNIST_5K: dict[str, dict[str, Any]] = {
    "single": {"K": 1, "tau_max": 1, "points_per_agent": 3_600, "eval_size": 1_000, "rounds": 20},
    "multi": {"K": 10, "tau_max": 10, "points_per_agent": 360, "eval_size": 1_000, "rounds": 10},
}
#: Validation images held out of the training set in the tuning stage.
VALIDATION_SIZE = {"full": 6_000, "5k": 400}
MNIST_TRAIN = {"full": 60_000, "5k": 4_000}
QUICK: dict[str, dict[str, dict[str, Any]]] = {
    "boston": {"single": {"K": 1, "tau_max": 1, "rounds": 6, "sweeps": 1,
                          "data": "synthetic", "sparsify_from": 2},
               "multi": {"K": 2, "tau_max": 2, "rounds": 4, "sweeps": 1,
                         "data": "synthetic", "sparsify_from": 2}},
    "mnist": {"single": {"K": 1, "tau_max": 1, "rounds": 3, "sweeps": 1, "points_per_agent": 300,
                         "eval_size": 200, "dataset": "fashion-mnist", "sparsify_from": 2},
              "multi": {"K": 2, "tau_max": 2, "rounds": 2, "sweeps": 1, "points_per_agent": 200,
                        "eval_size": 200, "dataset": "fashion-mnist", "sparsify_from": 2}},
}


@dataclass(frozen=True)
class Job:
    """One scenario call: one method of one (task, setting, ρ) at ``seed``."""

    stage: str
    task: str
    setting: str
    rho: float
    method: str
    seed: int
    overrides: dict[str, Any] = field(hash=False)
    label: str = ""

    @property
    def part(self) -> str:
        tail = f"-{self.label}" if self.label else ""
        return (f"{self.stage}-{self.task}-{self.setting}-r{self.rho:g}-{self.method}{tail}"
                f"-s{self.seed}.csv")


def execute(job: Job) -> tuple[Job, pd.DataFrame, float]:
    """Run one job in a worker (one torch thread, the scenario's default)."""
    from bflnet.scenarios import run_scenario

    start = time.perf_counter()
    frame = run_scenario(SCENARIO[job.task], job.overrides, seed=job.seed)
    frame = frame.assign(stage=job.stage, setting=job.setting, label=job.label,
                         method=job.method)
    return job, frame, time.perf_counter() - start


def mnist_size() -> str:
    """``full`` when MNIST's IDX files are on disk, ``5k`` for the fallback subset."""
    from bflnet.data.vision import MNIST, DatasetNotFoundError, find_split_files

    try:
        find_split_files(MNIST, "train")
        find_split_files(MNIST, "test")
    except DatasetNotFoundError:
        return "5k"
    return "full"


#: How the baselines' groups are chosen (``--budget-scope``).
SCOPE = {"value": "network"}


def base(task: str, setting: str, quick: bool, rho: float, method: str) -> dict[str, Any]:
    if quick:
        settings = QUICK[task][setting]
    elif task == "mnist" and mnist_size() == "5k":
        settings = MNIST_5K[setting]
    else:
        settings = SETTINGS[task][setting]
    # float64: the numbers of docs/reproductions/em-tdamp.md were read at float64 (the scenario's
    # default is float32, docs/em-tdamp/learner.md Sec. 7.5)
    out = {**settings, "target_density": rho, "methods": method, "dtype": "float64"}
    if method == "emtdamp-paper":
        out.update(PAPER_MODE, methods="emtdamp",
                   budget_rounds=max(1, settings["rounds"] // 2))
        if setting == "multi":
            out.update(PAPER_MODE_MULTI)
    elif method in BASELINES:
        out["budget_scope"] = SCOPE["value"]
    return out


def validation(task: str, settings: dict[str, Any], quick: bool) -> dict[str, Any]:
    """Tuning-stage overrides: evaluate on the validation split; MNIST's shards shrink by
    the validation images (``VALIDATION_SIZE`` held out of the training set)."""
    out = {**settings, "evaluate_on": "validation"}
    if task == "mnist" and not quick:
        size = mnist_size()
        held = VALIDATION_SIZE[size]
        room = (MNIST_TRAIN[size] - held) // settings["K"]
        out.update(points_per_agent=min(settings["points_per_agent"], room), eval_size=held)
    return out


def tune_jobs(experiments: list[tuple[str, str]], quick: bool) -> list[Job]:
    """The validation grid of the baselines (module docs)."""
    out = []
    for task, setting in experiments:
        for rho in TUNE_RHOS:
            for rho0 in RHO0S:
                settings = validation(task, base(task, setting, quick, rho, "emtdamp-paper"),
                                      quick)
                out.append(Job("tune", task, setting, rho, "emtdamp-paper", TUNE_SEED,
                               {**settings, "initial_activity": rho0}, f"rho0{rho0:g}"))
            for method in BASELINES:
                for lr in LRS:
                    lams = LAMBDAS if method == "group-lasso" else (None,)
                    for lam in lams:
                        extra = {"lr": lr, **({"group_lasso": lam} if lam else {})}
                        label = f"lr{lr:g}" + (f"-lam{lam:g}" if lam else "")
                        settings = validation(task, base(task, setting, quick, rho,
                                                         method), quick)
                        out.append(Job("tune", task, setting, rho, method, TUNE_SEED,
                                       {**settings, **extra}, label))
    return out


def choose(frame: pd.DataFrame) -> dict[str, Any]:
    """Per (task, setting, method): the label with the lowest mean last-round validation
    loss over the tuning ρ, and every candidate's loss."""
    chosen: dict[str, Any] = {}
    last = last_rows(frame)
    for (task, setting, method), group in last.groupby(["task", "setting", "method"]):
        metric = METRIC[str(task)]
        losses = group.groupby("label")[metric].mean().sort_values()
        chosen[f"{task}-{setting}-{method}"] = {
            "label": str(losses.index[0]),
            "candidates": {str(k): round(float(v), 5) for k, v in losses.items()}}
    return chosen


def overrides_of(label: str) -> dict[str, Any]:
    """``lr0.001-lam0.01`` → ``{"lr": 0.001, "group_lasso": 0.01}``; ``rho00.9`` →
    ``{"initial_activity": 0.9}``."""
    out: dict[str, Any] = {}
    for item in label.split("-"):
        if item.startswith("rho0"):
            out["initial_activity"] = float(item[4:])
        elif item.startswith("lr"):
            out["lr"] = float(item[2:])
        elif item.startswith("lam"):
            out["group_lasso"] = float(item[3:])
    return out


def test_jobs(experiments: list[tuple[str, str]], quick: bool, seeds: int,
              tuned: dict[str, Any], rhos: tuple[float, ...] = RHOS) -> list[Job]:
    """Every method at every ρ and seed, the baselines with their tuned values; at ρ = 1
    also FedAvg with Adam's default step (``fedavg-untuned``, lr 1e-3)."""
    out = []
    for seed in range(seeds):
        for task, setting in experiments:
            for rho in rhos:
                if rho == 1.0:
                    out.append(Job("test", task, setting, rho, "fedavg-untuned", seed,
                                   {**base(task, setting, quick, rho, "fedavg"),
                                    "lr": UNTUNED_LR}, f"lr{UNTUNED_LR:g}"))
                for method in METHODS:
                    key = f"{task}-{setting}-{method}"
                    if method in TUNED and key not in tuned:
                        continue  # tuning not finished
                    label = tuned[key]["label"] if method in TUNED else ""
                    out.append(Job("test", task, setting, rho, method, seed,
                                   {**base(task, setting, quick, rho, method),
                                    **overrides_of(label)}, label))
    return out


# --------------------------------------------------------------------------- summaries


def last_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's last round."""
    rows = frame[frame["event"] == "iteration"]
    keys = ["stage", "task", "setting", "target_density", "method", "label", "seed"]
    return rows.loc[rows.groupby(keys, dropna=False)["iteration"].idxmax()]


def reached(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run: the first round (and its cumulative uplink bits) whose test loss *at the
    target sparsity* is at or below the task's threshold; NaN if never. Only rounds with
    ``active_groups == target_groups`` count: a baseline is evaluated pruned every round,
    EM-TDAMP only from its target rule's first round (before it, it is the dense
    network, which says nothing about the compressed one)."""
    rows = frame[frame["event"] == "iteration"]
    out = []
    keys = ["task", "setting", "target_density", "method", "seed"]
    for key, group in rows.groupby(keys):
        metric = METRIC[str(key[0])]
        at_target = group[group["active_groups"] == group["target_groups"]]
        hit = at_target[at_target[metric] <= THRESHOLD[str(key[0])]]
        first = hit.iloc[0] if len(hit) else None
        out.append(dict(zip(keys, key, strict=True),
                        round=float(first["iteration"]) if first is not None else float("nan"),
                        bits=float(first["cum_bits_up"]) if first is not None else float("nan")))
    return pd.DataFrame(out)


def summarise(frame: pd.DataFrame, tuned: dict[str, Any]) -> list[str]:
    """The numbers docs/reproductions/em-tdamp.md quotes."""
    lines = ["# EM-TDAMP reproduction", "", "## tuned baselines (validation split)", ""]
    lines += [f"{k}: {v['label']}  {v['candidates']}" for k, v in sorted(tuned.items())]
    last = last_rows(frame)
    hits = reached(frame)
    for (task, setting), group in last.groupby(["task", "setting"]):
        metric = METRIC[str(task)]
        sources = ", ".join(sorted(set(group["data_source"].astype(str))))
        lines += ["", f"## {task} {setting}: last-round {metric} (mean ± std [min, max]); "
                  f"data: {sources}", ""]
        for rho, at_rho in group.groupby("target_density", sort=False):
            for method, runs in at_rho.groupby("method", sort=False):
                ok = int((runs["active_groups"] == runs["target_groups"]).sum())
                lines.append(f"rho={rho:g} {method:12s} {pm(runs[metric])}  groups at target "
                             f"{ok}/{len(runs)} (target {int(runs['target_groups'].iloc[0])})")
        lines += ["", f"rounds / uplink bits to {metric} <= {THRESHOLD[str(task)]} at the "
                  "target sparsity:"]
        sub = hits[(hits["task"] == task) & (hits["setting"] == setting)]
        for (rho, method), runs in sub.groupby(["target_density", "method"], sort=False):
            lines.append(f"rho={rho:g} {method:12s} rounds {pm(runs['round'], 1)}  bits "
                         f"{pm(runs['bits'] / 1e6, 2)} Mbit  reached "
                         f"{int(runs['round'].notna().sum())}/{len(runs)}")
    return lines


def save_figures(frame: pd.DataFrame, out: Path) -> None:
    """Per (task, setting): loss against rounds and uplink bits at ρ = 1 and 0.2, and the
    last round's loss against ρ (means over seeds)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = frame[frame["event"] == "iteration"]
    last = last_rows(frame)
    for (task, setting), group in rows.groupby(["task", "setting"]):
        metric = METRIC[str(task)]
        fig = Figure(figsize=(12.0, 3.6), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3)
        colour = {m: f"C{i}" for i, m in enumerate((*METHODS, "fedavg-untuned"))}
        for rho, style in ((1.0, "-"), (0.2, "--")):
            for method, runs in group[group["target_density"] == rho].groupby("method"):
                mean = runs.groupby("iteration")[[metric, "cum_bits_up"]].mean()
                axes[0].plot(mean.index, mean[metric], style, color=colour[str(method)],
                             label=f"{method} ρ={rho:g}")
                axes[1].plot(mean["cum_bits_up"], mean[metric], style,
                             color=colour[str(method)])
        sub = last[(last["task"] == task) & (last["setting"] == setting)]
        for method, runs in sub.groupby("method"):
            mean = runs.groupby("target_density")[metric].mean()
            axes[2].plot(mean.index, mean.values, marker="o", color=colour[str(method)],
                         label=method)
        for ax, label in zip(axes, ("round", "cumulative uplink bits", "target density ρ"),
                             strict=True):
            ax.set(xlabel=label, ylabel=metric.replace("_", " "), yscale="log")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        axes[2].legend(fontsize=7)
        fig.suptitle(f"EM-TDAMP vs baselines: {task}, {setting}")
        fig.savefig(out / f"{task}-{setting}.png", dpi=120)


def read_parts(parts: Path, jobs: list[Job]) -> pd.DataFrame | None:
    found = [parts / j.part for j in jobs if (parts / j.part).exists()]
    return pd.concat([pd.read_csv(p) for p in found], ignore_index=True) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only", default="boston-single,boston-multi,mnist-single,mnist-multi",
                        help="comma list of <task>-<setting>")
    parser.add_argument("--summary-only", action="store_true",
                        help="summarise and plot the parts on disk, run nothing")
    parser.add_argument("--rhos", default=",".join(f"{r:g}" for r in RHOS),
                        help="comma list of target densities of the test stage")
    parser.add_argument("--budget-scope", default="network", choices=("network", "per-layer"),
                        help="the baselines' group budget (network: round(rho Q_W) over "
                             "all layers, as EM-TDAMP's paper mode)")
    parser.add_argument("--out", default=None, help="output folder (default out/emtdamp, "
                        "or out/emtdamp-quick with --quick)")
    args = parser.parse_args()
    SCOPE["value"] = args.budget_scope
    try:
        rhos = tuple(float(r) for r in args.rhos.split(","))
    except ValueError:
        parser.error("--rhos: must be a comma list of numbers in (0, 1]")
    if not all(0 < r <= 1 for r in rhos):
        parser.error("--rhos: must be a comma list of numbers in (0, 1]")
    if args.seeds < 1 or args.workers < 1:
        parser.error("--seeds and --workers must be >= 1")
    experiments = []
    for item in args.only.split(","):
        task, _, setting = item.strip().partition("-")
        if task not in SETTINGS or setting not in SETTINGS[task]:
            parser.error(f"--only: unknown experiment {item!r}")
        experiments.append((task, setting))
    out = Path(args.out) if args.out else ROOT / ("out/emtdamp-quick" if args.quick
                                                  else "out/emtdamp")
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    tuning = tune_jobs(experiments, args.quick)
    if not args.summary_only:
        run_parts(tuning, parts, args.workers, execute)
    tuned_frame = read_parts(parts, tuning)
    tuned = choose(tuned_frame) if tuned_frame is not None else {}
    (out / "tuned.json").write_text(json.dumps(tuned, indent=1) + "\n")
    testing = test_jobs(experiments, args.quick, args.seeds, tuned, rhos)
    if not args.summary_only:
        run_parts(testing, parts, args.workers, execute)
    frame = read_parts(parts, testing)
    if frame is None:
        print("no test parts on disk yet")
        return
    frame.to_csv(out / "test.csv", index=False)
    save_figures(frame, out)
    lines = summarise(frame, tuned)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
