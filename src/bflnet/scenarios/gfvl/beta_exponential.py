"""Scenario ``gfvl-beta-exponential`` (G-FVL paper, Fig. 4): non-conjugate G-FVL with L
natural-gradient steps per visit; KL against total local iterations L·i, seconds and bits.

K = 10 agents on a complete graph hold ``points_per_agent`` (100) exponential points with
mean ``theta_true`` (0.5: ours, the paper does not give it; θ must lie in (0, 1) under the
Beta prior). Prior Beta(2, 2), α = 1, ρ = 5e-3, S = 30 as in the paper. Each visit runs L
steps of eq. 17 with REINFORCE gradients (eqs. 18-20) and baseline ``baseline``:

- ``"0"`` is the paper's c = 0. With the sum loss over an agent's 100 points (the learner's
  convention, see :mod:`bflnet.learners.conjugate.gfvl`) the gradient noise then dominates: the KL
  wanders between ~0.3 and ~3 instead of converging;
- ``"loo"`` (default) gives every draw the mean loss of the other S − 1 draws as its
  baseline: still unbiased, and the KL converges steadily.

``reinforce_draws``: ``per-agent`` (default, eq. 18: S draws per agent, shared by its
points) or ``per-point`` (the original code: S independent draws per data point; less
variance at c = 0, N times the draws). ``data``: ``iid`` (default) or ``agent-skewed``
(agent i's points have means t ~ Beta(K + 1 − i, i); ``theta_true`` unused).

**Budget.** ``rounds`` is the number of iterations of the L = 1 run; every L runs
``ceil(rounds / L)`` iterations, so all curves span the same total local iterations
L·i (the paper's x axis) and the same compute.

**Time.** A visit costs ``L · compute_s_per_step`` (default 1 ms per step) and a hand-over
``latency + 128 bits / rate`` (default 5 ms + 0.128 ms; the complete graph's MH walk moves
every slot). Per local step, L = 1 then pays 6.13 ms and L = 50 pays 1.10 ms, so although
larger L needs more local steps for the same KL (the paper's Fig. 4), it needs far fewer
hand-overs and wins against seconds and bits: ``time_s`` and ``cum_bits`` are on every row.

Runs: every L of run ``r`` uses the same seed (same data, same walk streams).

One row per (L, run, evaluated iteration): ``L``, ``run``, ``run_seed``, ``iteration``,
``total_local_iterations`` (L · iteration), ``time_s``, ``cum_bits``,
``cum_bits_delivered``, ``node``, ``kl`` (KL(q ‖ exact posterior), by quadrature),
``theta_mean``. Iteration 0 (the prior) and every iteration at which L·i passes a
multiple of ``eval_every`` are evaluated, and the last. The KL of a non-conjugate model
cannot reach 0: it is bounded below by the best Beta's gap to the posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
from bflnet.runs.lists import int_list
from bflnet.runs.registry import register
from bflnet.runs.resources import Footprint
from bflnet.runs.schema import (
    CUM_BITS,
    CUM_BITS_DELIVERED,
    EVENT,
    ITERATION,
    KL,
    NODE,
    RUN,
    RUN_SEED,
    THETA_MEAN,
    TIME_S,
    Schema,
    col,
)
from bflnet.scenarios.gfvl.common import (
    MAX_MEAN,
    MAX_SAMPLES,
    REINFORCE_DRAWS,
    ROW_EVENTS,
    GFVLSettings,
    base_fields,
    crossings,
    parse_baseline,
    progress_runs,
    run_rows,
    state_of,
    with_run_id,
)
from bflnet.scenarios.shared.seeds import run_seeds

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "gfvl-beta-exponential"
_X_LABELS = {"total_local_iterations": "total local iterations L·i",
             "time_s": "simulated seconds", "cum_bits": "bits on air"}


@dataclass(frozen=True)
class GFVLBetaExponentialConfig(GFVLSettings):
    """Parameters of ``gfvl-beta-exponential``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {
        "iterations": "rounds", "local_iters": "local_steps_values"}

    SCENARIO: ClassVar[str] = NAME
    #: Comma lists that emulate a sweep axis (``bflnet describe`` explains them).
    LIST_AXES: ClassVar[dict[str, str]] = {
        "local_steps_values": "one run per L, told apart by the column L; every L uses the "
        "same run seeds. `bflnet sweep gfvl-beta-exponential --grid local_steps_values=1,10` "
        "runs each L as its own sweep point instead (a one-value list each): for the same "
        "seed the same rows as --set local_steps_values=1,10, plus the sweep's columns"}

    local_steps_values: str = param("1,10,20,50", "comma list of local steps L per visit, one "
                             "curve each (paper: 1, 10, 20, 50)")
    rounds: int = param(5000, "iterations of the L = 1 run; each L runs "
                            "ceil(rounds / L), the same total local iterations", ge=1,
                            le=10**8)
    theta_true: float = param(0.5, "mean of the exponential data (the paper does not give "
                              "it)", gt=0, le=MAX_MEAN)
    baseline: str = param("loo", "REINFORCE baseline c: 'loo' (leave-one-out mean of the "
                          "other draws) or a number ('0': the paper)")
    rho: float = param(5e-3, "natural-gradient step size (paper: 5e-3)", gt=0, le=1)
    samples: int = param(30, "Monte Carlo samples S per gradient (paper: 30)", ge=2,
                         le=MAX_SAMPLES)
    eval_every: int = param(50, "evaluate the KL every this many total local iterations",
                            ge=1, le=10**9)
    reinforce_draws: str = param("per-agent", "REINFORCE sampling unit: 'per-agent' (S "
                                 "draws per agent, eq. 18) or 'per-point' (S draws per data "
                                 "point, the original code)", choices=REINFORCE_DRAWS)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        int_list("local_steps_values", self.local_steps_values, 1)
        parse_baseline(self.baseline)
        self.check_data()

    def footprint(self) -> Footprint:
        """Data and Monte Carlo draws, a run's rows (``ceil(rounds / L)``) and the
        kept rows of every L's runs."""
        steps = [math.ceil(self.rounds / L)
                 for L in int_list("local_steps_values", self.local_steps_values, 1)]
        draws = self.samples * (self.points_per_agent if self.reinforce_draws == "per-point"
                                else 1)
        return self.gfvl_footprint(self.runs, max(steps) + 1.0,
                                   float(self.runs) * (sum(steps) + len(steps)), draws=draws)


