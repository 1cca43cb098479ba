"""What the G-FVL scenarios share: the common config fields, per-run seeds, a cheap state
probe, comma-list parsing, running a protocol without building a DataFrame, and plotting
helpers.

Conventions of the four G-FVL scenarios (``gfvl-beta-bernoulli``, ``gfvl-beta-exponential``,
``gfvl-unlearning``, ``unlearning-latency``):

- A scenario call runs ``runs`` independent simulations. Run ``r`` has its own root seed
  ``run_seed`` (:func:`bflnet.scenarios.studies.cover_time.run_seeds`: a child of
  ``SeedSequence(seed)``, independent of the number of runs); its data come from the
  run's ``data`` stream, its walk from the simulation's own streams.
- Rows carry ``run`` (0-based index of the run inside the call) and ``run_seed``, never
  ``seed`` or ``run_id``: those are the columns :mod:`bflnet.runs.sweep` adds.
  :func:`with_run_id` makes the ``run_id`` that :func:`bflnet.analysis.plots.plot_metric`
  groups by.
- ``time_s`` and ``cum_bits`` are each run's own simulated clock and on-air bits.
- ``data``: ``"iid"`` (default: every agent's points from one law with ``theta_true``) or
  ``"agent-skewed"`` (the original experiments' non-i.i.d. agents: agent i = 1..K draws,
  per point, its own parameter t ~ Beta(K + 1 − i, i), then the point: exponential with
  mean t, or Bernoulli with P(1) = t; see :mod:`bflnet.data.synthetic`); ``theta_true``
  is then not used (an error if set).
- The runs record the state η itself (``GFVL(metrics="state")``, cheap); the KL divergences
  are computed afterwards, on the rows that are kept (``learner.divergences``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bflnet.protocols.graphs.walk_names import WALK_NAMES
from bflnet.runs.config import param
from bflnet.runs.lists import int_list
from bflnet.runs.resources import FLOAT64, ROW_BYTES, Footprint
from bflnet.scenarios.shared.network_settings import GRAPHS, NetworkSettings

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from bflnet.runs.states.schema import Fields, StateSpec
    from bflnet.simulator.simulation import Simulation

#: Row events kept in the G-FVL frames (token drops only show in time and bits).
ROW_EVENTS = ("init", "iteration")
#: Data laws: one law for every agent, or agent i's own law (t ~ Beta(K + 1 − i, i)).
DATA = ("iid", "agent-skewed")
#: Most agents of a G-FVL scenario (each holds its data and factor; the walks' theory
#: builds dense K x K matrices).
MAX_AGENTS = 10**6
#: Most Monte Carlo samples S per natural gradient (the learner's own bound).
MAX_SAMPLES = 10**6
#: Largest mean of exponential data the natural-gradient runs were seen to honour (at 1e6
#: a run fails with non-finite updates).
MAX_MEAN = 1e3
#: Largest Beta prior parameter: the Beta function of larger ones underflows.
MAX_PRIOR = 1e6
#: REINFORCE sampling units of natural-gradient G-FVL (``GFVL(reinforce_draws=...)``).
REINFORCE_DRAWS = ("per-agent", "per-point")


@dataclass(frozen=True)
class GFVLSettings(NetworkSettings):
    """Network settings with the G-FVL experiments' defaults (K = 10 agents, complete
    graph, 1 Mbit/s and 5 ms fixed links, 1 ms per local step) plus the model's data and
    prior."""

    graph: str = param("complete", "topology of the D2D graph", choices=GRAPHS)
    K: int = param(10, "number of agents (graph=file: the file decides, an error if set)", ge=2,
                   le=MAX_AGENTS)
    compute_s_per_step: float = param(1e-3, "simulated seconds per local step", ge=0, le=1e6)
    runs: int = param(20, "independent runs (own seed, data and walk each)", ge=1, le=10**6)
    walk: str = param("metropolis-hastings", "next-node rule of the token (paper: eq. 5)",
                      choices=WALK_NAMES)
    points_per_agent: int = param(100, "data points per agent (paper: 100)", ge=1, le=10**8)
    prior_a: float = param(2.0, "Beta prior a (paper: 2)", gt=0, le=MAX_PRIOR)
    prior_b: float = param(2.0, "Beta prior b (paper: 2)", gt=0, le=MAX_PRIOR)
    alpha: float = param(1.0, "temperature alpha (paper: 1)", gt=0, le=1e6)
    data: str = param("iid", "data law: 'iid' (every agent's points with theta_true) or "
                      "'agent-skewed' (agent i = 1..K: per point t ~ Beta(K+1-i, i), the "
                      "original experiments')", choices=DATA)

    def gfvl_footprint(self, runs: float, rows_per_run: float, kept_rows: float,
                       draws: float = 0.0,
                       row_fields: tuple[str, ...] = ("rounds",)) -> Footprint:
        """The network's footprint plus a run's data (``points_per_agent`` float64 per
        agent), the Monte Carlo ``draws`` of one natural-gradient step, a run's recorded
        rows (``rows_per_run``), the rows kept over the ``runs`` runs (``kept_rows``) and
        the runs' seeds."""
        k = self.agents()
        points = k * self.points_per_agent
        fp = super().footprint().add(
            f"{points:.3g} data points a run", ("K", "points_per_agent"),
            bytes=4 * FLOAT64 * points, work=points)
        if draws:
            fields = ("samples", "points_per_agent", "reinforce_draws")
            fp = fp.add(f"{draws:.3g} Monte Carlo draws a step", fields,
                        bytes=4 * FLOAT64 * draws, work=draws)
        return fp.add(f"{rows_per_run:.3g} recorded rows a run", row_fields,
                      bytes=ROW_BYTES * rows_per_run).add(
            f"{kept_rows:.3g} rows kept", ("runs", *row_fields),
            bytes=ROW_BYTES * kept_rows).add(
            f"{runs:.3g} runs' seeds", ("runs",), bytes=200 * runs, work=10 * runs)

    def check_data(self) -> None:
        """``theta_true`` set with ``data=agent-skewed`` is an error (it is not used)."""
        own = {f.name: f.default for f in dataclasses.fields(self)}
        if self.data == "agent-skewed" and getattr(self, "theta_true", None) != own.get(
                "theta_true"):
            raise ValueError("theta_true: not used with data=agent-skewed; agent i's "
                             "parameters t ~ Beta(K + 1 - i, i) decide")

    def exponential_data(self, K: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
        """The agents' exponential data under ``data`` (``theta_true``: the iid mean)."""
        from bflnet.data.synthetic import agent_skewed_exponential_agents, exponential_agents
        if self.data == "agent-skewed":
            return agent_skewed_exponential_agents(K, self.points_per_agent, rng)
        theta = self.theta_true  # type: ignore[attr-defined]
        return exponential_agents(K, self.points_per_agent, theta, rng)

    def bernoulli_data(self, K: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
        """The agents' Bernoulli data under ``data`` (``theta_true``: the iid P(1))."""
        from bflnet.data.synthetic import agent_skewed_bernoulli_agents, bernoulli_agents
        if self.data == "agent-skewed":
            return agent_skewed_bernoulli_agents(K, self.points_per_agent, rng)
        theta = self.theta_true  # type: ignore[attr-defined]
        return bernoulli_agents(K, self.points_per_agent, theta, rng)


def parse_baseline(text: str) -> float | str:
    """The REINFORCE baseline ``c`` from ``"loo"`` or a number (``"0"``: the paper)."""
    import numpy as np
    if str(text).strip() == "loo":
        return "loo"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise ValueError(f"baseline: must be 'loo' or a finite number (0: the paper's c), "
                         f"got {text!r}")
    return value


def forget_agents(text: str, K: int | None) -> list[int]:
    """Agent ids (0-based) from ``"last"`` (agent ``K - 1``, the paper's agent ``K``) or a
    comma list. ``K=None`` (graph from a file, K known only at run time) checks the syntax
    only and gives ``[]`` for ``"last"``."""
    if str(text).strip() == "last":
        return [] if K is None else [K - 1]
    agents = int_list("forget", text, 0)
    if K is not None:
        bad = [a for a in agents if a >= K]
        if bad:
            raise ValueError(f"forget: agent ids must be in 0..{K - 1}, got {bad[0]}")
    return agents


def child_seed(seed: int, name: str) -> int:
    """A root seed for a second simulation of the same run (e.g. retraining)."""
    import numpy as np

    from bflnet.simulator.rng import RngStreams
    state = RngStreams(seed).seed_sequence(name).generate_state(1, dtype=np.uint64)[0]
    return int(state >> np.uint64(1))


def walk_state_spec(runs: int, graph: nx.Graph, iteration: int, learner: Any,
                    extra: Callable[[Fields], None]) -> StateSpec:
    """What the saved states of a G-FVL walk must be (:mod:`bflnet.runs.states.schema`):
    ``runs`` runs on ``graph`` (its links both ways along every edge), saved at
    ``iteration``, with ``learner``'s global and agents' states; ``extra`` checks a run's
    extra values."""
    from bflnet.runs.states.schema import StateSpec

    links = frozenset(pair for u, v in graph.edges for pair in ((u, v), (v, u)))
    return StateSpec(runs=runs, nodes=graph.number_of_nodes(), iteration=iteration,
                     state=learner.init(None), agent=lambda k: learner.init_agent(k, None),
                     extra=extra, links=links)


def run_rows(sim: Simulation, protocol: Any) -> list[dict[str, Any]]:
    """Run ``protocol`` to its stopping rule and return the recorder's rows (no DataFrame:
    thousands of short runs would spend most of their time building frames)."""
    sim.run_outcome(protocol)
    return sim.recorder.rows


def state_of(row: dict[str, Any], dim: int = 2) -> np.ndarray:
    """The state η recorded in ``row`` by a :class:`GFVL` with ``metrics="state"``."""
    import numpy as np
    return np.array([row[f"eta_{j}"] for j in range(dim)])


def crossings(iterations: int, per_iteration: int, every: int) -> list[int]:
    """Iterations ``i`` in ``1..iterations`` at which ``per_iteration · i`` passes a multiple
    of ``every``, plus the last one: an evaluation grid that is regular in total work."""
    picks = [i for i in range(1, iterations + 1)
             if (i * per_iteration) // every > ((i - 1) * per_iteration) // every]
    if not picks or picks[-1] != iterations:
        picks.append(iterations)
    return picks


def base_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A recorder row's time, iteration, bits and node."""
    return {"iteration": row["iteration"], "time_s": row["time_s"],
            "cum_bits": row["cum_bits"], "cum_bits_delivered": row["cum_bits_delivered"],
            "node": row.get("node")}


def with_run_id(frame: pd.DataFrame, keys: Iterable[str]) -> pd.DataFrame:
    """``frame`` with a ``run_id`` column that tells the runs of one curve apart (the
    scenario's ``run`` and ``keys``, and a sweep's own ``run_id`` if present), as
    :func:`bflnet.analysis.plots.plot_metric` groups runs by ``run_id``."""
    parts = [frame[k].astype(str) for k in ("run_id", *keys, "run") if k in frame.columns]
    run_id = parts[0]
    for p in parts[1:]:
        run_id = run_id + "/" + p
    return frame.assign(run_id=run_id)


def progress_runs(items: Sequence[Any], progress: bool, desc: str) -> Any:
    """A progress bar over runs (drawn at once); the items themselves without one."""
    if not progress:
        return items
    from bflnet.protocols.progress import runs_bar

    return runs_bar(items, progress, desc)
