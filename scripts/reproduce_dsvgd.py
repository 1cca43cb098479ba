"""Reduced-scale reproductions of the compressed-DSVGD letter's Figs. 3-5 with bflnet.

Runs the scenarios ``dsvgd-sparsifiers`` (Fig. 3), ``dsvgd-vs-fedavg`` (Fig. 4) and
``forget-svgd`` (Fig. 5) for several seeds, two worker processes at a time (one torch
thread each), and writes

* ``out/dsvgd/parts/*.csv``: one table per (job, seed); a part on disk is not re-run, so a
  killed run resumes (``parts/timings.txt`` keeps each job's seconds);
* ``out/dsvgd/fig3.csv``, ``fig4.csv``, ``fig5.csv``: the parts of each figure together;
* ``out/dsvgd/*.png`` and, with ``--figures DIR`` (e.g. the tracked ``docs/figures``),
  small copies (dpi 100) there;
* ``out/dsvgd/summary.txt``: the numbers quoted in docs/reproductions/dsvgd.md.

    .venv/bin/python scripts/reproduce_dsvgd.py              # the documented settings
    .venv/bin/python scripts/reproduce_dsvgd.py --quick      # smoke test into out/dsvgd-quick
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from parts_runner import pm, run_parts, seed_of

ROOT = Path(__file__).resolve().parents[1]

#: Settings shared by Figs. 3 and 4 (reduced: N_k = 600, 2000 test examples, L = 10).
VISION = {"points_per_agent": 600, "eval_size": 2000, "local_steps": 10, "step_size": 0.001}
# (step_size 0.001 and fedavg_lr 0.2 are the scenario defaults, repeated here for the record;
# the first reproduction used 0.005, whose per-visit AdaGrad jitter made DSVGD decline)
FIG3 = {**VISION, "rounds": 1000, "eval_every": 25}
FIG4 = {**VISION, "particles": "5,10", "rounds": 1000, "eval_every": 100,
        "fedavg_lr": 0.2}
#: Fig. 4 at the letter's data scale: N_k = 6000 examples per agent, all 10 000 test images.
FIG4_FULL = {**FIG4, "points_per_agent": 6000, "eval_size": 10_000}
#: Fig. 5 at the scenario's defaults: DSVGD learning phase (20 iterations), then compressed
#: Forget-SVGD with the constant SVGD step (L = 10, step 0.001), stopped once the forgetting
#: agents' own training accuracy is <= 10 % (at most 100 iterations); scratch 200.
FIG5 = {"learn_rounds": 20, "unlearn_rounds": 100, "scratch_rounds": 200,
        "eval_every": 5, "rate_multiples": "1,0.5"}
#: The letter's AdaGrad (fresh each visit; step 0.003, L = 50), no stop: 100 iterations.
FIG5A = {**FIG5, "step_rule": "adagrad", "step_size": 0.003, "local_steps": 50,
         "forget_stop_accuracy": None}
#: As FIG5A without the learning phase: unlearning from the particles around the
#: pre-trained last layer (AdaGrad's learning phase lowers the accuracy on this split).
FIG5B = {**FIG5A, "learn_rounds": 0}
#: Constant step without a stop, evaluated at every iteration: from the pre-trained last
#: layer (C) and after the learning phase (D), to show what happens after the stop point.
FIG5C = {**FIG5, "learn_rounds": 0, "forget_stop_accuracy": None, "eval_every": 1}
FIG5D = {**FIG5C, "learn_rounds": FIG5["learn_rounds"]}
QUICK = {
    "fig3": {"points_per_agent": 100, "eval_size": 300, "local_steps": 2, "rounds": 20,
             "eval_every": 10},
    "fig4": {"points_per_agent": 100, "eval_size": 300, "local_steps": 2, "particles": "5,10",
             "rounds": 20, "eval_every": 10},
    "fig5": {"pretrain_rounds": 5, "learn_rounds": 20, "unlearn_rounds": 10,
             "scratch_rounds": 20, "eval_every": 5, "rate_multiples": "1,0.5",
             "local_steps": 5},
}
QUICK["fig5a"] = {**QUICK["fig5"], "step_rule": "adagrad", "step_size": 0.003,
                  "forget_stop_accuracy": None}
QUICK["fig5b"] = {**QUICK["fig5a"], "learn_rounds": 0}
QUICK["fig5c"] = {**QUICK["fig5"], "learn_rounds": 0, "forget_stop_accuracy": None}
QUICK["fig5d"] = {**QUICK["fig5c"], "learn_rounds": 20}
FIG5_VARIANTS = {"fig5": FIG5, "fig5a": FIG5A, "fig5b": FIG5B, "fig5c": FIG5C, "fig5d": FIG5D}


@dataclass(frozen=True)
class Job:
    """One scenario call: ``figure`` it belongs to, scenario ``name``, overrides, seed."""

    figure: str
    name: str
    tag: str
    overrides: dict[str, Any] = field(hash=False)
    seed: int

    @property
    def part(self) -> str:
        return f"{self.figure}-{self.tag}-s{self.seed}.csv"


def jobs(seeds: int, quick: bool) -> list[Job]:
    """Every job, longest first (Fig. 4 is split by rate to balance the two workers)."""
    fig3 = QUICK["fig3"] if quick else FIG3
    fig4 = QUICK["fig4"] if quick else FIG4
    fig4full = QUICK["fig4"] if quick else FIG4_FULL
    out: list[Job] = []
    for seed in range(seeds):
        for rate in ("1", "5"):
            out.append(Job("fig4", "dsvgd-vs-fedavg", f"R{rate}",
                           {**fig4, "rate_multiples": rate}, seed))
            if not quick:  # (quick: the same settings as fig4)
                out.append(Job("fig4full", "dsvgd-vs-fedavg", f"R{rate}",
                               {**fig4full, "rate_multiples": rate}, seed))
    out += [Job("fig3", "dsvgd-sparsifiers", "all", fig3, s) for s in range(seeds)]
    for name, settings in FIG5_VARIANTS.items():
        overrides = QUICK[name] if quick else settings
        out += [Job(name, "forget-svgd", "all", overrides, s) for s in range(seeds)]
    return out


def execute(job: Job) -> tuple[Job, pd.DataFrame, float]:
    """Run one job in a worker (one torch thread, set by the scenario's ``threads``)."""
    from bflnet.scenarios import run_scenario

    start = time.perf_counter()
    frame = run_scenario(job.name, job.overrides, seed=job.seed)
    return job, frame, time.perf_counter() - start


# --------------------------------------------------------------------------- summaries


def at_iteration(frame: pd.DataFrame, iteration: int) -> pd.DataFrame:
    """Each run's last evaluated row at or before ``iteration``."""
    rows = frame.dropna(subset=["accuracy"])
    rows = rows[rows["iteration"] <= iteration]
    return rows.loc[rows.groupby("run_id", sort=False)["iteration"].idxmax()]


def summarise_fig3(frame: pd.DataFrame, lines: list[str]) -> None:
    last = int(frame["iteration"].max())
    lines.append(f"## Fig. 3: sparsifiers at R_u = d, N_p = 10 ({last} iterations)")
    checkpoints = sorted({50, 100, 200, 500, last} & set(frame.dropna(subset=["accuracy"])
                                                  ["iteration"]))
    for it in checkpoints:
        rows = at_iteration(frame, it)
        for sp, group in rows.groupby("sparsifier"):
            lines.append(f"iter {it:4d} {sp:13s} acc {pm(group['accuracy'])}  "
                         f"ece {pm(group['ece'])}")
    rows = at_iteration(frame, last).assign(seed=lambda f: seed_of(f))
    ranks = []
    for _, group in rows.groupby("seed"):
        ranks.append(" > ".join(group.sort_values("accuracy", ascending=False)["sparsifier"]))
    lines.append("ranking by final accuracy, per seed: " + "; ".join(ranks))
    ranks = []
    for _, group in rows.groupby("seed"):
        ranks.append(" < ".join(group.sort_values("ece")["sparsifier"]))
    lines.append("ranking by final ECE (best first), per seed: " + "; ".join(ranks))
    auc = frame.dropna(subset=["accuracy"]).groupby(["sparsifier", "run_id"])["accuracy"] \
        .mean().groupby("sparsifier").mean()
    lines.append("mean accuracy over all evaluations (area under the curve): "
                 + ", ".join(f"{k} {v:.3f}" for k, v in auc.items()))
    k = frame.groupby("sparsifier")[["k", "groups", "message_bits", "budget_bits"]].first()
    lines.append("codec per sparsifier: " + "; ".join(
        f"{s}: k={int(r.k)}, {int(r.groups)} pattern(s), {int(r.message_bits)} of "
        f"{int(r.budget_bits)} bits" for s, r in k.iterrows()))
    lines.append("")


def summarise_fig4(frame: pd.DataFrame, lines: list[str]) -> None:
    last = int(frame["iteration"].max())
    lines.append(f"## Fig. 4: DSVGD vs FedAvg after {last} rounds")
    rows = at_iteration(frame, last)
    for (method, n_p, rate), group in rows.groupby(["method", "n_particles", "rate_multiple"]):
        first = group.iloc[0]
        lines.append(f"{method:6s} N_p={n_p:2d} R_u={rate:g}d (k={int(first['k'])}, "
                     f"{int(first['groups'])} pattern(s)): acc {pm(group['accuracy'])}  "
                     f"ece {pm(group['ece'])}  nll {pm(group['nll'])}")
    evaluated = frame.dropna(subset=["accuracy"])
    for (method, n_p, rate), group in evaluated.groupby(["method", "n_particles",
                                                         "rate_multiple"]):
        best = group.loc[group.groupby("run_id")["accuracy"].idxmax()]
        lines.append(f"{method:6s} N_p={n_p:2d} R_u={rate:g}d best accuracy on the way "
                     f"{pm(best['accuracy'])} at iterations {best['iteration'].tolist()}, "
                     f"ECE there {pm(best['ece'])}")
    lines.append("")


def first_at(rows: pd.DataFrame, mask: pd.Series) -> float:
    hit = rows[mask]
    return float(hit["since_request"].iloc[0]) if len(hit) else float("nan")


def summarise_fig5(frame: pd.DataFrame, lines: list[str]) -> None:
    lines.append("## Fig. 5: Forget-SVGD of labels 2 and 9")
    rows = frame.dropna(subset=["acc_unlearned"]).assign(seed=lambda f: seed_of(f))
    learn = rows[rows["method"] == "learning"]
    pre = learn.loc[learn.groupby("seed")["iteration"].idxmax()].set_index("seed")
    lines.append(f"pre-trained MLP (FedAvg) accuracy {pm(pre['pretrain_accuracy'])}")
    lines.append(f"before the request: acc(2, 9) {pm(pre['acc_unlearned'])}, "
                 f"acc(rest) {pm(pre['acc_remaining'])}, accuracy {pm(pre['accuracy'])}")
    for (rate, frac), group in rows[rows["method"] != "learning"].groupby(
            ["rate_multiple", "sharing_fraction"]):
        first = group.iloc[0]
        lines.append(f"R_u = {rate:g}d, alpha = {frac:g} (k = {int(first['k'])} per particle, "
                     f"{int(first['message_bits'])} of {int(first['budget_bits'])} bits):")
        stats: dict[str, list[float]] = {"t_forget": [], "t_scratch": [], "t_scratch_rest": []}
        finals = []
        for seed, runs in group.groupby("seed"):
            fg = runs[runs["method"] == "forget-svgd"].sort_values("since_request")
            sc = runs[runs["method"] == "scratch"].sort_values("since_request")
            target = pre.loc[seed, "acc_remaining"] - 0.05
            ok = (fg["acc_unlearned"] < 0.10) & (fg["acc_remaining"] >= target)
            t_fg = first_at(fg, ok)
            t_sc = first_at(sc, sc["acc_remaining"] >= target)
            stats["t_forget"].append(t_fg)
            stats["t_scratch"].append(t_sc)
            below = fg[fg["acc_unlearned"] < 0.10]
            stats["t_scratch_rest"].append(
                (float(below["since_request"].iloc[0]), round(float(
                    below["acc_remaining"].iloc[0]), 3)) if len(below) else None)
            end = fg.iloc[-1]
            finals.append({"fg_end": end["since_request"],
                           "fg_unl": end["acc_unlearned"], "fg_rest": end["acc_remaining"],
                           "drop": pre.loc[seed, "acc_remaining"] - end["acc_remaining"],
                           "sc_unl": sc.iloc[-1]["acc_unlearned"],
                           "sc_rest": sc.iloc[-1]["acc_remaining"],
                           "sc_best_rest": sc["acc_remaining"].max(),
                           "fg_min_unl": fg["acc_unlearned"].min()})
        f = pd.DataFrame(finals)
        sc_iters = int(group[group['method'] == 'scratch']['since_request'].max())
        lines.append(f"  Forget-SVGD ran {[int(v) for v in f['fg_end']]} iterations (per "
                     f"seed); at its last: acc(2, 9) {pm(f['fg_unl'])}, "
                     f"acc(rest) {pm(f['fg_rest'])}, drop of acc(rest) {pm(f['drop'])}, "
                     f"lowest acc(2, 9) on the way {pm(f['fg_min_unl'])}")
        lines.append(f"  scratch after {sc_iters} it: acc(2, 9) {pm(f['sc_unl'])}, "
                     f"acc(rest) {pm(f['sc_rest'])}, best acc(rest) on the way "
                     f"{pm(f['sc_best_rest'])}")
        lines.append(f"  Forget-SVGD: (first iteration with acc(2, 9) < 10 %, acc(rest) "
                     f"there), per seed: {stats['t_scratch_rest']}")
        lines.append(f"  first iteration with acc(2, 9) < 10 % and acc(rest) >= pre - 5 pts "
                     f"(Forget-SVGD), per seed: {stats['t_forget']}")
        lines.append(f"  first iteration with acc(rest) >= pre - 5 pts (scratch), per seed: "
                     f"{stats['t_scratch']}")
    lines.append("")


# --------------------------------------------------------------------------- plots


def new_figure(ncols: int, width: float = 9.0, height: float = 3.4) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def mean_band(ax: Any, rows: pd.DataFrame, x: str, y: str, label: str, **style: Any) -> None:
    """Mean over runs of ``y`` against ``x`` with the min-max band."""
    wide = rows.pivot_table(index=x, columns="run_id", values=y)
    (line,) = ax.plot(wide.index, wide.mean(axis=1), label=label, **style)
    if wide.shape[1] > 1:
        ax.fill_between(wide.index, wide.min(axis=1), wide.max(axis=1),
                        color=line.get_color(), alpha=0.2, linewidth=0)


def plot_fig3(frame: pd.DataFrame) -> Figure:
    fig, axes = new_figure(2)
    rows = frame.dropna(subset=["accuracy"])
    for sp, group in rows.groupby("sparsifier"):
        frac = group["sharing_fraction"].iloc[0]
        label = f"{sp} (α={frac:g})" if sp == "alpha-shared" else sp
        mean_band(axes[0], group, "iteration", "accuracy", label)
        mean_band(axes[1], group, "iteration", "ece", label)
    axes[0].set(xlabel="iteration", ylabel="test accuracy")
    axes[1].set(xlabel="iteration", ylabel="ECE")
    axes[0].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle("Fig. 3: compressed DSVGD, R_u = d, N_p = 10 (mean, min-max over seeds)",
                 fontsize=10)
    return fig


def plot_fig4(frame: pd.DataFrame) -> Figure:
    fig, axes = new_figure(1, 6.0, 4.2)
    ax = axes[0]
    rows = at_iteration(frame, int(frame["iteration"].max()))
    stats = rows.groupby(["method", "n_particles", "rate_multiple"])[["accuracy", "ece"]] \
        .agg(["mean", "std"]).reset_index()
    for (method, n_p), group in stats.groupby(["method", "n_particles"]):
        label = "FedAvg" if method == "fedavg" else f"DSVGD N_p={n_p}"
        ax.errorbar(group[("ece", "mean")], group[("accuracy", "mean")],
                    xerr=group[("ece", "std")], yerr=group[("accuracy", "std")],
                    marker="o" if method == "dsvgd" else "s", capsize=3, label=label)
        for _, r in group.iterrows():
            ax.annotate(f"{r[('rate_multiple', '')]:g}d",
                        (r[("ece", "mean")], r[("accuracy", "mean")]), fontsize=8,
                        xytext=(4, 4), textcoords="offset points")
    last = int(frame["iteration"].max())
    ax.set(xlabel="ECE", ylabel="test accuracy",
           title=f"Fig. 4: after {last} iterations (mean ± std over seeds)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def plot_fig5(frame: pd.DataFrame) -> Figure:
    """Left: Forget-SVGD, one line per (R_u, seed), ``x`` where the run stopped (runs stop
    at different iterations, so a mean over seeds would mix runs); right: from scratch,
    mean and min-max band over seeds."""
    fig, axes = new_figure(2)
    rows = frame.dropna(subset=["acc_unlearned"]).assign(seed=lambda f: seed_of(f))
    colours = {}
    for (rate, frac, seed), run in rows[rows["method"] == "forget-svgd"].groupby(
            ["rate_multiple", "sharing_fraction", "seed"]):
        colour = colours.setdefault((rate, frac), f"C{len(colours)}")
        tag = f"R_u={rate:g}d, α={frac:g}"
        first = seed == rows["seed"].min()
        for column, style, what in (("acc_unlearned", "-", "labels 2, 9"),
                                    ("acc_remaining", "--", "other labels")):
            axes[0].plot(run["since_request"], run[column], linestyle=style, color=colour,
                         linewidth=1.0, label=f"{what} ({tag})" if first else None)
            axes[0].plot(run["since_request"].iloc[-1], run[column].iloc[-1], "x",
                         color=colour)
    for (rate, frac), group in rows[rows["method"] == "scratch"].groupby(
            ["rate_multiple", "sharing_fraction"]):
        tag = f"R_u={rate:g}d, α={frac:g}"
        mean_band(axes[1], group, "since_request", "acc_unlearned", f"labels 2, 9 ({tag})")
        mean_band(axes[1], group, "since_request", "acc_remaining", f"other labels ({tag})",
                  linestyle="--")
    for ax, title in zip(axes, ("Forget-SVGD (agents 8, 9), per seed; x: last iteration",
                                "last layer from scratch without agents 8, 9 (mean, "
                                "min-max)"), strict=True):
        ax.axhline(0.1, color="grey", linewidth=0.8, linestyle=":")
        ax.set(xlabel="iterations since the request", ylabel="test accuracy", title=title,
               ylim=(-0.02, 1.0))
        ax.title.set_fontsize(9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 5: accuracy of unlearned vs remaining labels", fontsize=10)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    parser.add_argument("--figures", type=Path, help="also write small copies of the figures "
                        "here (e.g. docs/figures, the ones the docs show); default: only out/")
    parser.add_argument("--seeds", type=int, help="seeds 0 .. SEEDS-1 (default 3; --quick: 1)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("fig3", "fig4", "fig4full", *FIG5_VARIANTS),
                        action="append", help="run only these figures (repeatable)")
    args = parser.parse_args()
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    out = ROOT / ("out/dsvgd-quick" if args.quick else "out/dsvgd")
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    todo = [j for j in jobs(args.seeds, args.quick) if not args.only or j.figure in args.only]
    start = time.perf_counter()
    elapsed = run_parts(todo, parts, args.workers, execute)
    wall = time.perf_counter() - start
    lines = [f"# compressed-DSVGD reproductions ({'quick' if args.quick else 'reduced'}); "
             f"wall {wall:.0f} s for {len(elapsed)} new jobs, "
             f"{sum(elapsed.values()):.0f} s of job time", ""]
    figures = {"fig3": (summarise_fig3, plot_fig3), "fig4": (summarise_fig4, plot_fig4),
               "fig4full": (summarise_fig4, plot_fig4),
               **{name: (summarise_fig5, plot_fig5) for name in FIG5_VARIANTS}}
    for name, (summarise, plot) in figures.items():
        files = sorted(parts.glob(f"{name}-*.csv"))
        if not files:
            continue
        frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        frame.to_csv(out / f"{name}.csv", index=False)
        lines.append(f"### {name}: {len(files)} part(s)")
        summarise(frame, lines)
        fig = plot(frame)
        fig.savefig(out / f"dsvgd_{name}.png", dpi=150)
        if args.figures is not None:
            args.figures.mkdir(parents=True, exist_ok=True)
            fig.savefig(args.figures / f"dsvgd_{name}.png", dpi=100)
    timings = parts / "timings.txt"
    if timings.exists():
        lines.append("seconds per job (one worker, one torch thread; last run of each): "
                     + ", ".join(sorted({ln.split()[0]: ln for ln in
                                         timings.read_text().splitlines()}.values())))
    text = "\n".join(lines)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    np.seterr(all="ignore")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
