"""Benchmark: sweep throughput with 2 local workers over 1 worker (target >= 1.8).

Sweeps CPU-bound runs of ``consensus-averaging`` (a ring of K agents gossiping for many
rounds; pure Python, one core each, >= 5 s per run by default) over seeds, once on 1
local worker process and once on 2, each into a fresh directory, and prints runs per
second for both and their ratio. Wall time is end to end: the workers' start-up (about a
second) and shut-down are included.

For reference it also prints the machine's own ceiling for that ratio: the same run in
two bare processes side by side (no Dask) against one alone.

    python bench/sweep_throughput.py [--runs N] [--rounds R] [--K K] [--no-ceiling]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bflnet.runs.sweep import load_manifest, sweep
from bflnet.scenarios import run_scenario

NAME = "consensus-averaging"


def timed_sweep(workers: int, runs: int, fixed: dict, root: Path) -> tuple[float, list[float]]:
    """Wall time of the whole sweep and the run times its workers measured."""
    out = root / f"workers-{workers}"
    start = time.perf_counter()
    sweep(NAME, {}, runs, out, fixed=fixed, workers=workers, progress=False)
    wall = time.perf_counter() - start
    return wall, sorted(load_manifest(out)["elapsed_s"])


def timed_run(fixed: dict, seed: int) -> float:
    """Seconds one run takes in this process."""
    start = time.perf_counter()
    run_scenario(NAME, fixed, seed=seed)
    return time.perf_counter() - start


def ceiling(fixed: dict) -> tuple[float, float]:
    """Run time alone and side by side in two bare processes (after a warm-up run)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        list(pool.map(timed_run, [fixed] * 2, [0, 1]))  # imports, warm-up
        alone = pool.submit(timed_run, fixed, 0).result()
        together = list(pool.map(timed_run, [fixed] * 2, [0, 1]))
    return alone, sum(together) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs (seeds) per sweep")
    parser.add_argument("--rounds", type=int, default=10_000, help="gossip rounds per run")
    parser.add_argument("--K", type=int, default=20, help="agents on the ring")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the bare-process run")
    args = parser.parse_args()
    fixed = {"graph": "ring", "K": args.K, "rounds": args.rounds}
    print(f"{args.runs} runs of {NAME} {fixed}; cpus: {os.cpu_count()}, "
          f"load average before: {os.getloadavg()[0]:.2f}")
    throughput = {}
    with tempfile.TemporaryDirectory() as root:
        for workers in (1, 2):
            wall, times = timed_sweep(workers, args.runs, fixed, Path(root))
            throughput[workers] = args.runs / wall
            print(f"{workers} worker(s): {args.runs} runs in {wall:.1f} s = "
                  f"{throughput[workers]:.3f} runs/s (run time min {times[0]:.1f} s, "
                  f"median {times[len(times) // 2]:.1f} s)")
    ratio = throughput[2] / throughput[1]
    print(f"throughput ratio, 2 workers / 1 worker: {ratio:.2f} (target >= 1.8)")
    if not args.no_ceiling:
        alone, together = ceiling(fixed)
        print(f"machine ceiling: one run takes {alone:.2f} s alone, {together:.2f} s with a "
              f"second one beside it (bare processes) -> at most {2 * alone / together:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
