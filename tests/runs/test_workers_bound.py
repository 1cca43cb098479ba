"""``--workers`` is bounded by what this machine can start: ``bflnet sweep`` and ``bflnet
rerun`` (and ``bflnet.sweep``) refuse more local worker processes than
:func:`bflnet.runs.sweep.max_workers` in one line within a second, before any cluster
starts or anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import bflnet
from bflnet.runs.output import write_parquet
from bflnet.runs.provenance import sweep_record
from bflnet.runs.sweep import MAX_WORKERS, WORKERS_PER_CPU, check_workers, max_workers
from bflnet.runtime.threads import available_cpus

SRC = str(Path(bflnet.__file__).resolve().parents[1])
#: Imports the command line (its start-up), then times the command alone.
TIMED = ("import sys, time\n"
         "import bflnet.cli.app, bflnet.runs.sweep, bflnet.runs.rerun\n"
         "from bflnet.cli.main import main\n"
         "start = time.monotonic()\n"
         "code = main(sys.argv[1:])\n"
         "print(time.monotonic() - start)\n"
         "sys.exit(code)\n")
#: Seconds the command may take after start-up.
ANSWER_S = 1.0
#: A hang fails the test, not the suite.
TIMEOUT_S = 120


def timed_cli(argv: list[str], cwd: Path) -> tuple[int, str, float]:
    """Exit code, stderr and the seconds the command took after its imports."""
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    done = subprocess.run([sys.executable, "-c", TIMED, *argv], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=TIMEOUT_S)
    return done.returncode, done.stderr, float(done.stdout.strip() or "inf")


def sweep_table(path: Path) -> Path:
    """A sweep's table (its record only matters: the check comes before the run)."""
    record = sweep_record("consensus-averaging", {"K": [4, 5]}, {"rounds": 3}, [0])
    write_parquet(pd.DataFrame({"K": [4, 5], "seed": [0, 0]}), path, record)
    return path


def test_the_bound_is_a_small_multiple_of_the_cpus_with_a_cap():
    assert max_workers() == min(MAX_WORKERS, WORKERS_PER_CPU * available_cpus()) >= 1
    assert check_workers(1) == 1 and check_workers(max_workers()) == max_workers()
    for bad in (0, -1, max_workers() + 1, 100_000, 10**400, 2.0, "2", True, None):
        with pytest.raises(ValueError, match=r"^workers: must be an integer >= 1 and <= ") \
                as caught:
            check_workers(bad)
        assert "\n" not in str(caught.value) and "per CPU" in str(caught.value)


@pytest.mark.parametrize("command", ["sweep", "rerun"])
@pytest.mark.parametrize("workers", ["100000", str(max_workers() + 1), "0"])
def test_too_many_workers_answer_in_one_line_within_a_second(command, workers, tmp_path):
    if command == "sweep":
        argv = ["sweep", "consensus-averaging", "--grid", "K=4,5", "--set", "rounds=3",
                "--out", "never-written", "--workers", workers, "--no-progress"]
    else:
        table = sweep_table(tmp_path / "table.parquet")
        argv = ["rerun", str(table), "--out", "never-written.parquet", "--workers", workers,
                "--no-progress"]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err, seconds = timed_cli(argv, tmp_path)
    assert code == 2, err
    assert err.startswith("bflnet: error: workers: must be an integer >= 1 and <= ")
    assert err.count("\n") == 1 and f"got {workers}" in err
    assert seconds < ANSWER_S, seconds
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_the_python_api_checks_workers_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="workers: must be an integer >= 1 and <= "):
        bflnet.sweep("consensus-averaging", {"K": [4]}, tmp_path / "s", workers=100_000)
    assert not (tmp_path / "s").exists()
