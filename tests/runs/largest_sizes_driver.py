"""Driver of ``test_largest_sizes``: imports bflnet and its heavy dependencies once, then
runs each case (``bflnet run NAME --set FIELD=VALUE``) in a forked child under an
address-space limit, and prints one JSON line per case: how the child ended (refused,
progress shown, finished, or neither within the wall timeout), its exit code, its stderr
and the CPU seconds it had used when its first progress output appeared.

Usage: ``python largest_sizes_driver.py LIMIT_BYTES WALL_TIMEOUT_S < cases.jsonl``."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import networkx  # noqa: F401  (imported once, before the forks)
import numpy  # noqa: F401
import pandas  # noqa: F401
import scipy.linalg  # noqa: F401
import simpy  # noqa: F401
import torch

import bflnet.scenarios  # noqa: F401
from bflnet.cli.main import main
from bflnet.runs.registry import scenario_names

torch.set_num_threads(1)
scenario_names()  # loads every scenario module

TICKS = os.sysconf("SC_CLK_TCK")
#: What tqdm draws: the run's set-up line, or a bar.
PROGRESS_MARKS = (" set-up (", "%|", "it/s]", "run/s]", "s/it]", "s/run]", "?it/s", "?run/s")
#: What the run's own bars draw (a scenario's set-up bar, or a bar over runs or iterations).
BAR_MARKS = (" set-up: ", "%|", "it/s]", "run/s]", "s/it]", "s/run]", "?it/s", "?run/s",
             "step/s]", "round/s]", "?step/s", "?round/s")
#: Wall seconds to wait, after the set-up line, for the run's own first bar.
BAR_WAIT_S = 10.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def vm_size() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run_case(case: dict, limit: int, wall_timeout: float) -> dict:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one CLI run under the memory limit
        try:
            cap = vm_size() + limit
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            os.close(read_end)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(write_end, 2)
            code = main(["run", case["scenario"], "--set", f"{case['field']}={case['value']}"])
            sys.stderr.flush()
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            code = 99
        os._exit(code if isinstance(code, int) else 98)
    os.close(write_end)
    start = time.monotonic()
    err = b""
    progress_cpu = bar_cpu = None
    bar_deadline = 0.0
    status = None
    while True:
        ready, _, _ = select.select([read_end], [], [], 0.05)
        if ready:
            chunk = os.read(read_end, 65536)
            if chunk:
                err += chunk
                if progress_cpu is None and any(m.encode() in err for m in PROGRESS_MARKS):
                    progress_cpu = cpu_seconds(pid)
                    bar_deadline = time.monotonic() + BAR_WAIT_S
                if progress_cpu is not None and any(m.encode() in err for m in BAR_MARKS):
                    bar_cpu = cpu_seconds(pid)
                    break
                if progress_cpu is not None and time.monotonic() > bar_deadline:
                    break
            else:  # the child closed stderr: it is ending
                _, status = os.waitpid(pid, 0)
                break
        done, waited = os.waitpid(pid, os.WNOHANG)
        if done:
            status = waited
            break
        if time.monotonic() - start > wall_timeout:
            break
        if progress_cpu is not None and time.monotonic() > bar_deadline:
            break
    if status is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        killed = True
    else:
        killed = False
    while True:  # whatever the child wrote before it ended
        ready, _, _ = select.select([read_end], [], [], 0)
        if not ready:
            break
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        err += chunk
    os.close(read_end)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    if progress_cpu is not None:
        outcome = "progress"
    elif not killed and code == 0:
        outcome = "finished"
    elif not killed:
        outcome = "ended"
    else:
        outcome = "silent"
    return {**case, "outcome": outcome, "code": code if not killed else None,
            "progress_cpu_s": progress_cpu, "bar_cpu_s": bar_cpu,
            "wall_s": time.monotonic() - start,
            "stderr": err.decode(errors="replace")[-3000:]}


def main_driver() -> None:
    limit, wall_timeout = int(sys.argv[1]), float(sys.argv[2])
    for line in sys.stdin:
        if line.strip():
            result = run_case(json.loads(line), limit, wall_timeout)
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main_driver()
