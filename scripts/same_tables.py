"""Do the scenarios give the same tables as at another commit?

Runs a fixed set of scenario calls (short settings, seed 3; the torch scenarios with
1500-3000 evaluation rows) with the code of ``REV`` (a temporary ``git worktree``) and
with the working tree, and compares the DataFrames column for column (wall-clock columns
aside). A table whose old columns are all equal and that only gained columns is reported
as "same, plus new columns: ..." (that is an intended schema change, not a changed
result). Exit status 1 when any differs.

    .venv/bin/python scripts/same_tables.py 6cdcd5e
    .venv/bin/python scripts/same_tables.py HEAD --cases emtdamp,emtdamp-boston
    .venv/bin/python scripts/same_tables.py 9a320c3 --cases emtdamp --set dtype=float64

``--set KEY=VALUE`` (repeatable) adds a setting to every case run, on both sides (e.g. to
pin a setting whose default changed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CASES: dict[str, tuple[str, dict]] = {
    "sparsifiers": ("dsvgd-sparsifiers", {"per_agent": 100, "eval_size": 3000,
                                          "local_iters": 2, "iterations": 6,
                                          "eval_every": 3}),
    "vs-fedavg": ("dsvgd-vs-fedavg", {"per_agent": 100, "eval_size": 3000, "local_iters": 2,
                                      "iterations": 6, "eval_every": 3, "particles": "5"}),
    "forget": ("forget-svgd", {"pretrain_rounds": 3, "learn_iterations": 4,
                               "unlearn_iterations": 4, "scratch_iterations": 4,
                               "eval_every": 2, "local_iters": 2}),
    "shift": ("cdbfl-shift", {"rounds": 6, "burn_in": 3, "thin": 1, "eval_every": 3,
                              "eval_size": 1500}),
    # the paper's LeNet, with evaluation sets large enough to split into sub-batches
    "shift-lenet": ("cdbfl-shift", {"model": "lenet-2.7m", "rounds": 4, "burn_in": 2,
                                    "thin": 1, "eval_every": 2, "eval_size": 40,
                                    "shift_size": 40}),
    "local-steps": ("cdbfl-local-steps", {"rounds": 4, "burn_in": 2, "eval_every": 2}),
    "gfvl": ("gfvl-beta-bernoulli", {}),
    "cover": ("cover-time", {"runs": 50}),
    "consensus": ("consensus-averaging", {}),
    "unlearning": ("unlearning-latency", {}),
    "gfvl-unlearning": ("gfvl-unlearning", {}),
    "emtdamp": ("emtdamp", {"rounds": 6}),
    "emtdamp-boston": ("emtdamp-boston", {"data": "synthetic", "rounds": 4}),
    "emtdamp-fashion": ("emtdamp-mnist", {"dataset": "fashion-mnist", "rounds": 2,
                                          "per_agent": 200, "eval_size": 300}),
    "ota-langevin": ("ota-langevin", {"rounds": 6, "burn_in": 3, "eval_every": 3,
                                      "snr_db": "0,30", "methods": ",".join(
                                          ("wfald", "digital", "fald", "ota-fedavg",
                                           "fedavg"))}),
    "async-fedavg": ("async-fedavg", {"duration_s": 4.0, "eval_size": 300}),
    "mobile-gossip": ("mobile-gossip", {"duration_s": 5.0}),
    # the shared medium's default phy is 80211b (it was ideal): against a revision from
    # before that, the two d2d-medium cases differ on purpose; --set phy=ideal gives the
    # old tables (on both sides: for revisions that have the setting)
    "d2d-medium": ("d2d-medium", {"tasks": "consensus", "rounds": 5}),
    # its default tasks (CD-BFL and consensus) under every MAC, on short runs
    "d2d-medium-cdbfl": ("d2d-medium", {"rounds": 4, "burn_in": 2, "eval_every": 2,
                                        "eval_size": 100}),
    "churn-gfvl": ("churn-gfvl", {"runs": 2}),
    "churn-gfvl-forget": ("churn-gfvl", {"runs": 2, "keep_state": False}),
    "gfvl-exponential": ("gfvl-beta-exponential", {"runs": 2, "rounds": 100,
                                                   "eval_every": 10}),
    # the original code's variant: c = 0, S draws per point, agent-skewed data
    "gfvl-exponential-points": ("gfvl-beta-exponential", {
        "runs": 1, "rounds": 40, "eval_every": 10, "local_steps_values": "1,10",
        "baseline": "0", "reinforce_draws": "per-point", "data": "agent-skewed"}),
    "wflmc": ("wflmc-gaussian", {"runs": 4, "rounds": 20, "burn_in": 10}),
    "wflmc-placed": ("wflmc-gaussian", {"runs": 3, "rounds": 10, "burn_in": 5,
                                        "snr_db": "10,30", "placement": "square",
                                        "local_steps": 2}),
    "custom-learner": ("custom-learner", {}),
    "custom-learner-server": ("custom-learner", {"protocol": "parameter-server",
                                                 "rounds": 20}),
    "custom-learner-gossip": ("custom-learner", {"protocol": "gossip", "rounds": 20}),
}


def run_cases(out: Path, names: list[str], extra: dict[str, str] | None = None) -> None:
    """Write each case's table to ``out/<case>.pkl`` (run in the code under test), with
    the settings ``extra`` added to every case."""
    try:
        from bflnet.runs.config import parse_overrides
        from bflnet.runs.registry import get_scenario, run_scenario
    except ImportError:  # a commit from before the run machinery had a package of its own
        from bflnet.scenarios.config import parse_overrides
        from bflnet.scenarios.registry import get_scenario, run_scenario

    pairs = [f"{key}={value}" for key, value in (extra or {}).items()]
    for name in names:
        scenario, overrides = CASES[name]
        typed = parse_overrides(get_scenario(scenario).config_cls, pairs)  # as --set does
        frame = run_scenario(scenario, {**overrides, **typed}, seed=3)
        frame.to_pickle(out / f"{name}.pkl")
        print(f"  {name}", flush=True)


def run_with(src: Path, out: Path, names: list[str], settings: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    extra = [arg for pair in settings for arg in ("--set", pair)]
    subprocess.run([sys.executable, __file__, "--cases-into", str(out), "--cases",
                    ",".join(names), *extra], env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", help="the commit to compare with")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma list of the cases to run (default: all)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting added to every case (repeatable)")
    parser.add_argument("--cases-into", help=argparse.SUPPRESS)
    args = parser.parse_args()
    bad = [pair for pair in args.set if "=" not in pair or not pair.split("=", 1)[0]]
    if bad:
        parser.error(f"--set: must be KEY=VALUE, got {bad[0]!r}")
    extra = dict(pair.split("=", 1) for pair in args.set)
    names = [n.strip() for n in args.cases.split(",")]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; known: {', '.join(CASES)}")
    if args.cases_into:
        run_cases(Path(args.cases_into), names, extra)
        return
    if not args.rev:
        parser.error("give the commit to compare with")
    with tempfile.TemporaryDirectory() as tmp:
        old, new, tree = Path(tmp, "old"), Path(tmp, "new"), Path(tmp, "tree")
        old.mkdir()
        new.mkdir()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                        str(tree), args.rev], check=True)
        try:
            print(f"at {args.rev}:")
            run_with(tree / "src", old, names, args.set)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tree)], check=True)
        print("working tree:")
        run_with(ROOT / "src", new, names, args.set)
        differ = []
        for name in names:
            a, b = pd.read_pickle(old / f"{name}.pkl"), pd.read_pickle(new / f"{name}.pkl")
            wall = [c for c in a.columns if "wall" in c]
            a, b = a.drop(columns=wall), b.drop(columns=wall, errors="ignore")
            added = [c for c in b.columns if c not in a.columns]
            if a.equals(b):
                print(f"{name:12s} same")
            elif added and set(a.columns) <= set(b.columns) and a.equals(b[list(a.columns)]):
                # every old column is equal; only columns were added (e.g. a schema change)
                print(f"{name:12s} same, plus new columns: {', '.join(added)}")
            else:
                print(f"{name:12s} DIFFERENT")
                differ.append(name)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
