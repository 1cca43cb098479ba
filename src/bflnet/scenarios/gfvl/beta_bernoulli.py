"""Scenario ``gfvl-beta-bernoulli`` (G-FVL paper, Fig. 3): conjugate G-FVL over a random
walk, KL to the exact posterior against iterations, seconds and bits, per topology.

K agents (default 10) hold ``points_per_agent`` (100) Bernoulli(``theta_true``) points each;
the prior is Beta(2, 2), α = 1. The paper does not give θ; ``theta_true = 0.3`` is ours.
``data=agent-skewed`` gives agent i = 1..K its own law instead: per point
P(z = 1) = t ~ Beta(K + 1 − i, i) (the beta-Bernoulli analogue of the original
experiments' non-i.i.d. agents; marginally Bern((K + 1 − i)/(K + 1))); G-FVL stays exact.
G-FVL is exact here (eqs. 13-14): an agent's first visit adds its statistics, every
revisit is a no-op, so ``kl`` falls to ~0 at the slot that schedules the last unvisited
agent (the cover slot). The token (η, 2 float64 = 128 bits) moves by the
Metropolis-Hastings rule (eq. 5) over the D2D links of the scenario's channel (default
1 Mbit/s, 5 ms, lossless; 1 ms of compute per visit).

Runs: ``runs`` per topology in ``graphs``. Run ``r`` uses the same seed, hence the same
data and walk streams, on every topology (common random numbers), so ``graphs=star``
alone gives exactly the star rows of the default call.

One row per (graph, run, iteration), iteration 0 being the prior (``init``):
``graph``, ``run``, ``run_seed``, ``iteration``, ``time_s``, ``cum_bits``,
``cum_bits_delivered``, ``node`` (the agent scheduled at that slot; the start node at 0),
``kl`` = KL(q ‖ exact posterior), ``theta_mean`` = E_q[θ], and
``theory_cover_iterations`` = the expected 1-based cover slot of this walk and graph (exact
Markov chain, ``exact_cover_time + 1``, for K <= 12; ``(K-1) H_{K-1} + 1`` on a complete
graph; else NaN): the mean slot at which ``kl`` reaches ~0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
from bflnet.runs.lists import comma_list
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
    ROW_EVENTS,
    GFVLSettings,
    base_fields,
    progress_runs,
    run_rows,
    with_run_id,
)
from bflnet.scenarios.shared.network_settings import GRAPHS
from bflnet.scenarios.shared.seeds import run_seeds

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from bflnet.protocols.graphs.walks import Walk

NAME = "gfvl-beta-bernoulli"
#: Largest K for the exact cover-time column (2^K visited sets).
EXACT_MAX_K = 12
#: KL values are drawn no lower than this on a log axis (an exact posterior gives ~1e-16).
KL_FLOOR = 1e-16


@dataclass(frozen=True)
class GFVLBetaBernoulliConfig(GFVLSettings):
    """Parameters of ``gfvl-beta-bernoulli``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"iterations": "rounds"}

    SCENARIO: ClassVar[str] = NAME
    #: Comma lists that emulate a sweep axis (``bflnet describe`` explains them).
    LIST_AXES: ClassVar[dict[str, str]] = {
        "graphs": "one curve per topology, told apart by the column graph; every topology "
        "uses the same run seeds. `bflnet sweep gfvl-beta-bernoulli --grid graphs=star,ring` "
        "runs each topology as its own sweep point instead (a one-value list each)"}
    DECIDED_ELSEWHERE: ClassVar[dict[str, str]] = {
        "graph": "the graphs parameter (a comma list) decides"}

    graph: str = param("complete", "not used here (an error if set): the topologies are set "
                       "by graphs", choices=GRAPHS)
    graphs: str = param("star,ring,complete",
                        "comma list of topologies, one curve each (paper: star, ring, complete)")
    rounds: int = param(60, "random-walk iterations per run", ge=1, le=10**8)
    theta_true: float = param(0.3, "Bernoulli parameter of every agent's data (the paper "
                              "does not give it)", ge=0, le=1)
    stop_kl: float = param(0.0, "end a run early once kl <= stop_kl (0: never)", ge=0, le=1e6)

    def __post_init__(self) -> None:
        validate(self)
        comma_list("graphs", self.graphs, GRAPHS)
        self.check_network_fields()
        self.check_data()

    def graphs_in_use(self) -> tuple[str, ...]:
        return tuple(comma_list("graphs", self.graphs, GRAPHS))

    def footprint(self) -> Footprint:
        """Data, rows (one per iteration of every topology's runs) and seeds; the exact
        cover-time theory is computed for K <= 12 only."""
        jobs = len(self.graphs_in_use()) * float(self.runs)
        rows = self.rounds + 1.0
        return self.gfvl_footprint(self.runs, rows, jobs * rows)


