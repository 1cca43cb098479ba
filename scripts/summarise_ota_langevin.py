"""Summarise ``ota-langevin`` tables of several seeds with ``bflnet.summarize``: mean ± sd
at the last round per method and SNR, the paired WFALD − FALD and over-the-air FedAvg −
FedAvg margins, and a figure of mean ± sd against SNR.

    python scripts/summarise_ota_langevin.py ota_s0.csv ota_s1.csv ... \\
        --figure docs/figures/ota_langevin.png --summary docs/tables/ota_langevin.csv

``--summary`` stores the summary (one row per reference, method and SNR: the last
round's values, mean, sd and median over the seeds, and their paired differences to the
reference method's, ``fald`` or ``fedavg``), and the tables' rows beside it
(``..._runs.parquet``, with their ``seed``); the numbers of docs/reproductions/ota.md are
read from them (tests/test_doc_numbers.py).

Each CSV is one ``bflnet run ota-langevin --seed S --out ...`` table (a run may hold only
some methods or SNRs; the seed is read from the ``.json`` written beside it, else from a
``_s<S>`` in the file name).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import pandas as pd

METRICS = ("accuracy", "ece", "nll")
IDEAL = ("fald", "fedavg")
#: The columns whose last-round values are summarised.
LAST = [*METRICS, "channel_noise_ratio", "k_active_mean", "time_s", "energy_j"]
#: Summarised beside them but not in the docs' table: the uplink bits (digital only).
EXTRA = ["cum_bits"]


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


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """``bflnet.summarize`` of the last round per method and SNR over the seeds, with the
    paired difference to each ideal-link method (a ``reference`` column: ``fald``, whose
    rows the Bayesian methods are compared with, or ``fedavg``)."""
    import bflnet

    parts = [bflnet.summarize(frame, last=[*LAST, *EXTRA], by=["method", "snr_db"],
                              reference={"method": ref}).assign(reference=ref)
             for ref in IDEAL if ref in set(frame["method"])]
    out = pd.concat(parts, ignore_index=True)
    return out[["reference", *(c for c in out.columns if c != "reference")]]


def last_round(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds of the last round's metrics and records, per method and
    SNR (from :func:`summary`)."""
    rows = table[table["reference"] == table["reference"].iloc[0]]
    columns = {f"{c}_last_{stat}": (c, stat) for c in LAST for stat in ("mean", "sd")}
    out = rows.set_index(["method", "snr_db"])[list(columns)]
    out.columns = pd.MultiIndex.from_tuples(list(columns.values()))
    return out


def margins(table: pd.DataFrame, method: str = "wfald", ref: str = "fald") -> pd.DataFrame:
    """Per SNR: mean and sd over seeds of the paired difference ``method − ref`` (from
    :func:`summary`)."""
    rows = table[(table["reference"] == ref) & (table["method"] == method)]
    out = rows[["snr_db", "runs"]].rename(columns={"runs": "seeds"})
    for m in METRICS:
        for stat in ("mean", "sd"):
            out[f"{m}_{stat}"] = rows[f"{m}_last_diff_to_reference_{stat}"]
    return out.reset_index(drop=True)


#: Line styles of the figure: ``digital-min`` dashed and hollow (it coincides with
#: ``digital`` wherever the channel carries fewer than its target bits).
STYLE = {"digital-min": {"fmt": "--s", "mfc": "none", "ms": 8}}
#: The rows of the docs' table: (SNR, method), the ideal-link methods once.
ROWS = [(None, "fald"), *((snr, m) for snr in (40, 30, 20, 10)
                           for m in ("wfald", "digital", "digital-min")),
        (None, "fedavg"), *((snr, "ota-fedavg") for snr in (40, 30, 20, 10))]


def pm(mean: float, sd: float, sign: bool = False) -> str:
    """``mean ± sd``, the sd to 1 significant digit (2 when it starts with 1) and the mean
    to the same decimal; a zero sd (at 3 significant digits of the mean) is left out, the
    mean then at 3 significant digits (whole above 1000)."""
    plus = "+" if sign and mean > 0 else ""
    if not sd or abs(sd) < abs(mean) * 5e-4:
        text = f"{mean:.0f}" if abs(mean) >= 1000 else f"{mean:.3g}"
        return (plus + text).replace("-", "−")
    digits = 1 - math.floor(math.log10(sd)) + (f"{sd:.1e}".startswith("1") or
                                                 f"{sd:.0e}".startswith("1"))
    places = max(digits - 1, 0)
    text = f"{mean:.{places}f} ± {round(sd, places):.{places}f}"
    return (plus + text).replace("-", "−")


