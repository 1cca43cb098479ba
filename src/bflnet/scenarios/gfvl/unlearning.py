"""Scenario ``gfvl-unlearning`` (G-FVL paper, Fig. 5): forget one agent's data by exact
subtraction (Sec. IV) versus retraining from scratch without it.

Model, data and learner as in ``gfvl-beta-exponential`` (K = 10, complete graph, Beta(2, 2)
prior, exponential data with mean ``theta_true``, ρ = 5e-3, S = 30, ``local_steps`` steps
per visit). ``forget`` names the agent(s) to forget: ``"last"`` (default) is agent K − 1,
i.e. the paper's agent k = 10 in its 1-based numbering is our agent id 9.
``forget_theta`` optionally gives the forgotten agents' data another mean (default: the
same as everyone's, as in the paper; then forgetting moves the posterior only a little).

Per run, two simulations over the same channel and the same data:

- ``method="unlearning"``: G-FVL learns for ``learn_rounds`` iterations; right after
  merge ``learn_rounds`` the forget is requested. Every agent keeps running G-FVL; the
  first time the forgotten agent is scheduled it returns −η_k (η becomes η₀ + Σ_{k'≠k}
  η_k', eq. 21) and from then on only forwards. Then ``rounds`` more iterations.
- ``method="retraining"``: G-FVL from the prior with the forgotten agents' data excluded
  (``learner.without``), for ``rounds`` iterations: with ``retrain_graph=forwarder``
  (default) they still forward the token; with ``retrain_graph=without`` the walk runs on
  the graph without them (an error if that graph is disconnected, e.g. a star's hub).

``unlearning=iterative`` (the original code) replaces the subtraction by natural-gradient
steps on the removed-likelihood free energy (:mod:`bflnet.learners.conjugate.gfvl`): the forgetting
agent runs ``unlearn_visits`` visits of ``local_steps`` steps each. Schedules:
``unlearn_schedule=hold-token`` (default; the original code) — once the token reaches the
forgetting agent it keeps it (is scheduled again, no hand-over) until its
``unlearn_visits`` visits are done, so the other agents wait; ``walk`` — the token keeps
walking and the agent unlearns one visit each time it is scheduled, the others learning
meanwhile. ``reinforce_draws`` and ``data`` as in ``gfvl-beta-exponential``.

One row per (method, run, evaluated iteration): ``method``, ``run``, ``run_seed``,
``event`` (``init`` for iteration 0, else ``iteration``), ``iteration`` (of that
simulation), ``since_request`` (iteration − learn_rounds for
unlearning, negative while learning; = iteration for retraining, which starts at the
request), ``time_s``, ``cum_bits``, ``cum_bits_delivered``, ``time_since_request_s``,
``bits_since_request`` (the same from the request on), ``node``, ``kl_retrained`` =
KL(q ‖ exact posterior without the forgotten data), ``kl`` = KL(q ‖ posterior of all data),
``theta_mean``, and for unlearning ``unlearn_pending`` (forgotten agents whose data are
still in q) and ``unlearned_at`` (the 1-based slot after the request at which the last
forgotten agent's subtraction was merged; the paper's latency, 1/K + K − 1 = 9.1 on
average here; NaN if not reached), with ``unlearned_at_time_s`` and
``unlearned_at_bits``, the simulated seconds and the bits from the request to the end of
that slot's computation (counted as ``unlearning-latency``'s ``unlearn_time_s`` and
``unlearn_bits``). Evaluated: every ``eval_every`` iterations, and every
iteration in the first 100 after the request.

**Learn once, unlearn many.** ``--save-state DIR`` also saves, per run, the unlearning
simulation as it stands at the request (global and agents' states, token position, clock,
bit counters, random streams); ``--load-state DIR`` (the saved seed and config; it may
change ``forget``, ``unlearning``, ``unlearn_visits``, ``unlearn_schedule``, ``rounds``,
``retrain_graph``, ``eval_every``) skips the learning and continues from there: its
unlearning rows from ``since_request = 0`` on, and its retraining rows, are byte-identical
to those of a run that learns with the same settings (the learning rows are not
repeated). Who is forgotten is chosen at the request: the learning does not depend on it,
unless ``forget_theta`` gives the forgotten agents' data another mean (then the data
depend on it, and a load keeps the saved ``forget``).

With ``baseline="0"`` (the paper's c = 0) the natural-gradient η_k are so noisy that
η − η_k can leave the Beta domain: the learner then stops the run with an error that says
so. The default ``"loo"`` baseline does not have this problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
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
    child_seed,
    forget_agents,
    parse_baseline,
    progress_runs,
    run_rows,
    state_of,
    walk_state_spec,
    with_run_id,
)
from bflnet.scenarios.shared.seeds import run_seeds

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from bflnet.runs.states import States
    from bflnet.runs.states.schema import Fields

NAME = "gfvl-unlearning"
UNLEARNING = ("exact", "iterative")
#: Iterative unlearning: the forgetting agent keeps the token, or the token walks on.
SCHEDULES = ("hold-token", "walk")
#: Retraining from scratch: forgotten agents forward the token, or leave the graph.
RETRAIN_GRAPHS = ("forwarder", "without")
#: Every iteration in this many after the request is evaluated (the latency is ~K).
DENSE = 100


@dataclass(frozen=True)
class GFVLUnlearningConfig(GFVLSettings):
    """Parameters of ``gfvl-unlearning``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {
        "learn_iterations": "learn_rounds", "iterations": "rounds", "local_iters": "local_steps"}

    SCENARIO: ClassVar[str] = NAME

    forget: str = param("last", "agents to forget: 'last' (agent K-1, the paper's agent "
                        "K = 10) or a comma list of 0-based ids")
    forget_theta: float | None = param(None, "mean of the forgotten agents' data (none: "
                                       "theta_true, as in the paper)", gt=0, le=MAX_MEAN)
    learn_rounds: int = param(5000, "iterations of learning before the forget request",
                                  ge=0, le=10**8)
    rounds: int = param(5000, "iterations after the request (and of retraining)", ge=1,
                            le=10**8)
    theta_true: float = param(0.5, "mean of the exponential data (the paper does not give "
                              "it)", gt=0, le=MAX_MEAN)
    baseline: str = param("loo", "REINFORCE baseline c: 'loo' (leave-one-out mean of the "
                          "other draws) or a number ('0': the paper)")
    rho: float = param(5e-3, "natural-gradient step size (paper: 5e-3)", gt=0, le=1)
    samples: int = param(30, "Monte Carlo samples S per gradient (paper: 30)", ge=2,
                         le=MAX_SAMPLES)
    local_steps: int = param(1, "local natural-gradient steps L per visit", ge=1, le=10**7)
    reinforce_draws: str = param("per-agent", "REINFORCE sampling unit: 'per-agent' (S "
                                 "draws per agent, eq. 18) or 'per-point' (S draws per data "
                                 "point, the original code)", choices=REINFORCE_DRAWS)
    unlearning: str = param("exact", "'exact' (subtract eta_k, Sec. IV) or 'iterative' "
                            "(natural-gradient steps on the removed-likelihood free energy, "
                            "the original code)", choices=UNLEARNING)
    unlearn_visits: int = param(1, "iterative: visits of the forgetting agent, each of "
                                "local_steps steps", ge=1, le=10**7)
    unlearn_schedule: str = param("hold-token", "iterative: 'hold-token' (the forgetting "
                                  "agent keeps the token until done, the original code) or "
                                  "'walk' (the token keeps walking)", choices=SCHEDULES)
    retrain_graph: str = param("forwarder", "retraining: 'forwarder' (the forgotten agents "
                               "stay in the walk, forwarding) or 'without' (the graph "
                               "without them)", choices=RETRAIN_GRAPHS)
    eval_every: int = param(50, "evaluate every this many iterations (and every iteration "
                            f"in the first {DENSE} after the request)", ge=1, le=10**9)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        forget_agents(self.forget, None if self.graph == "file" else self.K)
        parse_baseline(self.baseline)
        self.check_data()
        if self.unlearning == "exact":
            for name, default in (("unlearn_visits", 1), ("unlearn_schedule", "hold-token")):
                if getattr(self, name) != default:
                    raise ValueError(f"{name}: not used with unlearning=exact (one visit "
                                     f"subtracts eta_k); set unlearning=iterative")

    def footprint(self) -> Footprint:
        """Data and Monte Carlo draws; a run's rows (learning, then unlearning, then
        retraining) and the evaluated rows kept over the runs."""
        last = self.learn_rounds + self.rounds + 1.0
        kept = last / self.eval_every + 2.0 * DENSE + self.rounds / self.eval_every
        draws = self.samples * (self.points_per_agent if self.reinforce_draws == "per-point"
                                else 1)
        return self.gfvl_footprint(self.runs, last, float(self.runs) * kept, draws=draws,
                                   row_fields=("learn_rounds", "rounds",
                                               "eval_every"))


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 5: median KL to the retrained posterior against iterations since the request
    (log axis, from 1), unlearning versus retraining, 75 % band."""
    from bflnet.analysis.plots import plot_metric

    rows = with_run_id(frame[frame["since_request"] >= 1], ["method"])
    fig = plot_metric(rows, "since_request", "kl_retrained", hue="method", band=0.75,
                      logx=True, logy=True)
    fig.axes[0].set(xlabel="iterations since the forget request",
                    ylabel="KL(q ‖ posterior without the forgotten data)",
                    title="G-FVL unlearning vs retraining (Fig. 5)")
    return fig


def _evaluated(last: int, request: int, every: int) -> set[int]:
    """Iterations to evaluate: every ``every``, each of the ``DENSE`` after ``request``,
    and the last."""
    picks = set(range(0, last + 1, every)) | {request, last}
    picks |= set(range(request + 1, min(request + DENSE, last) + 1))
    picks |= set(range(request, last + 1, every))
    return picks


def _data(config: GFVLUnlearningConfig, K: int, forget: list[int],
          rng: np.random.Generator) -> dict[int, np.ndarray]:
    data = config.exponential_data(K, rng)
    if config.forget_theta is not None:
        for k in forget:
            data[k] = rng.exponential(config.forget_theta, size=config.points_per_agent)
    return data


SCHEMA = Schema.of(
    col("method", "label", "unlearning (learn, then forget) or retraining (from scratch "
        "without the forgotten data)"),
    RUN, RUN_SEED, ITERATION,
    col("since_request", "count", "iterations since the forget request (negative while "
        "learning)"),
    EVENT.means("init (iteration 0) or iteration (one token visit)"),
    TIME_S, CUM_BITS, CUM_BITS_DELIVERED,
    NODE.means("agent scheduled at this slot"),
    col("time_since_request_s", "s", "simulated seconds since the request"),
    col("bits_since_request", "bits", "bits on the air since the request"),
    col("kl_retrained", "nats", "KL(q || exact posterior without the forgotten data)"),
    KL, THETA_MEAN,
    col("unlearn_pending", "count", "forgotten agents whose data are still in q (NaN on "
        "retraining rows)"),
    col("unlearned_at", "count", "1-based slot after the request at which the last "
        "forgotten agent's subtraction was merged (NaN: not reached, or retraining)"),
    col("unlearned_at_time_s", "s", "simulated seconds from the request to the end of that "
        "slot's computation"),
    col("unlearned_at_bits", "bits", "bits on the air from the request to then"),
)


#: What a run loading saved states (``--load-state``) may change: who is forgotten (but
#: with ``forget_theta``: :func:`_check_forget`), how the request is served and what
#: follows it; the learning before it is the saved one.
STATE_FREE = ("eval_every", "forget", "rounds", "retrain_graph", "unlearn_schedule",
              "unlearn_visits", "unlearning")


#: What a saved run keeps of its last row before the request (its unlearning rows start
#: there); the row's state η is the saved global state.
ORIGIN_ROW = ("cum_bits", "cum_bits_delivered", "event", "iteration", "node", "time_s")


def _check_saved(extra: Fields) -> None:
    """A saved run's extra values: its last row before the request."""
    extra.only("origin")
    row = extra.mapping("origin")
    row.only(*ORIGIN_ROW)
    row.equal("iteration", row.iteration)
    row.choice("event", ROW_EVENTS)
    row.node("node")
    row.clock("time_s")
    row.bits("cum_bits", "cum_bits")
    row.bits("cum_bits_delivered", "cum_bits_delivered")


