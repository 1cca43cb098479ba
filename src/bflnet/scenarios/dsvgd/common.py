"""What the DSVGD scenarios share (compressed-DSVGD letter, Sec. IV): the common config
fields, Fashion-MNIST set-up, the budget mode that sizes the uplink codec, the learners,
and running one parameter-server simulation to a tidy frame.

**Budget mode.** The uplink carries at most ``R_u = rate_multiple · d`` bits per iteration.
For ``N_p`` particles (``n_rows``; 1 for FedAvg), ``N_b = n_bits`` and ``groups`` sparsity
patterns (per-particle: ``groups = N_p``, eq. 9; shared: 1, eq. 10; alpha-shared:
``1 / sharing_fraction``, eq. 11) the codec keeps the largest ``k`` per particle with

    groups · ceil(log2 C(d, k)) + N_p · k · N_b + 32 ≤ floor(R_u)

(:func:`bflnet.protocols.coding.codecs.largest_k_within_budget`; the 32 bits carry the
quantiser's float32 dynamic range ``a_max``, the largest kept ``|ΔΘ|`` of the message, so
nothing is clipped and the quantiser is unbiased). The kept entries are stochastically
quantised with 1 sign bit and ``N_b − 1`` magnitude bits (step ``a_max / (2^(N_b−1) − 1)``;
the letter's ``a_max / (2^N_b − 1)`` would need ``N_b`` magnitude bits, see the codec).

The letter's "α" of α-shared sparsification is called ``sharing_fraction`` here (α is
the temperature of eq. 2, ``temperature``). A sharing fraction must be ``1/g`` with ``g``
dividing ``N_p``; :func:`sparsity_groups` explains what happens when it does not.

**Network.** The parameter server and ``K`` agents: an uplink per agent with the
config's channel (``channel``, ``rate_bps``, ``latency_s``, ...; default 1 Mbit/s, 5 ms,
lossless), an ideal downlink (as in the letter), ``compute_s_per_step`` simulated seconds
per local SVGD/SGD step. ``graph`` and its parameters are not used (agents talk to the
server only). One agent is scheduled per iteration, round robin (the letter's protocol).

Every row carries ``run_id`` (one run = one simulation of one method/setting with one
seed). In a sweep's table (:mod:`bflnet.runs.sweep`) it becomes
``<sweep run>/<run_id>``, still one curve, and the value here is kept as ``run_run_id``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import DSVGDParams, FedAvgParams
from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param
from bflnet.runs.resources import FLOAT32, check_memory, human_bytes
from bflnet.runs.schema import (
    ACCURACY,
    BRIER,
    CUM_BITS,
    CUM_BITS_DELIVERED,
    CUM_BITS_DOWN,
    CUM_BITS_UP,
    ECE,
    ITERATION,
    NLL,
    SERVER_NODE,
    TIME_S,
    col,
)
from bflnet.runtime.devices import DEVICES, resolve_device
from bflnet.scenarios.shared.fashion import eval_subset
from bflnet.scenarios.shared.network_settings import NetworkSettings, ServerOnly
from bflnet.validation.params import subset

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from bflnet.learners.base import GlobalStateLearner
    from bflnet.learners.federated.fedavg import FedAvg
    from bflnet.learners.models.classifiers import BayesianMLP
    from bflnet.learners.particles.dsvgd import DSVGD
    from bflnet.protocols.coding.codecs import (
        ComposedCodec,
    )
    from bflnet.simulator.rng import RngStreams

# torch and the torch learners are imported lazily, inside the functions that use them, so
# that importing the scenarios (``bflnet list``, ``bflnet describe``, the scenarios
# without torch) stays fast.

SPARSIFIERS = ("per-particle", "shared", "alpha-shared")
#: Row events kept in the frames.
ROW_EVENTS = ("init", "iteration")
FASHION_TRAIN, FASHION_TEST = 60_000, 10_000

#: Which agents the server schedules (``bflnet describe``).
ONE_PER_ITERATION = ("one agent per iteration, in turn (RoundRobinSelector(1), the parameter "
                     "server's default; the letter's schedule)")


@dataclass(frozen=True)
class DSVGDSettings(ServerOnly, DSVGDParams, NetworkSettings):
    """Network settings (K = 10 agents, a server; 1 Mbit/s, 5 ms fixed uplinks) plus the
    letter's Fashion-MNIST model and DSVGD's hyper-parameters (:class:`DSVGDParams`,
    embedded), at a reduced default scale."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {
        "per_agent": "points_per_agent", "local_iters": "local_steps"}

    K: int = param(10, "number of agents (letter: 10)", ge=2, le=FASHION_TRAIN)
    points_per_agent: int = param(600, "training examples per agent N_k (letter: 6000)", ge=1,
                           le=FASHION_TRAIN)
    eval_size: int = param(2000, "test examples used for evaluation (letter: all 10000)",
                           ge=1, le=FASHION_TEST)
    eval_every: int = param(25, "evaluate every this many iterations (and the last)", ge=1,
                            le=10**9)
    hidden: int = param(100, "hidden units of the MLP (letter: 100; time and memory grow "
                        "linearly: 1000 is ~10x slower per iteration)", ge=1, le=10**7)
    local_steps: int = param(10, "SVGD steps L per visit (letter: not given; learner "
                             "default 200)", ge=1, le=10**7)
    step_size: float = param(1e-3, "SVGD step size (AdaGrad master step; letter: AdaGrad, "
                             "step not given)", gt=0, le=1e6)
    kde_bandwidth: float = param(0.55, "KDE bandwidth lambda (letter: 0.55)", gt=0, le=1e6)
    temperature: float = param(1.0, "temperature alpha of eq. 2 (letter: 1)", gt=0, le=1e6)
    batch_size: int = param(100, "minibatch size per SVGD / SGD step", ge=1, le=10**7)
    n_bits: int = param(5, "quantisation bits N_b per kept entry (letter: 5)", ge=2, le=32)
    threads: int = param(1, "torch threads inside the run", ge=1, le=1024)
    device: str = param("cpu", "where torch computes: cpu, cuda (an error without a CUDA "
                          "device) or auto (cuda when available, else cpu)", choices=DEVICES)

    def check_fits_memory(self, fields: str, d: int, n_particles: int,
                          extra_bytes: float = 0.0) -> None:
        """Refuse a run whose particles (global, and each agent's local and reference
        particles: 2K + 8 copies of N_p × d float32, counting the SVGD work arrays), images
        (K·points_per_agent + eval_size of 784 float32) and ``extra_bytes`` would not fit in this
        machine's memory."""
        copies = 2 * self.K + 8
        particles = FLOAT32 * n_particles * d * copies
        images = FLOAT32 * 784 * (self.K * self.points_per_agent + self.eval_size)
        check_memory(fields, particles + images + extra_bytes,
                     f"{copies} copies of {n_particles} x {d} float32 particles: "
                     f"{human_bytes(particles)}; images {human_bytes(images)}"
                     + (f"; other {human_bytes(extra_bytes)}" if extra_bytes else ""))


