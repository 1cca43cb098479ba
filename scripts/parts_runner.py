"""What the resumable reproduction scripts share: running jobs in worker processes, one
table ("part") per job on disk, and the ``mean ± std`` summaries over seeds.

A job is any picklable object with a ``part`` file name; ``execute(job)`` (a top-level
function of the calling script) returns ``(job, frame, seconds)``. A part is written to a
temporary file and renamed, so a killed script never leaves half a part; a part on disk
that does not read back is run again, saying so. Ctrl-C (or SIGTERM) stops the workers at
once and exits with one line (code 130, or 143); the parts written so far are kept.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from bflnet.runtime.interrupt import Interrupted, catch_signals, children_ignore_signals


def part_problem(path: Path) -> str | None:
    """Why the CSV part at ``path`` cannot be used (``None`` if it can)."""
    try:
        frame = pd.read_csv(path)
    except Exception as exc:  # empty, binary, truncated inside a quoted field, ...
        return f"it does not read back ({type(exc).__name__}: {str(exc)[:120]})"
    if frame.empty:
        return "it has no rows"
    return None


def _write_part(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _pending(todo: Sequence[Any], parts: Path) -> list[Any]:
    """The jobs without a sound part; damaged parts are deleted, each with a line."""
    for stale in parts.glob(".*.tmp"):  # left by a script killed while writing
        stale.unlink(missing_ok=True)
    pending = []
    for job in todo:
        path = parts / job.part
        if path.exists():
            problem = part_problem(path)
            if problem is None:
                continue
            print(f"part {job.part} is damaged: {problem}; running it again", flush=True)
            path.unlink()
        pending.append(job)
    return pending


def run_parts(todo: Sequence[Any], parts: Path, workers: int,
              execute: Callable[[Any], tuple[Any, pd.DataFrame, float]]) -> dict[str, float]:
    """Run the jobs whose part is missing or damaged (``workers`` spawned processes),
    writing each part as it finishes and its seconds to ``parts/timings.txt``; seconds
    per new part. On Ctrl-C or SIGTERM: the workers are killed, one line, ``SystemExit``
    with code 128 + the signal."""
    pending = _pending(todo, parts)
    print(f"{len(todo) - len(pending)} of {len(todo)} parts on disk; running {len(pending)}",
          flush=True)
    elapsed: dict[str, float] = {}
    if not pending:
        return elapsed
    with catch_signals():
        try:
            _run(pending, parts, workers, execute, elapsed)
        except Interrupted as exc:
            kept = sum((parts / job.part).exists() for job in todo)
            print(f"interrupted: {kept} of {len(todo)} parts are on disk; run the same "
                  f"command again to run the other {len(todo) - kept}", file=sys.stderr,
                  flush=True)
            raise SystemExit(exc.exit_code) from None
    return elapsed


def _start_worker() -> None:
    """In a worker: tqdm's write lock a thread lock. Its default holds a multiprocessing
    semaphore, which a worker killed at an interrupt cannot release: the resource tracker
    would then warn of leaked semaphores after the interruption's line."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def _run(pending: Sequence[Any], parts: Path, workers: int,
         execute: Callable[[Any], tuple[Any, pd.DataFrame, float]],
         elapsed: dict[str, float]) -> None:
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                               initializer=_start_worker)
    try:
        with children_ignore_signals():  # the workers leave Ctrl-C to this process
            futures = [pool.submit(execute, j) for j in pending]
        for future in as_completed(futures):
            job, frame, seconds = future.result()
            _write_part(frame, parts / job.part)
            elapsed[job.part] = seconds
            with (parts / "timings.txt").open("a") as log:
                log.write(f"{job.part} {seconds:.0f}\n")
            print(f"  done {job.part} in {seconds:.0f} s", flush=True)
    except BaseException:
        for child in mp.active_children():  # the pool's workers, busy or not
            child.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def pm(values: pd.Series, digits: int = 3) -> str:
    """``mean ± std [min, max] (n)`` over seeds."""
    v = values.dropna().to_numpy(dtype=float)
    if not len(v):
        return "n/a"
    std = v.std(ddof=1) if len(v) > 1 else 0.0
    return (f"{v.mean():.{digits}f} ± {std:.{digits}f} [{v.min():.{digits}f}, "
            f"{v.max():.{digits}f}] (n={len(v)})")


def seed_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's seed, from its ``run_id`` ending ``-s<seed>``."""
    return frame["run_id"].str.extract(r"-s(\d+)$")[0].astype(int)
