"""Benchmark: the scale curve: cost per random-walk hop, per gossip message and memory per
node as the number of nodes K grows.

1. Random walk: the random-walk protocol (Metropolis-Hastings walk, a one-float token that
   draws from no agent stream) on random geometric graphs in the unit square with the
   radius that gives an expected mean degree of 8 (exact for the square, borders
   included), K = 10, 100, 1000, 10^4. At that degree a large random geometric graph is
   almost never connected, so the walk runs on the largest connected component (relabelled
   0..n-1; its size is printed). A hop is one iteration of the walk (a visit: learner
   update, record row, walk decision, and a message when the token moves).
2. Gossip: the consensus protocol with ``ConsensusAveraging`` (one float64 per node) on a
   torus with 4 neighbours, K = 16 ... 4096.
3. Memory: the peak traced memory (tracemalloc) of set-up plus a short run, per node, and
   the growth of the resident set of the same work untraced, each (protocol, K) in a fresh
   process; what dominates at the largest K.

All links are 1 Mbit/s, 5 ms fixed-rate links (``gossip_scale.CHANNEL``), no compute time.
Rates are marginal: (t(long run) - t(short run)) / (difference in hops or messages), each
length the best of ``--repeat`` runs, so set-up and the protocol's start are left out. The
runs go in rounds, every length of every K in turn, and "x first" is the median over the
rounds of the cost against the smallest K's in the same round (the machine is shared, and
its speed drifts over minutes). The set-up (graph; walk or weights, and network) is
printed apart, and so is the start: a run of one iteration less one unit's cost. The hop
and message counts are the protocol's own record. Each run starts after a full
collection (not timed), so the garbage of the set-up and of earlier runs is not collected
inside it; the time the run itself spends in Python's garbage collector is measured
(``gc.callbacks``) and printed. The last lines say from which K the cost is more than
25 % above the smallest K's, and why: the cost per unit at the smallest and largest K with
the collector disabled, and cProfile's calls and own time per unit there (the difference
of the two run lengths). One process at a time (the memory part runs each case in a fresh
child process, one after another); torch is not imported.

    python bench/scale_curve.py [--quick] [--repeat 3]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import itertools
import linecache
import math
import os
import pstats
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import Network, Simulation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gossip_scale import CHANNEL, Token  # bench/ is not a package

DEGREE = 8.0          # expected mean degree of the random geometric graphs
TOKEN_BITS = 64       # one float64, the token's and a gossip message's size
NOT_FLAT = 1.25       # a cost above 1.25 x the smallest K's is not flat
NEVER = 10**9         # eval_every: no evaluation


@dataclass
class Sizes:
    """The sizes and run lengths of one invocation."""

    walk_K: Sequence[int]
    gossip_K: Sequence[int]
    hops: tuple[int, int]          # the two walk lengths
    messages: tuple[int, int]      # about this many gossip messages in the two runs


FULL = Sizes((10, 100, 1000, 10_000), (16, 64, 256, 1024, 4096), (10_000, 60_000),
             (16_000, 176_000))
QUICK = Sizes((10, 100), (16, 64), (2_000, 10_000), (4_000, 32_000))


@dataclass
class Run:
    """One timed run: wall seconds of ``sim.run_outcome`` and what the record says."""

    seconds: float
    gc_seconds: float
    iterations: int      # "iteration" / "round" rows of the record
    messages: int        # the record's cum_bits / 64 (every message is one float64)
    moved: int = 0       # walk only: iterations after which the token moved


@dataclass
class Curve:
    """One K of a table: set-up, the marginal cost per unit (hop or message), the start."""

    K: int
    nodes: int
    degree: float
    graph_s: float       # set-up: the graph
    network_s: float     # set-up: the walk or the weights, and the network
    per_unit_s: float
    gc_per_unit_s: float
    start_s: float       # a run of one iteration less its unit cost
    units: tuple[int, int]
    short: Run           # the best run of each length
    long: Run
    per_unit_each: list[float]     # per round of runs (see ``in_turn``)
    gc_per_unit_each: list[float]

    def ratio(self, base: Curve) -> float:
        """Cost per unit against ``base``'s: median of the ratios in the same round."""
        return paired(self.per_unit_each, base.per_unit_each)

    def rest_ratio(self, base: Curve) -> float:
        """The same outside the garbage collector."""
        return paired([t - g for t, g in zip(self.per_unit_each, self.gc_per_unit_each,
                                             strict=True)],
                      [t - g for t, g in zip(base.per_unit_each, base.gc_per_unit_each,
                                             strict=True)])


