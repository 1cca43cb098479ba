"""Benchmark: the speed of what users actually run, each figure next to its target.

One row per user path. The command-line rows run the command as typed, in a fresh
interpreter (start-up included), one thread (``OMP_NUM_THREADS=1``), quiet
(``--no-progress``), with Python's bytecode cache allowed, as in an installed package;
they print the median wall time and the median CPU time (user + system) of the child,
since the wall time of a shared machine depends on its load. The other rows drive the
scenario or learner at the stated settings through the bench scripts next to this one,
and their ratios (to the plain torch loop, to bare SimPy) come from timings interleaved
in this same run.

    python bench/user_paths.py [--rows list,consensus,...] [--repeat 5]

Rows (``--rows``, default all): list, consensus, cover, walk, fedavg, dsvgd, cdbfl,
emtdamp. A row is a function returning its figures: to measure a path better, replace
its function in ``ROWS``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent


@dataclass
class Figure:
    """One measured figure, its target (``None``: none stated) and how to read it."""

    what: str
    value: float
    unit: str
    target: float | None = None
    note: str = ""

    def line(self) -> str:
        text = f"  {self.what:<46} {self.value:9.3f} {self.unit:<2}"
        if self.target is not None:
            verdict = "met" if self.value <= self.target else "MISSED"
            text += (f"  target <= {self.target:g} {self.unit}: ratio "
                     f"{self.value / self.target:.2f}, {verdict}")
        return text + (f"  ({self.note})" if self.note else "")


# ------------------------------------------------------------------ command-line rows


def cli_times(argv: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``bflnet ARGV`` in fresh interpreters (one warm-up run
    first: the file cache and the bytecode cache)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
    cmd = [sys.executable, "-m", "bflnet.cli", *argv]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def cli_row(argv: list[str], target_s: float) -> Callable[[argparse.Namespace], list[Figure]]:
    def row(args: argparse.Namespace) -> list[Figure]:
        walls, cpus = cli_times(argv, args.repeat)
        spread = f"{min(walls):.2f}-{max(walls):.2f} s over {len(walls)} runs"
        return [Figure("wall, median", statistics.median(walls), "s", target_s, spread),
                Figure("CPU (user + system), median", statistics.median(cpus), "s",
                       target_s)]
    return row


LIST = ["list"]
CONSENSUS = ["run", "consensus-averaging", "--set", "graph=torus", "--set", "K=4096",
             "--set", "rounds=1", "--no-progress"]
COVER = ["run", "cover-time", "--set", "graph=complete", "--set", "K=10", "--set",
         "runs=2000", "--no-progress"]


# ------------------------------------------------------------------ simulator row


def walk_row(args: argparse.Namespace) -> list[Figure]:
    """bench/random_walk_overhead.py's two loops, interleaved; the median of the ratios."""
    import networkx as nx
    import random_walk_overhead as rw

    graph = nx.random_regular_graph(4, 100, seed=1)
    hops = 100_000
    rw.run_bflnet(graph, 1000, 0)  # warm-up
    ours, bare = [], []
    for seed in range(args.repeat):
        ours.append(rw.run_bflnet(graph, hops, seed))
        bare.append(rw.run_bare_simpy(graph, hops, seed))
    ratios = [a / b for a, b in zip(ours, bare, strict=True)]
    return [Figure("bflnet / bare SimPy, median of pairs", statistics.median(ratios), "x",
                   1.3, f"bflnet {statistics.median(ours):.3f} s, bare "
                   f"{statistics.median(bare):.3f} s for {hops} hops, K = 100")]


# ------------------------------------------------------------------ learner rows


