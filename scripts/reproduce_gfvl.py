"""Reproduce the G-FVL paper's Figs. 3-5 and its unlearning latencies with bflnet.

Runs the four G-FVL scenarios at their defaults, plus two variants: Fig. 4 with the
paper's REINFORCE baseline c = 0, and Fig. 3 long enough for every run to reach the exact
posterior (for the convergence iterations). Writes the tables to ``out/gfvl/*.csv``, the
figures to ``out/gfvl/*.png`` (with ``--figures DIR`` also to ``DIR``, e.g. the tracked
``docs/figures``, dpi 100), and prints the numbers
quoted in ``docs/reproductions/gfvl.md`` (also saved to ``out/gfvl/summary.txt``).

    .venv/bin/python scripts/reproduce_gfvl.py            # 200 s of CPU: ~3.5 min on an idle core
    .venv/bin/python scripts/reproduce_gfvl.py --quick    # tiny settings into out/gfvl-quick
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bflnet.analysis.plots import save_figure
from bflnet.runs.registry import get_scenario
from bflnet.scenarios.gfvl.beta_exponential import default_plot as fig4_plot
from bflnet.scenarios.gfvl.common import with_run_id

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "gfvl"
QUICK_OUT = ROOT / "out" / "gfvl-quick"
DPI = 100
#: Where tables go (first) and figures go (all); set by ``main``.
DIRS: list[Path] = [OUT]

QUICK: dict[str, dict[str, Any]] = {
    "gfvl-beta-bernoulli": {"runs": 3},
    "fig3-convergence": {"runs": 20, "rounds": 2000},
    "gfvl-beta-exponential": {"runs": 2, "rounds": 500},
    "gfvl-unlearning": {"runs": 2, "learn_rounds": 500, "rounds": 300},
    "unlearning-latency": {"runs": 100},
}


class Report:
    """Prints lines and keeps them for ``summary.txt``."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)


def run(name: str, overrides: Mapping[str, Any], seed: int, say: Report,
        stops_early: bool = False) -> pd.DataFrame:
    """One scenario run. ``stops_early``: the runs end at ``stop_kl`` long before
    ``rounds``, so the memory check (which must assume every run takes all ``rounds``:
    30 GB for the convergence study) is skipped; the rows kept are a few MB."""
    scenario = get_scenario(name)
    config = scenario.config(overrides)
    start = time.perf_counter()
    frame = (scenario.run_fn(config, seed=seed, progress=True) if stops_early
             else scenario.run(config, seed=seed, progress=True))
    say(f"[{name} {dict(overrides)} seed={seed}: {len(frame)} rows in "
        f"{time.perf_counter() - start:.1f} s]")
    return frame


def save(frame: pd.DataFrame | None, stem: str, figure: Any = None) -> None:
    """The table to ``DIRS[0]/stem.csv``, the figure to ``gfvl_stem.png`` in every dir."""
    if frame is not None:
        DIRS[0].mkdir(parents=True, exist_ok=True)
        frame.to_csv(DIRS[0] / f"{stem}.csv", index=False)
    if figure is not None:
        for folder in DIRS:
            save_figure(figure, folder / f"gfvl_{stem}.png", dpi=DPI)


def at(frame: pd.DataFrame, x: str, y: str, hue: str, points: list[float],
       stat: Callable[[pd.Series], float] = pd.Series.median) -> pd.DataFrame:
    """``stat`` over runs of ``y`` at the rows where ``x`` equals each of ``points``."""
    rows = frame[frame[x].isin(points)]
    return rows.groupby([x, hue])[y].agg(stat).unstack(hue)


def value_at_time(frame: pd.DataFrame, keys: list[str], t: float, y: str) -> pd.Series:
    """Per run: ``y`` at the last evaluation with ``time_s <= t``."""
    rows = frame[frame.time_s <= t].sort_values("time_s")
    return rows.groupby(keys)[y].last()


def fig3(seed: int, quick: bool, say: Report) -> None:
    name = "gfvl-beta-bernoulli"
    frame = run(name, QUICK[name] if quick else {}, seed, say)
    save(frame, "fig3_beta_bernoulli", get_scenario(name).plot(frame))
    say("Fig. 3: median KL(q ‖ posterior) over runs, by iteration")
    table = at(frame, "iteration", "kl", "graph", [0, 5, 10, 20, 30, 45, 60])
    say(table.to_string(float_format="{:.3g}".format))
    last = frame[frame.iteration == frame.iteration.max()]
    say("runs exact (kl < 1e-10) at the last iteration: "
        + ", ".join(f"{g} {np.mean(r.kl < 1e-10):.0%}" for g, r in last.groupby("graph")))
    long = QUICK["fig3-convergence"] if quick else {"runs": 1000, "rounds": 5000}
    conv = run(name, {**long, "stop_kl": 1e-10}, seed + 1, say, stops_early=True)
    per_run = conv.groupby(["graph", "run"]).agg(
        iterations=("iteration", "max"), kl=("kl", "last"),
        theory=("theory_cover_iterations", "first"), time_s=("time_s", "max"),
        bits=("cum_bits", "max")).reset_index()
    save(per_run, "fig3_convergence_per_run")
    say(f"Iterations until kl < 1e-10 ({long['runs']} runs per graph, 1-based) vs the exact "
        "expected cover slot:")
    for graph, r in per_run.groupby("graph"):
        ok = r[r.kl < 1e-10]
        se = ok.iterations.std() / math.sqrt(len(ok))
        say(f"  {graph:9s} {ok.iterations.mean():7.2f} ± {se:.2f} (theory "
            f"{r.theory.iloc[0]:.2f}); {ok.time_s.mean():.3f} s, {ok.bits.mean():.0f} bits; "
            f"{len(ok)}/{len(r)} converged")