# --------------------------------------------------------------------------- budget mode


def sparsity_groups(sparsifier: str, n_particles: int, sharing_fraction: float,
                    strict: bool = True, field: str = "sharing_fraction") -> int:
    """Number of sparsity patterns: ``N_p`` (per-particle), 1 (shared) or
    ``1/sharing_fraction`` (alpha-shared).

    ``1/sharing_fraction`` must be an integer dividing ``N_p``. With ``strict=False`` an
    alpha-shared fraction that does not fit ``N_p`` falls back to the largest divisor of
    ``N_p`` not above ``1/sharing_fraction`` (e.g. 0.5 with ``N_p = 5`` gives 1 pattern,
    shared), so that one fraction can be swept over several ``N_p``.
    """
    if sparsifier not in SPARSIFIERS:
        raise ValueError(f"sparsifier: must be one of {', '.join(SPARSIFIERS)}, "
                         f"got {sparsifier!r}")
    if sparsifier == "per-particle":
        return n_particles
    if sparsifier == "shared":
        return 1
    if not (0 < sharing_fraction <= 1):
        raise ValueError(f"{field}: must be in (0, 1], got {sharing_fraction!r}")
    want = 1.0 / sharing_fraction                       # inf for a subnormal fraction
    groups = round(want) if want <= n_particles else 0
    if groups and abs(groups - want) < 1e-9 and n_particles % groups == 0:
        return groups
    if strict:
        raise ValueError(f"{field}: must be 1/g for an integer g dividing "
                         f"particles N_p={n_particles}, got {sharing_fraction!r}")
    top = n_particles if want >= n_particles else math.floor(want)
    return next(g for g in range(top, 0, -1) if n_particles % g == 0)


@dataclass(frozen=True)
class Budget:
    """The uplink codec that fits ``budget_bits`` and what it spends."""

    codec: ComposedCodec
    k: int
    groups: int
    budget_bits: int
    message_bits: int


