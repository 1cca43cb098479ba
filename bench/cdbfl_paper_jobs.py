"""Benchmark: the CD-BFL paper's Fig. 4 jobs (``scripts/reproduce_cdbfl.py``), projected from
their parts: one round of each method and one evaluation sweep, at the paper's settings.

Each method (CD-BFL, DSGLD, CF-FL) runs through the consensus protocol as the scenario
``cdbfl-shift`` runs it: the ≈ 2.7 M-parameter LeNet, K = 10 devices of 50 synthetic
radar maps on a complete graph, Metropolis-Hastings weights, L = 8 local steps of 10 maps
(DSGLD: one step), top-1 % for CD-BFL and CF-FL (DSGLD: float32 samples). A round is the
difference between simulations of ``--rounds`` + 1 and 1 rounds (no evaluation), divided
by ``--rounds``. A sweep is what one evaluation of the network costs: the K devices'
predictive probabilities on the scenario's 500 test maps (200 day-0, 100 critical day-0,
200 critical shifted).

A job of T = 800 rounds with ``eval_every`` 50, burn-in 700 and thin 5 makes 800 rounds
and 35 sweeps (CD-BFL, DSGLD: 15 evaluations before the first kept sample, then 20 kept
samples) or 17 (CF-FL: 17 evaluations of its current model); the nine jobs (3 seeds) are
packed longest first on ``--workers`` one-thread workers.

With ``--legacy`` each measurement is also made, alternately in the same process, with
the code paths as they were before the speed-ups (:mod:`cdbfl_legacy`: the full top-k
partition, the update arithmetic allocating every intermediate, the evaluation's
convolutions over whole chunks), and the ratio new / legacy is printed (median over the
``--repeat`` pairs).

With ``--against SRC`` (a ``src`` folder of another version, e.g. from ``git archive``)
each method's round and the sweep are measured in fresh processes, alternately with
``SRC`` and with this checkout's code (``--repeat`` pairs), and the CPU seconds (user +
system, which a loaded machine inflates less than wall seconds) and their ratio
new / other are printed, with the projection of both.

Under a fluctuating load the round differences are noisy; ``--components`` times instead
one device's share of a CD-BFL and a DSGLD round (local steps, top-k encoding, mixing),
new and legacy alternately call by call, ``--repeat`` times each (medians).
``--switches`` times the K devices' share of a CD-BFL round (local steps; outgoing,
top-k, decoding and ``sent``; mixing), with the sparse mixing of the increments
(:mod:`bflnet.learners.langevin.sparse_mix`) and the NumPy step chain on and off, alternately in
the same process (``--repeat`` pairs; CPU seconds; both give the same bits).
``--steps`` times, alternately in the same process, one local step's prior-and-SGD chain
on d = 2.7 M entries in NumPy's six operations (before) and five (now), and the first
pooling layer's backward with a zero-filled gradient (before) and zeros on the floored
edge only (now); each pair is checked to give the same bits.
``--mixing`` times the K devices' share of a round of each method (local steps;
publish: outgoing, encoding, decoding, ``sent``; mixing; the round's link schedules on
the scenario's links, 1 Mbit/s and 5 ms) with the NumPy mixing chains
(:data:`bflnet.learners.langevin.chunked.NUMPY_MIX`) and the links' one-sum schedules of lossless
fixed-rate channels (:attr:`bflnet.channels.base.Channel.fixed_attempts`) on and off,
alternately in the same process (``--repeat`` pairs; CPU seconds; both give the same
bits).

    python bench/cdbfl_paper_jobs.py [--rounds 1] [--repeat 1] [--workers 2] [--legacy]
    python bench/cdbfl_paper_jobs.py --components [--repeat 7]
    python bench/cdbfl_paper_jobs.py --switches [--repeat 10]
    python bench/cdbfl_paper_jobs.py --mixing [--repeat 6] [--methods dsgld,cd-bfl]
    python bench/cdbfl_paper_jobs.py --steps [--repeat 30]
    python bench/cdbfl_paper_jobs.py --against /tmp/base/src [--rounds 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cdbfl_legacy
import numpy as np
import torch

from bflnet.channels import FixedRateChannel, IdealChannel
from bflnet.data.radar import MAP_SHAPE, radar_maps
from bflnet.learners.hyper import CDBFLParams, LangevinParams
from bflnet.learners.langevin import chunked, langevin, sparse_mix
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.learners.langevin.cffl import CFFL
from bflnet.learners.langevin.dsgld import DSGLD
from bflnet.learners.langevin.langevin import predictive_probs
from bflnet.learners.models.lenet import BayesianLeNet
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.codecs import RawCodec, TopKCodec
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Simulation

K, PER_NODE, T, EVAL_MAPS = 10, 50, 800, 500
SWEEPS = {"cd-bfl": 35, "dsgld": 35, "cf-fl": 17}


def learner(method: str, model: BayesianLeNet, nodes: dict, legacy: bool = False
            ) -> tuple[Any, Any]:
    """The method's learner (no kept samples in the timed rounds) and codec."""
    classes = cdbfl_legacy.CLASSES if legacy else {"cd-bfl": CDBFL, "dsgld": DSGLD,
                                                    "cf-fl": CFFL}
    if method == "dsgld":
        lrn = classes[method](model, nodes, LangevinParams(batch_size=10, burn_in=10**6))
        codec: Any = RawCodec(32)
    else:
        params = CDBFLParams(local_steps=8, batch_size=10, burn_in=10**6)
        lrn = classes[method](model, nodes, params)
        codec = TopKCodec(k=max(1, round(0.01 * model.d)), value_bits=32)
    if legacy:
        cdbfl_legacy.legacy_objective(lrn.objective)
    return lrn, codec