def _check_forget(states: States, config: GFVLUnlearningConfig, K: int,
                  forget: list[int]) -> None:
    """With ``forget_theta`` the forgotten agents' data are drawn with it, so the learnt
    state depends on who is forgotten: a load must forget the agents the state was saved
    with (a one-line ``ValueError`` otherwise)."""
    saved = states.source.record["config"]["forget"] if states.source else config.forget
    if config.forget_theta is not None and forget_agents(saved, K) != forget:
        raise ValueError(f"forget: the state was saved with forget={saved!r}, this run sets "
                         f"forget={config.forget!r}; with forget_theta set the forgotten "
                         f"agents' data are drawn with it, so the learning depends on who is "
                         f"forgotten (forget_theta=none, or save a new state)")


def _origin_row(loaded: tuple[Any, Any]) -> dict[str, Any]:
    """The last row before the request of a loaded run: the saved one, with the saved
    global state as its η."""
    checkpoint, extra = loaded
    state = checkpoint.state
    return {**extra["origin"], **{f"eta_{j}": float(state[j]) for j in range(len(state))}}


@register(NAME, GFVLUnlearningConfig,
          "G-FVL unlearning (paper Fig. 5): KL to the retrained posterior after a forget "
          "request, exact subtraction vs retraining from scratch.",
          plot=default_plot, columns=SCHEMA, state_free=STATE_FREE)
