"""What the resumable reproduction scripts share: running jobs in worker processes, one
table ("part") per job on disk, and the ``mean ± std`` summaries over seeds.

A job is any picklable object with a ``part`` file name; ``execute(job)`` (a top-level
function of the calling script) returns ``(job, frame, seconds)``.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd


def run_parts(todo: Sequence[Any], parts: Path, workers: int,
              execute: Callable[[Any], tuple[Any, pd.DataFrame, float]]) -> dict[str, float]:
    """Run the jobs whose part is missing (``workers`` spawned processes), writing each
    part as it finishes and its seconds to ``parts/timings.txt``; seconds per new part."""
    pending = [j for j in todo if not (parts / j.part).exists()]
    print(f"{len(todo) - len(pending)} of {len(todo)} parts on disk; running {len(pending)}",
          flush=True)
    elapsed: dict[str, float] = {}
    if not pending:
        return elapsed
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(execute, j) for j in pending]
        for future in as_completed(futures):
            job, frame, seconds = future.result()
            frame.to_csv(parts / job.part, index=False)
            elapsed[job.part] = seconds
            with (parts / "timings.txt").open("a") as log:
                log.write(f"{job.part} {seconds:.0f}\n")
            print(f"  done {job.part} in {seconds:.0f} s", flush=True)
    return elapsed


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
