"""Learn once, unlearn many, through the command line (each command in its own process):
one saved state; a sweep of three forget variants from it; one figure from the three
per-variant tables; a load that changes a learning setting refused in one line; a load
that repeats no setting is the load that repeats them all, and the run that learnt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

NAME = "gfvl-unlearning"
LEARNING = ["--set", "runs=1", "--set", "learn_rounds=30", "--set", "samples=4",
            "--set", "rounds=20", "--set", "eval_every=5"]
SWEEP_COLUMNS = ["forget", "seed", "run_id", "config_hash"]


def bflnet(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``bflnet ARGS`` in a new process, in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", *args, *(
        ["--no-progress"] if args[0] in ("run", "sweep") else [])], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=300)


def ok(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = bflnet(cwd, *args)
    assert done.returncode == 0, done.stderr
    return done


def refused(cwd: Path, *args: str) -> str:
    """The one line a refused command prints (exit code 2, nothing on stdout)."""
    done = bflnet(cwd, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bflnet: error: "), done.stderr
    assert done.stdout == ""
    return lines[0]


def from_request(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a run that learnt which a loading run also has: from the request on."""
    rows = frame[(frame["method"] == "retraining") | (frame["since_request"] >= 0)]
    return rows.reset_index(drop=True)


def test_learn_once_unlearn_many(tmp_path: Path) -> None:
    # learn once (the forget request of this run: the default, the last agent)
    ok(tmp_path, "run", NAME, *LEARNING, "--save-state", "S", "--out", "learnt.csv")
    learnt = pd.read_csv(tmp_path / "learnt.csv")

    # a load that repeats no setting, and one that repeats them all: the same file,
    # the learnt run's rows from the request on, made again by rerun byte for byte
    ok(tmp_path, "run", "--load-state", "S", "--out", "last.csv")
    ok(tmp_path, "run", NAME, *LEARNING, "--load-state", "S", "--out", "repeated.csv")
    for suffix in ("", ".json"):
        assert (tmp_path / f"last.csv{suffix}").read_bytes() == \
            (tmp_path / f"repeated.csv{suffix}").read_bytes()
    last = pd.read_csv(tmp_path / "last.csv")
    assert last.to_csv(index=False) == from_request(learnt).to_csv(index=False)
    record = json.loads((tmp_path / "last.csv.json").read_text())
    assert record["config"]["learn_rounds"] == 30 and record["seed"] == 0
    assert record["load_state"] == str((tmp_path / "S").resolve())
    assert "reproduces last.csv byte for byte" in ok(tmp_path, "rerun", "last.csv").stderr

    # unlearn many: two other forget requests from the same state
    for agent in ("0", "3"):
        ok(tmp_path, "run", "--load-state", "S", "--set", f"forget={agent}", "--out",
           f"agent{agent}.csv")
    tables = {"last": last, **{a: pd.read_csv(tmp_path / f"agent{a}.csv") for a in "03"}}
    unlearning = tables["0"][tables["0"]["method"] == "unlearning"]
    assert unlearning["unlearned_at"].notna().all()
    assert not tables["0"].equals(tables["3"]) and not tables["0"].equals(last)

    # the three variants as one sweep from the state: the same rows as the three runs
    ok(tmp_path, "sweep", "--load-state", "S", "--grid", "forget=last,0,3", "--seeds", "1",
       "--workers", "1", "--out", "variants")
    table = pd.read_parquet(tmp_path / "variants" / "table.parquet")
    assert list(table.columns[:4]) == SWEEP_COLUMNS and set(table["seed"]) == {0}
    assert list(dict.fromkeys(table["forget"])) == ["last", "0", "3"]
    for forget, rows in table.groupby("forget"):
        rows = rows.drop(columns=SWEEP_COLUMNS)
        assert rows.to_csv(index=False) == tables[forget].to_csv(index=False)

    # one figure from the three per-variant tables, one line per file
    done = ok(tmp_path, "plot", "agent0.csv", "agent3.csv", "last.csv", "--y",
              "kl_retrained", "--x", "since_request", "--hue", "file", "--where",
              "method=unlearning", "--out", "variants.png")
    assert (tmp_path / "variants.png").stat().st_size > 1000 and "warning" not in done.stderr

    # a load that changes a learning setting: one line naming it, nothing written
    line = refused(tmp_path, "run", "--load-state", "S", "--set", "learn_rounds=31",
                   "--out", "no.csv")
    assert line.startswith("bflnet: error: learn_rounds: ")
    assert "saved with learn_rounds=30, this run sets learn_rounds=31" in line
    assert not (tmp_path / "no.csv").exists()
    line = refused(tmp_path, "sweep", "--load-state", "S", "--grid", "samples=4,5",
                   "--out", "no")
    assert line.startswith("bflnet: error: samples: ") and not (tmp_path / "no").exists()
    line = refused(tmp_path, "sweep", "--load-state", "S", "--grid", "forget=0,1",
                   "--seeds", "2", "--out", "no")
    assert "runs the state's seed (0) only" in line and not (tmp_path / "no").exists()
