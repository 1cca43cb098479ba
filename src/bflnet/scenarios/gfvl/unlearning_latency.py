"""Scenario ``unlearning-latency`` (G-FVL paper, Sec. IV): how many iterations, seconds and
bits until a forgotten agent's data are gone, against retraining from scratch, beside the
exact Markov-chain expectations.

Conjugate beta-Bernoulli G-FVL (exact, eqs. 13-14; data ``points_per_agent`` Bernoulli
(``theta_true``) points per agent, drawn once per call: they do not affect the latencies)
over the random walk on ``graph`` with the scenario's channel (``data=agent-skewed``:
agent i's points have P(1) = t ~ Beta(K + 1 − i, i) each; the latencies do not depend on
the data). Per run, two simulations:

- **unlearning**: learn for ``learn_rounds`` iterations, then request the forget of
  ``forget`` (``"last"``: agent K − 1, the paper's agent K; or a comma list of 0-based ids)
  right after that merge; run until every forgotten agent has been scheduled and has
  subtracted its η_k (Sec. IV, exact).
- **retraining** (``retrain=true``): G-FVL from the prior with the forgotten data excluded
  (those agents only forward), until KL(q ‖ retrained posterior) < ``threshold``, i.e. until
  every remaining agent has been scheduled once.

**Counting (one convention for every column).** Iterations are 1-based slot indices:
``unlearn_iterations`` = L when the forget is merged at the L-th slot after the request
(L = 1 if the next scheduled agent is the forgotten one; the paper's 1/K + K − 1 on a
complete graph); ``retrain_iterations`` = the slot, counted from 1 at the retraining start,
at which KL first falls below ``threshold``. Note that the paper's retraining count
(K − 2) H_{K−2} counts the slots *after the first* and covers only K − 1 agents as if the
walk lived on them alone, whereas the real walk still visits the forgotten agent, which
only forwards; ``paper_retrain_iterations`` is the paper's value + 1 (1-based),
``theory_retrain_iterations`` the exact expectation.

``unlearn_time_s`` and ``unlearn_bits`` run from the request (the end of slot
``learn_rounds``'s computation) to the end of the computation of the forgetting slot:
L hand-overs (none for a walk that stays put) and L visits; ``retrain_time_s`` and
``retrain_bits`` from the start to the end of slot ``retrain_iterations``: that many visits
and one hand-over fewer. NaN when a phase did not finish within ``max_rounds``.

One row per run: ``run``, ``run_seed``, ``unlearn_iterations``, ``unlearn_time_s``,
``unlearn_bits``, ``unlearn_kl_retrained`` (KL(q ‖ retrained posterior) once the forget is
merged: ~0 if every other agent had contributed during learning), ``retrain_iterations``,
``retrain_time_s``, ``retrain_bits``, and, the same on every row:

- ``theory_unlearn_iterations``: the expected 1-based slot at which the forgotten agent is
  first scheduled, the walk's node at slot ``learn_rounds + 1`` having the law
  uniform · P^learn_rounds (:func:`expected_first_hitting`; 1/K + K − 1 on the complete
  graph). Several forgotten agents: the expected slot at which all have been scheduled
  (:func:`expected_targets_cover`).
- ``theory_retrain_iterations``: the expected 1-based slot at which every remaining agent
  has been scheduled, the walk moving over all K nodes from a uniform start: exact
  (:func:`expected_targets_cover`) for K <= 16, the closed form
  :func:`complete_graph_targets_cover` on a complete graph, else NaN.
- ``paper_retrain_iterations``: (K − 2) H_{K−2} + 1 on a complete graph with one forgotten
  agent, else NaN.

**Learn once, unlearn many.** ``bflnet run unlearning-latency --save-state DIR`` also
saves, per run, the simulation as it stands right after learning (global and agents'
states, token position, clock, bit counters, random streams; :mod:`bflnet.protocols.
checkpoint`); ``--load-state DIR`` (same seed and config, except ``forget``,
``max_rounds``, ``retrain``, ``threshold``) skips the learning and continues from
there: with the same settings its table is byte-identical to the saving run's, and other
forget requests run from the same learnt posterior.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT64, Footprint, count
from bflnet.runs.schema import RUN, RUN_SEED, Schema, col
from bflnet.scenarios.gfvl.common import (
    ROW_EVENTS,
    GFVLSettings,
    child_seed,
    forget_agents,
    progress_runs,
    run_rows,
    state_of,
    walk_state_spec,
)
from bflnet.scenarios.shared.seeds import run_seeds

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from bflnet.protocols.graphs.walks import Walk
    from bflnet.runs.states import States
    from bflnet.runs.states.schema import Fields

NAME = "unlearning-latency"
#: Most targets :func:`expected_targets_cover` accepts (2^targets visited sets).
TARGETS_MAX = 16


@dataclass(frozen=True)
class UnlearningLatencyConfig(GFVLSettings):
    """Parameters of ``unlearning-latency``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {
        "learn_iterations": "learn_rounds", "max_iterations": "max_rounds"}

    SCENARIO: ClassVar[str] = NAME

    runs: int = param(2000, "independent runs (one row each)", ge=1, le=10**6)
    forget: str = param("last", "agents to forget: 'last' (agent K-1, the paper's agent K) "
                        "or a comma list of 0-based ids")
    threshold: float = param(1e-6, "retraining is done once KL(q ‖ retrained posterior) < "
                             "threshold", gt=0, le=1e6)
    learn_rounds: int = param(50, "iterations of learning before the forget request",
                                  ge=0, le=10**8)
    retrain: bool = param(True, "also retrain from scratch in every run (else NaN columns)")
    max_rounds: int = param(100_000, "give up a phase after this many iterations (its "
                                "columns are then NaN)", ge=1, le=10**8)
    theta_true: float = param(0.3, "Bernoulli parameter of the data", ge=0, le=1)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        forget_agents(self.forget, None if self.graph == "file" else self.K)
        self.check_data()

    def footprint(self) -> Footprint:
        """Data, a run's rows (learning, unlearning, retraining) and one kept row a run,
        and the theory: the walk's dense K x K transition matrix, its power at the request
        (about 2 log2(learn_rounds) matrix products) and
        the hitting-time system (a dense K x K solve)."""
        size = self.graph_size()
        k = size.nodes
        rows = 2.0 * (self.learn_rounds + self.max_rounds + 1.0)
        power = 4 * k ** 3 * max(1.0, math.log2(max(self.learn_rounds, 1)))
        return self.gfvl_footprint(self.runs, rows, float(self.runs),
                                   row_fields=("learn_rounds", "max_rounds")).add(
            f"theory on a dense {count(k)} x {count(k)} transition matrix", size.fields,
            bytes=6 * FLOAT64 * k * k, work=k * k, flops=power + k ** 3)


