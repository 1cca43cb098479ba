"""Scenarios ``emtdamp-boston`` and ``emtdamp-mnist`` (EM-TDAMP paper, Sec. IV, Figs. 6, 7,
10, 11): EM-TDAMP against the paper's three baselines under the same parameter server and
channels, test loss per round with simulated seconds and bits.

**Methods** (``methods``, a comma list): ``emtdamp`` (:class:`~bflnet.learners.emtdamp.
learner.EMTDAMP`), ``fedavg`` (plain), ``group-lasso`` and ``group-snip``
(:mod:`bflnet.learners.federated.group_baselines`: FedAvg with Adam, learning rate ``lr``, the same
network with a Gaussian or softmax head). Per round every one of the ``K`` clients
downloads the global model and computes: EM-TDAMP ``τ_max`` TDAMP passes over its data,
a baseline ``τ_max · ⌈I_k / B⌉`` Adam steps on random minibatches of ``B = batch_size``
(the same number of minibatch visits). Uplink and downlink carry ``uplink_bits`` /
``downlink_bits`` per value: EM-TDAMP sends two numbers per weight (mean and variance, plus
the group activities, docs/em-tdamp.md eq. 7.1), a baseline one (its ``Δw``). Every
method is judged at the same group sparsity: EM-TDAMP prunes by its target rule (from
round ``sparsify_from``), the baselines are evaluated pruned by energy to ``T_l =
round(ρ N_{l−1})`` surviving neurons per layer (``ρ = target_density``; their unpruned loss
is ``<metric>_dense``). With ``sparsity_mode=paper`` EM-TDAMP keeps one budget
``round(ρ Q_W)`` over all layers (docs/em-tdamp.md Sec. 4.5), and ``budget_scope=network``
makes the baselines' energy pruning and SNIP keep the same budget.

**emtdamp-boston**: 13-64-64-1, Gaussian likelihood, batch 101, the real Boston housing
set (:mod:`bflnet.data.boston`: ``boston_csv``, a ``BFLNET_DATA`` copy, or the copy from
mlxtend's wheel that ``python -m bflnet.data.ensure boston`` puts in bflnet's data
directory; 404/102 split drawn from the run's seed, features and target standardised
by the training statistics), split evenly over ``K`` clients; test NMSE. ``data=synthetic``
uses :func:`bflnet.data.regression.boston_shaped` instead (``data_source`` says so).
**emtdamp-mnist**: 784-128-10, probit-product likelihood for EM-TDAMP and softmax for the
baselines, batch 100, ``K`` i.i.d. shards of ``points_per_agent`` MNIST images (IDX files, or the
5 000-image fallback, :mod:`bflnet.data.digits`; ``dataset=fashion-mnist`` for
Fashion-MNIST), pixels / 255 centred by the pooled training mean (all methods); test
error on ``eval_size`` test images.

``evaluate_on=validation`` evaluates on a validation split held out of the training data
instead (Boston: the last 20 % of the training rows; MNIST: ``eval_size`` training images
no client holds), for choosing the baselines' ``lr`` and ``group_lasso`` without the test
set.

EM-TDAMP's ``batch_agents`` and ``dtype`` (docs/em-tdamp.md, Sec. 7.5) apply to
EM-TDAMP's clients only (the baselines run in float32); ``device`` applies to every method:
EM-TDAMP's clients and the baselines' models, data, local steps and pruning.

Defaults are reduced to finish in about a minute on 2 cores. The paper's settings:

* Fig. 6/7 (one client): ``--set K=1 --set tau_max=1`` (Boston: ``rounds`` ~ 100; MNIST:
  ``--set points_per_agent=60000 --set eval_size=10000``),
* Fig. 10/11 (several clients): Boston ``--set K=4 --set tau_max=10``; MNIST ``--set K=10
  --set points_per_agent=6000 --set tau_max=10 --set eval_size=10000``,
* Figs. 7/11 (loss against sparsity): one run per ``target_density`` in {1, 0.5, 0.3,
  0.2, 0.1}.

One row per method and round (``iteration``; 0 is the initial model): ``method``,
``seed``, ``time_s``, ``cum_bits_up``, ``cum_bits_down``, ``test_nmse`` (and ``test_mse``)
or ``test_error`` (and ``accuracy``), ``active_groups`` (weight columns still in use) and
``target_groups`` (``Σ_l T_l``), ``data_source``, ``task``, ``K``, ``tau_max``,
``target_density``, ``evaluate_on``; EM-TDAMP's rows also its ``noise_var`` and clip counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import BUDGET_SCOPES, EMTDAMPParams, GroupFedAvgParams
from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.schema import (
    CUM_BITS,
    CUM_BITS_DELIVERED,
    CUM_BITS_DOWN,
    CUM_BITS_UP,
    EVENT,
    ITERATION,
    METHOD,
    SCHEDULED,
    SEED,
    SERVER_NODE,
    TIME_S,
    UPDATES,
    Column,
    Schema,
    col,
)
from bflnet.runtime.devices import DEVICES
from bflnet.runtime.threads import MAX_THREADS, groups_on_threads
from bflnet.scenarios.emtdamp.common import ALL_CLIENTS
from bflnet.scenarios.emtdamp.emtdamp import (
    AUTO_THREADS,
    CLASSIFICATION_COLUMNS,
    CLIP_COLUMNS,
    EMTDAMP_COLUMNS,
    REGRESSION_COLUMNS,
    SLAB_VAR_COLUMNS,
    THREADS_HELP,
)
from bflnet.scenarios.shared.network_settings import NetworkSettings, ServerOnly

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

METHODS = ("emtdamp", "fedavg", "group-lasso", "group-snip")
#: The baselines' ``GroupFedAvgParams.method``.
BASELINE = {"fedavg": "plain", "group-lasso": "group-lasso", "group-snip": "group-snip"}
BOSTON_SIZES, MNIST_SIZES = (13, 64, 64, 1), (784, 128, 10)
MNIST_TRAIN, MNIST_TEST = 60_000, 10_000
#: Fraction of Boston's training rows held out with ``evaluate_on=validation``.
VALIDATION_FRACTION = 0.2


@dataclass(frozen=True)
class CompareSettings(ServerOnly, EMTDAMPParams, NetworkSettings):
    """What both comparisons share: the methods, clients, rounds, EM-TDAMP's
    hyper-parameters, the baselines' and the links to the server."""

    SHARED_MEDIUM: ClassVar[bool] = True
    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = {
        **ServerOnly.DECIDED_ELSEWHERE, "likelihood": "the task decides"}

    methods: str = param(",".join(METHODS), "comma list of methods to run: "
                         + ", ".join(METHODS))
    likelihood: str = param("gaussian", "not used here (an error if set): the task decides",
                            choices=("gaussian", "probit"))
    rounds: int = param(30, "communication rounds", ge=1, le=10**7)
    sparsify_from: int = param(5, "first round whose merge applies EM-TDAMP's target-"
                               "sparsity rule (ours; the paper applies it from the first)",
                               ge=1, le=10**8)
    lr: float = param(1e-3, "Adam learning rate of the baselines", gt=0, le=1e3)
    group_lasso: float = param(1e-3, "group-lasso weight lambda (method group-lasso)", gt=0,
                               le=1e6)
    budget_scope: str = param("per-layer", "the baselines' target groups: 'per-layer' "
                              "(T_l = round(rho N_{l-1}) per layer) or 'network' "
                              "(round(rho Q_W) over all layers, at least one per layer: the "
                              "budget of EM-TDAMP's sparsity_mode=paper)",
                              choices=BUDGET_SCOPES)
    evaluate_on: str = param("test", "evaluate on the test set or on a validation split held "
                             "out of the training data (for tuning)",
                             choices=("test", "validation"))
    uplink_bits: int = param(32, "bits per value of every uplink array", choices=(32, 64))
    downlink_bits: int = param(32, "bits per value of every downlink array",
                               choices=(32, 64))
    eval_every: int = param(1, "evaluate every this many rounds (and the last)", ge=1,
                            le=10**9)
    threads: int = param(AUTO_THREADS, "EM-TDAMP: " + THREADS_HELP + "; its merge and "
                         "evaluation on one torch thread (its rows do not depend on it). The "
                         "baselines: torch threads inside their runs, one when 0 (more can "
                         "change their rows' last bits)", ge=0, le=MAX_THREADS)
    device: str = param("cpu", "where the clients compute, EM-TDAMP's TDAMP and the "
                        "baselines' local steps: cpu, cuda (an error without a CUDA "
                        "device) or auto (cuda when available, else cpu)", choices=DEVICES)

    SIZES: ClassVar[tuple[int, ...]] = BOSTON_SIZES
    TASK: ClassVar[str] = ""

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_sparsity_mode()
        comma_list("methods", self.methods, METHODS)

    @property
    def method_list(self) -> list[str]:
        """``methods`` as a list."""
        return comma_list("methods", self.methods, METHODS)

    def emtdamp_params(self, likelihood: str) -> EMTDAMPParams:
        """EM-TDAMP's hyper-parameters with the task's likelihood."""
        values = {name: getattr(self, name) for name in EMTDAMPParams.__dataclass_fields__}
        values["likelihood"] = likelihood
        return EMTDAMPParams(**values)

    def baseline_params(self, method: str, local_steps: int) -> GroupFedAvgParams:
        """A baseline's FedAvg + Adam hyper-parameters."""
        kind = BASELINE[method]
        return GroupFedAvgParams(
            local_steps=local_steps, lr=self.lr, batch_size=self.batch_size, optimizer="adam",
            method=kind, group_lasso=self.group_lasso if kind == "group-lasso" else 0.0,
            target_density=self.target_density, budget_scope=self.budget_scope)


