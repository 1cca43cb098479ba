"""Scenario ``dsvgd-sparsifiers`` (compressed-DSVGD letter, Fig. 3): test accuracy and ECE
of compressed DSVGD against iterations for the three sparsifiers under the same per-iteration
uplink budget ``R_u`` (letter: ``N_p = 10``, ``N_b = 5``, ``R_u = d``, K = 10 agents with
6000 Fashion-MNIST examples each).

The sparsifiers (:mod:`bflnet.scenarios.dsvgd.common` gives the budget mode):
``per-particle`` (eq. 9, one pattern per particle), ``shared`` (eq. 10, one pattern for all)
and ``alpha-shared`` (eq. 11, ``1 / sharing_fraction`` patterns, each shared by a fraction
``sharing_fraction`` of the particles). The letter does not give the α of its α-shared
curve, only that it is below 1 and above 1/N_p = 0.1; with N_p = 10 the valid values
in between are 1/5 and 1/2; the default is 1/2.

All sparsifiers of one call share the data split, the initial particles, the minibatch
sequence and the channel (the same root seed): a paired comparison. Defaults are reduced
for speed (N_k = 600, 2000 test examples, L = 10 SVGD steps per visit, 300 iterations);
the letter's scale is ``--set points_per_agent=6000 eval_size=10000 rounds=1000`` (and a
larger ``local_steps``).

One row per (sparsifier, iteration): ``run_id``, ``sparsifier``, ``sharing_fraction``
(effective: 1/groups), ``groups``, ``n_particles``, ``rate_multiple``, ``budget_bits``
(``R_u``), ``k`` (entries kept per particle), ``message_bits`` (eqs. 9-11 + 32 bits of
``a_max``), ``iteration``, ``time_s``, ``cum_bits``, ``cum_bits_up``, ``cum_bits_down``,
``uplink_bits`` (this iteration's), ``accuracy``, ``ece``, ``nll``, ``brier`` (NaN between
evaluations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.schema import EVENT, RUN_ID, SCHEDULED, UPDATES, UPLINK_BITS, Schema, col
from bflnet.scenarios.dsvgd.common import (
    BUDGET_COLUMNS,
    METRIC_COLUMNS,
    ONE_PER_ITERATION,
    SERVER_COLUMNS,
    SPARSIFIERS,
    DSVGDSettings,
    budget_codec,
    dsvgd_learner,
    iid_setup,
    mlp_dim,
    run_parameter_server,
    sparsity_groups,
    tidy,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "dsvgd-sparsifiers"
COLUMNS = ("run_id", "sparsifier", "sharing_fraction", "groups", "n_particles",
           "rate_multiple", "budget_bits", "k", "message_bits")


@dataclass(frozen=True)
class DSVGDSparsifiersConfig(DSVGDSettings):
    """Parameters of ``dsvgd-sparsifiers``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"iterations": "rounds"}

    SCENARIO: ClassVar[str] = NAME

    particles: int = param(10, "number of particles N_p (letter: 10; time grows as "
                           "N_p^2 and memory as N_p)", ge=1, le=10**6)
    rate_multiple: float = param(1.0, "uplink budget R_u as a multiple of d (letter: 1)", gt=0,
                                 le=1e6)
    sparsifiers: str = param("per-particle,shared,alpha-shared",
                             "comma list of sparsifiers: " + ", ".join(SPARSIFIERS))
    sharing_fraction: float = param(0.5, "alpha of alpha-shared sparsification: 1/g, g "
                                    "dividing N_p (letter: between 1/N_p and 1, not given)",
                                    gt=0, le=1)
    rounds: int = param(300, "DSVGD iterations (letter: 1000)", ge=1, le=10**8)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        names = comma_list("sparsifiers", self.sparsifiers, SPARSIFIERS)
        d = mlp_dim(self.hidden)  # = mlp(self).d, without torch
        self.check_fits_memory("hidden, particles, K", d, self.particles)
        for s in names:
            groups = sparsity_groups(s, self.particles, self.sharing_fraction)
            budget_codec(self.rate_multiple, d, self.particles, groups, self.n_bits)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 3 (left): median test accuracy against iterations, one line per sparsifier."""
    from bflnet.analysis.plots import plot_metric

    fig = plot_metric(frame, "iteration", "accuracy", hue="sparsifier")
    fig.axes[0].set(ylabel="test accuracy", title="compressed DSVGD, three sparsifiers (Fig. 3)")
    return fig


SCHEMA = Schema.of(
    RUN_ID, col("sparsifier", "label", "per-particle, shared or alpha-shared"),
    *(BUDGET_COLUMNS[n] for n in ("sharing_fraction", "groups", "n_particles",
                                  "rate_multiple", "budget_bits", "k", "message_bits")),
    SERVER_COLUMNS[0], SERVER_COLUMNS[1], EVENT.means("init or iteration"),
    *SERVER_COLUMNS[2:], *METRIC_COLUMNS, SCHEDULED.on("iteration"),
    UPDATES.on("iteration"), UPLINK_BITS,
)


@register(NAME, DSVGDSparsifiersConfig,
          "Compressed DSVGD (letter Fig. 3): accuracy and ECE vs iterations for per-particle, "
          "shared and alpha-shared sparsification at the same uplink budget R_u.",
          plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA,
          server_schedule=ONE_PER_ITERATION)
def run(config: DSVGDSparsifiersConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    _, data, model = iid_setup(NAME, config, seed, progress)
    frames = []
    for sparsifier in comma_list("sparsifiers", config.sparsifiers):
        groups = sparsity_groups(sparsifier, config.particles, config.sharing_fraction)
        budget = budget_codec(config.rate_multiple, model.d, config.particles, groups,
                              config.n_bits)
        learner = dsvgd_learner(config, model, data, config.particles)
        result = run_parameter_server(run_label(NAME, {"sparsifier": sparsifier}), config,
                                      seed, learner, range(config.K), budget.codec,
                                      config.rounds, progress=progress)
        frames.append(result.frame.assign(
            run_id=f"{sparsifier}-s{seed}", sparsifier=sparsifier,
            sharing_fraction=1.0 / groups, groups=groups, n_particles=config.particles,
            rate_multiple=config.rate_multiple, budget_bits=budget.budget_bits, k=budget.k,
            message_bits=budget.message_bits))
    return tidy(frames, COLUMNS)