def time_rounds(method: str, model: BayesianLeNet, nodes: dict, rounds: int,
                legacy: bool = False, **network: Any) -> float:
    """Wall seconds of a simulation of ``rounds`` rounds (set-up included); ``network``
    for ``Simulation.build_network`` (default: ideal links)."""
    lrn, codec = learner(method, model, nodes, legacy)
    graph = make_graph("complete", K, np.random.default_rng(0))
    start = time.perf_counter()
    with cdbfl_legacy.paths(legacy):
        sim = Simulation(1, name="bench")
        sim.build_network(graph, **network)
        sim.run(ConsensusProtocol(lrn, metropolis_hastings_weights(graph, sparse=True),
                                  StopRule(max_iterations=rounds), codec=codec,
                                  eval_every=10**6))
    return time.perf_counter() - start


def per_round(method: str, model: BayesianLeNet, nodes: dict, rounds: int,
              legacy: bool = False) -> float:
    """Seconds of one round: ``rounds`` + 1 rounds less one, over ``rounds``."""
    one = time_rounds(method, model, nodes, 1, legacy)
    return (time_rounds(method, model, nodes, rounds + 1, legacy) - one) / rounds


def time_sweep(model: BayesianLeNet, x: torch.Tensor, legacy: bool = False) -> float:
    """Wall seconds of K devices' predictive probabilities on ``x``."""
    thetas = model.init_particles(K, torch.Generator().manual_seed(1))
    start = time.perf_counter()
    with cdbfl_legacy.paths(legacy):
        for k in range(K):
            predictive_probs(model, thetas[k:k + 1], x)
    return time.perf_counter() - start


def measure(fn: Any, repeat: int, legacy: bool) -> tuple[float, str]:
    """Median of ``fn(False)`` over ``repeat`` runs, and with ``legacy`` the median ratio
    to ``fn(True)`` run alternately."""
    new, ratios = [], []
    for _ in range(repeat):
        new.append(fn(False))
        if legacy:
            ratios.append(new[-1] / fn(True))
    note = ""
    if legacy:
        note = (f" (new / legacy {statistics.median(ratios):.2f}: "
                f"{', '.join(f'{r:.2f}' for r in ratios)})")
    return statistics.median(new), note