# ------------------------------------------------------------------ timing helpers


class GcClock:
    """Wall time spent in the garbage collector while installed."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


Measure = Callable[[Callable[[], Any]], tuple[float, float]]


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, seconds in the garbage collector) of ``fn()``, after a full collection
    (not timed): the garbage of the set-up and of earlier runs is not collected in it."""
    gc.collect()
    clock = GcClock()
    gc.callbacks.append(clock)
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start, clock.total
    finally:
        gc.callbacks.remove(clock)


def record_counts(sim: Simulation, event: str) -> tuple[int, int]:
    """(rows of ``event``, messages) from the run's record."""
    rows = sim.recorder.rows
    iterations = sum(row["event"] == event for row in rows)
    bits = rows[-1]["cum_bits"]
    assert bits % TOKEN_BITS == 0, bits
    return iterations, bits // TOKEN_BITS


def best(runs: Sequence[Run]) -> Run:
    return min(runs, key=lambda r: r.seconds)


def in_turn(runs: Sequence[Callable[[], Run]], repeat: int) -> list[list[Run]]:
    """``repeat`` rounds of calling each of ``runs`` in turn, as [run][round]: a slow spell
    of the machine (it is shared) hits all of a round alike."""
    rounds = [[run() for run in runs] for _ in range(repeat)]
    return [list(column) for column in zip(*rounds, strict=True)]


def paired(costs: Sequence[float], base: Sequence[float]) -> float:
    """The median over the rounds of cost / base cost in the same round."""
    return statistics.median(c / b for c, b in zip(costs, base, strict=True))


@dataclass
class Setup:
    """What the runs of one K share, and what building it took."""

    graph: nx.Graph
    network: Network
    graph_s: float
    network_s: float
    walk: MetropolisHastingsWalk | None = None
    weights: Any = None


def curves(setups: Sequence[Setup], run: Callable[[Setup, int], Run],
           lengths: Sequence[tuple[int, int]], repeat: int, count: Callable[[Run], int]
           ) -> list[Curve]:
    """For each set-up: the cost per unit (``count``: hops or messages of a run) from the
    best of ``repeat`` runs of each of its two lengths, and the start from the best of
    ``repeat`` runs of one iteration; all runs of all K taken in turn."""
    jobs = [functools.partial(run, setup, n) for setup, pair in zip(setups, lengths, strict=True)
            for n in (1, *pair)]
    results = in_turn(jobs, repeat)
    return [make_curve(setup, *results[3 * i:3 * i + 3], count)
            for i, setup in enumerate(setups)]


def make_curve(setup: Setup, firsts: list[Run], shorts: list[Run], longs: list[Run],
               count: Callable[[Run], int]) -> Curve:
    first, short, long = best(firsts), best(shorts), best(longs)
    units = (count(short), count(long))
    n = units[1] - units[0]
    per_unit = (long.seconds - short.seconds) / n
    graph = setup.graph
    return Curve(graph.number_of_nodes(), graph.number_of_nodes(),
                 2 * graph.number_of_edges() / graph.number_of_nodes(), setup.graph_s,
                 setup.network_s, per_unit, (long.gc_seconds - short.gc_seconds) / n,
                 first.seconds - count(first) * per_unit, units, short, long,
                 [(b.seconds - a.seconds) / n for a, b in zip(shorts, longs, strict=True)],
                 [(b.gc_seconds - a.gc_seconds) / n for a, b in zip(shorts, longs, strict=True)])


# ------------------------------------------------------------------ random walk


def near_probability(r: float) -> float:
    """P(|X - Y| < r) for X, Y uniform in the unit square."""
    if r <= 1.0:
        return math.pi * r * r - 8.0 / 3.0 * r**3 + r**4 / 2.0
    if r >= math.sqrt(2.0):
        return 1.0
    s = math.sqrt(r * r - 1.0)
    return (1.0 / 3.0 - 2.0 * r * r - r**4 / 2.0 + 4.0 / 3.0 * (2.0 * r * r + 1.0) * s
            + 2.0 * r * r * (math.asin(1.0 / r) - math.acos(1.0 / r)))


