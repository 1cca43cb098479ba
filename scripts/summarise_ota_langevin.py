"""Summarise ``ota-langevin`` tables of several seeds: mean ± sd at the last round per
method and SNR, the paired WFALD − FALD margins, and a figure of mean ± sd against SNR.

    python scripts/summarise_ota_langevin.py ota_s0.csv ota_s1.csv ... \\
        --figure docs/figures/ota_langevin.png

Each CSV is one ``bflnet run ota-langevin --seed S --out ...`` table (a run may hold only
some methods or SNRs; the seed is read from the ``.json`` written beside it, else from a
``_s<S>`` in the file name).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

METRICS = ("accuracy", "ece", "nll")
IDEAL = ("fald", "fedavg")


def load(paths: list[str]) -> pd.DataFrame:
    """The tables with a ``seed`` column, ideal-link rows kept once per seed and SNR."""
    frames = []
    for p in paths:
        meta = Path(p + ".json")
        seed = None
        if meta.exists():
            seed = json.loads(meta.read_text()).get("seed")
        if seed is None:
            m = re.search(r"_s(\d+)", Path(p).stem)
            seed = int(m.group(1)) if m else 0
        frames.append(pd.read_csv(p).assign(seed=int(seed)))
    frame = pd.concat(frames, ignore_index=True)
    return frame.drop_duplicates(["method", "snr_db", "iteration", "seed"])


def last_round(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds of the last round's metrics and records."""
    last = frame[frame["iteration"] == frame["iteration"].max()]
    ideal = last[last["method"].isin(IDEAL)].drop_duplicates(["method", "seed"])
    rows = pd.concat([last[~last["method"].isin(IDEAL)], ideal.assign(snr_db=float("nan"))])
    cols = [*METRICS, "channel_noise_ratio", "k_active_mean", "time_s", "energy_j"]
    return rows.groupby(["method", "snr_db"], dropna=False)[cols].agg(["mean", "std", "count"])


def margins(frame: pd.DataFrame, method: str = "wfald", ref: str = "fald") -> pd.DataFrame:
    """Per SNR: mean and sd over seeds of the paired difference ``method − ref``."""
    last = frame[frame["iteration"] == frame["iteration"].max()]
    ref_rows = last[last["method"] == ref].drop_duplicates("seed").set_index("seed")
    out = []
    for snr, rows in last[last["method"] == method].groupby("snr_db"):
        diff = rows.set_index("seed")[list(METRICS)] - ref_rows[list(METRICS)]
        diff = diff.dropna()
        out.append({"snr_db": snr, "seeds": len(diff),
                    **{f"{m}_mean": diff[m].mean() for m in METRICS},
                    **{f"{m}_sd": diff[m].std() for m in METRICS}})
    return pd.DataFrame(out)


def figure(frame: pd.DataFrame, path: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    last = frame[frame["iteration"] == frame["iteration"].max()]
    snrs = sorted(last.loc[~last["method"].isin(IDEAL), "snr_db"].unique())
    for method, rows in last.groupby("method", sort=False):
        for ax, metric in zip(axes, METRICS, strict=True):
            if method in IDEAL:
                v = rows.drop_duplicates("seed")[metric]
                ax.axhline(v.mean(), ls="--", lw=1, label=f"{method} (ideal links)",
                           color="k" if method == "fald" else "grey")
                ax.axhspan(v.mean() - v.std(), v.mean() + v.std(), alpha=0.1,
                           color="k" if method == "fald" else "grey")
            else:
                g = rows.groupby("snr_db")[metric]
                ax.errorbar(snrs, g.mean().reindex(snrs), yerr=g.std().reindex(snrs),
                            fmt="-o", capsize=3, label=method)
    for ax, metric in zip(axes, METRICS, strict=True):
        ax.set(xlabel="SNR (dB)", ylabel=metric, title=f"{metric}, last round (mean ± sd)")
        ax.grid(alpha=0.3)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--figure")
    args = parser.parse_args()
    frame = load(args.tables)
    pd.set_option("display.width", 200)
    print(last_round(frame).round(4).to_string())
    print(margins(frame).round(4).to_string())
    if "ota-fedavg" in set(frame["method"]):
        print(margins(frame, "ota-fedavg", "fedavg").round(4).to_string())
    if args.figure:
        figure(frame, args.figure)


if __name__ == "__main__":
    main()
