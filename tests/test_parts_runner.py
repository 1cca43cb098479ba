"""The reproduction scripts' job runner: damaged parts are run again, saying so, and
Ctrl-C stops the workers at once with one line, keeping the parts written."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "src"), str(ROOT / "scripts"), os.environ.get("PYTHONPATH", "")])}

# each job sums `work` squares (about a second for 3e6 on this machine)
SCRIPT = textwrap.dedent("""
    import sys, time
    from dataclasses import dataclass
    from pathlib import Path
    import pandas as pd
    from parts_runner import run_parts

    @dataclass(frozen=True)
    class Job:
        part: str
        work: int

    def execute(job):
        start = time.perf_counter()
        total = sum(i * i for i in range(job.work))
        frame = pd.DataFrame({"part": [job.part] * 3, "total": [total] * 3})
        return job, frame, time.perf_counter() - start

    if __name__ == "__main__":
        parts, work, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        parts.mkdir(exist_ok=True)
        run_parts([Job(f"job{i}.csv", work) for i in range(count)], parts, 2, execute)
""")


def start(tmp_path, work, count):
    script = tmp_path / "jobs.py"
    script.write_text(SCRIPT)
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "parts"), str(work),
                             str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV, start_new_session=True)


def test_damaged_parts_are_run_again_and_sound_ones_kept(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    good = pd.DataFrame({"part": ["job0.csv"] * 3, "total": [0] * 3})
    good.to_csv(parts / "job0.csv", index=False)
    (parts / "job1.csv").write_text("")  # created, never written
    (parts / "job2.csv").write_bytes(b"\x00\xff\x89PNG\r\n" + os.urandom(200))  # binary
    (parts / "job3.csv").write_text("part,total\n")  # a header only
    (parts / ".job4.csv.123.tmp").write_text("part,to")  # left by a kill while writing
    stamp = (parts / "job0.csv").stat().st_mtime_ns
    process = start(tmp_path, 10, 5)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    lines = out.splitlines()
    damaged = [line for line in lines if "is damaged" in line]
    assert [line.split()[1] for line in damaged] == ["job1.csv", "job2.csv", "job3.csv"]
    assert all(line.endswith("running it again") for line in damaged)
    assert "1 of 5 parts on disk; running 4" in lines
    assert (parts / "job0.csv").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in parts.iterdir()) == [
        *(f"job{i}.csv" for i in range(5)), "timings.txt"]
    for i in range(1, 5):
        assert pd.read_csv(parts / f"job{i}.csv")["total"].tolist() == [285] * 3  # 0²+…+9²


def test_ctrl_c_stops_the_workers_at_once_and_keeps_the_parts(tmp_path):
    parts = tmp_path / "parts"
    process = start(tmp_path, 3_000_000, 8)
    deadline = time.monotonic() + 90
    while not (parts.is_dir() and any(parts.glob("job*.csv"))):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no part in time"
        time.sleep(0.02)
    sent = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: script and workers
    try:
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert time.monotonic() - sent < 5
    kept = sorted(parts.glob("job*.csv"))
    assert err == (f"interrupted: {len(kept)} of 8 parts are on disk; run the same command "
                   f"again to run the other {8 - len(kept)}\n")
    assert 1 <= len(kept) < 8 and all(len(pd.read_csv(p)) == 3 for p in kept)
    assert not list(parts.glob(".*.tmp"))
    assert running(process.pid) == []  # no worker left


def running(session, timeout=10.0):
    """The session's processes that have not exited, once there are none or after
    ``timeout`` s (the resource tracker exits just after its parent)."""
    deadline = time.monotonic() + timeout
    while True:
        listing = subprocess.run(["ps", "-s", str(session), "-o", "stat=,args="],
                                 capture_output=True, text=True).stdout.splitlines()
        live = [line for line in listing if line.strip() and not line.strip().startswith("Z")]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)
