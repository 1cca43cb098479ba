"""Scenario ``cover-time``: how long the token takes to visit every agent, against theory.

Each run is a full simulation through :class:`RandomWalkProtocol` on the scenario's graph and
channel, with a trivial learner whose token is a float64 vector of ``payload_params``
entries (2 = the beta posterior's natural parameter). A run stops at the slot at which the
last unvisited agent is scheduled. One row per run:

- ``cover_iterations`` — slots after the first until every agent has been scheduled at least
  once (the cover slot minus one; see :mod:`bflnet.analysis.cover_time`);
- ``moves`` — token hand-overs up to then (fewer than ``cover_iterations`` when the walk
  stays put, e.g. a rejected Metropolis-Hastings proposal);
- ``cover_time_s``, ``cover_bits`` — simulated time and on-air bits (retransmissions
  included) when the cover slot's computation ends, so with a lossless fixed channel,
  ``cover_time_s = (cover_iterations + 1) · compute + moves · (latency + bits / rate)``
  (one packet per hand-over) and ``cover_bits = moves · 64 · payload_params``;
- theory for the same walk and graph, identical on every row: ``exact_cover_iterations``
  (exact Markov-chain value for a uniform start when ``K <= 12``, else NaN),
  ``closed_form_cover_iterations`` (``(K-1) H_{K-1}`` when the graph is complete, else NaN),
  ``matthews_lower`` and ``matthews_upper`` (NaN above ``K = 2000``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT64, ROW_BYTES, Footprint, count
from bflnet.runs.schema import RUN, RUN_SEED, Schema, col
from bflnet.scenarios.shared.network_settings import NetworkSettings
from bflnet.scenarios.shared.seeds import run_seeds
from bflnet.simulator.compute import Work

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from bflnet.learners.base import Update

NAME = "cover-time"
#: Largest K for which ``exact_cover_iterations`` is computed (2^K visited sets).
EXACT_MAX_K = 12
#: Largest K for which the Matthews bounds are computed (one K x K inversion).
MATTHEWS_MAX_K = 2000

_ONE_STEP = Work(steps=1)


@dataclass(frozen=True)
class CoverTimeConfig(NetworkSettings):
    """Parameters of ``cover-time``."""

    SCENARIO: ClassVar[str] = NAME

    runs: int = param(200, "number of independent runs (one row each)", ge=1, le=10**6)
    walk: str = param("metropolis-hastings", "next-node rule of the token",
                      choices=("metropolis-hastings", "uniform-neighbour"))
    payload_params: int = param(2, "float64 parameters carried by the token", ge=0,
                                le=10**8)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()

    def footprint(self) -> Footprint:
        """The graph and links, the walk's dense K x K transition matrix (and Matthews'
        inversion up to K = 2000), a run's recorded rows until cover, the token, and the
        runs' seeds and rows."""
        size = self.graph_size()
        k = size.nodes
        matthews = k <= MATTHEWS_MAX_K
        return super().footprint().add(
            f"dense {count(k)} x {count(k)} transition matrix", size.fields,
            bytes=(4 if matthews else 2) * FLOAT64 * k * k, work=k * k,
            flops=10 * k ** 3 if matthews else 0.0).add(
            f"one run's {size.cover:.3g} rows until cover", size.fields,
            bytes=ROW_BYTES * size.cover).add(
            f"token of {self.payload_params} float64", ("payload_params",),
            bytes=4 * FLOAT64 * self.payload_params, work=self.payload_params).add(
            f"{self.runs} runs' seeds and rows", ("runs",), bytes=ROW_BYTES * self.runs,
            work=10 * self.runs)


class Carrier(GlobalStateLearner):
    """A learner that only carries ``size`` float64 zeros: one local step per visit."""

    uses_agent_streams = False
    #: A token with nothing to combine: only its own merge, one update at a time.
    combines = Combines.SEQUENTIAL

    def __init__(self, size: int) -> None:
        self.size = size

    def init(self, rng: np.random.Generator) -> np.ndarray:
        import numpy as np
        return np.zeros(self.size)

    def local_update(self, agent: Any, state: np.ndarray, agent_state: Any,
                     rng: np.random.Generator) -> Update:
        return Update(state, _ONE_STEP, agent)

    def merge(self, state: np.ndarray, updates: Sequence[Update]) -> np.ndarray:
        return state


