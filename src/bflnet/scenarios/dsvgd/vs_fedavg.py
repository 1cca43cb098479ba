"""Scenario ``dsvgd-vs-fedavg`` (compressed-DSVGD letter, Fig. 4): final test accuracy
against ECE of compressed DSVGD with ``N_p`` particles and of compressed FedAvg, under the
same per-iteration uplink budget ``R_u = rate_multiple · d``.

DSVGD uses the ``sparsifier`` (default alpha-shared with ``sharing_fraction`` 1/2; an
``N_p`` that 1/2 does not fit falls back to the largest divisor of ``N_p`` below 1/α,
e.g. shared for N_p = 5, per-particle for N_p = 2; the column ``groups`` says which).
FedAvg sends its ``(1, d)`` model update with top-k + the same quantiser (``n_rows = 1``,
one pattern), the largest ``k`` within the same ``R_u``; it runs ``fedavg_local_steps``
SGD steps (default: ``local_steps``, as many as DSVGD's SVGD steps) with ``fedavg_lr`` on
minibatches of ``batch_size``, one agent per iteration, like DSVGD (the letter gives no
FedAvg hyper-parameters). All runs of one call share the data split and the channel.

Defaults are reduced for speed (N_k = 600, 2000 test examples, L = 10, 100 iterations);
the letter's Fig. 4 is ``--set rounds=1000 points_per_agent=6000 eval_size=10000``.

``uplink=aircomp`` or ``digital`` (``methods=fedavg`` only: DSVGD is refused, its agents'
factors fit the particles they sent) carries FedAvg's update over the air or quantised
instead of the budget codec (:mod:`bflnet.scenarios.shared.uplink_settings`), with the
uplink's columns (``k_active``, ``channel_var``, energies) on the rows.

One row per (method, N_p, rate_multiple, iteration): ``run_id``, ``method``
(``dsvgd``/``fedavg``), ``n_particles`` (1 for FedAvg), ``rate_multiple``, ``groups``,
``sharing_fraction`` (effective), ``budget_bits``, ``k``, ``message_bits``, ``iteration``,
``time_s``, ``cum_bits``, ``cum_bits_up``, ``cum_bits_down``, ``uplink_bits``,
``accuracy``, ``ece``, ``nll``, ``brier`` (NaN between evaluations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from bflnet.learners.hyper import DSVGD_NO_MEAN
from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import comma_list, float_list, int_list
from bflnet.runs.registry import register
from bflnet.runs.schema import EVENT, METHOD, RUN_ID, SCHEDULED, UPDATES, UPLINK_BITS, Schema
from bflnet.scenarios.dsvgd.common import (
    BUDGET_COLUMNS,
    METRIC_COLUMNS,
    ONE_PER_ITERATION,
    SERVER_COLUMNS,
    SPARSIFIERS,
    DSVGDSettings,
    budget_codec,
    dsvgd_learner,
    fedavg_learner,
    iid_setup,
    mlp_dim,
    run_parameter_server,
    sparsity_groups,
    tidy,
)
from bflnet.scenarios.shared.uplink_settings import UplinkSettings, uplink_columns

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "dsvgd-vs-fedavg"
METHODS = ("dsvgd", "fedavg")
COLUMNS = ("run_id", "method", "n_particles", "rate_multiple", "groups", "sharing_fraction",
           "budget_bits", "k", "message_bits")


@dataclass(frozen=True)
class DSVGDvsFedAvgConfig(UplinkSettings, DSVGDSettings):
    """Parameters of ``dsvgd-vs-fedavg``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"iterations": "rounds"}

    SCENARIO: ClassVar[str] = NAME

    particles: str = param("2,5,10", "comma list of DSVGD particle counts N_p (letter: "
                           "2,5,10; time grows as N_p^2 and memory as N_p)")
    rate_multiples: str = param("0.5,1,5,10", "comma list of uplink budgets R_u / d "
                                "(letter: 0.5,1,5,10)")
    methods: str = param("dsvgd,fedavg", "comma list of methods: dsvgd, fedavg")
    sparsifier: str = param("alpha-shared", "DSVGD sparsifier", choices=SPARSIFIERS)
    sharing_fraction: float = param(0.5, "alpha of alpha-shared sparsification (falls back "
                                    "to the largest divisor of N_p below 1/alpha)", gt=0, le=1)
    rounds: int = param(100, "iterations of every run (letter: 1000)", ge=1, le=10**8)
    fedavg_lr: float = param(0.2, "FedAvg SGD learning rate (letter: not given)", gt=0,
                             le=1e3)
    fedavg_local_steps: int | None = param(None, "FedAvg SGD steps per visit (none: "
                                           "local_steps)", ge=1, le=10**7)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_uplink_fields()
        methods = comma_list("methods", self.methods, METHODS)
        if self.uplink != "links" and "dsvgd" in methods:
            raise ValueError(f"uplink: {self.uplink} cannot carry learner DSVGD: it cannot take "
                             f"a noisy mean of the updates: {DSVGD_NO_MEAN} (methods=fedavg "
                             f"runs)")
        d = mlp_dim(self.hidden)  # = mlp(self).d, without torch
        counts = int_list("particles", self.particles, 1, 10**6)
        self.check_fits_memory("hidden, particles, K", d, max(counts))
        for rate in float_list("rate_multiples", self.rate_multiples):
            if "dsvgd" in methods:
                for n_p in counts:
                    groups = sparsity_groups(self.sparsifier, n_p, self.sharing_fraction,
                                             strict=False)
                    budget_codec(rate, d, n_p, groups, self.n_bits, field="rate_multiples")
            if "fedavg" in methods and self.uplink == "links":
                budget_codec(rate, d, 1, 1, self.n_bits, field="rate_multiples")


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 4: final accuracy against final ECE, one marker per (method, N_p), points
    joined over R_u (mean over runs)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    final = final_rows(frame)
    means = final.groupby(["method", "n_particles", "rate_multiple"], as_index=False)[
        ["accuracy", "ece"]].mean()
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for (method, n_p), group in means.groupby(["method", "n_particles"]):
        label = "FedAvg" if method == "fedavg" else f"DSVGD N_p={n_p}"
        ax.plot(group["ece"], group["accuracy"], marker="o", label=label)
        for _, row in group.iterrows():
            ax.annotate(f"{row['rate_multiple']:g}d", (row["ece"], row["accuracy"]),
                        fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set(xlabel="ECE", ylabel="test accuracy",
           title="accuracy vs ECE after the last iteration (Fig. 4)")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def final_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The last evaluated row of every run."""
    rows = frame.dropna(subset=["accuracy"])
    return rows.loc[rows.groupby("run_id", sort=False)["iteration"].idxmax()]


SCHEMA = Schema.of(
    RUN_ID, METHOD.means("dsvgd or fedavg"),
    *(BUDGET_COLUMNS[n] for n in ("n_particles", "rate_multiple", "groups",
                                  "sharing_fraction", "budget_bits", "k", "message_bits")),
    SERVER_COLUMNS[0], SERVER_COLUMNS[1], EVENT.means("init or iteration"),
    *SERVER_COLUMNS[2:], *METRIC_COLUMNS, SCHEDULED.on("iteration"),
    UPDATES.on("iteration"), UPLINK_BITS, *uplink_columns(),
)


@register(NAME, DSVGDvsFedAvgConfig,
          "Compressed DSVGD vs compressed FedAvg (letter Fig. 4): accuracy and ECE for "
          "N_p particles under per-iteration uplink budgets R_u.", plot=default_plot,
          datasets=("fashion-mnist",), columns=SCHEMA,
          server_schedule=ONE_PER_ITERATION)
def run(config: DSVGDvsFedAvgConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    _, data, model = iid_setup(NAME, config, seed, progress)
    methods = comma_list("methods", config.methods)
    steps = config.fedavg_local_steps or config.local_steps
    frames = []
    for rate in float_list("rate_multiples", config.rate_multiples):
        runs: list[tuple[str, int]] = []
        if "dsvgd" in methods:
            runs += [("dsvgd", n_p) for n_p in int_list("particles", config.particles, 1)]
        if "fedavg" in methods:
            runs.append(("fedavg", 1))
        for method, n_p in runs:
            if method == "dsvgd":
                groups = sparsity_groups(config.sparsifier, n_p, config.sharing_fraction,
                                         strict=False)
                learner = dsvgd_learner(config, model, data, n_p)
            else:
                groups = 1
                learner = fedavg_learner(config, model, data, local_steps=steps,
                                         lr=config.fedavg_lr)
            budget = budget_codec(rate, model.d, n_p, groups, config.n_bits)
            label = run_label(NAME, {"method": method, "particles": n_p,
                                     "rate_multiple": rate})
            air = config.uplink_spec(config.K)
            result = run_parameter_server(label, config, seed, learner, range(config.K),
                                          budget.codec if air is None else None,
                                          config.rounds, progress=progress, uplink=air)
            frames.append(result.frame.assign(
                run_id=f"{method}-Np{n_p}-R{rate:g}-s{seed}", method=method, n_particles=n_p,
                rate_multiple=rate, groups=groups, sharing_fraction=1.0 / groups,
                budget_bits=budget.budget_bits, k=budget.k, message_bits=budget.message_bits))
    return tidy(frames, COLUMNS)
