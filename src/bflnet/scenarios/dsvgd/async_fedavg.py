"""Scenario ``async-fedavg``: FedAvg under log-normal stragglers, three ways of waiting for
them, accuracy against simulated time.

``K`` agents with i.i.d. Fashion-MNIST shards train a 784-``hidden``-10 MLP with FedAvg
(``local_steps`` plain SGD steps per local update) through a parameter server. Each
local update takes ``local_steps · compute_s_per_step · exp(straggler_sigma · Z)``
simulated seconds, ``Z ~ N(0, 1)`` drawn from the agent's own stream
(:class:`~bflnet.simulator.compute.LogNormalTime`); every method runs with the same seed,
so the agents' compute streams are the same draws in every method. Uplinks use the
config's channel (default 10 Mbit/s, 5 ms), downlinks are ideal, updates travel as
float64. Methods (``methods``):

* ``sync``: every agent every round; the round ends when the last update is in.
* ``deadline``: every agent every round, but the round closes ``deadline_s`` after its
  broadcast; later updates are dropped (``late``), and an agent still busy with an earlier
  round is not sent the new state (``busy``).
* ``fedbuff``: buffered asynchronous aggregation (Nguyen et al. 2022): each agent loops
  download, compute, upload; the server merges every ``buffer_size`` arrivals, with
  weights ``1/sqrt(1 + staleness)`` if ``staleness_weighted``.

Each method runs ``duration_s`` simulated seconds (it stops after the first round or
merge at or past it). One row per method and round (``sync``, ``deadline``) or merge
(``fedbuff``), plus an ``init`` row: ``run_id``, ``method``, ``time_s``, ``iteration``,
``cum_bits``, ``cum_bits_up``, ``cum_bits_down``, ``updates`` merged, ``late`` and
``busy`` (``deadline``), ``staleness_mean`` and ``staleness_max`` (``fedbuff``) and the
metrics ``accuracy``, ``ece``, ``nll``, ``brier`` (NaN between evaluations).

**Shared medium** (``medium=shared``): the agents are laid out in the ``area_m`` square
(``layout``), the server at its centre, and every message, the downlinks too (no longer
ideal), goes over one radio medium under the ``mac`` (:mod:`bflnet.radio`, the settings
of ``consensus-averaging``). With ``broadcast=true`` (``methods=sync`` only: the deadline
and FedBuff methods send the state to each agent when it becomes free) a round's state
goes down in one transmission for every agent, counted once in ``cum_bits_down``; an
agent that misses it sits the round out (no acknowledgement, no resending). With
``record_messages`` the frame also keeps the ``message`` rows (a broadcast: one row with
``receivers`` and ``received``) and the medium's ``tx`` and ``mac`` rows.

**Uplink** (``uplink``, methods ``sync`` and ``deadline``;
:mod:`bflnet.scenarios.shared.uplink_settings`): ``aircomp`` superposes a round's updates
in one analog transmission (the server merges their noisy mean), ``digital`` sends them
quantised; the rows then add ``k_active`` (devices heard), ``silent``, ``channel_var``,
``round_energy_j``, ``cum_energy_j`` and ``cum_channel_uses``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.schema import (
    ACCURACY,
    BRIER,
    CUM_BITS,
    CUM_BITS_DELIVERED,
    CUM_BITS_DOWN,
    CUM_BITS_UP,
    DROPPED,
    ECE,
    EVENT,
    ITERATION,
    MEDIUM_COLUMNS,
    MESSAGE_COLUMNS,
    METHOD,
    NLL,
    NODE,
    RUN_ID,
    TIME_S,
    UPDATES,
    Schema,
    col,
)
from bflnet.runtime.devices import DEVICES, resolve_device
from bflnet.scenarios.shared.network_settings import NetworkSettings, ServerOnly
from bflnet.scenarios.shared.uplink_settings import UplinkSettings, uplink_columns

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "async-fedavg"
METHODS = ("sync", "deadline", "fedbuff")
LABELS = {"sync": "synchronous FedAvg", "deadline": "FedAvg with a deadline",
          "fedbuff": "FedBuff"}
COLUMNS = ("run_id", "method")
FASHION_TRAIN, FASHION_TEST = 60_000, 10_000


@dataclass(frozen=True)
class AsyncFedAvgConfig(ServerOnly, UplinkSettings, NetworkSettings):
    """Parameters of ``async-fedavg``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"per_agent": "points_per_agent"}

    SCENARIO: ClassVar[str] = NAME
    SHARED_MEDIUM: ClassVar[bool] = True
    K: int = param(10, "number of agents", ge=2, le=1000)
    rate_bps: float = param(1e7, "uplink rate in bit/s (fixed, gilbert-elliott)", gt=0,
                            le=1e15)
    compute_s_per_step: float = param(0.1, "median simulated seconds per local SGD step",
                                      gt=0, le=1e6)
    straggler_sigma: float = param(1.0, "sigma of the log-normal compute time of a local "
                                   "update (0: no stragglers)", ge=0, le=10)
    methods: str = param("sync,deadline,fedbuff", "comma list of methods: sync, deadline, "
                         "fedbuff")
    duration_s: float = param(60.0, "simulated seconds each method runs", gt=0, le=1e7)
    deadline_s: float = param(1.2, "deadline method: seconds after each round's broadcast",
                              gt=0, le=1e7)
    buffer_size: int = param(3, "fedbuff: merge every this many arrivals (<= K)", ge=1,
                             le=1000)
    staleness_weighted: bool = param(True, "fedbuff: weight each update 1/sqrt(1 + "
                                     "staleness)")
    points_per_agent: int = param(200, "training examples per agent", ge=1, le=FASHION_TRAIN)
    eval_size: int = param(1000, "test examples used for evaluation", ge=1, le=FASHION_TEST)
    hidden: int = param(16, "hidden units of the MLP", ge=1, le=4096)
    local_steps: int = param(5, "SGD steps per local update", ge=1, le=10**5)
    lr: float = param(0.1, "SGD learning rate", gt=0, le=1e3)
    batch_size: int = param(32, "minibatch size per SGD step", ge=1, le=10**5)
    eval_every: int = param(1, "evaluate every this many rounds or merges",
                            ge=1, le=10**9)
    threads: int = param(1, "torch threads inside the run", ge=1, le=1024)
    device: str = param("cpu", "where torch computes: cpu, cuda (an error without a CUDA "
                          "device) or auto (cuda when available, else cpu)", choices=DEVICES)
    record_messages: bool = param(False, "also keep one row per message (a broadcast: one "
                                  "row) and, with medium=shared, the medium's tx and mac rows")

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_uplink_fields()
        comma_list("methods", self.methods, METHODS)
        if self.uplink != "links" and "fedbuff" in comma_list("methods", self.methods):
            raise ValueError(f"uplink: {self.uplink} is the parameter server's (methods sync "
                             f"and deadline); fedbuff merges updates one by one as they "
                             f"arrive, got methods={self.methods}")
        unicast = [m for m in comma_list("methods", self.methods) if m != "sync"]
        if self.broadcast and unicast:
            raise ValueError(f"broadcast: not used by methods {', '.join(unicast)} (they send "
                             f"the state to each agent when it becomes free); used only with "
                             f"methods=sync, got methods={self.methods}")
        if self.buffer_size > self.K:
            raise ValueError(f"buffer_size: must be <= K = {self.K}, got {self.buffer_size}")
        if self.K * self.points_per_agent > FASHION_TRAIN:
            raise ValueError(f"points_per_agent: K·points_per_agent = "
                             f"{self.K * self.points_per_agent} exceeds "
                             f"the {FASHION_TRAIN} training examples")


