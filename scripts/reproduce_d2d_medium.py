"""The ``d2d-medium`` result of docs/wireless-medium.md: how much longer CD-BFL and
consensus averaging take to reach their target on a shared radio medium, under each MAC,
than over independent links, at K = 10, 30, 100.

Two resumable sweeps (``bflnet sweep``, one Dask worker process per core asked for):

* ``OUT/consensus``: ``tasks=consensus``, ``rounds=100``, K in 10, 30, 100, 3 seeds;
* ``OUT/cdbfl``: ``tasks=cdbfl``, ``rounds=40``, ``burn_in=20``, the same grid, 2 seeds;

every run holding the links reference and the four MACs x unicast / broadcast, on the
study's radio (:data:`RADIO`: 0 dBm, path-loss exponent 3.5, radius 30 m, set explicitly:
the scenario's defaults are the shared radio's, 20 dBm, 3 and 40 m). Then

* ``OUT/summary.csv``: ``bflnet summarize`` of each sweep, per task, K, MAC and
  broadcast: the simulated seconds and bits on the air to reach the target (mean, sd and
  median over seeds), how many seeds reached it, their ratios to the links reference of
  the same seed, and the collision rate at the end of the run; also written, with the
  sweeps' rows it is made from, to ``docs/tables`` (``--docs-tables``), where the docs'
  numbers are read from;
* ``OUT/summary.md``: the docs' table (the medians);
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
#: The targets (``bflnet summarize --target``): consensus, the largest deviation down to
#: 5 % of its initial value; CD-BFL, a test accuracy of 0.33.
TARGETS = {"consensus": "max_deviation<=5%", "cdbfl": "accuracy>=0.33"}
#: Each run's last value summarised too (``--last``): the collision rate; CD-BFL's final
#: accuracy and the spread of the devices' samples.
LAST = {"consensus": ["collision_rate"],
        "cdbfl": ["collision_rate", "accuracy", "consensus_error"]}
#: Where the summary the docs' table and numbers are read from is stored
#: (``d2d_medium.csv``), with the sweeps' rows it is made from (``d2d_medium_TASK_runs``
#: ``.parquet``, the columns the summary reads); tests/test_doc_numbers.py checks both.
DOCS_TABLES = ROOT / "docs" / "tables"
#: The columns of the sweeps' rows kept beside the summary.
#: The phys side by side in the docs' table: the real PHY, then the ideal one.
PHYS = ("80211b", "ideal")
RUN_COLUMNS = ("phy", "K", "seed", "run_id", "task", "mac", "broadcast", "iteration", "event",
               "time_s", "cum_bits")
#: The study's radio: 0 dBm and path-loss exponent 3.5, devices within 30 m neighbours (a
#: nominal range of 60 m, twice the radius; interference counted up to 158 m). The
#: scenario's defaults are the shared radio's (20 dBm, 3, 40 m: every device of these
#: areas within range of every other); the stored tables were made with these values.
RADIO = ["--set", "tx_power_dbm=0", "--set", "path_loss_exponent=3.5", "--set", "radius_m=30"]
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


def sweep(task: str, out: Path, ks: str, phys: str, seeds: int | None, workers: int,
          quick: bool) -> None:
    """Run (or resume) one task's sweep into ``out / task``."""
    args = [sys.executable, "-m", "bflnet.cli", "sweep", "d2d-medium",
            "--grid", f"phy={phys}", "--grid", f"K={ks}", *RADIO,
            *(QUICK if quick else SWEEPS)[task], "--seeds", str(seeds or SEEDS[task]),
            "--workers", str(workers), "--out", str(out / task)]
    print(" ".join(args[1:]), flush=True)
    subprocess.run(args, check=True)


