"""Scenario ``emtdamp`` (EM-TDAMP paper, Sec. V): EM-TDAMP under a parameter server, test
loss against rounds, simulated seconds and bits.

Tasks (``task``):

* ``boston-synthetic``: the paper's 13-64-64-1 regression network on synthetic data of
  the Boston housing set's shape (:func:`bflnet.data.regression.boston_shaped`: 404
  training examples split evenly over ``K`` clients, 102 test examples), Gaussian
  likelihood, batch 101. Paper: ``K = 4``, ``τ_max = 10``.
* ``fashion-mnist``: 784-128-10 classification with the probit-product likelihood,
  batch 100, ``K`` i.i.d. shards of ``points_per_agent`` Fashion-MNIST images (the paper uses
  MNIST with ``K = 10``); pixels are divided by 255 and centred by the pooled training
  mean (TDAMP needs centred inputs, docs/em-tdamp.md Sec. 6.6).

Every round, all ``K`` clients download ``ψ, v`` and run TDAMP on their data; the server
merges what arrived (EM, target sparsity). The uplink carries ``φ^k`` and ``σ^k`` as
separate arrays, each ``uplink_bits`` bits per value (64 or 32); the downlink ``ψ``, ``v``
and the round counter, ``downlink_bits`` per value. Both directions use the config's
channel (default 1 Mbit/s, 5 ms); ``compute_s_per_step`` is per minibatch.

Speed (docs/em-tdamp.md, Sec. 7.5): the ``K`` clients of a round run their TDAMP as one
batch (``batch_agents``, on by default; the same numbers, bit for bit, as one by one);
the clients' TDAMP runs in float32 by default (``dtype``; ``float64`` is about half as
fast and gives the reproductions' numbers, which differ in the last digits; the server's
EM and the evaluation are float64 either way); ``device`` (``cpu``, ``cuda``,
``auto``) is where the clients compute. The clients are cut into groups of at most
``client_group`` (a function of ``K`` only, so one group for ``K <= 5`` by default), each
group one batched computation with one torch thread; ``threads`` is how many groups run
at once (default 0: as many as torch has threads when the run starts, the CPUs this
machine has unless ``OMP_NUM_THREADS``, ``--threads`` or a sweep's ``torch_threads`` set
fewer). The server's merge and the evaluation run with one torch thread, so the table does
not depend on ``threads``.

One row per round (``iteration``; 0 is the initial prior): ``task``, ``time_s``,
``cum_bits``, ``cum_bits_up``, ``cum_bits_down``, ``uplink_bits``; the test loss of the
posterior-mean network (``test_nmse``, ``test_mse`` or ``accuracy``, ``test_error``);
``noise_var``; ``active_groups``, ``confident_groups``, ``target_groups`` (weight groups,
i.e. neurons); ``slab_var_l<l>``, the mean slab variance of layer ``l``'s weights;
``clips`` and ``clip_<quantity>``, the safeguards that fired in the
clients' TDAMP this round (docs/em-tdamp.md, Sec. 6.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import EMTDAMPParams
from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.schema import (
    ACCURACY,
    CUM_BITS,
    CUM_BITS_DELIVERED,
    CUM_BITS_DOWN,
    CUM_BITS_UP,
    EVENT,
    ITERATION,
    SCHEDULED,
    SERVER_NODE,
    TIME_S,
    UPDATES,
    UPLINK_BITS,
    Schema,
    col,
)
from bflnet.runtime.threads import MAX_THREADS, groups_on_threads
from bflnet.scenarios.emtdamp.common import ALL_CLIENTS
from bflnet.scenarios.shared.network_settings import NetworkSettings, ServerOnly

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "emtdamp"
TASKS = ("boston-synthetic", "fashion-mnist")
#: Network sizes, likelihood and batch size of each task (paper, Sec. V).
TASK_SETUP: dict[str, tuple[tuple[int, ...], str, int]] = {
    "boston-synthetic": ((13, 64, 64, 1), "gaussian", 101),
    "fashion-mnist": ((784, 128, 10), "probit", 100),
}
FASHION_TRAIN, FASHION_TEST = 60_000, 10_000
#: ``threads`` of the EM-TDAMP scenarios by default: as many client groups at once as torch
#: has threads when the run starts (the table does not depend on it).
AUTO_THREADS = 0
#: What ``threads`` says, for the scenarios' help.
THREADS_HELP = ("client groups (client_group) computed at once, each on its own thread with "
                "one torch thread; 0: as many as torch has threads when the run starts (the "
                "CPUs this machine has unless OMP_NUM_THREADS or --threads say fewer)")


@dataclass(frozen=True)
class EMTDAMPConfig(ServerOnly, EMTDAMPParams, NetworkSettings):
    """Parameters of ``emtdamp``: the task, the clients, EM-TDAMP's hyper-parameters and
    the links to the server."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"per_agent": "points_per_agent"}

    SCENARIO: ClassVar[str] = NAME
    SHARED_MEDIUM: ClassVar[bool] = True
    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = {
        **ServerOnly.DECIDED_ELSEWHERE,
        "likelihood": "the task decides (boston-synthetic: gaussian, fashion-mnist: probit)"}

    task: str = param("boston-synthetic", "data set and network", choices=TASKS)
    likelihood: str = param("gaussian", "not used here (an error if set): the task decides "
                            "(boston-synthetic: gaussian, fashion-mnist: probit)",
                            choices=("gaussian", "probit"))
    K: int = param(4, "number of clients (paper: 4 for Boston, 10 for MNIST)", ge=1,
                   le=FASHION_TRAIN)
    rounds: int = param(50, "communication rounds", ge=1, le=10**7)
    points_per_agent: int = param(1000, "fashion-mnist: training images per client", ge=1,
                           le=FASHION_TRAIN)
    eval_size: int = param(2000, "fashion-mnist: test images used for evaluation", ge=1,
                           le=FASHION_TEST)
    batch_size: int | None = param(None, "TDAMP minibatch size (none: 101 for "
                                   "boston-synthetic, 100 for fashion-mnist)", ge=1, le=10**6)
    sparsify_from: int = param(10, "first round whose merge applies the target-sparsity "
                               "rule (ours; the paper applies it from the first)", ge=1,
                               le=10**8)
    uplink_bits: int = param(64, "bits per value of every uplink array (64 or 32)",
                             choices=(32, 64))
    downlink_bits: int = param(64, "bits per value of every downlink array (64 or 32)",
                               choices=(32, 64))
    eval_every: int = param(1, "evaluate every this many rounds (and the last)", ge=1,
                            le=10**9)
    threads: int = param(AUTO_THREADS, THREADS_HELP + "; the merge and the evaluation use "
                         "one torch thread, so the table does not depend on it", ge=0,
                         le=MAX_THREADS)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_sparsity_mode()
        if self.task == "boston-synthetic":
            from bflnet.data.regression import BOSTON_TRAIN
            if self.K > BOSTON_TRAIN:
                raise ValueError(f"K: must be <= {BOSTON_TRAIN} (one training example per "
                                 f"client at least) for task=boston-synthetic")
            for name, default in (("points_per_agent", 1000), ("eval_size", 2000)):
                if getattr(self, name) != default:
                    raise ValueError(f"{name}: used only with task=fashion-mnist")
        elif self.K * self.points_per_agent > FASHION_TRAIN:
            raise ValueError(f"points_per_agent: K·points_per_agent = "
                             f"{self.K * self.points_per_agent} exceeds "
                             f"the {FASHION_TRAIN} training images")

    def learner_params(self) -> EMTDAMPParams:
        """The learner's hyper-parameters, with the task's likelihood and batch size."""
        _, likelihood, batch = TASK_SETUP[self.task]
        names = [f for f in EMTDAMPParams.__dataclass_fields__]
        values = {name: getattr(self, name) for name in names}
        values.update(likelihood=likelihood,
                      batch_size=self.batch_size if self.batch_size is not None else batch)
        return EMTDAMPParams(**values)