def _check_path(name: str, value: str | None) -> None:
    if value is not None and (not value or len(value) > 4096 or "\x00" in value):
        raise ValueError(f"{name}: must be a file path of 1 to 4096 characters")


@dataclass(frozen=True)
class BostonConfig(CompareSettings):
    """Parameters of ``emtdamp-boston`` (module docs)."""

    SCENARIO: ClassVar[str] = "emtdamp-boston"
    TASK: ClassVar[str] = "boston"

    K: int = param(1, "number of clients (paper: 1 for Fig. 6, 4 for Fig. 10)", ge=1, le=404)
    batch_size: int = param(101, "minibatch size of every method (paper: 101)", ge=1,
                            le=10**6)
    data: str = param("boston", "boston: the real set (boston_csv, BFLNET_DATA or the copy "
                      "the set-up fetched); synthetic: Boston-shaped synthetic data",
                      choices=("boston", "synthetic"))
    boston_csv: str | None = param(None, "Boston housing CSV (14 columns, MEDV last); none: "
                                   "look in BFLNET_DATA, then bflnet's data directory "
                                   "(python -m bflnet.data.ensure boston), then an "
                                   "installed mlxtend")

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_path("boston_csv", self.boston_csv)
        if self.data == "synthetic" and self.boston_csv is not None:
            raise ValueError("boston_csv: not used with data=synthetic")