def finished(folder: Path) -> pd.DataFrame:
    """The runs of a sweep finished so far (its table if complete, else its parts), with
    the ``K`` and ``seed`` columns and a ``run_id`` naming each run of each part."""
    import json

    if (folder / "table.parquet").exists():
        return pd.read_parquet(folder / "table.parquet")
    parts = []
    for line in (folder / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        part = folder / "runs" / f"{entry['run_id']}.parquet"
        if entry.get("status") == "ok" and part.exists():
            rows = pd.read_parquet(part)
            parts.append(rows.assign(phy=entry["params"]["phy"], K=entry["params"]["K"],
                                     seed=entry["seed"],
                                     run_id=entry["run_id"] + "/" + rows["run_id"]))
    return pd.concat(parts, ignore_index=True)


def summarise(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """``bflnet summarize`` of one task's sweep: per K, MAC and broadcast, the seconds and
    bits to the target (mean, sd, median over seeds; how many seeds reached it), their
    ratios to the links reference of the same K and seed, and the last values of
    :data:`LAST` (with their differences to the links run's)."""
    import bflnet

    summary = bflnet.summarize(table, TARGETS[task], x=["time_s", "cum_bits"],
                               by=["phy", "K", "mac", "broadcast"],
                               reference=["mac=links", "broadcast=false"],
                               last=LAST[task])
    summary.insert(0, "task", task)
    return summary


def store(summary: pd.DataFrame, tables: dict[str, pd.DataFrame], folder: Path) -> None:
    """``folder/d2d_medium.csv`` (the summary) and ``folder/d2d_medium_TASK_runs.parquet``
    (the columns of the sweeps' rows it reads)."""
    from bflnet.analysis.targets import Target

    folder.mkdir(parents=True, exist_ok=True)
    summary.to_csv(folder / "d2d_medium.csv", index=False)
    for task, table in tables.items():
        columns = [*RUN_COLUMNS, Target.parse(TARGETS[task]).column, *LAST[task]]
        table[list(dict.fromkeys(columns))].to_parquet(
            folder / f"d2d_medium_{task}_runs.parquet", compression="zstd", index=False)


def docs_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The columns of the docs' table (medians over seeds) from :func:`summarise`'s."""
    return pd.DataFrame({
        "task": summary["task"], "phy": summary["phy"], "K": summary["K"],
        "mac": summary["mac"],
        "broadcast": summary["broadcast"], "seeds": summary["runs"],
        "reached": summary["reached"], "time_s": summary["time_s_to_target_median"],
        "time_ratio": summary["time_s_ratio_to_reference_median"],
        "bits": summary["cum_bits_to_target_median"],
        "bits_ratio": summary["cum_bits_ratio_to_reference_median"],
        "collision_rate": summary["collision_rate_last_median"]})


def _num(x: float, fmt: str) -> str:
    return "never" if not np.isfinite(x) else format(x, fmt)


def markdown(summary: pd.DataFrame) -> str:
    """The table of docs/wireless-medium.md, from :func:`docs_table`'s columns: per task,
    K, MAC and broadcast, the seeds that reached the target and the medians' "× links"
    under each phy of :data:`PHYS` (``—``: not run), the slow-down of the real PHY
    (80211b's median time to target over ideal's), 80211b's bits "× links" and the
    collision rates."""
    real, ideal = PHYS
    lines = [f"| task | K | MAC | broadcast | reached {ideal} / {real} | × links {ideal} | "
             f"× links {real} | {real} ÷ {ideal} | bits × links {real} | "
             f"collision rate {ideal} / {real} |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    keys = ["task", "K", "mac", "broadcast"]
    for key, rows in summary.groupby(keys, sort=False):
        task, k, mac, broadcast = key
        by_phy = {r.phy: r for r in rows.itertuples()}
        i, r = by_phy.get(ideal), by_phy.get(real)
        cast = "—" if mac == "links" else ("yes" if broadcast else "no")

        def cell(row: object, attr: str, fmt: str) -> str:
            return "—" if row is None else _num(getattr(row, attr), fmt)

        def reached(row: object) -> str:
            return "—" if row is None else f"{row.reached}/{row.seeds}"
        slow = "—" if i is None or r is None else _num(r.time_s / i.time_s, ".1f")
        lines.append(f"| {task} | {k} | {mac} | {cast} | {reached(i)} / {reached(r)} | "
                     f"{cell(i, 'time_ratio', '.2f')} | {cell(r, 'time_ratio', '.2f')} | "
                     f"{slow} | {cell(r, 'bits_ratio', '.2f')} | "
                     f"{cell(i, 'collision_rate', '.3f')} / "
                     f"{cell(r, 'collision_rate', '.3f')} |")
    return "\n".join(lines) + "\n"


def figure(summary: pd.DataFrame, path: Path) -> None:
    """Slow-down against K: per task, time and bits ratios to the links reference."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bflnet.scenarios.cdbfl.d2d_medium import _COLOURS

    panels = [(t, p) for t in ("consensus", "cdbfl") for p in PHYS
              if ((summary["task"] == t) & (summary["phy"] == p)).any()]
    fig = Figure(figsize=(10.5, 3.3 * len(panels)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 3, squeeze=False)
    for row, (task, phy) in zip(axes, panels, strict=True):
        part = summary[(summary["task"] == task) & (summary["phy"] == phy)
                       & (summary["mac"] != "links")]
        for (mac, cast), s in part.groupby(["mac", "broadcast"], sort=False):
            style = dict(color=_COLOURS[mac], ls="--" if cast else "-", marker="o", ms=3,
                         label=f"{mac}, {'broadcast' if cast else 'unicast'}")
            row[0].plot(s["K"], s["time_ratio"], **style)
            row[1].plot(s["K"], s["bits_ratio"], **style)
            row[2].plot(s["K"], s["collision_rate"], **style)
        name = f"{'CD-BFL' if task == 'cdbfl' else 'consensus'}, phy={phy}"
        row[0].set(ylabel="time to target / links", title=f"{name}: seconds")
        row[1].set(ylabel="bits to target / links", title=f"{name}: bits")
        row[2].set(ylabel="collisions / receptions", title=f"{name}: collisions")
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
    parser.add_argument("--phys", default="80211b,ideal",
                        help="comma list of phy (the 802.11 timing of the shared medium)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per task (default: 3 consensus, 2 CD-BFL)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--figure", default=str(ROOT / "docs" / "figures" / "d2d_medium.png"))
    parser.add_argument("--tasks", default="consensus,cdbfl")
    parser.add_argument("--ideal-runs", action="append", default=[], metavar="TASK=PATH",
                        help="a task's rows at phy=ideal from a sweep stored before the "
                             "phy axis (a d2d_medium_TASK_runs.parquet without a phy "
                             "column: phy=ideal reproduces those rows bit for bit), added "
                             "to the task's sweep (repeatable)")
    parser.add_argument("--docs-tables", default=None,
                        help="also write the summary and the sweeps' rows into this "
                             "directory (default: docs/tables, where the docs read them, "
                             "except with --quick; '': nowhere)")
    args = parser.parse_args()
    out = Path(args.out)
    tasks = args.tasks.split(",")
    if not args.summary_only:
        for task in tasks:
            sweep(task, out, args.K, args.phys, args.seeds, args.workers, args.quick)
    tables = {task: finished(out / task) for task in tasks
              if (out / task / "manifest.jsonl").exists()}
    for pair in args.ideal_runs:
        task, path = pair.split("=", 1)
        earlier = pd.read_parquet(path)
        if "phy" in earlier:
            parser.error(f"--ideal-runs: {path} has a phy column already")
        tables[task] = pd.concat([tables[task], earlier.assign(phy="ideal")],
                                 ignore_index=True)
    summary = pd.concat([summarise(table, task) for task, table in tables.items()],
                        ignore_index=True)
    summary.to_csv(out / "summary.csv", index=False)
    stored = args.docs_tables if args.docs_tables is not None else \
        ("" if args.quick else str(DOCS_TABLES))
    if stored:
        store(summary, tables, Path(stored))
    table = docs_table(summary)
    text = markdown(table)
    (out / "summary.md").write_text(text)
    print(text)
    figure(table, Path(args.figure))
    print(f"wrote {out / 'summary.csv'}, {out / 'summary.md'}, {args.figure}"
          + (f" and the tables in {stored}" if stored else ""))


if __name__ == "__main__":
    main()
