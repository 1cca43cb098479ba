"""Benchmark: a Monte-Carlo study through the random-walk protocol, end to end.

``cover-time`` on the complete graph with K = 10 and 2000 runs (each run a fresh
simulation: network, random streams, the walk until every node is visited, about 26
hops), timed from the call to the table (target: at most 1.5 s). Prints the
median of ``--repeat`` timings, the ratio to the target and the time per run and hop.

    python bench/cover_time_mc.py [--runs 2000] [--K 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bflnet.runs.registry import run_scenario

TARGET_S = 1.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    overrides = {"K": args.K, "graph": "complete", "runs": args.runs}
    run_scenario("cover-time", {**overrides, "runs": 20})  # warm-up: imports, caches
    times, hops = [], 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        frame = run_scenario("cover-time", overrides)
        times.append(time.perf_counter() - start)
        hops = int(frame["cover_iterations"].sum())
    median = statistics.median(times)
    print(f"cover-time, complete K = {args.K}, {args.runs} runs ({hops} hops): "
          f"{median:.2f} s (median of {args.repeat}; target {TARGET_S} s: ratio "
          f"{median / TARGET_S:.2f}); {1e3 * median / args.runs:.2f} ms per run, "
          f"{1e6 * median / hops:.0f} µs per hop")


if __name__ == "__main__":
    main()
