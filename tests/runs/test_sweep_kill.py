"""Interrupted sweeps. Kill -9 a sweep half way, or Ctrl-C / SIGTERM it (to the driver or,
as a terminal does, to its whole process group), then run the same command again: nothing
finished is recomputed or lost, and the table equals that of a sweep never interrupted.
An interrupt stops the sweep within seconds with one line and leaves no worker or
temporary file behind; ``bflnet run`` also ends with one line. The loss of a worker
loses nothing either."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bflnet.runs.sweep import (
    load_manifest,
    part_problem,
    plan_sweep,
    sweep,
    sweep_paths,
)

# 2 sizes x 3 seeds; `rounds` makes each run last about a second, long enough to interrupt
NAME, GRID, FIXED, SEEDS = "consensus-averaging", {"K": [16, 20]}, {"rounds": 2000}, 3
ARGS = ["sweep", NAME, "--grid", "K=16,20", "--set", "rounds=2000", "--seeds", str(SEEDS),
        "--workers", "2", "--no-progress"]
TOTAL = 6
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The same sweep, never interrupted."""
    return sweep(NAME, GRID, SEEDS, tmp_path_factory.mktemp("ref") / "sweep", fixed=FIXED,
                 workers=2, progress=False)


def command(out):
    return [sys.executable, "-m", "bflnet.cli", *ARGS, "--out", str(out)]


