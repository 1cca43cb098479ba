"""Local worker processes that never run the caller's ``__main__`` again.

>>> with WorkerPool(2) as pool:  # doctest: +SKIP
...     for key, status, value in pool.map([(0, "math", "sqrt", (4,))]):
...         print(key, status, value)
0 ok 2.0

Each worker is a fresh Python process, ``python -c BOOT``, started with :mod:`subprocess`
with the caller's ``sys.path``, working directory and environment (plus ``env``). It
reads tasks (a function named by its module and name, and its arguments; pickled) from
one pipe and writes each result to another, one task at a time. Unlike
:mod:`multiprocessing`'s ``spawn`` and ``forkserver`` start methods, nothing imports the
caller's main module in the worker: a script without an ``if __name__ == "__main__"``
guard, a notebook or ``python - < script.py`` can start a pool, and the workers start in
the time Python takes to import what the tasks need.

A worker that dies (killed, out of memory, a crash in compiled code) loses only the task
it was running: that task goes to another worker (a new one is started in its place), up
to :data:`MAX_ATTEMPTS` times in all, then it is reported as ``"died"``.

The workers are started with SIGINT and SIGTERM blocked
(:func:`~bflnet.runtime.interrupt.children_ignore_signals`): a terminal's Ctrl-C reaches
the caller only. Leaving the pool's ``with`` block on an exception (an interrupt) kills
them at once, busy or not; leaving it normally lets them exit. A worker whose caller died
exits when it next reads a task (end of file).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bflnet.runtime.interrupt import children_ignore_signals, deferred

#: Tries of a task whose worker died running it, before it is reported as ``"died"``.
MAX_ATTEMPTS = 3
#: Seconds between checks that the busy workers are alive (a death is seen at once
#: through the pipe's end of file; this catches a worker whose pipe another process holds).
POLL_S = 1.0
#: Seconds a worker has to exit after its task pipe is closed, before it is killed.
EXIT_TIMEOUT_S = 5.0

_HEADER = struct.Struct("!Q")

#: The worker: the caller's ``sys.path``, this module's :func:`serve`, then an exit that
#: skips the interpreter's tear-down of every object (a worker holds nothing to save).
BOOT = ("import json, os, sys\n"
        "sys.path[:] = json.loads(sys.argv[3])\n"
        "from bflnet.runtime.worker_pool import serve\n"
        "serve(int(sys.argv[1]), int(sys.argv[2]))\n"
        "sys.stdout.flush(), sys.stderr.flush(), os._exit(0)\n")

#: A task: its key (any hashable), the function's module and name, the arguments.
Task = tuple[Hashable, str, str, tuple[Any, ...]]


# --- messages: a length, then a pickle ----------------------------------------------------


def _send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; ``None`` at end of file (the writer died or closed)."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int) -> tuple[bool, Any]:
    """``(True, message)``, or ``(False, None)`` at end of file."""
    header = _read(fd, _HEADER.size)
    body = None if header is None else _read(fd, _HEADER.unpack(header)[0])
    return (False, None) if body is None else (True, pickle.loads(body))


# --- the worker's side --------------------------------------------------------------------


def _call(module: str, name: str, args: Sequence[Any]) -> Any:
    return getattr(importlib.import_module(module), name)(*args)


def serve(task_fd: int, result_fd: int) -> None:
    """The worker's loop: task after task until the task pipe ends."""
    while True:
        ok, task = _receive(task_fd)
        if not ok:
            return
        module, name, args = task
        try:
            result: tuple[str, Any] = ("ok", _call(module, name, args))
        except Exception as exc:
            result = ("error", _one_line(exc))
        try:
            _send(result_fd, result)
        except BrokenPipeError:  # the caller is gone
            return
        except Exception as exc:  # the result does not pickle
            _send(result_fd, ("error", f"the result cannot be sent back: {_one_line(exc)}"))


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


# --- the caller's side ---------------------------------------------------------------------


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    tasks: int  # the write end of its task pipe (-1: closed)
    results: int  # the read end of its result pipe (-1: closed)
    task: Task | None = None

    def end_tasks(self) -> None:
        """Close the task pipe: the worker exits when it next reads."""
        if self.tasks >= 0:
            with contextlib.suppress(OSError):
                os.close(self.tasks)
            self.tasks = -1

    def close(self) -> None:
        self.end_tasks()
        if self.results >= 0:
            with contextlib.suppress(OSError):
                os.close(self.results)
            self.results = -1