def clock(times: dict[str, list[float]], name: str, legacy: bool, fn: Any) -> Any:
    """``fn()``, its wall seconds appended to ``times[name + " new" / " legacy"]``."""
    start = time.perf_counter()
    with cdbfl_legacy.paths(legacy):
        out = fn()
    times.setdefault(f"{name} {'legacy' if legacy else 'new'}", []).append(
        time.perf_counter() - start)
    return out


def device_share(method: str, model: BayesianLeNet, nodes: dict, repeat: int
                 ) -> dict[str, float]:
    """Median seconds of one device's local steps, encoding and mixing, new and legacy
    alternately, call by call."""
    rng = np.random.default_rng(0)
    weights = {j: 1.0 / K for j in range(K)}
    (new, codec), (old, _) = (learner(method, model, nodes, legacy) for legacy in (False, True))
    state = new.init_node(0, rng, new.init(rng))
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for legacy, lrn in ((False, new), (True, old)):
            st, _ = clock(times, "local steps", legacy,
                          lambda lrn=lrn: lrn.local_steps(0, state, np.random.default_rng(1)))
            value = lrn.outgoing(0, st)
            if method != "dsgld":
                enc = clock(times, "encode", legacy,
                            lambda value=value: codec.encode(value.numpy(), rng))
                st = lrn.sent(0, st, torch.as_tensor(codec.decode(enc)))
            got = {j: value.clone() for j in range(1, K)}
            clock(times, "mix", legacy,
                  lambda lrn=lrn, st=st, got=got: lrn.absorb(0, st, got, weights))
    return {name: statistics.median(ts) for name, ts in times.items()}


def components(model: BayesianLeNet, nodes: dict, repeat: int) -> None:
    """Print :func:`device_share` of CD-BFL and DSGLD."""
    for method in ("cd-bfl", "dsgld"):
        med = device_share(method, model, nodes, repeat)
        parts = sorted({name.rsplit(" ", 1)[0] for name in med})
        total = {v: sum(med[f"{p} {v}"] for p in parts) for v in ("new", "legacy")}
        print(f"  {method}: one device, " + "; ".join(
            f"{p} {med[p + ' new'] * 1e3:.0f} ms vs {med[p + ' legacy'] * 1e3:.0f} ms"
            for p in parts) + f"; sum {total['new']:.3f} s vs {total['legacy']:.3f} s, "
            f"ratio {total['new'] / total['legacy']:.2f}")


def switched_round(lrn: Any, codec: Any, states: dict, fast: bool,
                   times: dict[tuple[str, bool], list[float]]) -> float:
    """CPU seconds of the K devices' share of one CD-BFL round from ``states`` with the
    sparse mixing and the NumPy step chain on (``fast``) or off; each part's CPU seconds
    per device appended to ``times[(part, fast)]``."""
    share, numpy_chain = sparse_mix.SPARSE_SHARE, langevin.LocalObjective.numpy_chain
    if not fast:
        sparse_mix.SPARSE_SHARE, langevin.LocalObjective.numpy_chain = 0.0, False
    rng, weights = np.random.default_rng(0), {j: 1.0 / K for j in range(K)}

    def clock(part: str, fn: Any) -> Any:
        start = time.process_time()
        out = fn()
        times.setdefault((part, fast), []).append(time.process_time() - start)
        return out

    def publish(k: int, state: Any) -> Any:
        value = lrn.outgoing(k, state)
        seen[k] = wire.decode(codec, wire.encode(codec, value, rng)[0], value)
        return lrn.sent(k, state, seen[k])

    try:
        start = time.process_time()
        seen: dict[int, Any] = {}
        sent = {}
        for k in range(K):
            st, _ = clock("local steps", lambda k=k: lrn.local_steps(
                k, states[k], np.random.default_rng(k)))
            sent[k] = clock("publish", lambda k=k, st=st: publish(k, st))
        for k in range(K):
            clock("mixing", lambda k=k: lrn.absorb(
                k, sent[k], {j: seen[j] for j in range(K) if j != k}, weights))
        return time.process_time() - start
    finally:
        sparse_mix.SPARSE_SHARE, langevin.LocalObjective.numpy_chain = share, numpy_chain