def kill_after_first_part(out, timeout=90.0):
    """Start the sweep in its own process group; SIGKILL the whole group (driver and Dask
    workers) as soon as a first run is persisted."""
    process = subprocess.Popen(command(out), start_new_session=True, env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while not sweep_paths(out).runs.exists() or not stamps(out):
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "no run finished in time"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    return process.returncode


def test_killed_sweep_resumes_without_recomputing_or_losing_runs(tmp_path, reference):
    out = tmp_path / "killed"
    assert kill_after_first_part(out) == -signal.SIGKILL
    before = stamps(out)
    assert 1 <= len(before) < TOTAL
    resumed = subprocess.run(command(out), capture_output=True, text=True, timeout=120,
                             env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TOTAL - len(before)} computed, {len(before)} already done, 0 failed" \
        in resumed.stderr
    after = stamps(out)
    assert len(after) == TOTAL
    assert all(after[name] == stamp for name, stamp in before.items())  # not recomputed
    manifest = load_manifest(out)
    assert len(manifest) == TOTAL and set(manifest["status"]) == {"ok"}
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"), reference)


def stamps(out):
    """(inode, mtime) of every finished part: a recomputed part is a new file."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sweep_paths(out).runs.glob("*.parquet")}


def live_processes(session, timeout=10.0):
    """Processes of the session other than zombies (exited, waiting to be reaped), once
    none is left or after ``timeout`` s (the resource tracker exits just after its parent)."""
    deadline = time.monotonic() + timeout
    while True:
        listing = subprocess.run(["ps", "-s", str(session), "-o", "stat=,pid=,args="],
                                 capture_output=True, text=True).stdout
        live = [line for line in listing.splitlines() if line.strip() and
                not line.strip().startswith("Z")]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)


#: Loaded by every child started with :func:`start` (``sitecustomize``): SIGUSR1 dumps
#: the Python stack of every thread to stderr, so that a child that does not stop says
#: where it is stuck (:func:`signal_and_wait`).
STACK_ON_SIGUSR1 = "import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1)\n"


def start(argv, site=None):
    """The command line in a session of its own; with ``site`` (a directory), its
    ``sitecustomize`` installs :data:`STACK_ON_SIGUSR1`."""
    env = ENV
    if site is not None:
        (site / "sitecustomize.py").write_text(STACK_ON_SIGUSR1)
        env = {**ENV, "PYTHONPATH": os.pathsep.join([str(site), ENV["PYTHONPATH"]])}
    return subprocess.Popen([sys.executable, "-m", "bflnet.cli", *argv],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for(condition, process, what, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, f"{what} did not happen in time"
        time.sleep(0.02)


def signal_and_wait(process, signum, group):
    """Send ``signum`` to the process (or its whole group, as a terminal does); the
    seconds it took to exit, and its stderr. SIGKILL after 30 s, so a failure cannot hang
    (a child started with a ``site`` first gets SIGUSR1: its stack is in the stderr)."""
    sent = time.monotonic()
    (os.killpg if group else os.kill)(process.pid, signum)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGUSR1)
        time.sleep(1.0)
        os.killpg(process.pid, signal.SIGKILL)
        _, err = process.communicate()
    return time.monotonic() - sent, err


@pytest.mark.parametrize(("signum", "group", "code"), [
    (signal.SIGINT, True, 130),    # Ctrl-C in a terminal: driver and workers get it
    (signal.SIGINT, False, 130),   # kill -INT <driver>
    (signal.SIGTERM, True, 143),   # kill -TERM -<group>
])
def test_interrupted_sweep_stops_keeps_its_parts_and_resumes(tmp_path, reference, signum,
                                                             group, code):
    out = tmp_path / "sweep"
    process = start([*ARGS, "--out", str(out)])
    wait_for(lambda: sweep_paths(out).runs.is_dir() and stamps(out), process,
             "a first finished run")
    finished = stamps(out)
    seconds, err = signal_and_wait(process, signum, group)
    assert process.returncode == code, err
    assert seconds < 5, f"stopped after {seconds:.1f} s"
    assert err.count("\n") == 1 and err.startswith("bflnet: sweep interrupted: "), err
    kept = stamps(out)
    assert f"{len(kept)} of {TOTAL} runs are kept" in err and "run the same sweep again" in err
    assert 1 <= len(kept) < TOTAL
    assert all(kept[name] == stamp for name, stamp in finished.items())  # intact
    plan = plan_sweep(NAME, GRID, SEEDS, FIXED)
    for run in plan.runs:  # every part on disk is whole
        part = sweep_paths(out).part(run.run_id)
        assert not part.exists() or part_problem(plan, run, part, None) is None
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert not (out / "table.parquet").exists()
    assert live_processes(process.pid) == []  # no worker left behind
    if signum != signal.SIGINT or not group:
        return
    resumed = subprocess.run(command(out), capture_output=True, text=True, timeout=120,
                             env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TOTAL - len(kept)} computed, {len(kept)} already done, 0 failed" \
        in resumed.stderr
    after = stamps(out)
    assert len(after) == TOTAL and all(after[n] == s for n, s in kept.items())
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"), reference)


def catches_sigterm(pid):
    """Whether the process has installed its SIGTERM handler (bflnet's main has started)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_run_ends_with_one_line(tmp_path, signum, code):
    """The handlers are there from the entry point's first line: the signal comes during
    the imports or the set-up on a loaded machine, during the rounds on an idle one."""
    site, results = tmp_path / "site", tmp_path / "results"
    site.mkdir()
    results.mkdir()
    out = results / "long.csv"  # a run of minutes, cut short
    process = start(["run", NAME, "--set", "K=50", "--set", "rounds=2000000", "--no-progress",
                     "--out", str(out)], site)
    wait_for(lambda: catches_sigterm(process.pid), process, "bflnet's start")
    time.sleep(0.5)
    seconds, err = signal_and_wait(process, signum, group=True)
    assert process.returncode == code, err
    assert seconds < 5, f"stopped after {seconds:.1f} s: {err}"
    assert err == f"bflnet: interrupted ({signal.Signals(signum).name})\n"
    assert list(results.iterdir()) == []  # nothing written, nothing half-written


def worker_pids(driver):
    """The driver's local worker processes."""
    import psutil

    return [child.pid for child in psutil.Process(driver).children()
            if "bflnet.runtime.worker_pool" in " ".join(child.cmdline())]


def test_a_killed_worker_loses_nothing(tmp_path, reference):
    """kill -9 of one worker process mid-sweep: its run is done again elsewhere, the table
    is that of an undisturbed sweep."""
    out = tmp_path / "sweep"
    process = start([*ARGS, "--out", str(out)])
    wait_for(lambda: sweep_paths(out).runs.is_dir() and stamps(out), process,
             "a first finished run")
    workers = worker_pids(process.pid)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    try:
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, err
    assert f"{TOTAL} runs: {TOTAL} computed, 0 already done, 0 failed" in err
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"), reference)