def budget_codec(rate_multiple: float, d: int, n_rows: int, groups: int,
                 n_bits: int, field: str = "rate_multiple") -> Budget:
    """Top-k + ``n_bits`` quantiser with the largest ``k`` whose message fits
    ``floor(rate_multiple · d)`` bits (``ValueError`` naming ``rate_multiple`` if not even
    ``k = 1`` fits)."""
    from bflnet.protocols.coding.codecs import (
        largest_k_within_budget,
        topk_quantized,
        topk_quantized_bits,
    )
    # a budget above the uncompressed message's size buys nothing more (k = d)
    full = topk_quantized_bits(d, d, n_rows, groups, n_bits) + 1
    budget = full if rate_multiple * d >= full else math.floor(rate_multiple * d)
    try:
        k = largest_k_within_budget(budget, d, n_rows, groups, n_bits)
    except ValueError as exc:
        raise ValueError(f"{field}: R_u = {rate_multiple:g} d = {budget} bits is too "
                         f"small for d = {d} (from hidden), particles N_p={n_rows}, {groups} "
                         f"sparsity pattern(s), n_bits "
                         f"N_b={n_bits} ({exc})") from None
    codec = topk_quantized(k=k, groups=groups, n_bits=n_bits)
    bits = codec.bits_for((n_rows, d))
    assert bits <= budget, (bits, budget)
    return Budget(codec, k, groups, budget, bits)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class VisionData:
    """Agents' training shards and the evaluation subset, as numpy arrays."""

    agents: dict[int, tuple[np.ndarray, np.ndarray]]
    eval: tuple[np.ndarray, np.ndarray]


def iid_fashion_mnist(K: int, per_agent: int, eval_size: int,
                      rng: np.random.Generator) -> VisionData:
    """``K`` i.i.d. shards of ``points_per_agent`` Fashion-MNIST training examples (disjoint) and
    ``eval_size`` test examples."""
    from bflnet.data import iid, load_fashion_mnist
    if K * per_agent > FASHION_TRAIN:
        raise ValueError(f"points_per_agent: K·N_k = {K * per_agent} exceeds the {FASHION_TRAIN} "
                         f"training examples")
    x, y = load_fashion_mnist(split="train")
    parts = iid(len(y), K, rng, per_agent=per_agent)
    return VisionData({k: (x[p], y[p]) for k, p in enumerate(parts)}, eval_subset(eval_size, rng))


def iid_setup(name: str, config: DSVGDSettings, seed: int, progress: bool
              ) -> tuple[RngStreams, VisionData, BayesianMLP]:
    """What the i.i.d. Fashion-MNIST scenarios set up before their runs, under a set-up
    bar: the run's streams, the agents' shards (stream ``data``) and the MLP."""
    from bflnet.protocols.progress import setup_bar
    from bflnet.simulator.rng import RngStreams

    setup = setup_bar(name, None, progress)
    setup.set_postfix_str("loading torch and data")
    streams = RngStreams(seed)
    data = iid_fashion_mnist(config.K, config.points_per_agent, config.eval_size,
                             streams.numpy("data"))
    model = mlp(config)
    setup.close()
    return streams, data, model


# --------------------------------------------------------------------------- learners


def mlp(config: DSVGDSettings) -> BayesianMLP:
    """The letter's one-hidden-layer ReLU MLP (784-hidden-10). Its particles start from
    the "scaled" init (weights ``N(0, 1/(fan_in + 1))``, zero biases); DSVGD's prior is the
    KDE of these initial particles (eq. 7 has no separate prior term)."""
    from bflnet.learners.models.classifiers import BayesianMLP  # lazily: torch

    return BayesianMLP(784, config.hidden, 10, device=resolve_device(config.device))


def mlp_dim(hidden: int) -> int:
    """``d`` of :func:`mlp`'s 784-``hidden``-10 MLP (``BayesianMLP(784, hidden, 10).d``:
    ``W1``, ``b1``, ``W2``, ``b2``), without building it, which would import torch."""
    return 784 * hidden + hidden + hidden * 10 + 10


def dsvgd_learner(config: DSVGDSettings, model: Any, data: VisionData, n_particles: int,
                  **extra: Any) -> DSVGD:
    """DSVGD with the config's hyper-parameters."""
    from bflnet.learners.particles.dsvgd import DSVGD  # lazily: torch

    return DSVGD(model, data.agents, n_particles, subset(DSVGDParams, config),
                 eval_data=data.eval, **extra)