def rgg_radius(K: int, degree: float = DEGREE) -> float:
    """The radius whose expected mean degree in the unit square is ``degree`` (bisection)."""
    lo, hi = 0.0, math.sqrt(2.0)
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if (K - 1) * near_probability(mid) < degree else (lo, mid)
    return hi


def rgg(K: int, seed: int = 0, degree: float = DEGREE) -> nx.Graph:
    """The largest component of a random geometric graph on K uniform points in the unit
    square, relabelled 0..n-1 (positions kept as ``pos``)."""
    xy = np.random.default_rng(seed).uniform(0.0, 1.0, size=(K, 2))
    pos = {i: (float(x), float(y)) for i, (x, y) in enumerate(xy)}
    graph = nx.random_geometric_graph(K, rgg_radius(K, degree), pos=pos)
    largest = max(nx.connected_components(graph), key=len)
    return nx.convert_node_labels_to_integers(graph.subgraph(largest).copy(),
                                              ordering="sorted")


def walk_setup(K: int, seed: int = 0) -> Setup:
    """The random geometric graph, the walk and the network, timed."""
    start = time.perf_counter()
    graph = rgg(K, seed)
    middle = time.perf_counter()
    walk = MetropolisHastingsWalk(graph)
    network = Simulation(seed).build_network(graph, channel=CHANNEL)
    end = time.perf_counter()
    return Setup(graph, network, middle - start, end - middle, walk=walk)


def walk_run(setup: Setup, hops: int, seed: int = 1, measure: Measure = timed) -> Run:
    """``hops`` iterations of the walk on the (rebound) network; only the run is timed."""
    sim = Simulation(seed)
    sim.use_network(setup.network)
    protocol = RandomWalkProtocol(Token(), setup.walk, StopRule(max_iterations=hops),
                                  eval_every=NEVER)
    seconds, gc_seconds = measure(lambda: sim.run_outcome(protocol))
    iterations, messages = record_counts(sim, "iteration")
    visits = protocol.visits
    moved = sum(a != b for a, b in itertools.pairwise(visits))
    return Run(seconds, gc_seconds, iterations, messages, moved)


def walk_curves(sizes: Sequence[int], hops: tuple[int, int], repeat: int) -> list[Curve]:
    """The random walk's curve for each K in ``sizes``."""
    result = curves([walk_setup(K) for K in sizes], walk_run, [hops] * len(sizes), repeat,
                    lambda run: run.iterations)
    for K, row in zip(sizes, result, strict=True):
        row.K = K
    return result


# ------------------------------------------------------------------ gossip


def gossip_setup(K: int) -> Setup:
    """As ``gossip_scale.gossip_time``: the torus, sparse Metropolis-Hastings weights and
    the network, timed."""
    start = time.perf_counter()
    graph = make_graph("torus", K, np.random.default_rng(0))
    middle = time.perf_counter()
    weights = metropolis_hastings_weights(graph, sparse=True)
    network = Simulation(0).build_network(graph, channel=CHANNEL)
    end = time.perf_counter()
    return Setup(graph, network, middle - start, end - middle, weights=weights)


def gossip_run(setup: Setup, rounds: int, seed: int = 1, measure: Measure = timed
               ) -> Run:
    """``rounds`` rounds of gossip on the (rebound) network; only the run is timed."""
    sim = Simulation(seed)
    sim.use_network(setup.network)
    protocol = ConsensusProtocol(ConsensusAveraging(), setup.weights,
                                 StopRule(max_iterations=rounds), eval_every=NEVER)
    seconds, gc_seconds = measure(lambda: sim.run_outcome(protocol))
    iterations, messages = record_counts(sim, "round")
    return Run(seconds, gc_seconds, iterations, messages)


def gossip_rounds(K: int, messages: tuple[int, int]) -> tuple[int, int]:
    """Round counts of the two runs: about ``messages`` messages, at least 2 and 10 more."""
    short = max(2, round(messages[0] / (4 * K)))
    return short, short + max(10, round((messages[1] - messages[0]) / (4 * K)))


def gossip_curves(sizes: Sequence[int], messages: tuple[int, int], repeat: int
                  ) -> list[Curve]:
    """Gossip's curve for each K in ``sizes``."""
    return curves([gossip_setup(K) for K in sizes], gossip_run,
                  [gossip_rounds(K, messages) for K in sizes], repeat, lambda run: run.messages)


# ------------------------------------------------------------------ memory


@dataclass
class Memory:
    protocol: str
    K: int
    nodes: int
    peak_bytes: int
    rss_bytes: int | None
    top: list[tuple[str, int]]     # (source line, bytes) at the end of the traced work