def _how_it_ended(process: subprocess.Popen[bytes]) -> str:
    code = process.poll()
    if code is None:
        return "stopped answering"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class WorkerPool:
    """``size`` worker processes; :meth:`map` runs tasks on them. ``env``: variables set
    in the workers' environment (over the caller's)."""

    def __init__(self, size: int, *, env: Mapping[str, str] | None = None) -> None:
        if size < 1:
            raise ValueError(f"workers: must be >= 1, got {size}")
        self.size = size
        self._env = {**os.environ, **(env or {})}
        self._workers: list[_Worker] = []
        self._selector = selectors.DefaultSelector()
        try:
            for _ in range(size):
                self._start()
        except BaseException:
            self.kill()
            raise

    # -- workers

    def _start(self) -> _Worker:
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        paths = json.dumps([p for p in sys.path if isinstance(p, str)])
        process = None
        try:
            with children_ignore_signals():  # Ctrl-C and SIGTERM are the caller's
                process = subprocess.Popen(
                    [sys.executable, "-c", BOOT, str(task_read), str(result_write), paths],
                    pass_fds=(task_read, result_write), env=self._env,
                    stdin=subprocess.DEVNULL)
        except BaseException:  # an interrupt as the block ends: this worker goes too
            if process is not None:
                process.kill()
                process.wait()
            os.close(task_write)
            os.close(result_read)
            raise
        finally:  # the worker's ends, which it now holds
            os.close(task_read)
            os.close(result_write)
        worker = _Worker(process, task_write, result_read)
        self._workers.append(worker)
        self._selector.register(result_read, selectors.EVENT_READ, worker)
        return worker

    def _retire(self, worker: _Worker, grace_s: float = 0.0) -> None:
        """Forget the worker, kill it (after ``grace_s`` seconds to exit) and reap it."""
        self._selector.unregister(worker.results)
        self._workers.remove(worker)
        worker.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(grace_s)
        with contextlib.suppress(ProcessLookupError):
            worker.process.kill()
        worker.process.wait()

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers now running."""
        return [w.process.pid for w in self._workers]

    # -- tasks

    def map(self, tasks: Iterable[Task]) -> Iterator[tuple[Hashable, str, Any]]:
        """Run ``tasks``, at most one per worker at a time, in the order given; yield
        ``(key, status, value)`` as each ends: ``"ok"`` and the function's result,
        ``"error"`` and the one-line exception it raised (or why its result could not
        come back), or ``"died"`` and how its worker ended, :data:`MAX_ATTEMPTS` times."""
        queue: deque[Task] = deque(tasks)
        attempts: Counter[Hashable] = Counter()
        self._assign(queue)
        while any(w.task is not None for w in self._workers):
            events = self._selector.select(POLL_S)
            lost = [w for w in self._workers if w.task is not None
                    and w.process.poll() is not None and not any(
                        key.data is w for key, _ in events)]
            ended = []
            for key, _ in events:
                worker: _Worker = key.data
                ok, message = _receive(worker.results)
                if ok and worker.task is not None:
                    ended.append((worker.task[0], message[0], message[1]))
                    worker.task = None
                elif not ok:
                    lost.append(worker)
            for worker in lost:
                self._retire(worker, EXIT_TIMEOUT_S)  # its pipe ended: it is exiting
                task, how = worker.task, _how_it_ended(worker.process)
                if task is None:
                    continue
                attempts[task[0]] += 1
                if attempts[task[0]] < MAX_ATTEMPTS:
                    queue.appendleft(task)
                else:
                    ended.append((task[0], "died",
                                  f"its worker process {how}, {MAX_ATTEMPTS} times"))
            self._assign(queue)  # the next tasks start while the caller takes these
            yield from ended

    def _assign(self, queue: deque[Task]) -> None:
        """A task to every idle worker; new workers in place of the lost ones."""
        idle = sum(w.task is None for w in self._workers)
        while len(queue) > idle and len(self._workers) < self.size:
            self._start()
            idle += 1
        for worker in list(self._workers):
            if not queue:
                return
            if worker.task is None:
                task = queue.popleft()
                worker.task = task
                with contextlib.suppress(OSError):  # it died: its end of file says so
                    _send(worker.tasks, task[1:])

    # -- the end

    def kill(self) -> None:
        """Kill every worker at once, busy or not, and reap it."""
        with deferred():  # a second Ctrl-C does not cut the clean-up short
            for worker in self._workers:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
            for worker in list(self._workers):
                self._retire(worker)
            self._selector.close()

    def close(self) -> None:
        """End every worker's task pipe; wait for them to exit (kill the slow ones)."""
        with deferred():
            for worker in self._workers:
                worker.end_tasks()
            for worker in self._workers:
                try:
                    worker.process.wait(EXIT_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    worker.process.kill()
            self.kill()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.kill()