def markdown(table: pd.DataFrame) -> str:
    """The docs' table of the last round (mean ± sd over the seeds) from :func:`summary`."""
    rows = table[table["reference"] == "fald"].set_index(["method", "snr_db"])
    lines = ["| SNR | method | accuracy | ECE | NLL | channel noise / 2η | devices heard | "
             "air time (s) | energy per device |", "| --- " * 9 + "|"]
    for snr, method in ROWS:
        r = rows.loc[(method, float(snr if snr is not None else 10))]
        cells = [pm(r[f"{c}_last_mean"], r[f"{c}_last_sd"]) for c in LAST[:5]]
        if r["k_active_mean_last_mean"] == 0:
            cells[0] += " (never updated)"
        cells += [pm(r[f"{c}_last_mean"], r[f"{c}_last_sd"]) for c in LAST[5:]]
        where = "—" if snr is None else f"{snr} dB"
        name = f"`{method}`" + (" (ideal links)" if method in IDEAL else "")
        lines.append(f"| {where} | {name} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def markdown_margins(table: pd.DataFrame, method: str = "wfald", ref: str = "fald") -> str:
    """The docs' table of the paired differences ``method − ref`` at the last round."""
    rows = table[(table["reference"] == ref) & (table["method"] == method)]
    lines = ["| SNR | accuracy | ECE | NLL |", "| --- | --- | --- | --- |"]
    for r in rows.sort_values("snr_db", ascending=False).itertuples():
        cells = [pm(getattr(r, f"{m}_last_diff_to_reference_mean"),
                    getattr(r, f"{m}_last_diff_to_reference_sd"), sign=True) for m in METRICS]
        lines.append(f"| {r.snr_db:.0f} dB | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def figure(frame: pd.DataFrame, path: str) -> None:
    """Last-round accuracy, ECE and NLL against SNR (mean ± sd over the seeds; the
    ideal-link methods as bands), and each over-the-air or digital method's energy per
    device against SNR."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 4)
    last = frame[frame["iteration"] == frame["iteration"].max()]
    snrs = sorted(last.loc[~last["method"].isin(IDEAL), "snr_db"].unique())
    for method, rows in last.groupby("method", sort=False):
        for ax, metric in zip(axes, METRICS, strict=False):
            if method in IDEAL:
                v = rows.drop_duplicates("seed")[metric]
                ax.axhline(v.mean(), ls="--", lw=1, label=f"{method} (ideal links)",
                           color="k" if method == "fald" else "grey")
                ax.axhspan(v.mean() - v.std(), v.mean() + v.std(), alpha=0.1,
                           color="k" if method == "fald" else "grey")
            else:
                g = rows.groupby("snr_db")[metric]
                ax.errorbar(snrs, g.mean().reindex(snrs), yerr=g.std().reindex(snrs),
                            capsize=3, label=method, **STYLE.get(method, {"fmt": "-o"}))
        if method not in IDEAL:
            g = rows.groupby("snr_db")["energy_j"]
            axes[3].errorbar(snrs, g.mean().reindex(snrs), yerr=g.std().reindex(snrs),
                             capsize=3, label=method, **STYLE.get(method, {"fmt": "-o"}))
    for ax, metric in zip(axes, METRICS, strict=False):
        ax.set(xlabel="SNR (dB)", ylabel=metric, title=f"{metric}, last round (mean ± sd)")
    axes[3].set(xlabel="SNR (dB)", ylabel="energy per device", yscale="log",
                title="energy per device over the run")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--figure")
    parser.add_argument("--summary", help="store the summary here (.csv)")
    args = parser.parse_args()
    frame = load(args.tables)
    table = summary(frame)
    pd.set_option("display.width", 200)
    print(last_round(table).round(4).to_string())
    print(margins(table).round(4).to_string())
    if "ota-fedavg" in set(frame["method"]):
        print(margins(table, "ota-fedavg", "fedavg").round(4).to_string())
    print(markdown(table))
    print(markdown_margins(table))
    if args.summary:
        path = Path(args.summary)
        path.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(path, index=False)
        runs = path.with_name(path.stem + "_runs.parquet")
        frame.to_parquet(runs, compression="zstd", index=False)
        print(f"wrote {path} and {runs}")
    if args.figure:
        figure(frame, args.figure)


if __name__ == "__main__":
    main()