def rss_bytes() -> int | None:
    """The current resident set (Linux ``/proc/self/statm``), else None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def short_work(protocol: str, K: int) -> tuple[int, Any]:
    """Set-up plus a short run (1000 hops or 2 rounds); (nodes, what to keep alive)."""
    if protocol == "walk":
        setup = walk_setup(K)
        return setup.graph.number_of_nodes(), (setup, walk_run(setup, 1000))
    gossip = gossip_setup(K)
    return K, (gossip, gossip_run(gossip, 2))


def source_line(frame: tracemalloc.Frame, width: int = 60) -> str:
    """'file.py:line: code' of an allocation site, the code cut to ``width``."""
    code = linecache.getline(frame.filename, frame.lineno).strip()
    code = code if len(code) <= width else code[:width - 3] + "..."
    return f"{Path(frame.filename).name}:{frame.lineno}: {code}"


def memory(protocol: str, K: int) -> Memory:
    """Run in a fresh process: a warm-up (imports, caches), then the work untraced (RSS
    growth), then traced (peak and the largest allocation sites)."""
    short_work(protocol, 16)
    gc.collect()
    before = rss_bytes()
    kept = short_work(protocol, K)
    after = rss_bytes()
    del kept
    gc.collect()
    tracemalloc.start()
    nodes, _kept = short_work(protocol, K)
    stats = tracemalloc.take_snapshot().statistics("lineno")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    top = [(source_line(s.traceback[0]), s.size) for s in stats[:4]]
    rss = None if before is None or after is None else after - before
    return Memory(protocol, K, nodes, peak, rss, top)


def memory_table(sizes: Sizes) -> list[Memory]:
    """Each (protocol, K) in its own fresh process, one after another."""
    jobs = [("walk", K) for K in sizes.walk_K] + [("gossip", K) for K in sizes.gossip_K]
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return list(pool.map(memory, *zip(*jobs, strict=True)))


# ------------------------------------------------------------------ profile: why


Profile = dict[str, tuple[float, float]]


class Profiled:
    """A ``Measure`` that runs under cProfile and keeps {function: (calls, own seconds)}."""

    def __init__(self) -> None:
        self.stats: Profile = {}

    def __call__(self, fn: Callable[[], Any]) -> tuple[float, float]:
        """Profile ``fn()`` with the garbage collector off (its time is measured apart)."""
        gc.collect()
        gc.disable()
        try:
            profiler = cProfile.Profile()
            profiler.runcall(fn)
        finally:
            gc.enable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        self.stats = {f"{Path(f).name}:{name}": (nc, tt)
                      for (f, _, name), (_, nc, tt, _, _) in stats.items()}
        return 0.0, 0.0


def per_unit(short: Profile, long: Profile, units: int) -> Profile:
    """{function: (calls, own seconds) per unit}, from the difference of two runs."""
    return {f: ((c - short.get(f, (0, 0.0))[0]) / units, (t - short.get(f, (0, 0.0))[1]) / units)
            for f, (c, t) in long.items()}


def collector_off(fn: Callable[[], Any]) -> tuple[float, float]:
    """A ``Measure``: (wall seconds, 0) of ``fn()`` with the garbage collector disabled."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start, 0.0
    finally:
        gc.enable()


@dataclass
class Diagnosis:
    """One K looked at closer: the cost per unit with the garbage collector disabled, and
    cProfile's {function: (calls, own seconds)} per unit (the collector off too)."""

    K: int
    per_unit_off_each: list[float]   # per round (see ``in_turn``)
    profile: Profile

    @property
    def per_unit_off_s(self) -> float:
        return min(self.per_unit_off_each)


def diagnose(setups: Sequence[Setup], run: Callable[..., Run],
             lengths: Sequence[tuple[int, int]], repeat: int, count: Callable[[Run], int]
             ) -> list[Diagnosis]:
    """For each set-up: the cost per unit with the collector disabled (``repeat`` rounds,
    all runs taken in turn) and a profile of the two lengths."""
    jobs = [functools.partial(run, setup, n, measure=collector_off)
            for setup, pair in zip(setups, lengths, strict=True) for n in pair]
    off = in_turn(jobs, repeat)
    out = []
    for i, (setup, pair) in enumerate(zip(setups, lengths, strict=True)):
        shorts, longs = off[2 * i:2 * i + 2]
        units = count(longs[0]) - count(shorts[0])
        a, b = Profiled(), Profiled()
        run(setup, pair[0], measure=a)
        run(setup, pair[1], measure=b)
        out.append(Diagnosis(setup.graph.number_of_nodes(),
                             [(y.seconds - x.seconds) / units
                              for x, y in zip(shorts, longs, strict=True)],
                             per_unit(a.stats, b.stats, units)))
    return out