def switches(model: BayesianLeNet, nodes: dict, repeat: int) -> None:
    """Print :func:`switched_round` on and off, alternately (the order swapped every pair)."""
    lrn, codec = learner("cd-bfl", model, nodes)
    rng = np.random.default_rng(0)
    states = {k: lrn.init_node(k, rng, lrn.init(rng)) for k in range(K)}
    times: dict[tuple[str, bool], list[float]] = {}
    switched_round(lrn, codec, states, True, times)      # warm-up
    switched_round(lrn, codec, states, False, times)
    times.clear()
    ratios = []
    for i in range(repeat):
        order = (True, False) if i % 2 == 0 else (False, True)
        got = {fast: switched_round(lrn, codec, states, fast, times) for fast in order}
        ratios.append(got[True] / got[False])
        print(f"  round share: CPU s on {got[True]:.3f}, off {got[False]:.3f}, "
              f"on / off {ratios[-1]:.3f}", flush=True)
    print(f"  on / off: median {statistics.median(ratios):.3f} over {repeat} pairs")
    for part in ("local steps", "publish", "mixing"):
        on, off = (statistics.median(times[(part, f)]) for f in (True, False))
        print(f"  one device's {part}: on {on * 1e3:.1f} ms, off {off * 1e3:.1f} ms")


#: The scenario's links (``cdbfl-shift``'s defaults): 1 Mbit/s, 5 ms, lossless.
SCENARIO_LINKS = {"channel": FixedRateChannel(1e6, 0.005), "mtu_bits": 12_000}
#: Their own ``fixed_attempts`` properties (absent in a tree before them: ``--against``).
_FIXED = {cls: vars(cls).get("fixed_attempts") for cls in (FixedRateChannel, IdealChannel)}


def set_mixing(on: bool) -> None:
    """The NumPy mixing chains and the links' one-sum schedules on or off."""
    chunked.NUMPY_MIX = on
    for cls, prop in _FIXED.items():
        if prop is not None:
            cls.fixed_attempts = prop if on else property(lambda self: False)  # type: ignore


def mixing_share(method: str, lrn: Any, codec: Any, states: dict, on: bool,
                 times: dict[tuple[str, bool], list[float]]) -> None:
    """The K devices' share of one round of ``method`` from ``states`` with
    :func:`set_mixing` ``on`` or off: CPU seconds of each part appended to
    ``times[(part, on)]``: local steps, publish (outgoing, encoding, decoding, ``sent``),
    mixing (``absorb``) and links (the round's K·(K−1) link schedules of the scenario's
    links)."""
    import simpy

    from bflnet.simulator.link import Link
    from bflnet.simulator.recorder import Recorder

    set_mixing(on)
    rng, weights = np.random.default_rng(0), {j: 1.0 / K for j in range(K)}
    part: dict[str, float] = {}

    def clock(name: str, fn: Any) -> Any:
        start = time.process_time()
        out = fn()
        part[name] = part.get(name, 0.0) + time.process_time() - start
        return out

    def publish(k: int, state: Any) -> Any:
        value = lrn.outgoing(k, state)
        payload, bits = wire.encode(codec, value, rng)
        seen[k] = wire.decode(codec, payload, value)
        return lrn.sent(k, state, seen[k]), bits

    try:
        seen: dict[int, Any] = {}
        sent, bits = {}, 0
        for k in range(K):
            st, _ = clock("local steps", lambda k=k: lrn.local_steps(
                k, states[k], np.random.default_rng(k)))
            sent[k], bits = clock("publish", lambda k=k, st=st: publish(k, st))
        for k in range(K):
            clock("mixing", lambda k=k: lrn.absorb(
                k, sent[k], {j: seen[j] for j in range(K) if j != k}, weights))
        env = simpy.Environment()
        links = [Link(env, k, j, SCENARIO_LINKS["channel"], np.random.default_rng(0),
                      Recorder(env), mtu_bits=SCENARIO_LINKS["mtu_bits"])
                 for k in range(K) for j in range(K) if j != k]
        clock("links", lambda: [link.schedule(bits) for link in links])
    finally:
        set_mixing(True)
    for name, value in part.items():
        times.setdefault((name, on), []).append(value)