def _kept_events(config: AsyncFedAvgConfig) -> tuple[str, ...]:
    """The row events of the frame: rounds or merges, and the messages if recorded."""
    if not config.record_messages:
        return ("init", "iteration")
    return ("init", "iteration", "message", *(("tx", "mac") if config.medium == "shared"
                                              else ()))


def default_plot(frame: pd.DataFrame) -> Figure:
    """Test accuracy against simulated seconds, one curve per method (median over
    runs)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    rows = frame.dropna(subset=["accuracy"])
    for method in [m for m in METHODS if m in set(rows["method"])]:
        for i, (_, run) in enumerate(rows[rows["method"] == method].groupby("run_id")):
            ax.plot(run["time_s"], run["accuracy"], color=f"C{METHODS.index(method)}",
                    alpha=1.0 if i == 0 else 0.4,
                    label=LABELS[method] if i == 0 else None)
    ax.set(xlabel="simulated time (s)", ylabel="test accuracy",
           title="FedAvg under log-normal stragglers")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


SCHEMA = Schema.of(
    RUN_ID, METHOD.means("sync, deadline or fedbuff"),
    TIME_S, ITERATION.means("round (sync, deadline) or merge (fedbuff); 0: the initial "
                            "model"),
    EVENT.means("init or iteration (a round or a merge)"),
    CUM_BITS, CUM_BITS_DELIVERED, CUM_BITS_UP, CUM_BITS_DOWN,
    ACCURACY.means("test accuracy (NaN between evaluations)"), ECE, NLL, BRIER,
    UPDATES.on("iteration"),
    col("late", "count", "deadline: updates that arrived after the deadline and were "
        "dropped", "iteration", when="methods including deadline"),
    col("busy", "count", "deadline: scheduled agents not sent the state, still busy",
        "iteration", when="methods including deadline"),
    col("staleness_mean", "count", "fedbuff: mean staleness (merges since the update's "
        "state) of the merged updates", "iteration", when="methods including fedbuff"),
    col("staleness_max", "count", "fedbuff: largest staleness of the merged updates",
        "iteration", when="methods including fedbuff"),
    NODE.means("message, tx and mac rows: the sender (the server on its round rows)")
    .on("init", "iteration", "message", "tx", "mac").only_when("record_messages=true"),
    col("peer", "index", "message rows: the receiver (* for a broadcast); mac collision "
        "rows: the receiver that lost the packet", "message", "mac",
        when="record_messages=true"),
    *(c.on("message", "mac").means(c.meaning + "; mac rows: backoff, defer or collision")
      if c.name == "kind" else
      c.on("message", "tx").means(c.meaning + "; tx rows: the packet's")
      if c.name in ("bits", "start_s") else c for c in MESSAGE_COLUMNS),
    DROPPED.on("message").only_when("record_messages=true"),
    *uplink_columns(),
    *(c.only_when(f"{c.when} and record_messages=true") if "record_messages" not in c.when
      else c for c in MEDIUM_COLUMNS),
)


@register(NAME, AsyncFedAvgConfig,
          "FedAvg under log-normal stragglers: synchronous rounds, rounds with a deadline, "
          "and FedBuff's buffered asynchronous merges; accuracy against simulated time.",
          plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA,
          server_schedule="every agent every round (AllAgents(), not the parameter "
          "server's default of one per iteration); FedBuff: every agent works all the "
          "time, the server merges each buffer_size arrivals")
def run(config: AsyncFedAvgConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    import networkx as nx
    import torch  # lazily, so that `bflnet list` stays fast

    from bflnet.channels import IdealChannel
    from bflnet.learners.federated.fedavg import FedAvg
    from bflnet.learners.hyper import FedAvgParams
    from bflnet.learners.models.classifiers import BayesianMLP
    from bflnet.protocols.buffered_server import BufferedServerProtocol
    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.protocols.scheduling import AllAgents
    from bflnet.protocols.stopping import StopRule
    from bflnet.scenarios.dsvgd.common import iid_fashion_mnist, tidy
    from bflnet.simulator.compute import LogNormalTime
    from bflnet.simulator.rng import RngStreams
    from bflnet.simulator.simulation import Simulation

    torch.set_num_threads(config.threads)
    data = iid_fashion_mnist(config.K, config.points_per_agent, config.eval_size,
                             RngStreams(seed).numpy("data"))
    model = BayesianMLP(784, config.hidden, 10, device=resolve_device(config.device))
    stop = StopRule(max_time_s=config.duration_s)
    frames = []
    for method in comma_list("methods", config.methods):
        learner = FedAvg(model, data.agents, FedAvgParams(
            local_steps=config.local_steps, lr=config.lr, batch_size=config.batch_size),
            eval_data=data.eval)
        sim = Simulation(seed, name=run_label(NAME, {"method": method}),
                         record_messages=config.record_messages)
        graph = nx.empty_graph(config.K)
        kwargs = config.network_kwargs(graph)
        kwargs["compute"] = LogNormalTime(config.compute_s_per_step, config.straggler_sigma)
        sim.build_network(graph, server=True, downlink_channel=IdealChannel(), **kwargs)
        if method == "fedbuff":
            protocol: object = BufferedServerProtocol(
                learner, stop, buffer_size=config.buffer_size,
                staleness_weighted=config.staleness_weighted, eval_every=config.eval_every,
                progress=progress)
        else:
            protocol = ParameterServerProtocol(
                learner, stop, selector=AllAgents(), eval_every=config.eval_every,
                progress=progress, deadline_s=config.deadline_s if method == "deadline" else None,
                broadcast=config.broadcast, uplink=config.uplink_spec(config.K))
        frame = sim.run(protocol).frame  # type: ignore[arg-type]
        # the round / merge rows (and the message rows), without the per-update rows' columns
        frame = frame[frame["event"].isin(_kept_events(config))].dropna(axis=1, how="all")
        frame = frame.drop(columns=["scheduled", *(() if config.record_messages else
                                                   ("node",))], errors="ignore")
        frames.append(frame.reset_index(drop=True).assign(run_id=f"{method}-s{seed}",
                                                          method=method))
    return tidy(frames, COLUMNS)
