"""The ``d2d-medium`` result of docs/wireless-medium.md: how much longer CD-BFL and
consensus averaging take to reach their target on a shared radio medium, under each MAC,
than over independent links, at K = 10, 30, 100.

Two resumable sweeps (``bflnet sweep``, one Dask worker process per core asked for):

* ``OUT/consensus``: ``tasks=consensus``, ``rounds=100``, K in 10, 30, 100, 3 seeds;
* ``OUT/cdbfl``: ``tasks=cdbfl``, ``rounds=40``, ``burn_in=20``, the same grid, 2 seeds;

every run holding the links reference and the four MACs x unicast / broadcast. Then

* ``OUT/summary.csv`` and ``OUT/summary.md``: per task, K, MAC and broadcast, the median
  over seeds of the simulated seconds and bits on the air to reach the target, their
  ratio to the links reference of the same seed, how many seeds reached it, and the
  collision rate at the end of the run;
* ``docs/figures/d2d_medium.png`` (``--figure``): the slow-down factors against K.

Targets: consensus, the largest deviation from the true mean down to 5 % of its initial
value; CD-BFL, a test accuracy of 0.33 (the links reference reaches about 0.38 in 40
rounds at K = 10 at this small size).

    .venv/bin/python scripts/reproduce_d2d_medium.py                 # sweeps + summary
    .venv/bin/python scripts/reproduce_d2d_medium.py --summary-only  # from the sweeps
    .venv/bin/python scripts/reproduce_d2d_medium.py --quick         # smoke test
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: Consensus: max_deviation <= this fraction of its initial value.
DEVIATION_TARGET = 0.05
#: CD-BFL: accuracy >= this.
ACCURACY_TARGET = 0.33
SWEEPS = {
    "consensus": ["--set", "tasks=consensus", "--set", "rounds=100"],
    "cdbfl": ["--set", "tasks=cdbfl", "--set", "rounds=40", "--set", "burn_in=20"],
}
#: Seeds per task (CD-BFL runs also train: fewer seeds).
SEEDS = {"consensus": 3, "cdbfl": 2}
QUICK = {
    "consensus": ["--set", "tasks=consensus", "--set", "rounds=20"],
    "cdbfl": ["--set", "tasks=cdbfl", "--set", "rounds=10", "--set", "burn_in=5",
              "--set", "eval_size=100"],
}
MACS = ("none", "tdma", "csma", "aloha")


def sweep(task: str, out: Path, ks: str, seeds: int | None, workers: int,
          quick: bool) -> None:
    """Run (or resume) one task's sweep into ``out / task``."""
    args = [sys.executable, "-m", "bflnet.cli", "sweep", "d2d-medium",
            "--grid", f"K={ks}", *(QUICK if quick else SWEEPS)[task], "--seeds",
            str(seeds or SEEDS[task]),
            "--workers", str(workers), "--out", str(out / task)]
    print(" ".join(args[1:]), flush=True)
    subprocess.run(args, check=True)


