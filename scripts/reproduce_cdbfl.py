"""CD-BFL paper's Fig. 4 at the paper's settings with bflnet, resumable.

Runs the scenario ``cdbfl-shift`` with the paper's LeNet (``model=lenet-2.7m``, d = 2.7 M),
T = 800 rounds, burn-in 700, η = 1e-4, L = 8, top-1 %, K = 10 on a complete graph, one
(method, seed) per job, ``--workers`` processes at a time (one torch thread each), and
writes

* ``out/cdbfl/parts/shift-<method>-s<seed>.csv``: one table per job; a part on disk is not
  re-run, so a killed run resumes (``parts/timings.txt`` keeps each job's seconds);
* ``out/cdbfl/shift.csv``: the parts together;
* ``out/cdbfl/shift-s<seed>.png``: the reliability diagrams of each complete seed, and
  with ``--figures DIR`` (e.g. the tracked ``docs/figures``) small copies (dpi 100) there;
* ``out/cdbfl/summary.txt``: the numbers quoted in docs/reproductions/cdbfl.md.

Measured on 2026-11-26 with ``--workers 2`` on this 2-core machine (one thread each,
nothing else running): CD-BFL jobs 37-40 minutes, CF-FL about 37-38, DSGLD about 12; all
nine 137 minutes of wall time, 4.4 hours of CPU (docs/benchmarks.md; the run before the
speed-ups took about 10 hours of compute). The longest jobs go first.

    .venv/bin/python scripts/reproduce_cdbfl.py               # 3 seeds, 1 worker
    .venv/bin/python scripts/reproduce_cdbfl.py --quick       # smoke test into out/cdbfl-quick
    .venv/bin/python scripts/reproduce_cdbfl.py --summary-only
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from parts_runner import pm, run_parts, seed_of

from bflnet.runtime.threads import THREAD_VARIABLES

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("cd-bfl", "dsgld", "cf-fl")
#: The paper's regime (burn-in and length of Sec. V; thin 5 is ours: 20 samples enter the
#: predictive). Evaluation every 50 rounds keeps the learning curves cheap.
PAPER = {"model": "lenet-2.7m", "rounds": 800, "burn_in": 700, "thin": 5, "lr": 1e-4,
         "local_steps": 8, "batch_size": 10, "keep_ratio": 0.01, "zeta": 0.03,
         "eval_every": 50}
QUICK = {"model": "mlp", "rounds": 12, "burn_in": 8, "thin": 2, "eval_every": 4,
         "eval_size": 60, "shift_size": 30}


@dataclass(frozen=True)
class Job:
    """One scenario call: a ``method`` of ``cdbfl-shift`` with ``overrides`` at ``seed``."""

    method: str
    overrides: dict[str, Any] = field(hash=False)
    seed: int

    @property
    def part(self) -> str:
        return f"shift-{self.method}-s{self.seed}.csv"


#: Methods from the longest job to the shortest (CD-BFL about 36 min, CF-FL 26, DSGLD 14 on
#: one thread here): handing the workers the longest jobs first ends them closer together.
LONGEST_FIRST = ("cd-bfl", "cf-fl", "dsgld")


def jobs(seeds: list[int], quick: bool, methods: tuple[str, ...] = METHODS) -> list[Job]:
    """Longest method first, then seed by seed within a method."""
    settings = QUICK if quick else PAPER
    ordered = [m for m in LONGEST_FIRST if m in methods]
    return [Job(m, {**settings, "methods": m}, s) for m in ordered for s in seeds]


def execute(job: Job) -> tuple[Job, pd.DataFrame, float]:
    """Run one job in a worker (one torch thread, the scenario's ``threads`` default)."""
    from bflnet.scenarios import run_scenario

    start = time.perf_counter()
    frame = run_scenario("cdbfl-shift", job.overrides, seed=job.seed)
    return job, frame, time.perf_counter() - start


# --------------------------------------------------------------------------- summaries


def final_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's last evaluated round."""
    rows = frame[frame["event"] != "reliability"].dropna(subset=["accuracy"])
    return rows.loc[rows.groupby("run_id")["iteration"].idxmax()].assign(
        seed=lambda f: seed_of(f))


def overconfidence(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run, from the pooled reliability rows of the shifted days: ``overconfidence`` =
    Σ_m |B_m|/n · (conf(B_m) − acc(B_m)) (the signed ECE: > 0 over-confident, < 0
    under-confident), ``overconfident_share``, the share of examples in bins whose
    confidence exceeds their accuracy, and ``overconfident_bins``, the share of non-empty
    bins where it does (the paper: CF-FL's confidence is above accuracy "for most bins")."""
    bins = frame[(frame["event"] == "reliability") & (frame["count"] > 0)]
    gap = bins["bin_confidence"] - bins["bin_accuracy"]
    weighted = bins.assign(signed=bins["count"] * gap, over=bins["count"] * (gap > 0),
                           over_bin=(gap > 0).astype(float))
    by_run = weighted.groupby("run_id")
    sums = by_run[["signed", "over", "count"]].sum()
    return pd.DataFrame({"overconfidence": sums["signed"] / sums["count"],
                         "overconfident_share": sums["over"] / sums["count"],
                         "overconfident_bins": by_run["over_bin"].mean()})


def summarise(frame: pd.DataFrame, settings: dict[str, Any]) -> list[str]:
    """The numbers docs/reproductions/cdbfl.md quotes: final metrics per method, the per-seed
    comparisons (CD-BFL's accuracy against DSGLD's, CF-FL's ECE
    under the shift against CD-BFL's), and bits per round."""
    last = final_rows(frame)
    pooled = frame[frame["event"] == "reliability"].groupby("run_id")["ece"].first()
    last = last.assign(pooled_shift_ece=last["run_id"].map(pooled)).join(
        overconfidence(frame), on="run_id")
    lines = [f"## cdbfl-shift, {settings}", ""]
    columns = ["accuracy", "ece", "critical_accuracy", "shift_accuracy", "shift_ece",
               "pooled_shift_ece", "overconfidence", "overconfident_share",
               "overconfident_bins"]
    for method, group in last.groupby("method"):
        rounds = sorted(int(r) for r in group["iteration"].unique())
        lines.append(f"{method} (seeds {sorted(group['seed'])}, final round {rounds}):")
        lines += [f"  {c:18s} {pm(group[c])}" for c in columns if c in group]
    lines.append("")
    by = last.set_index(["seed", "method"])
    for seed in sorted(last["seed"].unique()):
        have = set(by.loc[seed].index)
        parts = [f"seed {seed}:"]
        if {"cd-bfl", "dsgld"} <= have:
            gap = by.loc[(seed, "dsgld"), "accuracy"] - by.loc[(seed, "cd-bfl"), "accuracy"]
            parts.append(f"DSGLD - CD-BFL accuracy {100 * gap:+.1f} pts")
        if {"cd-bfl", "cf-fl"} <= have:
            a, b = by.loc[(seed, "cf-fl")], by.loc[(seed, "cd-bfl")]
            parts.append(f"shift ECE CF-FL {a['shift_ece']:.3f} vs CD-BFL "
                         f"{b['shift_ece']:.3f} (pooled {a['pooled_shift_ece']:.3f} vs "
                         f"{b['pooled_shift_ece']:.3f})")
        lines.append("  ".join(parts))
    bits = frame.groupby("method")["message_bits"].first()
    if {"cd-bfl", "dsgld"} <= set(bits.index):
        lines.append(f"message bits: CD-BFL {int(bits['cd-bfl'])}, DSGLD "
                     f"{int(bits['dsgld'])}: {100 * bits['cd-bfl'] / bits['dsgld']:.2f} %")
    return lines


def save_figures(frame: pd.DataFrame, out: Path, docs: Path | None) -> None:
    """Each complete seed's reliability diagrams (the scenario's own plot); small copies in
    ``docs`` if given."""
    from bflnet.scenarios.cdbfl.shift import default_plot

    seeds = seed_of(frame)
    for seed in sorted(seeds.unique()):
        rows = frame[seeds == seed]
        if set(rows["method"]) != set(METHODS):
            continue
        fig = default_plot(rows)
        fig.savefig(out / f"shift-s{seed}.png", dpi=150)
        if docs is not None:
            docs.mkdir(parents=True, exist_ok=True)
            fig.savefig(docs / f"cdbfl_shift_s{seed}.png", dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    parser.add_argument("--figures", type=Path, help="also write small copies of the figures "
                        "here (e.g. docs/figures, the ones the docs show); default: only out/")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. SEEDS-1")
    parser.add_argument("--seed-list", help="comma list of the seeds to run instead (the "
                        "summary still covers every part of seeds 0 .. SEEDS-1 on disk)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of %(default)s to run (two calls with "
                             "disjoint subsets can share the parts folder)")
    parser.add_argument("--summary-only", action="store_true",
                        help="summarise and plot the parts on disk, run nothing")
    args = parser.parse_args()
    if args.seeds < 1 or args.workers < 1:
        parser.error("--seeds and --workers must be >= 1")
    try:
        run_seeds = ([int(v) for v in args.seed_list.split(",")] if args.seed_list
                     else list(range(args.seeds)))
    except ValueError:
        parser.error("--seed-list: a comma list of integers, e.g. 1,2")
    if any(not 0 <= v < 10**6 for v in run_seeds):
        parser.error("--seed-list: seeds from 0 to 999999")
    methods = tuple(m.strip() for m in args.methods.split(","))
    if not methods or not set(methods) <= set(METHODS):
        parser.error(f"--methods: a comma-separated subset of {','.join(METHODS)}")
    out = ROOT / ("out/cdbfl-quick" if args.quick else "out/cdbfl")
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        # one thread per worker for the BLAS libraries too, read when a worker loads them
        # (an idle OpenBLAS pool of several threads spins and takes the other worker's core)
        for name in THREAD_VARIABLES:
            os.environ.setdefault(name, "1")
        run_parts(jobs(run_seeds, args.quick, methods), parts, args.workers, execute)
    every = sorted({*range(args.seeds), *run_seeds})
    found = [parts / j.part for j in jobs(every, args.quick) if (parts / j.part).exists()]
    if not found:
        print("no parts on disk yet")
        return
    frame = pd.concat([pd.read_csv(p) for p in found], ignore_index=True)
    frame.to_csv(out / "shift.csv", index=False)
    save_figures(frame, out, docs=args.figures)
    lines = summarise(frame, QUICK if args.quick else PAPER)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
