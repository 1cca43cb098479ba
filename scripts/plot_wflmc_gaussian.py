"""The WFLMC Gaussian figure of docs/reproductions/ota.md: the ``wflmc-gaussian`` tables' curves
(the scenario's default plot of the mean over seeds, with ± one sd over seeds as error
bars) beside the paper's two curves, dashed.

    for s in 0 1 2 3 4; do bflnet run wflmc-gaussian --seed $s --out wflmc_s$s.csv; done
    python scripts/plot_wflmc_gaussian.py wflmc_s*.csv \\
        --figure docs/figures/wflmc_gaussian.png --summary docs/tables/wflmc_gaussian.csv

``--summary`` stores ``bflnet summarize`` of the tables over their seeds (one row per
method and SNR: W2², the exact W2² of noiseless Langevin's chain, the noise ratios,
devices heard and energy, each as mean, sd and median over the seeds), where the numbers
of docs/reproductions/ota.md are read from (tests/test_doc_numbers.py). A table's seed is
read from the ``.json`` record written beside it.

The paper's values (Liu and Simeone, "Wireless Federated Langevin Monte Carlo: Repurposing
Channel Noise for Bayesian Sampling and Privacy", the Gaussian experiment without the
privacy constraint, and noiseless Langevin Monte Carlo) are read from the authors' figure
file and rounded to two digits, as in the docs' table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

#: SNR (dB) of the paper's curve.
PAPER_SNR_DB = (5, 10, 15, 20, 25, 30, 35, 40)
#: The paper's squared 2-Wasserstein distance without the privacy constraint, per SNR.
PAPER_W2 = (9.3e-3, 1.9e-3, 3.1e-4, 2.0e-4, 1.9e-4, 1.9e-4, 1.9e-4, 1.9e-4)
#: The paper's noiseless Langevin Monte Carlo (flat in SNR).
PAPER_NOISELESS_W2 = 1.8e-4


#: The columns of the table the summary keeps.
SUMMARY = ["w2", "w2_exact", "channel_noise_ratio", "added_noise_ratio", "k_active_mean",
           "energy_j"]


def load(paths: list[str]) -> pd.DataFrame:
    """The tables with a ``seed`` column (from each one's ``.json`` record, else 0..n-1)."""
    frames = []
    for i, p in enumerate(paths):
        path = Path(p)
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        sidecar = path.with_name(path.name + ".json")
        seed = json.loads(sidecar.read_text()).get("seed", i) if sidecar.is_file() else i
        frames.append(frame.assign(seed=int(seed)))
    return pd.concat(frames, ignore_index=True)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """``bflnet summarize`` of ``wflmc-gaussian`` tables: per method and SNR, the
    :data:`SUMMARY` columns over the seeds (``COLUMN_last_mean``, ``_sd``, ``_median``)."""
    import bflnet

    run_by = ["seed", "method", "snr_db"] if "seed" in frame else None
    return bflnet.summarize(frame, last=SUMMARY, by=["method", "snr_db"], run_by=run_by)


def figure(frame: pd.DataFrame, runs: int | None = None):
    """The scenario's default plot of the mean over the seeds (± one sd over the seeds as
    error bars when there are several) with the paper's curves added (and the run count,
    when known, in the title)."""
    from bflnet.runs.registry import get_scenario

    seeds = frame["seed"].nunique() if "seed" in frame else 1
    keys = ["method", "snr_db"]
    mean = frame.groupby(keys, sort=False).mean(numeric_only=True).reset_index()
    fig = get_scenario("wflmc-gaussian").plot(mean)
    ax = fig.axes[0]
    if seeds > 1:
        sd = frame.groupby(keys, sort=False)["w2"].std().reset_index()
        for (method, rows), line in zip(mean.groupby("method", sort=False), ax.lines,
                                        strict=False):
            err = sd[sd["method"] == method]["w2"].to_numpy()
            ax.errorbar(rows["snr_db"], rows["w2"], yerr=err, fmt="none",
                        ecolor=line.get_color(), capsize=2, lw=0.8)
    ax.semilogy(PAPER_SNR_DB, PAPER_W2, "--", color="0.35", label="paper, without DP")
    ax.semilogy(PAPER_SNR_DB, [PAPER_NOISELESS_W2] * len(PAPER_SNR_DB), ":", color="0.35",
                label="paper, noiseless LMC")
    if runs is not None:
        per = f", mean ± sd over {seeds} seeds" if seeds > 1 else ""
        ax.set_title(f"{ax.get_title()} ({int(runs)} runs{per})")
    ax.legend(fontsize=8)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+",
                        help="`bflnet run wflmc-gaussian` tables, one per seed (.csv or .parquet)")
    parser.add_argument("--figure", default="out/wflmc_gaussian.png", help="PNG to write")
    parser.add_argument("--summary", help="also store the summary here (.csv)")
    args = parser.parse_args()
    render(parser, args.tables, args.figure, args.summary, figure, summary)


def render(parser: argparse.ArgumentParser, tables: list[str], figure_path: str,
           summary_path: str | None, make_figure: Any, make_summary: Any) -> None:
    """Read ``tables`` (one-line parser errors for missing files), save
    ``make_figure(frame, runs)`` to ``figure_path`` and, if given, ``make_summary(frame)``
    to ``summary_path`` (``runs`` from the first table's ``.json`` record)."""
    for table in tables:
        if not Path(table).is_file():
            parser.error(f"tables: {table} is not a file")
    frame = load(tables)
    sidecar = Path(tables[0] + ".json")  # the run's record: its settings
    runs = json.loads(sidecar.read_text())["config"].get("runs") if sidecar.is_file() else None
    out = Path(figure_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    make_figure(frame, runs).savefig(out, dpi=110)
    print(f"wrote {out}")
    if summary_path:
        Path(summary_path).parent.mkdir(parents=True, exist_ok=True)
        make_summary(frame).to_csv(summary_path, index=False)
        print(f"wrote {summary_path}")


if __name__ == "__main__":
    main()
