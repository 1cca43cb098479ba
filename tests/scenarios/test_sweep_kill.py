"""Kill -9 a sweep half way, run the same command again: nothing finished is recomputed
or lost, and the table equals that of a sweep that was never interrupted."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd

from bflnet.scenarios.sweep import load_manifest, sweep_paths

# 2 sizes x 3 seeds; each run takes about a second (ring, 2000 gossip rounds)
ARGS = ["sweep", "consensus-averaging", "--grid", "K=16,20", "--set", "rounds=2000",
        "--seeds", "3", "--workers", "2", "--no-progress"]
TOTAL = 6


def command(out):
    return [sys.executable, "-m", "bflnet.scenarios.cli", *ARGS, "--out", str(out)]


def parts(out):
    """(inode, mtime) of every finished part: a recomputed part is a new file."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sweep_paths(out).runs.glob("*.parquet")}


def kill_after_first_part(out, timeout=60.0):
    """Start the sweep in its own process group; SIGKILL the whole group (driver and Dask
    workers) as soon as a first run is persisted."""
    process = subprocess.Popen(command(out), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while not sweep_paths(out).runs.exists() or not parts(out):
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "no run finished in time"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    return process.returncode


def test_killed_sweep_resumes_without_recomputing_or_losing_runs(tmp_path):
    out = tmp_path / "killed"
    assert kill_after_first_part(out) == -signal.SIGKILL
    before = parts(out)
    assert 1 <= len(before) < TOTAL
    resumed = subprocess.run(command(out), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TOTAL - len(before)} computed, {len(before)} already done, 0 failed" \
        in resumed.stderr
    after = parts(out)
    assert len(after) == TOTAL
    assert all(after[name] == stamp for name, stamp in before.items())  # not recomputed
    manifest = load_manifest(out)
    assert len(manifest) == TOTAL and set(manifest["status"]) == {"ok"}
    reference = tmp_path / "reference"
    whole = subprocess.run(command(reference), capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0, whole.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"),
                                  pd.read_parquet(reference / "table.parquet"))
