"""The WFLMC Gaussian figure of docs/reproductions/ota.md: the ``wflmc-gaussian`` table's curves
(the scenario's default plot) beside the paper's two curves, dashed.

    bflnet run wflmc-gaussian --out wflmc.csv          # runs = 100, the paper's
    python scripts/plot_wflmc_gaussian.py wflmc.csv --figure docs/figures/wflmc_gaussian.png \\
        --summary docs/tables/wflmc_gaussian.csv

``--summary`` stores ``bflnet summarize`` of the table (one row per method and SNR: W2²,
the exact W2² of noiseless Langevin's chain, the noise ratios, devices heard and
energy), where the numbers of docs/reproductions/ota.md are read from
(tests/test_doc_numbers.py).

The paper's values (Liu and Simeone, "Wireless Federated Langevin Monte Carlo: Repurposing
Channel Noise for Bayesian Sampling and Privacy", the Gaussian experiment without the
privacy constraint, and noiseless Langevin Monte Carlo) are read from the authors' figure
file and rounded to two digits, as in the docs' table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """``bflnet summarize`` of a ``wflmc-gaussian`` table: per method and SNR, the
    :data:`SUMMARY` columns (one run each: its value, as ``COLUMN_last_mean``)."""
    import bflnet

    return bflnet.summarize(frame, last=SUMMARY, by=["method", "snr_db"])


def figure(frame: pd.DataFrame, runs: int | None = None):
    """The scenario's default plot with the paper's curves added (and the run count, when
    known, in the title)."""
    from bflnet.runs.registry import get_scenario

    fig = get_scenario("wflmc-gaussian").plot(frame)
    ax = fig.axes[0]
    ax.semilogy(PAPER_SNR_DB, PAPER_W2, "--", color="0.35", label="paper, without DP")
    ax.semilogy(PAPER_SNR_DB, [PAPER_NOISELESS_W2] * len(PAPER_SNR_DB), ":", color="0.35",
                label="paper, noiseless LMC")
    if runs is not None:
        ax.set_title(f"{ax.get_title()} ({int(runs)} runs)")
    ax.legend(fontsize=8)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", help="a `bflnet run wflmc-gaussian` table (.csv or .parquet)")
    parser.add_argument("--figure", default="out/wflmc_gaussian.png", help="PNG to write")
    parser.add_argument("--summary", help="also store the summary here (.csv)")
    args = parser.parse_args()
    path = Path(args.table)
    if not path.is_file():
        parser.error(f"table: {path} is not a file")
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    sidecar = path.with_name(path.name + ".json")  # the run's record: its settings
    runs = json.loads(sidecar.read_text())["config"].get("runs") if sidecar.is_file() else None
    out = Path(args.figure)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure(frame, runs).savefig(out, dpi=110)
    print(f"wrote {out}")
    if args.summary:
        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        summary(frame).to_csv(args.summary, index=False)
        print(f"wrote {args.summary}")


if __name__ == "__main__":
    main()