@dataclass(frozen=True)
class MnistConfig(CompareSettings):
    """Parameters of ``emtdamp-mnist`` (module docs)."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"per_agent": "points_per_agent"}

    SCENARIO: ClassVar[str] = "emtdamp-mnist"
    TASK: ClassVar[str] = "mnist"
    SIZES: ClassVar[tuple[int, ...]] = MNIST_SIZES

    K: int = param(1, "number of clients (paper: 1 for Fig. 6, 10 for Fig. 10)", ge=1,
                   le=MNIST_TRAIN)
    rounds: int = param(8, "communication rounds", ge=1, le=10**7)
    batch_size: int = param(100, "minibatch size of every method (paper: 100)", ge=1,
                            le=10**6)
    dataset: str = param("mnist", "mnist (IDX files, or the 5000-image fallback) or "
                         "fashion-mnist", choices=("mnist", "fashion-mnist"))
    points_per_agent: int = param(1000, "training images per client (paper: 60000 / K)", ge=1,
                           le=MNIST_TRAIN)
    eval_size: int = param(2000, "test (or validation) images evaluated (paper: 10000)",
                           ge=1, le=MNIST_TEST)
    fallback_test: int = param(1000, "test images split off the 5000-image fallback", ge=1,
                               le=4999)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.K * self.points_per_agent > MNIST_TRAIN:
            raise ValueError(f"points_per_agent: K·points_per_agent = "
                             f"{self.K * self.points_per_agent} exceeds the "
                             f"{MNIST_TRAIN} training images")


# --------------------------------------------------------------------------- data


def boston_task(config: BostonConfig, rng: np.random.Generator
                ) -> tuple[list[tuple[Any, Any]], tuple[Any, Any], str]:
    """The clients' shards, the evaluation set and ``data_source``."""
    import numpy as np

    if config.data == "synthetic":
        from bflnet.data.regression import boston_shaped
        (x, y), test = boston_shaped(rng)
        source = "synthetic-boston-shaped"
    else:
        from bflnet.data.boston import load_boston
        split = load_boston(rng, config.boston_csv)
        (x, y), test, source = split.train, split.test, split.source
    if config.evaluate_on == "validation":
        held = math.ceil(VALIDATION_FRACTION * len(y))
        test, (x, y) = (x[-held:], y[-held:]), (x[:-held], y[:-held])
    if len(y) < config.K:
        raise ValueError(f"K: must be <= {len(y)} (one training example per client)")
    parts = np.array_split(np.arange(len(y)), config.K)
    return [(x[p], y[p]) for p in parts], test, source


