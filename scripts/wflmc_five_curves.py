"""The five curves of the WFLMC Gaussian figure (docs/reproductions/ota.md): noiseless
Langevin, over-the-air Langevin without the privacy constraint, with the optimised and the
equal power allocation under (ε, δ) = (15, 0.01), and noiseless Langevin with the same
privacy, as squared W2 to the posterior against SNR, mean ± sd over seeds, beside the
paper's curves.

    python scripts/wflmc_five_curves.py --run 5 --jobs 2 --out-dir out/wflmc_five \\
        --figure docs/figures/wflmc_five_curves.png --summary docs/tables/wflmc_five_curves.csv

``--run N`` first runs ``bflnet run wflmc-gaussian`` (100 runs each, the default) for the
seeds 0..N-1, ``--jobs`` at once, into ``--out-dir``, and says how long it took; without
it, give the tables (one per seed, each with its ``.json`` record) as arguments.
``--summary`` stores ``bflnet summarize`` of the tables over their seeds (one row per
method and SNR: W2², the noise ratios, devices heard, energy and the ε spent, as mean, sd
and median over the seeds), where the numbers of the docs are read from
(tests/test_doc_numbers.py).

The paper's values (Liu and Simeone, "Wireless Federated Langevin Monte Carlo: Repurposing
Channel Noise for Bayesian Sampling and Privacy", Gaussian experiment) are read from the
authors' figure file ``MultiSample_Gaussian/SNR/MultiSample_SNR.fig`` and rounded to two
digits.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
from plot_wflmc_gaussian import render  # the script beside this one

#: The methods, in the figure's order, and their labels.
METHODS = {"noiseless": "noiseless Langevin", "wflmc": "WFLMC without DP",
           "wflmc-opt-dp": "WFLMC, optimised PA with DP",
           "wflmc-equal-dp": "WFLMC, equal PA with DP", "noiseless-dp": "noiseless with DP"}
STYLES = {"noiseless": ":*", "wflmc": "-o", "wflmc-opt-dp": "-^", "wflmc-equal-dp": "--v",
          "noiseless-dp": ":d"}
#: SNR (dB) of the paper's curves.
PAPER_SNR_DB = (5, 10, 15, 20, 25, 30, 35, 40)
#: The paper's squared W2 per method and SNR (the authors' figure file).
PAPER_W2 = {
    "noiseless": (1.8e-4,) * 8,
    "wflmc": (9.3e-3, 1.9e-3, 3.1e-4, 2.0e-4, 1.9e-4, 1.9e-4, 1.9e-4, 1.9e-4),
    "wflmc-opt-dp": (9.4e-3, 3.3e-3, 1.2e-3, 1.1e-3, 1.0e-3, 1.0e-3, 1.0e-3, 1.0e-3),
    "wflmc-equal-dp": (9.5e-3, 3.5e-3, 2.9e-3, 2.7e-3, 2.6e-3, 2.5e-3, 2.5e-3, 2.5e-3),
    "noiseless-dp": (1.0e-3,) * 8,
}
#: The columns of the table the summary keeps.
SUMMARY = ["w2", "w2_exact", "channel_noise_ratio", "added_noise_ratio", "k_active_mean",
           "energy_j", "epsilon_spent"]


def run_seeds(seeds: int, jobs: int, out_dir: Path) -> list[str]:
    """``bflnet run wflmc-gaussian`` with the five methods for seeds 0..seeds-1, ``jobs``
    at once (one BLAS thread each); the tables' paths."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(seed: int) -> str:
        out = out_dir / f"five_s{seed}.csv"
        subprocess.run([sys.executable, "-m", "bflnet.cli", "run", "wflmc-gaussian",
                        "--seed", str(seed), "--threads", "1", "--no-progress",
                        "--set", "methods=" + ",".join(METHODS), "--out", str(out)],
                       check=True)
        return str(out)

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, range(seeds)))


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """``bflnet summarize`` per method and SNR over the seeds (``COLUMN_last_mean``,
    ``_sd``, ``_median``)."""
    import bflnet

    return bflnet.summarize(frame, last=SUMMARY, by=["method", "snr_db"],
                            run_by=["seed", "method", "snr_db"])


def figure(frame: pd.DataFrame, runs: int | None):
    """Ours (mean ± sd over the seeds) in colour, the paper's in grey with the same
    markers."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, 6.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    seeds = frame["seed"].nunique()
    stats = frame.groupby(["method", "snr_db"])["w2"].agg(["mean", "std"]).reset_index()
    for method, label in METHODS.items():
        rows = stats[stats["method"] == method]
        if rows.empty:
            continue
        line, = ax.semilogy(rows["snr_db"], rows["mean"], STYLES[method], label=label, ms=5)
        ax.errorbar(rows["snr_db"], rows["mean"], yerr=rows["std"], fmt="none",
                    ecolor=line.get_color(), capsize=2, lw=0.8)
        ax.semilogy(PAPER_SNR_DB, PAPER_W2[method], STYLES[method], color="0.6", lw=0.9,
                    ms=4, mfc="none", label=f"paper: {label}")
    per = f"{runs} runs, " if runs else ""
    ax.set(xlabel="SNR (dB)", ylabel="squared 2-Wasserstein distance to the posterior",
           title=f"WFLMC with (ε, δ) = (15, 0.01) ({per}mean ± sd over {seeds} seeds; "
                 "grey: the paper)")
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="*", help="`bflnet run wflmc-gaussian` tables with "
                        "the five methods, one per seed")
    parser.add_argument("--run", type=int, default=0, help="first run this many seeds")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once (--run)")
    parser.add_argument("--out-dir", default="out/wflmc_five", help="tables of --run")
    parser.add_argument("--figure", default="out/wflmc_five_curves.png", help="PNG to write")
    parser.add_argument("--summary", help="also store the summary here (.csv)")
    args = parser.parse_args()
    if args.run < 0 or args.jobs < 1:
        parser.error("--run: must be >= 0 and --jobs >= 1")
    tables = list(args.tables)
    if args.run:
        started = time.monotonic()
        tables += run_seeds(args.run, args.jobs, Path(args.out_dir))
        print(f"ran {args.run} seeds in {time.monotonic() - started:.0f} s")
    if not tables:
        parser.error("tables: give the tables or --run")
    render(parser, tables, args.figure, args.summary, figure, summary)


if __name__ == "__main__":
    main()