def task_data(config: EMTDAMPConfig, rng: np.random.Generator
              ) -> tuple[dict[int, tuple[Any, Any]], tuple[Any, Any]]:
    """The clients' ``(x, y)`` and the test set of the config's task."""
    import numpy as np

    if config.task == "boston-synthetic":
        from bflnet.data.regression import boston_shaped
        (x, y), test = boston_shaped(rng)
        parts = np.array_split(np.arange(len(y)), config.K)
        return {k: (x[p], y[p]) for k, p in enumerate(parts)}, test
    from bflnet.data import iid, load_fashion_mnist
    from bflnet.scenarios.emtdamp.common import centred_shards
    from bflnet.scenarios.shared.fashion import eval_subset
    images, labels = load_fashion_mnist(split="train")
    parts = iid(len(labels), config.K, rng, per_agent=config.points_per_agent)
    test_x, test_y = eval_subset(config.eval_size, rng)
    shards, test = centred_shards(images, labels, parts, (test_x, test_y))
    return dict(enumerate(shards)), test


def default_plot(frame: pd.DataFrame) -> Figure:
    """Test loss against rounds and against cumulative bits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = frame[frame["event"] == "iteration"]
    metric = "test_nmse" if "test_nmse" in rows else "test_error"
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, x, label in zip(fig.subplots(1, 2), ("iteration", "cum_bits"),
                            ("round", "cumulative bits (up + down)"), strict=True):
        ax.plot(rows[x], rows[metric], marker=".")
        ax.set(xlabel=label, ylabel=metric.replace("_", " "), yscale="log")
        ax.grid(alpha=0.3)
    fig.suptitle(f"EM-TDAMP, {rows['task'].iloc[0]}, K = {int(rows['K'].iloc[0])}")
    return fig


_CLIPS = ("p_var_floor", "z_to_p_ratio", "r_var_cap", "r_gain", "q_var_cap", "q_gain",
          "output_precision")
#: EM-TDAMP's columns of a round row (``emtdamp`` and the comparisons).
EMTDAMP_COLUMNS = (
    col("noise_var", "1", "the server's estimate of the noise variance", "init",
        "iteration"),
    col("active_groups", "count", "weight groups (neurons) still in use", "init",
        "iteration"),
    col("confident_groups", "count", "groups whose activity exceeds the threshold",
        "init", "iteration"),
    col("target_groups", "count", "groups the target sparsity keeps, sum over layers of "
        "T_l", "init", "iteration"),
)
#: Mean slab variance of each layer's weights (alive groups), layers 1-3.
SLAB_VAR_COLUMNS = tuple(
    col(f"slab_var_l{layer}", "1", f"mean slab variance of layer {layer}'s weights over its "
        "alive groups (the variance collapse under PasP is visible here)", "init",
        "iteration") for layer in (1, 2, 3))
REGRESSION_COLUMNS = (
    col("test_mse", "1", "test mean squared error of the posterior-mean network", "init",
        "iteration"),
    col("test_nmse", "1", "test normalised MSE, |y_hat - y|^2 / |y|^2", "init",
        "iteration"),
)
CLASSIFICATION_COLUMNS = (
    ACCURACY.means("test accuracy of the posterior-mean network").on("init", "iteration"),
    col("test_error", "fraction", "test error, 1 - accuracy", "init", "iteration"),
)
CLIP_COLUMNS = (
    *(col(f"clip_{q}", "count", f"TDAMP safeguard {q} fired this many times this round",
          "iteration") for q in _CLIPS),
    col("clips", "count", "TDAMP safeguards fired this round, all kinds", "iteration"),
)
SCHEMA = Schema.of(
    TIME_S, ITERATION.means("round (0: the initial prior)"), EVENT.means("init or iteration"),
    CUM_BITS, CUM_BITS_DELIVERED, CUM_BITS_UP, CUM_BITS_DOWN, SERVER_NODE,
    *EMTDAMP_COLUMNS, *SLAB_VAR_COLUMNS[:2],
    SLAB_VAR_COLUMNS[2].only_when("task=boston-synthetic"),
    *(c.only_when("task=boston-synthetic") for c in REGRESSION_COLUMNS),
    *(c.only_when("task=fashion-mnist") for c in CLASSIFICATION_COLUMNS),
    SCHEDULED.on("iteration"), UPDATES.on("iteration"), *CLIP_COLUMNS,
    UPLINK_BITS.means("bits sent to the server this round"),
    col("task", "label", "boston-synthetic or fashion-mnist"),
    col("K", "count", "number of clients"),
)


@register(NAME, EMTDAMPConfig,
          "EM-TDAMP (server EM + client TDAMP) under a parameter server: test loss, noise "
          "variance, active neurons and clip counts per round.", plot=default_plot,
          datasets=("fashion-mnist",), columns=SCHEMA,
          server_schedule=ALL_CLIENTS)
def run(config: EMTDAMPConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    from bflnet.learners.emtdamp.learner import EMTDAMP, every_part
    from bflnet.protocols.coding.codecs import RawCodec
    from bflnet.scenarios.emtdamp.common import run_server_rounds
    from bflnet.simulator.simulation import Simulation

    def codec(bits: int) -> Any:
        return None if bits == 64 else every_part(len(sizes) - 1, RawCodec(bits))

    with groups_on_threads(config.threads) as groups:  # torch itself on one thread
        sim = Simulation(seed, name=NAME)
        agents, test = task_data(config, sim.streams.numpy("data"))
        sizes = TASK_SETUP[config.task][0]
        learner = EMTDAMP(sizes, agents, config.learner_params(), eval_data=test,
                          threads=groups)
        frame = run_server_rounds(sim, learner, config.K, config, rounds=config.rounds,
                                  uplink_codec=codec(config.uplink_bits),
                                  downlink_codec=codec(config.downlink_bits),
                                  eval_every=config.eval_every, progress=progress)
    frame["uplink_bits"] = frame["cum_bits_up"].diff().fillna(0).astype("int64")
    return frame.assign(task=config.task, K=config.K)