def fedavg_row(args: argparse.Namespace) -> list[Figure]:
    """bench/fedavg_round.py's protocol and plain-loop rounds, interleaved."""
    import fedavg_round as fr
    import torch

    from bflnet.learners.hyper import FedAvgParams

    torch.set_num_threads(1)
    default = bool(FedAvgParams().batch_agents)
    data = fr.agent_data()
    gen = torch.Generator().manual_seed(1)
    fr.plain_round(data, gen)  # warm-ups: a steady round leaves out first-call costs
    fr.protocol_seconds(data, 1, default)
    rounds, runs, plain = 1, [], []
    for _ in range(max(1, args.repeat // 2)):
        runs.append(fr.protocol_seconds(data, rounds + 1, default)
                    - fr.protocol_seconds(data, 1, default))
        plain.append(fr.plain_round(data, gen))
    ratio = statistics.median(r / p for r, p in zip(runs, plain, strict=True))
    return [Figure(f"steady round / plain loop (defaults: batch_agents={default})", ratio,
                   "x", 0.6, f"round {statistics.median(runs):.3f} s, plain loop "
                   f"{statistics.median(plain):.3f} s")]


def dsvgd_row(args: argparse.Namespace) -> list[Figure]:
    """bench/dsvgd_small_round.py's round (local update, merge, evaluation)."""
    import dsvgd_small_round as ds
    import numpy as np
    import torch

    torch.set_num_threads(1)
    learner = ds.setup()
    theta = learner.init(np.random.default_rng(1))
    factors = {k: learner.init_agent(k, None) for k in range(2)}
    streams = {k: np.random.default_rng(10 + k) for k in range(2)}
    times = []
    for i in range(args.repeat + 2):
        agent = i % 2
        start = time.perf_counter()
        update = learner.local_update(agent, theta, factors[agent], streams[agent])
        theta = learner.merge(theta, [update])
        factors[agent] = update.agent_state
        learner.evaluate(theta)
        if i >= 2:  # steady visits
            times.append(time.perf_counter() - start)
    return [Figure("round, median", statistics.median(times), "s", ds.TARGET_S)]


def script_output(name: str, *argv: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(BENCH / name), *argv], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout


#: ``scripts/reproduce_cdbfl.py``'s paper settings, as ``--set`` pairs (rounds,
#: eval_every and burn-in are the row's: the burn-in must be shorter than the run).
CDBFL_PAPER = {"model": "lenet-2.7m", "thin": 5, "lr": 1e-4, "local_steps": 8,
               "batch_size": 10, "keep_ratio": 0.01, "zeta": 0.03}
#: Evaluations of one job at T = 800, eval_every 50, burn-in 700, thin 5 that run the
#: K devices' predictive on the 500 test maps (a sweep each): CD-BFL and DSGLD evaluate
#: their current sample at rounds 0, 50, ..., 700 (15; at 750 and 800 the kept samples'
#: running sums are read, no sweep); CF-FL its current model at 0, 50, ..., 800 (17).
#: The 20 kept samples' predictives of CD-BFL and DSGLD are in the post-burn-in rounds.
CDBFL_EVAL_SWEEPS = {"cd-bfl": 15, "dsgld": 15, "cf-fl": 17}
#: The paper's job: rounds before the burn-in ends, and after it (a sample kept every
#: ``thin`` = 5 rounds for CD-BFL and DSGLD).
CDBFL_PRE, CDBFL_POST = 700, 100
#: Rounds of the runs: ``base`` (2), ``pre`` (6: the burn-in ends at the last round, as in
#: the base run), ``post`` (12: the burn-in ends after round 1, so rounds 2-12 are the
#: post-burn-in regime, two samples kept in rounds 3-12 as in 10 paper rounds) and
#: ``swept`` (6, evaluating every round: five sweeps more than ``pre``).
CDBFL_RUNS = {"base": (2, 1, 10**6), "pre": (6, 5, 10**6), "post": (12, 1, 10**6),
              "swept": (6, 5, 1)}


def cdbfl_times(method: str, rounds: int, burn_in: int, eval_every: int
                ) -> tuple[float, float]:
    """Wall and CPU seconds of ``bflnet run cdbfl-shift`` for one method at the paper's
    settings with ``rounds``, ``burn_in`` and ``eval_every`` (one thread, start-up
    included)."""
    settings = {**CDBFL_PAPER, "methods": method, "rounds": rounds, "eval_every": eval_every,
                "burn_in": burn_in}
    argv = ["run", "cdbfl-shift", "--no-progress", "--threads", "1"]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bflnet.cli", *argv], env=env,
                   check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cdbfl_job(cpu: dict[str, float], method: str) -> tuple[float, float, float, float]:
    """``(round before the burn-in ends, round after it, sweep, job)`` in CPU seconds from
    the runs of :data:`CDBFL_RUNS`: ``pre − base`` gives 4 plain rounds, ``post − base``
    10 post-burn-in rounds (with CD-BFL's and DSGLD's two kept samples' predictives),
    ``swept − pre`` five sweeps; ``base`` is the set-up, 2 rounds and 2 sweeps (the first
    evaluation and the kept sample's predictive, or CF-FL's last evaluation). The job is
    the set-up, :data:`CDBFL_PRE` + :data:`CDBFL_POST` rounds and
    :data:`CDBFL_EVAL_SWEEPS` sweeps."""
    pre = (cpu["pre"] - cpu["base"]) / 4
    post = (cpu["post"] - cpu["base"]) / 10
    sweep = max(0.0, (cpu["swept"] - cpu["pre"]) / 5)
    setup = cpu["base"] - 2 * pre - 2 * sweep
    job = setup + CDBFL_PRE * pre + CDBFL_POST * post + CDBFL_EVAL_SWEEPS[method] * sweep
    return pre, post, sweep, job


def cdbfl_row(args: argparse.Namespace) -> list[Figure]:
    """The Fig. 4 jobs as ``scripts/reproduce_cdbfl.py`` runs them, each method through
    the CLI at the paper's settings with T shortened and extrapolated to T = 800
    (:func:`cdbfl_job`): the rounds before the burn-in ends and the rounds after it (with
    the kept samples' predictives) are timed separately, and the sweeps from a run that
    evaluates every round (five sweeps, so that one noisy reading does not make it 0).
    CPU seconds (user + system) of the child, which a loaded machine inflates less than
    wall seconds; the nine jobs (3 seeds) packed longest first on 2 one-thread workers.
    A short run starts from the initial model: costs that depend on the trained state
    (e.g. top-k's fallback to the full partition when a tie straddles the k-th value,
    more frequent in CF-FL's late rounds) are not in it."""
    import heapq

    jobs, figures = [], []
    for method in ("cd-bfl", "dsgld", "cf-fl"):
        runs = {name: cdbfl_times(method, *spec) for name, spec in CDBFL_RUNS.items()}
        pre, post, sweep, job = cdbfl_job({k: v[1] for k, v in runs.items()}, method)
        wall_pre = (runs["pre"][0] - runs["base"][0]) / 4
        jobs += [job] * 3
        figures += [Figure(f"{method} round before / after burn-in, CPU", pre, "s", None,
                           f"after {post:.2f} s; wall before {wall_pre:.2f} s; sweep "
                           f"{sweep:.2f} s CPU"),
                    Figure(f"{method} job at T = 800 (extrapolated)", job / 60, "mn")]
    loads = [0.0, 0.0]
    for job in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + job)
    figures.append(Figure("nine jobs on 2 workers x 1 thread (projection)",
                          max(loads) / 60, "mn", 120.0,
                          f"{sum(jobs) / 3600:.2f} h of compute"))
    return figures


def emtdamp_row(args: argparse.Namespace) -> list[Figure]:
    """One EM-TDAMP round at MNIST's shape and size (bench/emtdamp_round.py: K = 10,
    tau_max = 10, 784-128-10, batch 100, 5 sweeps, 6 000 MNIST images per client, the
    packaged subset tiled when the files are absent) as the scenarios run it by default:
    float32, clients in groups of 5, as many groups at once as this machine has CPUs
    (``threads`` 0 resolves to torch's thread count, the CPUs). Wall time of one round
    after a warm-up, and its CPU time."""
    from bflnet.runtime.threads import available_cpus

    cpus = available_cpus()
    out = script_output("emtdamp_round.py", "--points", "6000", "--repeat", "1",
                        "--threads", str(cpus), "--modes", "float32")
    cpu = re.search(r"float32:\s+([0-9.]+) s per round of 60000 images", out)
    wall = re.search(r"wall with \d+ threads?: 60000 images:\s+([0-9.]+) s", out)
    if cpu is None or (wall is None and cpus > 1):
        raise RuntimeError(f"emtdamp_round.py printed no round times:\n{out}")
    wall_s = float(wall.group(1)) if wall is not None else float(cpu.group(1))
    return [Figure(f"round at 60 000 images, defaults ({cpus} CPU(s)), wall", wall_s, "s",
                   60.0, f"{float(cpu.group(1)):.1f} s of CPU")]


ROWS: dict[str, tuple[str, Callable[[argparse.Namespace], list[Figure]]]] = {
    "list": ("bflnet list", cli_row(LIST, 0.3)),
    "consensus": ("bflnet run consensus-averaging --set graph=torus --set K=4096 "
                  "--set rounds=1", cli_row(CONSENSUS, 2.0)),
    "cover": ("bflnet run cover-time --set graph=complete --set K=10 --set runs=2000",
              cli_row(COVER, 2.0)),
    "walk": ("random walk against bare SimPy (bench/random_walk_overhead.py)", walk_row),
    "fedavg": ("FedAvg, K = 10 x 6000 Fashion-MNIST-shaped, 784-100-10, all agents, "
               "defaults", fedavg_row),
    "dsvgd": ("DSVGD round, logistic regression on covertype's shape", dsvgd_row),
    "cdbfl": ("CD-BFL Fig. 4 at the paper's settings (LeNet 2.7 M, T = 800, K = 10)",
              cdbfl_row),
    "emtdamp": ("EM-TDAMP, MNIST, K = 10, tau_max = 10", emtdamp_row),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS),
                        help=f"comma list of rows (default all: {', '.join(ROWS)})")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown or not names:
        parser.error(f"--rows: unknown {', '.join(unknown) or '(none given)'}; known: "
                     f"{', '.join(ROWS)}")
    if args.repeat < 1:
        parser.error("--repeat: must be >= 1")
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} (1 min) at the "
          f"start; {args.repeat} repeats", flush=True)
    for name in names:
        title, measure = ROWS[name]
        print(f"{title}", flush=True)
        for figure in measure(args):
            print(figure.line(), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