def walk_diagnosis(sizes: Sequence[int], hops: tuple[int, int], repeat: int
                   ) -> list[Diagnosis]:
    return diagnose([walk_setup(K) for K in sizes], walk_run, [hops] * len(sizes), repeat,
                    lambda run: run.iterations)


def gossip_diagnosis(sizes: Sequence[int], messages: tuple[int, int], repeat: int
                     ) -> list[Diagnosis]:
    return diagnose([gossip_setup(K) for K in sizes], gossip_run,
                    [gossip_rounds(K, messages) for K in sizes], repeat,
                    lambda run: run.messages)


def why(small: Profile, large: Profile, unit: str) -> str:
    """Calls and own time per unit at both sizes, and the functions whose own time per unit
    grew most."""
    calls = [sum(c for c, _ in p.values()) for p in (small, large)]
    total = [1e6 * sum(t for _, t in p.values()) for p in (small, large)]
    grown = sorted(large, key=lambda f: large[f][1] - small.get(f, (0, 0.0))[1], reverse=True)
    parts = [f"{f} {1e6 * small.get(f, (0, 0.0))[1]:.2f} -> {1e6 * large[f][1]:.2f}"
             for f in grown[:3]]
    more = [f"{f} {small.get(f, (0, 0.0))[0]:.1f} -> {large[f][0]:.1f}" for f in large
            if large[f][0] - small.get(f, (0, 0.0))[0] >= 0.5]
    return (f"{calls[0]:.1f} -> {calls[1]:.1f} calls and {total[0]:.1f} -> {total[1]:.1f} µs "
            f"per {unit}; own µs grown most: {'; '.join(parts)}"
            + (f"; calls grown: {'; '.join(more)}" if more else ""))


# ------------------------------------------------------------------ printing


