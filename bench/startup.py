"""Benchmark: start-up of the command line, ``bflnet list`` and ``bflnet describe``
(target: at most 0.4 s each, wall clock, on this project's 2-core machine).

Each command runs in a fresh interpreter ``--repeat`` times; the median is printed with
its ratio to the target, and the heavy packages the command loaded (none should be).

    python bench/startup.py [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET_S = 0.4
COMMANDS = (["list"], ["describe", "forget-svgd"])
HEAVY = ("numpy", "pandas", "networkx", "scipy", "torch", "simpy", "matplotlib", "pyarrow")
PROBE = ("import sys, contextlib, io\n"
         "from bflnet.cli.main import main\n"
         "with contextlib.redirect_stdout(io.StringIO()): main({args!r})\n"
         "print(','.join(m for m in {heavy!r} if m in sys.modules))")


def wall_time(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bflnet.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def heavy_modules(args: list[str]) -> str:
    code = PROBE.format(args=args, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return out.stdout.strip() or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for argv in COMMANDS:
        wall_time(argv)  # warm the file cache
        median = statistics.median(wall_time(argv) for _ in range(args.repeat))
        print(f"bflnet {' '.join(argv):<22} {median:6.3f} s  (target {TARGET_S} s: "
              f"ratio {median / TARGET_S:.2f}); heavy packages loaded: {heavy_modules(argv)}")


if __name__ == "__main__":
    main()