def theory_cover_slot(walk: Walk) -> float:
    """Expected 1-based slot at which every agent has been scheduled (NaN if K is large)."""
    from bflnet.analysis.cover_time import complete_graph_cover_time, exact_cover_time
    K = walk.K
    complete = walk.graph.number_of_edges() == K * (K - 1) // 2
    if K <= EXACT_MAX_K:
        return exact_cover_time(walk.transition_matrix()) + 1.0
    return complete_graph_cover_time(K) + 1.0 if complete else math.nan


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 3: median KL over runs against iterations, one line per graph, 75 % band."""
    from bflnet.analysis.plots import plot_metric

    rows = with_run_id(frame, ["graph"]).assign(kl=frame["kl"].clip(lower=KL_FLOOR))
    fig = plot_metric(rows, "iteration", "kl", hue="graph", band=0.75, logy=True)
    ax = fig.axes[0]
    ax.set(ylabel=f"KL(q ‖ posterior), floored at {KL_FLOOR:g}",
           title="G-FVL, beta-Bernoulli (Fig. 3)")
    return fig


SCHEMA = Schema.of(
    col("graph", "label", "topology of this run (graphs)"),
    RUN, RUN_SEED,
    EVENT.means("init (the prior, iteration 0) or iteration (one token visit)"),
    ITERATION, TIME_S, CUM_BITS, CUM_BITS_DELIVERED,
    NODE.means("agent scheduled at this slot (the start node at iteration 0)"),
    KL, THETA_MEAN,
    col("theory_cover_iterations", "count", "expected 1-based cover slot of this walk and "
        "graph, where kl reaches ~0 (NaN where not computed)"),
)


@register(NAME, GFVLBetaBernoulliConfig,
          "G-FVL, beta-Bernoulli (paper Fig. 3): KL to the exact posterior per iteration, "
          "second and bit, per topology.", plot=default_plot, columns=SCHEMA)
def run(config: GFVLBetaBernoulliConfig, *, seed: int = 0,
        progress: bool = False) -> pd.DataFrame:
    import pandas as pd

    from bflnet.learners.conjugate.gfvl import GFVL
    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.protocols.graphs.walks import make_walk
    from bflnet.protocols.random_walk import RandomWalkProtocol
    from bflnet.simulator.rng import RngStreams
    from bflnet.simulator.simulation import Simulation
    names = comma_list("graphs", config.graphs, GRAPHS)
    setups = []
    for name in names:
        graph = config.run_graph(seed, name)
        require_connected(graph)
        walk = make_walk(config.walk, graph)
        setups.append((name, graph, walk, config.topology_settings(name).network_kwargs(graph),
                       theory_cover_slot(walk)))
    stop = StopRule(max_iterations=config.rounds,
                    until=(lambda m: m["kl"] <= config.stop_kl) if config.stop_kl > 0 else None)
    seeds = run_seeds(seed, config.runs)
    jobs = [(setup, r, s) for setup in setups for r, s in enumerate(seeds)]
    rows: list[dict[str, Any]] = []
    for (name, graph, walk, net_kwargs, theory), r, run_seed in progress_runs(
            jobs, progress, NAME):
        data = config.bernoulli_data(graph.number_of_nodes(), RngStreams(run_seed).numpy("data"))
        learner = GFVL.beta_bernoulli(data, a=config.prior_a, b=config.prior_b,
                                      alpha=config.alpha)
        sim = Simulation(run_seed, name=f"{NAME} {name} run {r}")
        sim.build_network(graph, **net_kwargs)
        for row in run_rows(sim, RandomWalkProtocol(learner, walk, stop)):
            if row["event"] in ROW_EVENTS:
                rows.append({"graph": name, "run": r, "run_seed": run_seed,
                             "event": row["event"], **base_fields(row),
                             "kl": row["kl"], "theta_mean": row["theta_mean"],
                             "theory_cover_iterations": theory})
    return pd.DataFrame.from_records(rows)