def _theory(P: np.ndarray, graph: nx.Graph) -> dict[str, float]:
    from bflnet.analysis.cover_time import (
        complete_graph_cover_time,
        exact_cover_time,
        matthews_bounds,
    )
    K = graph.number_of_nodes()
    complete = graph.number_of_edges() == K * (K - 1) // 2
    lower, upper = matthews_bounds(P) if K <= MATTHEWS_MAX_K else (math.nan, math.nan)
    return {
        "exact_cover_iterations": exact_cover_time(P) if K <= EXACT_MAX_K else math.nan,
        "closed_form_cover_iterations": complete_graph_cover_time(K) if complete else math.nan,
        "matthews_lower": lower,
        "matthews_upper": upper,
    }


SCHEMA = Schema.of(
    RUN, RUN_SEED,
    col("event", "label", "run: one row per run"),
    col("K", "count", "number of agents"),
    col("start_node", "index", "the walk's first node"),
    col("cover_iterations", "count", "slots after the first until every agent has been "
        "scheduled"),
    col("moves", "count", "token hand-overs until then"),
    col("cover_time_s", "s", "simulated time when the cover slot's computation ends"),
    col("cover_bits", "bits", "bits on the air until then, retransmissions included"),
    col("exact_cover_iterations", "count", "exact Markov-chain expectation, uniform start "
        "(NaN for K > 12)"),
    col("closed_form_cover_iterations", "count", "(K-1) H_(K-1) on a complete graph, else "
        "NaN"),
    col("matthews_lower", "count", "Matthews' lower bound on the expected cover time"),
    col("matthews_upper", "count", "Matthews' upper bound on the expected cover time"),
)


@register(NAME, CoverTimeConfig,
          "Random-walk cover time (slots, seconds, bits) per run, beside the exact "
          "Markov-chain value, the complete-graph closed form and Matthews' bounds.",
          columns=SCHEMA)
def run(config: CoverTimeConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    import pandas as pd

    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.protocols.graphs.walks import make_walk
    from bflnet.protocols.progress import runs_bar
    from bflnet.protocols.random_walk import RandomWalkProtocol
    from bflnet.simulator.simulation import Simulation
    graph = config.run_graph(seed)
    require_connected(graph)
    K = graph.number_of_nodes()
    walk = make_walk(config.walk, graph)
    theory = _theory(walk.transition_matrix(), graph)
    net_kwargs = config.network_kwargs(graph)  # channel templates: each network copies them

    stop = StopRule(cover=True)
    rows: list[dict[str, Any]] = []
    seeds = run_seeds(seed, config.runs)
    bar = runs_bar(seeds, progress, NAME)
    network = None
    for r, run_seed in enumerate(bar):
        sim = Simulation(run_seed, name=f"{NAME} run {r}")
        if network is None:  # built once, rebound to each run's clock, streams and record
            network = sim.build_network(graph, **net_kwargs)
        else:
            sim.use_network(network)
        protocol = RandomWalkProtocol(Carrier(config.payload_params), walk, stop)
        sim.run_outcome(protocol)
        last = sim.recorder.last_row()  # the protocol stops right after the cover slot's row
        visits = protocol.visits
        assert last["event"] == "iteration" and last["iteration"] == len(visits)
        rows.append({
            "run": r,
            "run_seed": run_seed,
            "event": "run",
            "K": K,
            "start_node": int(visits[0]),
            "cover_iterations": len(visits) - 1,
            "moves": sum(a != b for a, b in itertools.pairwise(visits)),
            "cover_time_s": float(last["time_s"]),
            "cover_bits": int(last["cum_bits"]),
            **theory,
        })
    return pd.DataFrame.from_records(rows)