def mnist_task(config: MnistConfig, rng: np.random.Generator
               ) -> tuple[list[tuple[Any, Any]], tuple[Any, Any], str]:
    """The clients' centred shards, the evaluation set and ``data_source``."""
    import numpy as np

    from bflnet.data.digits import load_digits
    from bflnet.scenarios.emtdamp.common import centred_shards
    digits = load_digits(rng, config.dataset, fallback_test=config.fallback_test)
    images, labels = digits.train
    need = config.K * config.points_per_agent + (config.eval_size if config.evaluate_on ==
                                          "validation" else 0)
    if need > len(labels):
        raise ValueError(f"points_per_agent: needs {need} training images, {digits.source} has "
                         f"{len(labels)}")
    order = rng.permutation(len(labels))
    n = config.points_per_agent
    parts = [order[k * n:(k + 1) * n] for k in range(config.K)]
    if config.evaluate_on == "validation":
        held = order[config.K * config.points_per_agent:need]
        test_x, test_y = images[held], labels[held]
    else:
        test_x, test_y = digits.test
        if config.eval_size < len(test_y):
            idx = np.sort(rng.choice(len(test_y), size=config.eval_size, replace=False))
            test_x, test_y = test_x[idx], test_y[idx]
    shards, test = centred_shards(images, labels, parts, (test_x, test_y))
    return shards, test, digits.source


# --------------------------------------------------------------------------- runs


def _learner(method: str, config: CompareSettings, shards: list[tuple[Any, Any]],
             test: tuple[Any, Any], groups: int) -> tuple[Any, Any]:
    """``(learner, codec factory)`` of one method."""
    from bflnet.protocols.coding.codecs import RawCodec

    agents = dict(enumerate(shards))
    sizes = config.SIZES
    classify = config.TASK == "mnist"
    if method == "emtdamp":
        from bflnet.learners.emtdamp.learner import EMTDAMP, every_part

        learner = EMTDAMP(sizes, agents, config.emtdamp_params("probit" if classify
                                                               else "gaussian"),
                          eval_data=test, threads=groups)

        def codec(bits: int) -> Any:
            return every_part(len(sizes) - 1, RawCodec(bits))
        return learner, codec
    from bflnet.learners.federated.group_baselines import DenseMLP, GroupFedAvg

    model = DenseMLP(sizes, "softmax" if classify else "gaussian")
    steps = config.tau_max * max(math.ceil(len(y) / config.batch_size) for _, y in shards)
    learner = GroupFedAvg(model, agents, config.baseline_params(method, steps),
                          eval_data=test, device=config.device)
    return learner, RawCodec


def run_method(method: str, config: CompareSettings, seed: int, *, groups: int = 1,
               progress: bool = False) -> pd.DataFrame:
    """One simulation of ``method``: the data drawn from the run's ``data`` stream (the
    same for every method of a seed), then the parameter server for ``rounds`` rounds;
    EM-TDAMP runs ``groups`` client groups at once."""
    import torch

    from bflnet.scenarios.emtdamp.common import run_server_rounds
    from bflnet.simulator.simulation import Simulation

    # EM-TDAMP: one torch thread, its client groups on `groups` threads
    torch.set_num_threads(1 if method == "emtdamp" else config.threads or 1)
    sim = Simulation(seed, name=run_label(config.SCENARIO,  # type: ignore[attr-defined]
                                          {"method": method}))
    rng = sim.streams.numpy("data")
    task = boston_task if config.TASK == "boston" else mnist_task
    shards, test, source = task(config, rng)  # type: ignore[arg-type]
    learner, codec = _learner(method, config, shards, test, groups)
    frame = run_server_rounds(sim, learner, len(shards), config, rounds=config.rounds,
                              uplink_codec=codec(config.uplink_bits),
                              downlink_codec=codec(config.downlink_bits),
                              eval_every=config.eval_every, progress=progress)
    return frame.assign(method=method, seed=seed, data_source=source, task=config.TASK,
                        K=config.K, tau_max=config.tau_max,
                        target_density=config.target_density, evaluate_on=config.evaluate_on)