# ------------------------------------------------------------------ theory


def complete_graph_targets_cover(K: int, targets: int) -> float:
    """Expected 1-based slot at which ``targets`` given agents of a complete graph of K
    nodes have all been scheduled, from a uniform start:
    ``1 + (K-1) H_{t-1} + (K-t)(K-1) / (K t)``.

    From any node the token moves to one of the K − 1 others uniformly, and the current node
    is never an unvisited target, so with m targets visited the next one takes a
    Geometric((t − m)/(K − 1)) number of slots, wherever the token is; the start is a target
    (m = 1) with probability t/K. ``t = 1`` gives 1/K + K − 1 (Sec. IV's unlearning);
    ``t = K - 1`` gives ``1 + 1/K + (K-1) H_{K-2}`` (retraining without one agent).
    """
    from bflnet.analysis.cover_time import harmonic_number
    if not (isinstance(K, numbers.Integral) and isinstance(targets, numbers.Integral)
            and 1 <= targets <= K and K >= 2):
        raise ValueError(f"targets: must be an integer in 1..K={K}, got {targets!r}")
    t = int(targets)
    return 1.0 + (K - 1) * harmonic_number(t - 1) + (K - t) * (K - 1) / (K * t)


def expected_targets_cover(P: Any, targets: Sequence[int], start: Any = "uniform") -> float:
    """Expected 1-based slot ``E[T]``, ``T = min{i >= 1 : every target is among
    k⁽¹⁾..k⁽ⁱ⁾}``, of the chain ``P`` (row-stochastic, irreducible) that moves over all
    its nodes, targets or not.

    Solves the visited-set chain restricted to the targets: state (S ⊆ targets visited,
    current node v ∈ S ∪ non-targets), ``E[targets, ·] = 0`` and
    ``E[S, v] = 1 + Σ_w P[v, w] E[S ∪ ({w} ∩ targets), w]``, one batched linear system per
    set size; then ``E[T] = 1 + Σ_v π₀(v) E[{v} ∩ targets, v]``. ``start``: ``"uniform"`` or
    a probability vector over the nodes. At most ``TARGETS_MAX`` targets. With every node a
    target this is ``exact_cover_time + 1``; with one, ``expected_first_hitting``.
    """
    import numpy as np
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or not np.allclose(P.sum(axis=1), 1.0):
        raise ValueError("P: must be a square row-stochastic matrix")
    K = P.shape[0]
    T = [int(v) for v in targets]
    if not T or len(set(T)) != len(T) or not all(0 <= v < K for v in T):
        raise ValueError(f"targets: must be distinct nodes in 0..{K - 1}, got {list(targets)}")
    if len(T) > TARGETS_MAX:
        raise ValueError(f"targets: at most {TARGETS_MAX} (2^targets sets), got {len(T)}")
    if isinstance(start, str) and start == "uniform":
        p0 = np.full(K, 1.0 / K)
    else:
        p0 = np.asarray(start, dtype=np.float64)
        if p0.shape != (K,) or np.any(p0 < 0) or not np.isclose(p0.sum(), 1.0):
            raise ValueError(f"start: must be 'uniform' or a probability vector of {K} entries")
    t = len(T)
    others = np.array([v for v in range(K) if v not in set(T)], dtype=np.int64)
    tbit = np.zeros(K, dtype=np.int64)
    tbit[T] = np.int64(1) << np.arange(t, dtype=np.int64)
    target_ids = np.array(T, dtype=np.int64)
    masks = np.arange(1 << t, dtype=np.int64)
    member = (masks[:, None] >> np.arange(t)[None, :]) & 1 == 1
    size = member.sum(axis=1)
    E = np.zeros((1 << t, K))
    cols = np.arange(K)
    for m in range(t - 1, -1, -1):
        sets = masks[size == m]
        inside = np.nonzero(member[sets])[1].reshape(len(sets), m)
        nodes = np.concatenate([target_ids[inside],
                                np.broadcast_to(others, (len(sets), others.size))], axis=1)
        n_u = nodes.shape[1]
        if n_u == 0:
            continue  # no current node possible (every node a target, none visited)
        fresh = (tbit[None, :] != 0) & ((sets[:, None] & tbit[None, :]) == 0)
        grown = np.where(fresh, E[sets[:, None] | tbit[None, :], cols[None, :]], 0.0)
        rows = P[nodes]  # (n, n_u, K)
        b = 1.0 + np.einsum("nuk,nk->nu", rows, grown)
        A = np.eye(n_u)[None] - np.take_along_axis(
            rows, np.broadcast_to(nodes[:, None, :], (len(sets), n_u, n_u)), axis=2)
        E[sets[:, None], nodes] = np.linalg.solve(A, b[..., None])[..., 0]
    return float(1.0 + sum(p0[v] * E[tbit[v], v] for v in range(K)))


