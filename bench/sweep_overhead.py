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

    python bench/sweep_overhead.py [--repeat N] [--runs N] [--workers W] [--guard]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the three ways")
    parser.add_argument("--runs", type=int, default=8, help="runs (seeds) per sweep")
    parser.add_argument("--workers", type=int, default=None,
                        help="local worker processes (default: the sweep's own)")
    parser.add_argument("--guard", action="store_true",
                        help="an if __name__ == '__main__' guard in the Python script (a "
                             "bflnet whose sweeps started Dask workers needed it)")
    args = parser.parse_args()
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