def mixing(model: BayesianLeNet, nodes: dict, methods: list[str], repeat: int) -> None:
    """Print :func:`mixing_share` of each method on and off, alternately (the order
    swapped every pair): medians per part and of the sum."""
    for method in methods:
        lrn, codec = learner(method, model, nodes)
        rng = np.random.default_rng(0)
        common = lrn.init(rng)
        states = {k: lrn.init_node(k, rng, common) for k in range(K)}
        times: dict[tuple[str, bool], list[float]] = {}
        for on in (True, False):                                   # warm-up
            mixing_share(method, lrn, codec, states, on, times)
        times.clear()
        for i in range(repeat):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                mixing_share(method, lrn, codec, states, on, times)
        parts = ("local steps", "publish", "mixing", "links")
        med = {(p, on): statistics.median(times[(p, on)]) for p in parts
               for on in (True, False)}
        sums = {on: [sum(times[(p, on)][i] for p in parts) for i in range(repeat)]
                for on in (True, False)}
        ratios = [a / b for a, b in zip(sums[True], sums[False], strict=True)]
        print(f"  {method:6s} K devices' round share, CPU s on / off: " + "; ".join(
            f"{p} {med[(p, True)]:.3f} / {med[(p, False)]:.3f}" for p in parts)
            + f"; sum {statistics.median(sums[True]):.3f} / "
            f"{statistics.median(sums[False]):.3f}, on / off median "
            f"{statistics.median(ratios):.3f} ({', '.join(f'{r:.2f}' for r in ratios)})",
            flush=True)


def _six_op_chain(tn: np.ndarray, gn: np.ndarray, scratch: np.ndarray, scale: float,
                  nodes: int, lr: float) -> None:
    """The prior-and-SGD chain as it ran before (mean 0, var 1): six NumPy operations."""
    step = scratch.shape[0]
    for i in range(0, tn.shape[0], step):
        t, g = tn[i:i + step], gn[i:i + step]
        p = scratch[:t.shape[0]]
        np.multiply(g, -scale, out=g)
        np.subtract(0.0, t, out=p)
        np.divide(p, nodes, out=p)
        np.subtract(g, p, out=g)
        np.multiply(g, lr, out=g)
        np.subtract(t, g, out=g)