def fig4(seed: int, quick: bool, say: Report) -> None:
    name = "gfvl-beta-exponential"
    base = QUICK[name] if quick else {}
    for baseline, stem in (("loo", "fig4_beta_exponential"), ("0", "fig4_beta_exponential_c0")):
        frame = run(name, {**base, "baseline": baseline}, seed, say)
        figures = (get_scenario(name).plot(frame), fig4_plot(frame, x="time_s"))
        for fig in figures:
            fig.axes[0].set_title(f"G-FVL, beta-exponential (Fig. 4), c = {baseline}")
        save(frame, stem, figures[0])
        save(None, f"{stem}_time", figures[1])
        top = int(frame.total_local_iterations.max())
        points = [p for p in (0, 500, 1000, 2000, 3000, 5000) if p <= top]
        say(f"Fig. 4, baseline c = {baseline}: median KL over runs by total local iterations "
            f"L·i (25 %-75 % in brackets for the last)")
        say(at(frame, "total_local_iterations", "kl", "L", points).to_string(
            float_format="{:.3g}".format))
        last = frame[frame.total_local_iterations == top].groupby("L").kl
        say("  at the end: " + ", ".join(
            f"L={L} [{q.quantile(0.25):.3g}, {q.quantile(0.75):.3g}]" for L, q in last))
        horizon = frame.groupby("L").time_s.max().min()
        kl_t = value_at_time(frame, ["L", "run"], horizon, "kl").groupby("L").median()
        say(f"  median KL at t = {horizon:.2f} s (when the fastest L ends): " + ", ".join(
            f"L={L} {v:.3g}" for L, v in kl_t.items()))
        hit = frame[frame.kl < 0.05].groupby(["L", "run"]).time_s.min().groupby("L")
        say("  median seconds (and share of runs) until KL < 0.05: " + ", ".join(
            f"L={L} {t.median():.2f} s ({len(t)}/{frame.run.nunique()})" for L, t in hit))


def fig5(seed: int, quick: bool, say: Report) -> None:
    name = "gfvl-unlearning"
    frame = run(name, QUICK[name] if quick else {}, seed, say)
    save(frame, "fig5_unlearning", get_scenario(name).plot(frame))
    after = frame[frame.since_request >= 1]
    from bflnet.analysis.plots import plot_metric

    fig = plot_metric(with_run_id(after, ["method"]), "time_since_request_s", "kl_retrained",
                      hue="method", band=0.75, logx=True, logy=True)
    fig.axes[0].set(xlabel="seconds since the forget request",
                    ylabel="KL(q ‖ posterior without the forgotten data)")
    save(None, "fig5_unlearning_time", fig)
    last = int(frame.since_request.max())
    points = [p for p in (0, 1, 5, 10, 20, 50, 100, 500, 1000, 2000, 5000) if p <= last]
    say("Fig. 5: median KL(q ‖ posterior without agent 9) over runs, by iterations since "
        "the request")
    say(at(frame, "since_request", "kl_retrained", "method", points).to_string(
        float_format="{:.3g}".format))
    lat = frame[frame.method == "unlearning"].groupby("run").unlearned_at.first()
    say(f"  unlearning latency (1-based iterations): mean {lat.mean():.2f} over {len(lat)} runs "
        f"(theory 1/K + K - 1 = 9.1), median {lat.median():.0f}, max {lat.max():.0f}")
    ref = frame[(frame.method == "unlearning") & (frame.since_request == min(100, last))]
    target = ref.kl_retrained.median()
    ret = frame[frame.method == "retraining"].groupby("since_request").kl_retrained.median()
    reached = ret[ret <= target]
    say(f"  median KL of unlearning 100 iterations after the request: {target:.3g}; "
        "retraining reaches it after "
        + (f"{reached.index.min()} rounds" if len(reached) else f"more than {last}"))


def latency(seed: int, quick: bool, say: Report) -> None:
    name = "unlearning-latency"
    frame = run(name, QUICK[name] if quick else {}, seed, say)
    save(frame, "unlearning_latency", get_scenario(name).plot(frame))
    n = len(frame)
    say(f"Unlearning latency (complete graph, K = 10, forget agent 9, {n} runs):")
    for what in ("unlearn", "retrain"):
        it = frame[f"{what}_iterations"]
        say(f"  {what:8s} iterations {it.mean():6.2f} ± {it.std() / math.sqrt(n):.2f} "
            f"(theory {frame[f'theory_{what}_iterations'].iloc[0]:.2f}); "
            f"{frame[f'{what}_time_s'].mean() * 1e3:.1f} ms, "
            f"{frame[f'{what}_bits'].mean():.0f} bits")
    say(f"  paper's retraining count (K-2) H_(K-2), +1 for 1-based: "
        f"{frame.paper_retrain_iterations.iloc[0]:.2f}")
    say(f"  runs whose unlearned q is already the retrained posterior (KL < 1e-10): "
        f"{np.mean(frame.unlearn_kl_retrained < 1e-10):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny settings (smoke test)")
    parser.add_argument("--figures", type=Path, help="also write the figures here (e.g. "
                        "docs/figures, the copies the docs show); default: only under out/")
    args = parser.parse_args()
    DIRS[:] = [QUICK_OUT if args.quick else OUT] + ([args.figures] if args.figures else [])
    say = Report()
    start = time.perf_counter()
    for part in (fig3, fig4, fig5, latency):
        part(args.seed, args.quick, say)
        say()
    say(f"total {time.perf_counter() - start:.0f} s; written to "
        + ", ".join(str(d) for d in DIRS))
    (DIRS[0] / "summary.txt").write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