def finished(folder: Path) -> pd.DataFrame:
    """The runs of a sweep finished so far (its table if complete, else its parts), with
    the ``K`` and ``seed`` columns."""
    import json

    if (folder / "table.parquet").exists():
        return pd.read_parquet(folder / "table.parquet")
    parts = []
    for line in (folder / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        part = folder / "runs" / f"{entry['run_id']}.parquet"
        if entry.get("status") == "ok" and part.exists():
            parts.append(pd.read_parquet(part).assign(K=entry["params"]["K"],
                                                      seed=entry["seed"]))
    return pd.concat(parts, ignore_index=True).drop_duplicates(
        ["K", "seed", "mac", "broadcast", "iteration"])


def reach(run: pd.DataFrame, task: str) -> tuple[float, float]:
    """``(time_s, cum_bits)`` of the first row of ``run`` that meets the target (NaN if
    none)."""
    if task == "consensus":
        start = run.loc[run["event"] == "init", "max_deviation"].iloc[0]
        ok = run["max_deviation"] <= DEVIATION_TARGET * start
    else:
        ok = run["accuracy"] >= ACCURACY_TARGET
    hit = run[ok.fillna(False).to_numpy()]
    if hit.empty:
        return float("nan"), float("nan")
    return float(hit["time_s"].iloc[0]), float(hit["cum_bits"].iloc[0])


def per_run(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """One row per (K, seed, mac, broadcast): when it reached the target, its final
    collision rate, and its ratios to the links run of the same K and seed."""
    rows = []
    for (k, seed, mac, cast), run in table.groupby(["K", "seed", "mac", "broadcast"],
                                                   sort=False):
        run = run.sort_values("iteration", kind="stable")
        t, b = reach(run, task)
        last = run.iloc[-1]
        rows.append({"task": task, "K": k, "seed": seed, "mac": mac, "broadcast": cast,
                     "time_s": t, "bits": b, "final_time_s": last["time_s"],
                     "collision_rate": last["collision_rate"],
                     "deferrals_per_packet": last["deferrals"] / max(last["transmissions"], 1)})
    out = pd.DataFrame(rows)
    ref = out[out["mac"] == "links"].set_index(["K", "seed"])
    key = list(zip(out["K"], out["seed"], strict=True))
    out["time_ratio"] = out["time_s"].to_numpy() / ref.loc[key, "time_s"].to_numpy()
    out["bits_ratio"] = out["bits"].to_numpy() / ref.loc[key, "bits"].to_numpy()
    return out


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Medians over seeds (of the seeds that reached the target) and the count reached."""
    g = runs.groupby(["task", "K", "mac", "broadcast"], sort=False)
    return g.agg(seeds=("seed", "size"), reached=("time_s", lambda s: int(s.notna().sum())),
                 time_s=("time_s", "median"), time_ratio=("time_ratio", "median"),
                 bits=("bits", "median"), bits_ratio=("bits_ratio", "median"),
                 collision_rate=("collision_rate", "median"),
                 deferrals_per_packet=("deferrals_per_packet", "median")).reset_index()


def markdown(summary: pd.DataFrame) -> str:
    """The table of docs/wireless-medium.md."""
    lines = ["| task | K | MAC | broadcast | reached | time to target (s) | × links | "
             "bits to target | × links | collision rate |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in summary.itertuples():
        cast = "—" if r.mac == "links" else ("yes" if r.broadcast else "no")

        def num(x: float, fmt: str) -> str:
            return "never" if not np.isfinite(x) else format(x, fmt)
        lines.append(f"| {r.task} | {r.K} | {r.mac} | {cast} | {r.reached}/{r.seeds} | "
                     f"{num(r.time_s, '.3g')} | {num(r.time_ratio, '.2f')} | "
                     f"{num(r.bits, '.3g')} | {num(r.bits_ratio, '.2f')} | "
                     f"{r.collision_rate:.3f} |")
    return "\n".join(lines) + "\n"


def figure(summary: pd.DataFrame, path: Path) -> None:
    """Slow-down against K: per task, time and bits ratios to the links reference."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bflnet.scenarios.cdbfl.d2d_medium import _COLOURS

    tasks = [t for t in ("cdbfl", "consensus") if t in set(summary["task"])]
    fig = Figure(figsize=(9, 3.3 * len(tasks)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(tasks), 3, squeeze=False)
    for row, task in zip(axes, tasks, strict=True):
        part = summary[(summary["task"] == task) & (summary["mac"] != "links")]
        for (mac, cast), s in part.groupby(["mac", "broadcast"], sort=False):
            style = dict(color=_COLOURS[mac], ls="--" if cast else "-", marker="o", ms=3,
                         label=f"{mac}, {'broadcast' if cast else 'unicast'}")
            row[0].plot(s["K"], s["time_ratio"], **style)
            row[1].plot(s["K"], s["bits_ratio"], **style)
            row[2].plot(s["K"], s["collision_rate"], **style)
        name = "CD-BFL" if task == "cdbfl" else "consensus"
        row[0].set(ylabel="time to target / links", title=f"{name}: seconds")
        row[1].set(ylabel="bits to target / links", title=f"{name}: bits")
        row[2].set(ylabel="collisions / receptions", title=f"{name}: collision rate")
        for ax in row:
            ax.set_xscale("log")
            ax.set_xticks([10, 30, 100], labels=["10", "30", "100"])
            ax.set_xlabel("K devices")
            ax.grid(alpha=0.3)
        row[0].set_yscale("log")
        row[1].set_yscale("log")
        for ax in row[:2]:
            ax.axhline(1.0, color="black", lw=0.8)
    axes[0][0].legend(fontsize=7)
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "out" / "d2d-medium"))
    parser.add_argument("--K", default="10,30,100", help="comma list of K")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per task (default: 3 consensus, 2 CD-BFL)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--figure", default=str(ROOT / "docs" / "figures" / "d2d_medium.png"))
    parser.add_argument("--tasks", default="consensus,cdbfl")
    args = parser.parse_args()
    out = Path(args.out)
    tasks = args.tasks.split(",")
    if not args.summary_only:
        for task in tasks:
            sweep(task, out, args.K, args.seeds, args.workers, args.quick)
    runs = pd.concat([per_run(finished(out / task), task) for task in tasks
                      if (out / task / "manifest.jsonl").exists()], ignore_index=True)
    summary = summarise(runs)
    runs.to_csv(out / "runs.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    text = markdown(summary)
    (out / "summary.md").write_text(text)
    print(text)
    figure(summary, Path(args.figure))
    print(f"wrote {out / 'summary.csv'}, {out / 'summary.md'} and {args.figure}")


if __name__ == "__main__":
    main()
