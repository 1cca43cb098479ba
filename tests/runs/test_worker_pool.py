"""The local worker processes of a sweep: results, errors, a result that cannot come back,
a worker that dies (its task done again, then reported), the caller's ``sys.path``, and
workers killed when the caller's block ends on an exception."""

import os
import signal
import sys
import threading
import time

import pytest

from bflnet.runtime.worker_pool import MAX_ATTEMPTS, WorkerPool


def test_results_errors_and_deaths_come_back_by_key():
    tasks = [(i, "math", "sqrt", (float(i),)) for i in range(4)]
    tasks += [("error", "math", "sqrt", ("x",)), ("unpicklable", "threading", "Lock", ()),
              ("exit", "os", "_exit", (3,))]
    with WorkerPool(2) as pool:
        ended = {key: (status, value) for key, status, value in pool.map(tasks)}
    assert {i: ended[i] for i in range(4)} == {i: ("ok", i ** 0.5) for i in range(4)}
    assert ended["error"] == ("error", "TypeError: must be real number, not str")
    status, value = ended["unpicklable"]
    assert status == "error" and value.startswith("the result cannot be sent back: ")
    assert ended["exit"] == ("died", f"its worker process exited with code 3, "
                                     f"{MAX_ATTEMPTS} times")


def test_a_killed_workers_task_is_done_again_by_another(tmp_path):
    marker = tmp_path / "started"
    tasks = [("slow", "subprocess", "check_call", (
        [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('x')\n"
                               f"import time; time.sleep(1)"],))]
    with WorkerPool(1) as pool:
        first = pool.pids[0]
        ended = pool.map(tasks)
        # the generator runs until the first task ends: kill the worker meanwhile
        def kill_when_started():
            deadline = time.monotonic() + 30
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(first, signal.SIGKILL)

        killer = threading.Thread(target=kill_when_started)
        killer.start()
        result = list(ended)
        killer.join()
        assert first not in pool.pids and len(pool.pids) == 1  # a new worker in its place
    assert result == [("slow", "ok", 0)]
    assert marker.read_text() == "xx"  # started twice: once on each worker


def test_the_workers_import_from_the_callers_sys_path(tmp_path, monkeypatch):
    (tmp_path / "only_here.py").write_text("def answer():\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with WorkerPool(1) as pool:
        assert list(pool.map([(0, "only_here", "answer", ())])) == [(0, "ok", 42)]


def test_an_exception_in_the_block_kills_the_workers_at_once():
    with pytest.raises(KeyboardInterrupt), WorkerPool(2) as pool:
        pids = pool.pids
        next(iter(pool.map([(0, "time", "sleep", (0.01,)), (1, "time", "sleep", (30,))])))
        raise KeyboardInterrupt
    for pid in pids:  # killed and reaped: no such process
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