def theory(walk: Walk, forget: Sequence[int], learn_rounds: int) -> dict[str, float]:
    """The theory columns (see the module docstring)."""
    import numpy as np

    from bflnet.analysis.cover_time import complete_graph_retrain_iterations, expected_first_hitting
    P = walk.transition_matrix()
    K = walk.K
    complete = walk.graph.number_of_edges() == K * (K - 1) // 2
    at_request = np.full(K, 1.0 / K) @ np.linalg.matrix_power(P, learn_rounds)
    at_request = at_request / at_request.sum()
    if len(forget) == 1:
        unlearn = expected_first_hitting(P, forget[0], start=at_request)
    elif len(forget) <= TARGETS_MAX:
        unlearn = expected_targets_cover(P, forget, start=at_request)
    else:
        unlearn = math.nan
    rest = [v for v in range(K) if v not in set(forget)]
    if not rest:
        retrain = math.nan
    elif complete:
        retrain = complete_graph_targets_cover(K, len(rest))
    elif len(rest) <= TARGETS_MAX:
        retrain = expected_targets_cover(P, rest)
    else:
        retrain = math.nan
    paper = (complete_graph_retrain_iterations(K) + 1.0 if complete and len(forget) == 1
             else math.nan)
    return {"theory_unlearn_iterations": unlearn, "theory_retrain_iterations": retrain,
            "paper_retrain_iterations": paper}