def cache_sizes() -> str:
    """The CPU caches as Linux lists them (cpu0), e.g. 'L2 512K, L3 32768K'."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    found = []
    for index in sorted(root.glob("index*")):
        try:
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text()
            if kind.strip() != "Instruction":
                found.append(f"L{level} {(index / 'size').read_text().strip()}")
        except OSError:
            continue
    return ", ".join(found) or "unknown"


def print_walk(rows: list[Curve], repeat: int) -> None:
    h = rows[0].units
    print(f"1. Random walk (Metropolis-Hastings) on random geometric graphs, expected mean "
          f"degree {DEGREE:g}, largest component; µs/hop = (t({h[1]:,} hops) - "
          f"t({h[0]:,} hops)) / {h[1] - h[0]:,}, best of {repeat} each; x first: median of "
          f"{repeat} same-round ratios")
    print("      K   nodes  degree  graph s  net s  start ms   µs/hop     hops/s  moved  "
          "gc µs/hop  x first")
    for c in rows:
        moved = c.long.moved / c.long.iterations
        print(f"{c.K:7d} {c.nodes:7d} {c.degree:7.2f} {c.graph_s:8.3f} {c.network_s:6.3f} "
              f"{1e3 * c.start_s:9.1f} {1e6 * c.per_unit_s:8.2f} {1 / c.per_unit_s:10,.0f} "
              f"{100 * moved:4.0f} % {1e6 * c.gc_per_unit_s:10.2f} "
              f"{c.ratio(rows[0]):8.2f}")


def print_gossip(rows: list[Curve], repeat: int) -> None:
    print(f"2. Gossip (consensus protocol, ConsensusAveraging) on a torus, 4 neighbours; "
          f"µs/msg = difference of runs of about {rows[0].units[0]:,} and "
          f"{rows[0].units[1]:,} messages, best of {repeat} each; x first: median of {repeat} "
          f"same-round ratios")
    print("      K    rounds  graph s  net s  start ms   µs/msg     msgs/s  gc µs/msg  x first")
    for c in rows:
        rounds = f"{c.short.iterations}/{c.long.iterations}"
        print(f"{c.K:7d} {rounds:>9s} {c.graph_s:8.3f} {c.network_s:6.3f} "
              f"{1e3 * c.start_s:9.1f} {1e6 * c.per_unit_s:8.2f} {1 / c.per_unit_s:10,.0f} "
              f"{1e6 * c.gc_per_unit_s:10.2f} {c.ratio(rows[0]):8.2f}")


def print_memory(rows: list[Memory]) -> None:
    print("3. Memory per node: set-up + a short run (1000 hops / 2 rounds), each in a fresh "
          "process; peak traced (tracemalloc) and resident-set growth untraced")
    print("protocol       K    nodes  peak MB  peak kB/node  RSS kB/node")
    for m in rows:
        rss = "n/a" if m.rss_bytes is None else f"{m.rss_bytes / m.nodes / 1e3:.1f}"
        print(f"{m.protocol:8s} {m.K:6d} {m.nodes:8d} {m.peak_bytes / 1e6:8.1f} "
              f"{m.peak_bytes / m.nodes / 1e3:13.2f} {rss:>12s}")
    for protocol in ("walk", "gossip"):
        m = max((r for r in rows if r.protocol == protocol), key=lambda r: r.K)
        print(f"   what dominates ({protocol}, K = {m.K}): the largest allocation sites alive "
              f"at the end, share of the peak")
        for line, size in m.top:
            print(f"   {size / m.peak_bytes:6.1%}  {line}")


def ratios(rows: list[Curve], ratio: Callable[[Curve, Curve], float]) -> str:
    return ", ".join(f"{ratio(c, rows[0]):.2f}" for c in rows)


def flat_lines(unit: str, rows: list[Curve], small: Diagnosis, large: Diagnosis,
               mem: Memory) -> str:
    """Where the cost per unit first exceeds NOT_FLAT x the smallest K's, the share of the
    garbage collector, and what cProfile and the memory say at the largest K."""
    over = [c for c in rows if c.ratio(rows[0]) > NOT_FLAT]
    if over:
        flat = max([c.K for c in rows if c.K < over[0].K], default=rows[0].K)
        verdict = f"flat up to K = {flat}, not from K = {over[0].K}"
    else:
        verdict = f"flat up to K = {rows[-1].K}"
    first, last = rows[0], rows[-1]
    return (
        f"per {unit}: {verdict} (cost x {ratios(rows, Curve.ratio)} of "
        f"K = {first.K}'s; not flat = over +{NOT_FLAT - 1:.0%}). Outside the garbage collector: "
        f"x {ratios(rows, Curve.rest_ratio)}; in it: "
        f"{1e6 * first.gc_per_unit_s:.2f} -> {1e6 * last.gc_per_unit_s:.2f} µs per {unit}. "
        f"With the collector disabled: {1e6 * small.per_unit_off_s:.2f} -> "
        f"{1e6 * large.per_unit_off_s:.2f} µs per {unit} "
        f"(x {paired(large.per_unit_off_each, small.per_unit_off_each):.2f}).\n"
        f"  cProfile, collector disabled, per {unit} (difference of the two runs), "
        f"K = {first.K} -> {last.K}: {why(small.profile, large.profile, unit)}.\n"
        f"  At K = {mem.K} set-up + short run peak at {mem.peak_bytes / 1e6:.1f} MB traced "
        f"(CPU caches: {cache_sizes()}).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small K only (10, 100 and 16, 64), shorter runs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per length (best taken)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    walk_run(walk_setup(10), 100)  # warm-up: first-call imports and caches
    gossip_run(gossip_setup(16), 2)
    walk = walk_curves(sizes.walk_K, sizes.hops, args.repeat)
    print_walk(walk, args.repeat)
    gossip = gossip_curves(sizes.gossip_K, sizes.messages, args.repeat)
    print_gossip(gossip, args.repeat)
    mem = memory_table(sizes)
    print_memory(mem)
    walk_ends = walk_diagnosis(sizes.walk_K[::len(sizes.walk_K) - 1], sizes.hops, args.repeat)
    gossip_ends = gossip_diagnosis(sizes.gossip_K[::len(sizes.gossip_K) - 1], sizes.messages,
                                   args.repeat)
    print(flat_lines("hop", walk, *walk_ends, [m for m in mem if m.protocol == "walk"][-1]))
    print(flat_lines("message", gossip, *gossip_ends,
                     [m for m in mem if m.protocol == "gossip"][-1]))


if __name__ == "__main__":
    main()