def run(config: GFVLUnlearningConfig, *, seed: int = 0, progress: bool = False,
        states: States | None = None) -> pd.DataFrame:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from bflnet.learners.conjugate.gfvl import GFVL
    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.protocols.graphs.walks import make_walk
    from bflnet.protocols.random_walk import RandomWalkProtocol
    from bflnet.simulator.rng import RngStreams
    from bflnet.simulator.simulation import Simulation
    graph = config.run_graph(seed)
    require_connected(graph)
    K = graph.number_of_nodes()
    forget = forget_agents(config.forget, K)
    walk = make_walk(config.walk, graph)
    net_kwargs = config.network_kwargs(graph)
    common = dict(a=config.prior_a, b=config.prior_b, alpha=config.alpha, rho=config.rho,
                  S=config.samples, L=config.local_steps, c=parse_baseline(config.baseline),
                  reinforce_draws=config.reinforce_draws)
    retrain_graph, retrain_walk, retrain_kwargs = graph, walk, net_kwargs
    if config.retrain_graph == "without":
        retrain_graph = graph.subgraph([k for k in graph.nodes if k not in set(forget)]).copy()
        if retrain_graph.number_of_nodes() == 0 or not nx.is_connected(retrain_graph):
            raise ValueError(f"retrain_graph: removing agents {forget} disconnects the "
                             f"{config.graph} graph; use retrain_graph=forwarder")
        retrain_walk = make_walk(config.walk, retrain_graph)
        retrain_kwargs = config.network_kwargs(retrain_graph)
    hold = config.unlearning == "iterative" and config.unlearn_schedule == "hold-token"
    request, after = config.learn_rounds, config.rounds
    rows: list[dict[str, Any]] = []

    def make_learner(run_seed: int) -> GFVL:
        data = _data(config, K, forget, RngStreams(run_seed).numpy("data"))
        return GFVL.beta_exponential(data, **common, unlearning=config.unlearning,
                                     unlearn_visits=config.unlearn_visits,
                                     forget_agents=forget, metrics="state")

    seeds = run_seeds(seed, config.runs)
    if states is not None and states.loading:  # verified before anything runs from it
        _check_forget(states, config, K, forget)
        states.verify(walk_state_spec(config.runs, graph, request, make_learner(seeds[0]),
                                      _check_saved))
    for r, run_seed in enumerate(progress_runs(seeds, progress, NAME)):
        learner = make_learner(run_seed)
        plans = (("unlearning", learner, run_seed, request, request + after,
                  [ForgetRequest(forget, after_iteration=request, hold_token=hold)],
                  (graph, walk, net_kwargs)),
                 ("retraining", learner.without(forget), child_seed(run_seed, "retrain"),
                  0, after, [], (retrain_graph, retrain_walk, retrain_kwargs)))
        for method, gfvl, sim_seed, start, last, requests, (g, w, kw) in plans:
            sim = Simulation(sim_seed, name=f"{NAME} {method} run {r}")
            sim.build_network(g, **kw)
            stateful = states is not None and method == "unlearning"
            loaded = (states.start(r, lambda k, gfvl=gfvl: gfvl.init_agent(k, None))
                      if stateful else None)
            saving = stateful and states.saving

            def keep(checkpoint: Any, sim: Any = sim, r: int = r, loaded: Any = loaded) -> None:
                if loaded is not None:  # the learning was loaded: its last row too
                    states.keep(r, checkpoint, origin=dict(loaded[1]["origin"]))
                    return
                rows = [row for row in sim.recorder.rows if row["event"] in ROW_EVENTS]
                states.keep(r, checkpoint, origin={k: rows[-1][k] for k in ORIGIN_ROW})

            protocol = RandomWalkProtocol(gfvl, w, StopRule(max_iterations=last),
                                          interventions=requests,
                                          checkpoint_after=start if saving else None,
                                          on_checkpoint=keep if saving else None,
                                          resume=None if loaded is None else loaded[0])
            every_row = run_rows(sim, protocol)
            recorded = [row for row in every_row if row["event"] in ROW_EVENTS]
            first = 0  # recorded[i] is iteration first + i's row
            if loaded is not None:  # learning was skipped: its last row was saved
                recorded, first = [_origin_row(loaded), *recorded], start
            origin = recorded[start - first]
            keep = _evaluated(last, start, config.eval_every)
            forgotten_at = {row["node"]: row["iteration"] for row in every_row
                            if row["event"] == "forgotten"}
            done = [forgotten_at.get(k) for k in forget]
            unlearned = unlearned_s = unlearned_bits = np.nan
            if method == "unlearning" and None not in done:
                merged = recorded[max(done) - first]
                unlearned = max(done) - start
                unlearned_s = merged["time_s"] - origin["time_s"]
                unlearned_bits = merged["cum_bits"] - origin["cum_bits"]
            for row in recorded:
                if row["iteration"] not in keep:
                    continue
                # The unlearning learner evaluates both methods: kl and kl_retrained.
                metrics = learner.divergences(state_of(row))
                pending = (float(sum(d is None or d > row["iteration"] for d in done))
                           if method == "unlearning" else np.nan)
                rows.append({
                    "method": method, "run": r, "run_seed": run_seed, "event": row["event"],
                    **base_fields(row),
                    "since_request": row["iteration"] - start,
                    "time_since_request_s": row["time_s"] - origin["time_s"],
                    "bits_since_request": row["cum_bits"] - origin["cum_bits"],
                    "kl_retrained": metrics["kl_retrained"], "kl": metrics["kl"],
                    "theta_mean": metrics["theta_mean"], "unlearn_pending": pending,
                    "unlearned_at": unlearned, "unlearned_at_time_s": unlearned_s,
                    "unlearned_at_bits": unlearned_bits})
    frame = pd.DataFrame.from_records(rows)
    order = ["method", "run", "run_seed", "iteration", "since_request"]
    return frame[order + [c for c in frame.columns if c not in order]]