def default_plot(frame: pd.DataFrame, x: str = "total_local_iterations") -> Figure:
    """Fig. 4: median KL over runs against ``x`` (total local iterations by default; also
    ``time_s`` or ``cum_bits``), one line per L, 75 % band."""
    from bflnet.analysis.plots import plot_metric

    fig = plot_metric(with_run_id(frame, ["L"]), x, "kl", hue="L", band=0.75, logy=True)
    fig.axes[0].set(xlabel=_X_LABELS.get(x, x), ylabel="KL(q ‖ posterior)",
                    title="G-FVL, beta-exponential (Fig. 4)")
    return fig


SCHEMA = Schema.of(
    col("L", "count", "natural-gradient steps per visit (local_steps_values)"),
    RUN, RUN_SEED, ITERATION,
    col("total_local_iterations", "count", "L x iteration"),
    EVENT.means("init (the prior, iteration 0) or iteration (one token visit)"),
    TIME_S, CUM_BITS, CUM_BITS_DELIVERED,
    NODE.means("agent scheduled at this slot (the start node at iteration 0)"),
    KL.means("KL(q || exact posterior), by quadrature"), THETA_MEAN,
)


@register(NAME, GFVLBetaExponentialConfig,
          "G-FVL, beta-exponential (paper Fig. 4): KL against total local iterations L·i, "
          "seconds and bits for several local steps L per visit.",
          plot=default_plot, columns=SCHEMA)
def run(config: GFVLBetaExponentialConfig, *, seed: int = 0,
        progress: bool = False) -> pd.DataFrame:
    import pandas as pd

    from bflnet.learners.conjugate.gfvl import GFVL
    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.protocols.graphs.walks import make_walk
    from bflnet.protocols.random_walk import RandomWalkProtocol
    from bflnet.simulator.rng import RngStreams
    from bflnet.simulator.simulation import Simulation
    graph = config.run_graph(seed)
    require_connected(graph)
    walk = make_walk(config.walk, graph)
    net_kwargs = config.network_kwargs(graph)
    c = parse_baseline(config.baseline)
    seeds = run_seeds(seed, config.runs)
    jobs = [(L, r, s) for L in int_list("local_steps_values", config.local_steps_values, 1)
            for r, s in enumerate(seeds)]
    rows: list[dict[str, Any]] = []
    for L, r, run_seed in progress_runs(jobs, progress, NAME):
        data = config.exponential_data(graph.number_of_nodes(),
                                       RngStreams(run_seed).numpy("data"))
        learner = GFVL.beta_exponential(data, a=config.prior_a, b=config.prior_b,
                                        alpha=config.alpha, rho=config.rho, S=config.samples,
                                        L=L, c=c, metrics="state",
                                        reinforce_draws=config.reinforce_draws)
        iterations = math.ceil(config.rounds / L)
        keep = {0, *crossings(iterations, L, config.eval_every)}
        sim = Simulation(run_seed, name=f"{NAME} L={L} run {r}")
        sim.build_network(graph, **net_kwargs)
        protocol = RandomWalkProtocol(learner, walk,
                                      StopRule(max_iterations=iterations))
        for row in run_rows(sim, protocol):
            if row["event"] in ROW_EVENTS and row["iteration"] in keep:
                metrics = learner.divergences(state_of(row))
                rows.append({"L": L, "run": r, "run_seed": run_seed, "event": row["event"],
                             **base_fields(row),
                             "total_local_iterations": L * row["iteration"],
                             "kl": metrics["kl"], "theta_mean": metrics["theta_mean"]})
    frame = pd.DataFrame.from_records(rows)
    order = ["L", "run", "run_seed", "iteration", "total_local_iterations"]
    return frame[order + [c for c in frame.columns if c not in order]]