def run_methods(config: CompareSettings, seed: int, progress: bool) -> pd.DataFrame:
    """Every method of ``config.methods``, one simulation each, as one frame."""
    import pandas as pd

    with groups_on_threads(config.threads) as groups:
        frames = [run_method(m, config, seed, groups=groups, progress=progress)
                  for m in config.method_list]
    return pd.concat(frames, ignore_index=True)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Test loss per method against rounds and against cumulative uplink bits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = frame[frame["event"] == "iteration"]
    metric = "test_nmse" if "test_nmse" in rows and rows["test_nmse"].notna().any() \
        else "test_error"
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    for method, group in rows.groupby("method", sort=False):
        mean = group.groupby("iteration")[[metric, "cum_bits_up"]].mean()
        axes[0].plot(mean.index, mean[metric], marker=".", label=method)
        axes[1].plot(mean["cum_bits_up"], mean[metric], marker=".", label=method)
    for ax, label in zip(axes, ("round", "cumulative uplink bits"), strict=True):
        ax.set(xlabel=label, ylabel=metric.replace("_", " "), yscale="log")
        ax.grid(alpha=0.3)
    axes[0].legend()
    first = rows.iloc[0]
    fig.suptitle(f"{first['task']}: K = {int(first['K'])}, tau_max = {int(first['tau_max'])}, "
                 f"rho = {first['target_density']:g} ({first['data_source']})")
    return fig


def _columns(metrics: tuple[Column, ...], dense: Column, depth: int) -> Schema:
    rows = ("init", "iteration")
    return Schema.of(
        TIME_S, ITERATION.means("round (0: the initial model)"),
        EVENT.means("init or iteration"), CUM_BITS, CUM_BITS_DELIVERED, CUM_BITS_UP,
        CUM_BITS_DOWN, SERVER_NODE,
        *(c.means(c.meaning + " (EM-TDAMP rows; the baselines: pruned to the target)")
          if c.name == "active_groups" else c for c in EMTDAMP_COLUMNS[1:]),
        EMTDAMP_COLUMNS[0].means("EM-TDAMP's noise variance estimate (NaN for the "
                                 "baselines)"),
        *(c.means(c.meaning + " (EM-TDAMP rows; NaN for the baselines)")
          for c in SLAB_VAR_COLUMNS[:depth]),
        *metrics, SCHEDULED.on("iteration"), UPDATES.on("iteration"), *CLIP_COLUMNS,
        METHOD.means("emtdamp, fedavg, group-lasso or group-snip"), SEED,
        col("data_source", "label", "which data ran: where the file was found and its "
            "path, or synthetic-boston-shaped"),
        col("task", "label", "boston or mnist"), col("K", "count", "number of clients"),
        col("tau_max", "count", "TDAMP passes (baselines: minibatch epochs) per round"),
        col("target_density", "fraction", "target group sparsity rho"),
        col("evaluate_on", "label", "test or validation"),
        dense.on(*rows),
    )


BOSTON_COLUMNS = _columns(REGRESSION_COLUMNS, col(
    "test_nmse_dense", "1", "baselines: test NMSE before pruning (EM-TDAMP: as test_nmse)"),
    len(BOSTON_SIZES) - 1)
MNIST_COLUMNS = _columns(CLASSIFICATION_COLUMNS, col(
    "test_error_dense", "fraction", "baselines: test error before pruning (EM-TDAMP: as "
    "test_error)"), len(MNIST_SIZES) - 1)


@register("emtdamp-boston", BostonConfig,
          "EM-TDAMP vs FedAvg, group lasso and group SNIP (Adam) on Boston housing, "
          "13-64-64-1: test NMSE per round, bits and time, at a target group sparsity.",
          plot=default_plot, datasets=("boston",), columns=BOSTON_COLUMNS,
          server_schedule=ALL_CLIENTS)
def run_boston(config: BostonConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    return run_methods(config, seed, progress)


@register("emtdamp-mnist", MnistConfig,
          "EM-TDAMP vs FedAvg, group lasso and group SNIP (Adam) on MNIST, 784-128-10: "
          "test error per round, bits and time, at a target group sparsity.",
          plot=default_plot, datasets=("mnist-5k",), columns=MNIST_COLUMNS,
          server_schedule=ALL_CLIENTS)
def run_mnist(config: MnistConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    return run_methods(config, seed, progress)
