"""Benchmark: what a sweep of 8 tiny runs costs on top of the runs alone (target <= 3 s).

Eight runs of ``consensus-averaging`` (K = 8, 30 rounds: a few milliseconds each), each
way in a fresh Python process timed end to end (start-up, imports, files written):

- alone: the eight runs one after another, ``bflnet.run`` in a loop;
- command: ``bflnet sweep consensus-averaging --set K=8 --set rounds=30 --seeds 8 --out
  DIR --no-progress``, as a user types it;
- Python: a script calling ``bflnet.sweep`` (no ``__main__`` guard).

The overhead of a sweep is its time minus the runs' alone; the figures are the medians
of ``--repeat`` rounds (the three ways in turn, each sweep into a new directory). The
load average is printed before and after: on a loaded machine every figure grows.

``--options`` times instead the ways a sweep could run the same eight runs, in this
process after its imports (the figure is from the executor's start to its last result,
shut-down included): the local worker processes bflnet uses (``WorkerPool``), a
``concurrent.futures.ProcessPoolExecutor`` with the ``spawn`` and the ``forkserver``
start methods (both import the caller's main script again in every worker: they need a
``__main__`` guard and fail from standard input), a Dask ``LocalCluster`` of processes
(what ``bflnet sweep`` used before) or of threads (one interpreter: runs of pure Python
do not run side by side, and a run cannot be stopped), and a second sweep on a Dask
cluster kept from a first one (a notebook could keep one; a command cannot).

    python bench/sweep_overhead.py [--repeat N] [--runs N] [--workers W] [--guard]
    python bench/sweep_overhead.py --options [--runs N] [--workers W]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME, SETTINGS = "consensus-averaging", {"K": 8, "rounds": 30}
TARGET_S = 3.0


def _command() -> list[str]:
    """``bflnet`` as installed next to this Python, else ``python -m bflnet.cli``."""
    script = Path(sys.executable).with_name("bflnet")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bflnet.cli"]


def _timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def alone(runs: int, cwd: Path) -> float:
    code = (f"import bflnet\nfor seed in range({runs}):\n"
            f"    bflnet.run({NAME!r}, seed=seed, **{SETTINGS!r})\n")
    return _timed([sys.executable, "-c", code], cwd)


def command(runs: int, workers: int | None, out: Path) -> float:
    settings = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    extra = [] if workers is None else ["--workers", str(workers)]
    return _timed([*_command(), "sweep", NAME, *settings, "--seeds", str(runs), *extra,
                   "--out", str(out), "--no-progress"], out.parent)


def python(runs: int, workers: int | None, out: Path, guard: bool) -> float:
    call = (f"bflnet.sweep({NAME!r}, {{}}, {str(out)!r}, seeds={runs}, workers={workers!r}, "
            f"**{SETTINGS!r})\n")
    script = out.parent / f"{out.name}.py"
    script.write_text("import bflnet\n" + (f"if __name__ == '__main__':\n    {call}" if guard
                                           else call))
    return _timed([sys.executable, str(script)], out.parent)


def _task(seed: int) -> tuple:
    return (NAME, {**SETTINGS}, seed, 1, None)


def options(runs: int, workers: int) -> None:
    """Seconds each executor takes for the runs, from its start to its shut-down."""
    import logging
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from bflnet.runs.sweep import execute_run
    from bflnet.runtime.worker_pool import WorkerPool

    def timed(label: str, work) -> None:
        start = time.perf_counter()
        work()
        print(f"  {label}: {time.perf_counter() - start:.2f} s")

    def pool() -> None:
        with WorkerPool(workers) as local:
            list(local.map([(s, "bflnet.runs.sweep", "execute_run", _task(s))
                            for s in range(runs)]))

    def executor(method: str):
        def work() -> None:
            context = multiprocessing.get_context(method)
            with ProcessPoolExecutor(workers, mp_context=context) as ex:
                list(ex.map(execute_run, *zip(*(_task(s) for s in range(runs)), strict=True)))
        return work

    def dask(processes: bool, cluster=None):
        def work() -> None:
            from distributed import Client, LocalCluster

            own = cluster or LocalCluster(
                n_workers=workers if processes else 1, processes=processes,
                threads_per_worker=1 if processes else workers, dashboard_address=None,
                silence_logs=logging.CRITICAL)
            with Client(own, set_as_default=False) as client:
                client.gather(client.map(execute_run, *zip(*(_task(s) for s in range(runs)),
                                                           strict=True), pure=False))
            if cluster is None:
                own.close()
        return work

    for seed in range(runs):  # this process's own imports and a warm-up
        execute_run(*_task(seed))
    start = time.perf_counter()
    for seed in range(runs):
        execute_run(*_task(seed))
    print(f"{runs} runs in this process, one after another: "
          f"{time.perf_counter() - start:.2f} s; with {workers} workers:")
    timed("bflnet's local worker processes (WorkerPool)", pool)
    timed("ProcessPoolExecutor, spawn", executor("spawn"))
    timed("ProcessPoolExecutor, forkserver", executor("forkserver"))
    timed("Dask LocalCluster of processes", dask(True))
    timed("Dask LocalCluster of threads", dask(False))
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as kept:
        dask(True, kept)()  # the first sweep on it
        timed("a kept Dask LocalCluster, second sweep", dask(True, kept))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the three ways")
    parser.add_argument("--runs", type=int, default=8, help="runs (seeds) per sweep")
    parser.add_argument("--workers", type=int, default=None,
                        help="local worker processes (default: the sweep's own)")
    parser.add_argument("--options", action="store_true",
                        help="time the ways a sweep could run the runs instead")
    parser.add_argument("--guard", action="store_true",
                        help="an if __name__ == '__main__' guard in the Python script (a "
                             "bflnet whose sweeps started Dask workers needed it)")
    args = parser.parse_args()
    if args.options:
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        options(args.runs, args.workers or 2)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    print(f"{args.runs} runs of {NAME} {SETTINGS}; cpus: {os.cpu_count()}, load average "
          f"before: {os.getloadavg()[0]:.2f}; command: {' '.join(_command()[-3:])}")
    times: dict[str, list[float]] = {"alone": [], "command": [], "python": []}
    root = Path(tempfile.mkdtemp(prefix="bflnet-sweep-overhead-"))
    try:
        for i in range(args.repeat):
            times["alone"].append(alone(args.runs, root))
            times["command"].append(command(args.runs, args.workers, root / f"c{i}"))
            times["python"].append(python(args.runs, args.workers, root / f"p{i}",
                                          args.guard))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(times["alone"])
    print(f"runs alone: {base:.2f} s (median of {args.repeat}: "
          f"{', '.join(f'{t:.2f}' for t in times['alone'])})")
    for way in ("command", "python"):
        median = statistics.median(times[way])
        over = statistics.median(t - a for t, a in zip(times[way], times["alone"],
                                                       strict=True))
        print(f"sweep, {way}: {median:.2f} s; overhead {over:+.2f} s per sweep "
              f"(target <= {TARGET_S:g} s: {'met' if over <= TARGET_S else 'MISSED'}); "
              f"all: {', '.join(f'{t:.2f}' for t in times[way])}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