def _zero_filled_pool_backward(grad: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """The 2 x 2 pooling's backward as it ran before: a zero-filled gradient."""
    from bflnet.learners.models.pool import _corners

    quarter, out = grad.div(4), grad.new_zeros(shape)
    for view in _corners(out):
        view.copy_(quarter)
    return out


def steps(model: BayesianLeNet, repeat: int) -> None:
    """Print the median CPU ms of the chain and of the pooling backward, before and now."""
    from bflnet.learners.models.pool import _AvgPool2x2

    g = torch.Generator().manual_seed(0)
    theta = 0.05 * torch.randn(1, model.d, generator=g)
    lik = torch.randn(1, model.d, generator=g)
    theta[0, ::7], lik[0, ::7] = 0.0, 0.0              # zero gradients, zero parameters
    shape = (10, model.widths["conv1"], *model.c1_hw)
    pooled = torch.randn(10, model.widths["conv1"], *model.p1_hw, generator=g)
    ctx = type("Ctx", (), {"shape": torch.Size(shape)})()
    out_old, out_new = lik.clone(), lik.clone()
    scratch = np.empty(chunked.CHUNK, dtype=np.float32)
    work = {
        ("chain", "before"): lambda: _six_op_chain(theta.numpy()[0], out_old.copy_(lik)
                                                   .numpy()[0], scratch, 5.0, K, 1e-4),
        ("chain", "now"): lambda: chunked.gaussian_prior_step(theta, out_new.copy_(lik),
                                                              5.0, 0.0, 1.0, K, 1e-4),
        ("pool backward", "before"): lambda: _zero_filled_pool_backward(pooled, shape),
        ("pool backward", "now"): lambda: _AvgPool2x2.backward(ctx, pooled),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for i in range(repeat):
        for key in (work if i % 2 == 0 else reversed(list(work))):
            start = time.process_time()
            work[key]()
            times.setdefault(key, []).append(time.process_time() - start)
    same_chain = torch.equal(out_old, out_new) and torch.equal(out_old.signbit(),
                                                                 out_new.signbit())
    a, b = work[("pool backward", "before")](), work[("pool backward", "now")]()
    same_pool = torch.equal(a, b) and torch.equal(a.signbit(), b.signbit())
    for name, same in (("chain", same_chain), ("pool backward", same_pool)):
        before, now = (statistics.median(times[(name, w)]) for w in ("before", "now"))
        print(f"  {name:13s}: before {before * 1e3:.2f} ms, now {now * 1e3:.2f} ms, "
              f"now / before {now / before:.3f} (same bits: {same})")
    print("  (the chain's times include copying the 11 MB gradient in)")


def makespan(jobs: list[float], workers: int) -> float:
    """Longest-first packing of ``jobs`` on ``workers``."""
    loads = [0.0] * workers
    for job in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + job)
    return max(loads)


def cpu_seconds(fn: Any) -> float:
    """CPU seconds of ``fn()`` in this process."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def measure_one(what: str, model: BayesianLeNet, nodes: dict, test: torch.Tensor,
                rounds: int) -> float:
    """CPU seconds of one round of method ``what`` (``rounds`` + 1 rounds less one, over
    the scenario's links) or of one evaluation sweep (``what = "sweep"``)."""
    if what == "sweep":
        return cpu_seconds(lambda: time_sweep(model, test))
    links = SCENARIO_LINKS
    one = cpu_seconds(lambda: time_rounds(what, model, nodes, 1, **links))
    return (cpu_seconds(lambda: time_rounds(what, model, nodes, rounds + 1, **links))
            - one) / rounds


def against(other: Path, methods: list[str], rounds: int, repeat: int, workers: int) -> None:
    """Rounds and sweeps with ``other``'s code and this checkout's, alternately in fresh
    processes; CPU seconds, ratios and both projections."""
    trees = {"new": Path(__file__).resolve().parents[1] / "src", "other": other}
    got: dict[tuple[str, str], list[float]] = {}
    for what in ["sweep", *methods]:
        for i in range(repeat):
            order = list(trees.items()) if i % 2 == 0 else list(trees.items())[::-1]
            for name, src in order:
                env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
                out = subprocess.run([sys.executable, __file__, "--one", what, "--rounds",
                                      str(rounds)], env=env, check=True, capture_output=True,
                                     text=True).stdout
                got.setdefault((what, name), []).append(json.loads(out.splitlines()[-1]))
        new, old = got[(what, "new")], got[(what, "other")]
        ratios = [a / b for a, b in zip(new, old, strict=True)]
        print(f"  {what:6s}: CPU s new {', '.join(f'{v:.2f}' for v in new)}; other "
              f"{', '.join(f'{v:.2f}' for v in old)}; new / other "
              f"{statistics.median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)})",
              flush=True)
    for name in trees:
        sweep = statistics.median(got[("sweep", name)])
        jobs = []
        for m in methods:
            job = T * statistics.median(got[(m, name)]) + SWEEPS[m] * sweep
            jobs += [job] * 3
        print(f"  {name}: jobs " + ", ".join(
            f"{m} {jobs[3 * i] / 60:.1f} min" for i, m in enumerate(methods))
            + f"; nine jobs {sum(jobs) / 3600:.2f} h of CPU, on {workers} one-thread "
            f"workers {makespan(jobs, workers) / 3600:.2f} h")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--methods", default="cd-bfl,dsgld,cf-fl")
    parser.add_argument("--legacy", action="store_true",
                        help="also time the code paths as before the speed-ups")
    parser.add_argument("--components", action="store_true",
                        help="time one device's share of a round, new vs legacy")
    parser.add_argument("--switches", action="store_true",
                        help="CD-BFL's round share with the sparse mixing and NumPy steps "
                             "on and off, alternately")
    parser.add_argument("--mixing", action="store_true",
                        help="each method's round share with the NumPy mixing and "
                             "one-sum link schedules on and off, alternately")
    parser.add_argument("--steps", action="store_true",
                        help="the prior-and-SGD chain and the pooling backward, before "
                             "and now, alternately")
    parser.add_argument("--against", type=Path,
                        help="a src folder of another version: time both alternately")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    methods = args.methods.split(",")
    if args.against is not None:
        print(f"CD-BFL Fig. 4 jobs, this checkout against {args.against} (CPU seconds, "
              f"{args.rounds} + 1 rounds less 1, {args.repeat} pairs, 1 thread)", flush=True)
        against(args.against, methods, args.rounds, args.repeat, args.workers)
        return
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x, y = radar_maps(K * PER_NODE + EVAL_MAPS, rng)
    x = x.reshape(len(y), -1)
    nodes = {k: (x[k * PER_NODE:(k + 1) * PER_NODE], y[k * PER_NODE:(k + 1) * PER_NODE])
             for k in range(K)}
    test = torch.as_tensor(x[K * PER_NODE:], dtype=torch.float32)
    model = BayesianLeNet.cdbfl(*MAP_SHAPE)
    print(f"CD-BFL Fig. 4 jobs: LeNet d = {model.d:,}, K = {K}, T = {T}, 1 thread per worker")
    if args.one:
        print(json.dumps(measure_one(args.one, model, nodes, test, args.rounds)))
        return
    if args.components:
        components(model, nodes, args.repeat)
        return
    if args.switches:
        switches(model, nodes, args.repeat)
        return
    if args.mixing:
        mixing(model, nodes, methods, args.repeat)
        return
    if args.steps:
        steps(model, args.repeat)
        return
    sweep, note = measure(lambda legacy: time_sweep(model, test, legacy), args.repeat,
                          args.legacy)
    print(f"  evaluation sweep ({K} devices x {EVAL_MAPS} maps): {sweep:7.2f} s{note}")
    jobs = []
    for method in methods:
        r, note = measure(lambda legacy, m=method: per_round(m, model, nodes, args.rounds,
                                                             legacy), args.repeat, args.legacy)
        job = T * r + SWEEPS[method] * sweep
        jobs += [job] * 3
        print(f"  {method:6s}: round {r:6.2f} s{note}; job {T} x {r:.2f} + "
              f"{SWEEPS[method]} sweeps = {job / 60:5.1f} min")
    print(f"  nine jobs: {sum(jobs) / 3600:.2f} h of compute; on {args.workers} one-thread "
          f"workers {makespan(jobs, args.workers) / 3600:.2f} h (target <= 2 h)")


if __name__ == "__main__":
    main()
