"""The G-FVL experiments under the original code's settings.

Agent-skewed data (agent i's points have means t ~ Beta(K + 1 − i, i)), REINFORCE with S
draws per data point and the paper's baseline c = 0:

1. Fig. 4: KL(q ‖ posterior) after 1000 / 5000 / 20000 total local steps L·i for L = 1
   and L = 50 (``gfvl-beta-exponential``);
2. Fig. 5: iterative unlearning of agent 10 (id 9), the forgetting agent keeping the token
   until its ``unlearn_visits`` visits are done: KL(q ‖ retrained posterior) when it
   hands the token on (the plateau), beside retraining from scratch (``gfvl-unlearning``).

Mean ± standard error over ``RUNS`` runs each. Writes ``out/gfvl-original/*.csv`` and
``summary-fig4-fig5.txt`` (``summary-fig4.txt`` with ``--only fig4``); the numbers are
quoted in docs/reproductions/gfvl.md.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_gfvl_original.py   # ~20 min
    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_gfvl_original.py --quick
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bflnet.runs.registry import get_scenario

ROOT = Path(__file__).resolve().parents[1]
RUNS = 30
ORIGINAL = {"data": "agent-skewed", "reinforce_draws": "per-point", "baseline": "0"}
FIG4 = {**ORIGINAL, "runs": RUNS, "local_steps_values": "1,50", "rounds": 20_000,
        "eval_every": 1000}
FIG5 = {**ORIGINAL, "runs": RUNS, "unlearning": "iterative", "unlearn_schedule": "hold-token",
        "unlearn_visits": 1000, "learn_rounds": 2000, "rounds": 1100,
        "eval_every": 25}
QUICK = {"fig4": {"runs": 3, "rounds": 1000}, "fig5": {"runs": 3, "learn_rounds": 200,
                                                         "unlearn_visits": 50,
                                                         "rounds": 100}}


def mean_se(values: pd.Series) -> str:
    v = values.dropna()
    return f"{v.mean():.3g} ± {v.std() / math.sqrt(len(v)):.2g} (n={len(v)})"


def run(name: str, overrides: dict, seed: int, say) -> pd.DataFrame:
    start = time.perf_counter()
    scenario = get_scenario(name)
    frame = scenario.run(scenario.config(overrides), seed=seed, progress=True)
    say(f"[bflnet run {name} " + " ".join(f"--set {k}={v}" for k, v in overrides.items())
        + f" --seed {seed}: {time.perf_counter() - start:.0f} s]")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fig4-steps", type=int, default=20_000,
                        help="total local steps of the Fig. 4 part (20000: ~20 min)")
    parser.add_argument("--only", choices=("fig4", "fig5"), action="append",
                        help="run only these parts (repeatable; default: both)")
    args = parser.parse_args()
    parts = set(args.only or ("fig4", "fig5"))
    out = ROOT / "out" / ("gfvl-original-quick" if args.quick else "gfvl-original")
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    if "fig5" in parts:
        fig5 = run("gfvl-unlearning", {**FIG5, **(QUICK["fig5"] if args.quick else {})},
                   args.seed, say)
        fig5.to_csv(out / "fig5_original.csv", index=False)
        unl = fig5[fig5.method == "unlearning"]
        plateau = []
        for _, r in unl.groupby("run"):
            done = r.unlearned_at.iloc[0]
            # the last evaluation while it holds the token (only it updates meanwhile)
            held = r[r.since_request <= done] if np.isfinite(done) else r.iloc[0:0]
            plateau.append(held.kl_retrained.iloc[-1] if len(held) else np.nan)
        before = unl[unl.since_request == 0].kl_retrained
        last = fig5.since_request.max()
        retrain = fig5[(fig5.method == "retraining") & (fig5.since_request == last)].kl_retrained
        lat = unl.groupby("run").unlearned_at.first()
        say("Fig. 5 (iterative unlearning, hold-token): KL(q ‖ retrained posterior), mean ± s.e.")
        say(f"  at the request: {mean_se(before)}")
        say(f"  when the forgetting agent hands the token on (plateau): "
            f"{mean_se(pd.Series(plateau))}; at slot {mean_se(lat)} after the request")
        say(f"  retraining from scratch after {last} rounds: {mean_se(retrain)}")
    if "fig4" in parts:
        fig4 = run("gfvl-beta-exponential", {**FIG4, "rounds": args.fig4_steps,
                    **(QUICK["fig4"] if args.quick else {})},
                   args.seed, say)
        fig4.to_csv(out / "fig4_original.csv", index=False)
        say("Fig. 4 (agent-skewed, per-point draws, c = 0): KL(q ‖ posterior), mean ± s.e.")
        for steps in (1000, 5000, 20_000):
            rows = fig4[fig4.total_local_iterations == steps]
            if len(rows):
                say(f"  L·i = {steps:6d}: " + "; ".join(
                    f"L={L} {mean_se(r.kl)}" for L, r in rows.groupby("L")))

    (out / f"summary-{'-'.join(sorted(parts))}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
