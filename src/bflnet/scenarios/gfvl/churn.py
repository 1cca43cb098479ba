"""Scenario ``churn-gfvl``: conjugate G-FVL (beta-Bernoulli) carried by a random walk over a
graph whose devices go down and come back; KL to the exact posterior against simulated
time, one curve per downtime fraction.

Every agent alternates exponential up and down times (:class:`bflnet.faults.availability.
OnOff`, mean down time ``mean_down_s``, long-run down fraction from ``downtimes``, started
in its stationary state). The walk goes on over the live nodes; a token holder that goes
down loses its update, and the node that handed it the token regenerates it after
``token_timeout_s`` (:class:`bflnet.protocols.random_walk.RandomWalkProtocol`). With
``keep_state=true`` (default) a device keeps its G-FVL factor ``η_k`` through a downtime,
and the run reaches the exact posterior once every agent has completed a visit, whatever
the downtime; with ``keep_state=false`` a device that goes down forgets ``η_k`` and adds
its data again at its next visit (counted twice: the KL no longer reaches 0).

Run ``r`` uses the same seed for every downtime fraction (common random numbers: same data).

Rows: one per (downtime, run, iteration) (``event`` ``init``/``iteration``): ``downtime``,
``run``, ``run_seed``, ``iteration``, ``time_s``, ``cum_bits``, ``cum_bits_delivered``,
``node``, ``kl``, ``theta_mean``, ``covered`` (every agent has completed a visit); and one
per fault (``event = fault``): ``kind`` (``node_down``/``node_up``, ``token_lost`` with
``lost_steps``, ``token_regenerated``, ``lost_in_outage``/``cut_mid_air`` for tokens that
met an outage), ``node``, ``peer``, ``lost``. ``bflnet plot --x time_s`` marks them.
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
    fault_columns,
)
from bflnet.scenarios.gfvl.common import GFVLSettings, base_fields, progress_runs, run_rows
from bflnet.scenarios.shared.network_settings import GRAPHS
from bflnet.scenarios.shared.seeds import run_seeds

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "churn-gfvl"
KL_FLOOR = 1e-16
FAULT_FIELDS = ("kind", "peer", "lost", "lost_steps")


def downtime_list(text: str) -> list[float]:
    """Distinct fractions in ``[0, 1)`` from a comma list; one-line errors."""
    out = []
    for item in comma_list("downtimes", text):
        try:
            value = float(item)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 <= value < 1):
            raise ValueError(f"downtimes: each value must be a fraction in [0, 1), got {item!r}")
        out.append(value)
    if len(set(out)) != len(out):
        raise ValueError(f"downtimes: values must not repeat, got {text!r}")
    return out


@dataclass(frozen=True)
class ChurnGFVLConfig(GFVLSettings):
    """Parameters of ``churn-gfvl``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"iterations": "rounds"}

    SCENARIO: ClassVar[str] = NAME

    graph: str = param("ring", "topology of the D2D graph", choices=GRAPHS)
    rounds: int = param(300, "random-walk iterations per run", ge=1, le=10**7)
    theta_true: float = param(0.3, "Bernoulli parameter of every agent's data", ge=0, le=1)
    downtimes: str = param("0,0.1,0.2,0.4", "comma list of long-run down fractions in [0, 1), "
                           "one curve each (0: no churn)")
    mean_down_s: float = param(0.05, "mean length of a downtime in seconds", gt=0, le=1e9)
    keep_state: bool = param(True, "a device keeps its G-FVL factor through a downtime "
                             "(false: it forgets it and adds its data again)")
    token_timeout_s: float = param(0.05, "seconds after a holder's crash before the token "
                                   "is regenerated", ge=0, le=1e9)

    def __post_init__(self) -> None:
        validate(self)
        downtime_list(self.downtimes)
        self.check_network_fields()
        self.check_data()

    def footprint(self) -> Footprint:
        """Data, a run's rows and every (downtime, run)'s kept rows (one per iteration;
        the fault rows at most double them)."""
        rows = self.rounds + 1.0
        jobs = len(downtime_list(self.downtimes)) * float(self.runs)
        return self.gfvl_footprint(self.runs, 2 * rows, 2 * jobs * rows)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Median KL over runs against simulated time, one line per downtime fraction, with
    the fault rows marked under the axis."""
    import pandas as pd

    from bflnet.analysis.plots import plot_metric
    from bflnet.scenarios.gfvl.common import with_run_id

    rows = frame[frame["event"].isin(("init", "iteration"))]
    rows = with_run_id(rows, ["downtime"]).assign(kl=rows["kl"].clip(lower=KL_FLOOR))
    first = frame[(frame["run"] == frame["run"].min()) & (frame["event"] == "fault")]
    faults = first[first["downtime"] == first["downtime"].max()]  # in a strip under the axes
    fig = plot_metric(pd.concat([rows, faults]), "time_s", "kl", hue="downtime", band=0.5,
                      logy=True, faults=True)
    ax = fig.axes[0]
    ax.set(ylabel=f"KL(q ‖ posterior), floored at {KL_FLOOR:g}",
           title="G-FVL under node churn")
    return fig


SCHEMA = Schema.of(
    col("downtime", "fraction", "long-run fraction of time a device is down (downtimes)"),
    RUN, RUN_SEED, ITERATION, TIME_S, CUM_BITS, CUM_BITS_DELIVERED,
    NODE.means("agent scheduled at this slot; fault rows: the node concerned"),
    EVENT.means("init, iteration (one token visit) or fault"),
    KL.on("init", "iteration"), THETA_MEAN.on("init", "iteration"),
    col("covered", "flag", "every agent has completed a visit", "init", "iteration"),
    *fault_columns("node_down", "node_up", "token_lost", "token_regenerated",
                   "lost_in_outage", "cut_mid_air"),
)


@register(NAME, ChurnGFVLConfig,
          "G-FVL over a random walk on devices that go down and come back: KL to the exact "
          "posterior against time, per downtime fraction, with the fault rows.",
          plot=default_plot, columns=SCHEMA)
def run(config: ChurnGFVLConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    import pandas as pd

    from bflnet.faults.availability import OnOff
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
    stop = StopRule(max_iterations=config.rounds)
    jobs = [(d, r, s) for d in downtime_list(config.downtimes)
            for r, s in enumerate(run_seeds(seed, config.runs))]
    rows: list[dict[str, Any]] = []
    for downtime, r, run_seed in progress_runs(jobs, progress, NAME):
        data = config.bernoulli_data(graph.number_of_nodes(), RngStreams(run_seed).numpy("data"))
        learner = GFVL.beta_bernoulli(data, a=config.prior_a, b=config.prior_b,
                                      alpha=config.alpha)
        outages = (None if downtime == 0 else
                   OnOff.with_downtime(downtime, config.mean_down_s, stationary=True))
        sim = Simulation(run_seed, name=f"{NAME} downtime {downtime:g} run {r}")
        sim.build_network(graph, node_outages=outages, keep_state=config.keep_state,
                          **net_kwargs)
        protocol = RandomWalkProtocol(learner, walk, stop,
                                      token_timeout_s=config.token_timeout_s)
        seen: set[Any] = set()
        for row in run_rows(sim, protocol):
            head = {"downtime": downtime, "run": r, "run_seed": run_seed, **base_fields(row)}
            if row["event"] in ("init", "iteration"):
                if row["event"] == "iteration":
                    seen.add(row["node"])
                rows.append({**head, "event": row["event"], "kl": row["kl"],
                             "theta_mean": row["theta_mean"],
                             "covered": len(seen) == graph.number_of_nodes()})
            elif row["event"] == "fault":
                rows.append({**head, "event": "fault",
                             **{k: row.get(k) for k in FAULT_FIELDS}})
    return pd.DataFrame.from_records(rows)