def fedavg_learner(config: DSVGDSettings, model: Any, data: VisionData, *, local_steps: int,
                   lr: float) -> FedAvg:
    """FedAvg (plain SGD, no weight decay) with the config's minibatch size."""
    from bflnet.learners.federated.fedavg import FedAvg  # lazily: torch

    return FedAvg(model, data.agents, FedAvgParams(local_steps=local_steps, lr=lr,
                                                   batch_size=config.batch_size),
                  eval_data=data.eval)


# --------------------------------------------------------------------------- running


@dataclass
class PhaseResult:
    """One parameter-server run: its rows and the final global state."""

    frame: pd.DataFrame
    state: Any


def run_parameter_server(name: str, config: DSVGDSettings, seed: int,
                         learner: GlobalStateLearner, agents: Sequence[int],
                         codec: Any, iterations: int, *, eval_every: int | None = None,
                         until: Callable[[Mapping[str, Any]], bool] | None = None,
                         interventions: Sequence[ForgetRequest] = (),
                         progress: bool = False, uplink: Any = None) -> PhaseResult:
    """``iterations`` round-robin iterations of ``learner`` over ``agents`` (one per
    iteration) under the parameter server with the config's uplink channel and an ideal
    downlink, or fewer if ``until`` (given an evaluation's metrics) returns True;
    ``interventions`` (forget requests) happen on the same timeline. ``init`` and
    ``iteration`` rows (plus ``forget_request`` rows), with ``uplink_bits`` (this
    iteration's on-air uplink bits) added."""
    import networkx as nx
    import torch  # lazily, so that `bflnet list` stays fast

    from bflnet.channels import IdealChannel
    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.protocols.scheduling import RoundRobinSelector
    from bflnet.simulator.simulation import Simulation

    torch.set_num_threads(config.threads)
    sim = Simulation(seed, name=name)
    graph = nx.Graph()
    graph.add_nodes_from(agents)
    kwargs = config.network_kwargs(graph)
    sim.build_network(graph, server=True, downlink_channel=IdealChannel(), **kwargs)
    protocol = ParameterServerProtocol(
        learner, StopRule(max_iterations=iterations, until=until),
        selector=RoundRobinSelector(1), uplink_codec=codec, downlink_codec=None,
        eval_every=config.eval_every if eval_every is None else eval_every, progress=progress,
        interventions=interventions, uplink=uplink)
    result = sim.run(protocol)
    frame = result.frame
    frame = frame[frame["event"].isin((*ROW_EVENTS, "forget_request"))].reset_index(drop=True)
    frame["uplink_bits"] = frame["cum_bits_up"].diff().fillna(0).astype("int64")
    return PhaseResult(frame, result.state)


def tidy(frames: Sequence[pd.DataFrame], first: Sequence[str]) -> pd.DataFrame:
    """Concatenate run frames, ``first`` columns in front (then the rest, in order)."""
    import pandas as pd
    frame = pd.concat(frames, ignore_index=True)
    head = [c for c in first if c in frame.columns]
    return frame[head + [c for c in frame.columns if c not in head]]


__all__ = [
    "FASHION_TEST", "FASHION_TRAIN", "ROW_EVENTS", "SPARSIFIERS", "Budget", "DSVGDSettings",
    "PhaseResult", "VisionData", "budget_codec", "dsvgd_learner",
    "eval_subset", "fedavg_learner", "iid_fashion_mnist", "mlp", "mlp_dim",
    "run_parameter_server", "sparsity_groups", "tidy",
]


#: The budget columns (every DSVGD scenario).
BUDGET_COLUMNS = {
    "sharing_fraction": col("sharing_fraction", "fraction", "effective sharing fraction "
                            "of the sparsity patterns (1/groups)"),
    "groups": col("groups", "count", "sparsity patterns per message"),
    "n_particles": col("n_particles", "count", "particles N_p (1 for FedAvg)"),
    "rate_multiple": col("rate_multiple", "1", "uplink budget R_u as a multiple of the "
                         "model size d"),
    "budget_bits": col("budget_bits", "bits", "uplink budget R_u per iteration"),
    "k": col("k", "count", "entries kept per particle"),
    "message_bits": col("message_bits", "bits", "size of one compressed uplink message"),
}
#: The columns of a parameter-server row (every DSVGD scenario).
SERVER_COLUMNS = (
    TIME_S, ITERATION.means("iteration (one scheduled agent; 0: the initial particles)"),
    CUM_BITS, CUM_BITS_DELIVERED, CUM_BITS_UP, CUM_BITS_DOWN,
    SERVER_NODE,
)
METRIC_COLUMNS = (ACCURACY.means("test accuracy of the particles' predictive (NaN between "
                                 "evaluations)"), ECE, NLL, BRIER)