# ------------------------------------------------------------------ scenario


def default_plot(frame: pd.DataFrame) -> Figure:
    """Histograms of the unlearning and retraining iterations with the theory means."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    top = np.nanmax(frame[["unlearn_iterations", "retrain_iterations"]].to_numpy(dtype=float))
    bins = np.arange(0.5, (top if np.isfinite(top) else 1) + 1.5)
    for column, theory_col, label in (
            ("unlearn_iterations", "theory_unlearn_iterations", "unlearning"),
            ("retrain_iterations", "theory_retrain_iterations", "retraining")):
        values = frame[column].dropna()
        if values.empty:
            continue
        (_, _, patches) = ax.hist(values, bins=bins, density=True, histtype="step",
                                  label=f"{label}: mean {values.mean():.2f}")
        color = patches[0].get_edgecolor()
        expected = frame[theory_col].iloc[0]
        if np.isfinite(expected):
            ax.axvline(expected, color=color, linestyle="--",
                       label=f"{label} theory {expected:.2f}")
    ax.set(xlabel="iterations after the forget request (1-based)", ylabel="fraction of runs",
           title=f"Unlearning vs retraining latency ({len(frame)} runs)")
    ax.legend()
    return fig


SCHEMA = Schema.of(
    RUN, RUN_SEED,
    col("event", "label", "run: one row per run"),
    col("unlearn_iterations", "count", "1-based slot after the request at which the forget "
        "is merged (NaN: not within max_rounds)"),
    col("unlearn_time_s", "s", "simulated seconds from the request to the end of that "
        "slot's computation"),
    col("unlearn_bits", "bits", "bits on the air from the request to then"),
    col("unlearn_kl_retrained", "nats", "KL(q || retrained posterior) once the forget is "
        "merged"),
    col("retrain_iterations", "count", "slot at which retraining from scratch reaches KL "
        "< threshold (NaN: retrain=false or not reached)"),
    col("retrain_time_s", "s", "simulated seconds of retraining until then"),
    col("retrain_bits", "bits", "bits on the air of retraining until then"),
    col("theory_unlearn_iterations", "count", "expected unlearn_iterations (exact Markov "
        "chain; 1/K + K - 1 on a complete graph)"),
    col("theory_retrain_iterations", "count", "expected retrain_iterations (exact for K <= "
        "16 or a complete graph, else NaN)"),
    col("paper_retrain_iterations", "count", "the G-FVL paper's (K-2) H_(K-2) + 1 on a "
        "complete graph with one forgotten agent, else NaN"),
)


#: What a run loading saved states (``--load-state``) may change: the unlearning request
#: and what follows it; the learning before it is the saved one.
STATE_FREE = ("forget", "max_rounds", "retrain", "threshold")


def _check_saved(extra: Fields) -> None:
    """A saved run's extra values: where the request's time and bits are counted from."""
    extra.only("origin_bits", "origin_time_s")
    extra.clock("origin_time_s")
    extra.bits("origin_bits", "cum_bits")


@register(NAME, UnlearningLatencyConfig,
          "Iterations, seconds and bits until a forgotten agent's data are gone (exact "
          "G-FVL unlearning) vs retraining from scratch, with the Markov-chain theory.",
          plot=default_plot, columns=SCHEMA, state_free=STATE_FREE)
def run(config: UnlearningLatencyConfig, *, seed: int = 0, progress: bool = False,
        states: States | None = None) -> pd.DataFrame:
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
    columns = theory(walk, forget, config.learn_rounds)
    data = config.bernoulli_data(K, RngStreams(seed).numpy("data"))
    learner = GFVL.beta_bernoulli(data, a=config.prior_a, b=config.prior_b,
                                  alpha=config.alpha, forget_agents=forget, metrics="state")
    retrained = learner.without(forget, metrics="kl")
    request = config.learn_rounds
    if states is not None and states.loading:  # verified before anything runs from it
        states.verify(walk_state_spec(config.runs, graph, request, learner, _check_saved))
    requests = [ForgetRequest(forget, after_iteration=request)]
    unlearn_stop = StopRule(max_iterations=request + config.max_rounds, forgotten=True)
    retrain_stop = StopRule(max_iterations=config.max_rounds,
                            until=lambda m: m["kl"] < config.threshold)
    nan = math.nan
    out: list[dict[str, Any]] = []
    for r, run_seed in enumerate(progress_runs(run_seeds(seed, config.runs), progress, NAME)):
        sim = Simulation(run_seed, name=f"{NAME} unlearning run {r}")
        sim.build_network(graph, **net_kwargs)
        loaded = (states.start(r, lambda k: learner.init_agent(k, None))
                  if states is not None else None)

        def keep(checkpoint: Any, sim: Any = sim, r: int = r, loaded: Any = loaded) -> None:
            if loaded is not None:  # the learning was loaded: where it ended too
                states.keep(r, checkpoint, origin_time_s=loaded[1].number("origin_time_s"),
                            origin_bits=loaded[1].number("origin_bits"))
                return
            origin = [row for row in sim.recorder.rows if row["event"] in ROW_EVENTS][-1]
            states.keep(r, checkpoint, origin_time_s=origin["time_s"],
                        origin_bits=origin["cum_bits"])

        saving = states is not None and states.saving
        protocol = RandomWalkProtocol(learner, walk, unlearn_stop, interventions=requests,
                                      checkpoint_after=request if saving else None,
                                      on_checkpoint=keep if saving else None,
                                      resume=None if loaded is None else loaded[0])
        outcome = sim.run_outcome(protocol)
        rows = [row for row in sim.recorder.rows if row["event"] in ROW_EVENTS]
        row: dict[str, Any] = {"run": r, "run_seed": run_seed, "event": "run"}
        if outcome.reason == "forgotten":
            done = rows[-1]
            origin = (rows[request] if loaded is None else
                      {"time_s": loaded[1].number("origin_time_s"),
                       "cum_bits": loaded[1].number("origin_bits")})
            row.update(unlearn_iterations=done["iteration"] - request,
                       unlearn_time_s=done["time_s"] - origin["time_s"],
                       unlearn_bits=done["cum_bits"] - origin["cum_bits"],
                       unlearn_kl_retrained=learner.divergences(state_of(done))["kl_retrained"])
        else:
            row.update(unlearn_iterations=nan, unlearn_time_s=nan, unlearn_bits=nan,
                       unlearn_kl_retrained=nan)
        row.update(retrain_iterations=nan, retrain_time_s=nan, retrain_bits=nan)
        if config.retrain:
            sim = Simulation(child_seed(run_seed, "retrain"), name=f"{NAME} retraining run {r}")
            sim.build_network(graph, **net_kwargs)
            last = run_rows(sim, RandomWalkProtocol(retrained, walk, retrain_stop))[-1]
            if last.get("kl", math.inf) < config.threshold:
                row.update(retrain_iterations=last["iteration"], retrain_time_s=last["time_s"],
                           retrain_bits=last["cum_bits"])
        out.append({**row, **columns})
    return pd.DataFrame.from_records(out)
