"""G-FVL: gossip-based federated variational learning and unlearning (Gong, Simeone, Kang).

The global state is the natural parameter vector η of q(θ) = ExpFam(θ | η) (numpy float64;
it is what travels, 64 bits × dim per message). Each agent k keeps, at its node, a
:class:`GFVLAgent` state: its local parameter η_k (the approximate local likelihood t_k),
so η = η₀ + Σ_k η_k, its unlearning factor and its status; its REINFORCE draws come from
its own stream, so they do not depend on the order of visits.

**Payload convention.** ``local_update(k, η)`` returns ``Update(payload=Δη)``, the *change*
Δη = η_new − η it proposes, and ``merge(η, updates) = η + Σ Δη`` over the updates that
arrived. The same rule serves the random walk (one update per iteration) and the
parameter server (any number of agents in parallel, PVI-style). The update carries the
agent's new state (η_k + Δη), which the protocol keeps only once the update is merged, so
an update lost on the uplink changes nothing and η = η₀ + Σ_k η_k keeps holding.

* ``method="exact"`` (conjugate likelihood; eqs. 13-14): Δη = Σ_{z∈D_k}[s_l(z); 1]/α − η_k.
  The first visit adds the agent's statistics, every revisit is an exact no-op.
* ``method="natgrad"`` (any likelihood, e.g. Beta prior + exponential likelihood, eqs. 22-23):
  L natural-gradient steps (eq. 17, with the local parameter implied by the current iterate,
  η_k^[l−1] = η^[l−1] − η^(i−1) + η_k^(i−1))
  on the local free energy with the *sum* loss Σ_n −log p(z_n|θ) (not the average: the
  fixed point must be the global posterior, as the conjugate update eq. 13 has it), the
  gradient
  ∇_μ E_q[L_k] estimated by REINFORCE with S samples and baseline c (eqs. 18-20).
  ``reinforce_draws`` sets the sampling unit: ``"per-agent"`` (eq. 18) draws S samples
  per agent, shared by its N points: (1/S) Σ_s (Σ_n ℓ_n(θ_s) − c) (s(θ_s) − μ);
  ``"per-point"`` (the original experiments' code) draws S independent samples for each
  point: Σ_n (1/S) Σ_s (ℓ_n(θ_{n,s}) − c) (s(θ_{n,s}) − μ), N·S draws, one vectorised
  call. Both are unbiased for the same gradient; they differ in variance: per-point
  removes the covariances between the points' terms (of order N² when c = 0), per-agent
  lets a baseline near the *sum* loss cancel most of the loss (docs/reproductions/gfvl.md
  gives the measured spreads).

**Unlearning.** ``forget(agent, agent_state)`` (a forget request, an event of the run) marks
the agent "forgetting"; it is processed the first time the agent is scheduled afterwards
(Sec. IV). With ``unlearning="exact"`` the agent returns
Δη = −η_k (so η becomes η₀ + Σ_{k'≠k} η_k', eq. 21), sets η_k = 0 and only forwards from
then on. With ``unlearning="iterative"`` (natgrad only) it instead runs L natural-gradient
steps on the removed-likelihood free energy −E_q[L_k] + α KL(q ‖ q^(i−1)/u_k), i.e. towards
q·exp(+L_k/α), with its own unlearning factor u_k = ExpFam(ν_k), for ``unlearn_visits``
visits; then it only forwards. Other agents are not affected by a pending forget: conjugate
ones keep returning Δη = 0 once they have contributed, non-conjugate ones keep running
their normal natural-gradient updates (which is what pulls q towards the retrained
optimum). The update that completes an agent's forget has ``event="forgotten"``: the
protocol records it when it is merged (and counts ``forget_pending``).

Retraining from scratch is ``learner.without(agents)``: the same learner with those
agents' data excluded (the agents still forward the state).

>>> data = {0: np.array([1, 0, 1]), 1: np.array([1, 1])}
>>> learner = GFVL.beta_bernoulli(data, a=2.0, b=2.0)
>>> eta = learner.init(None)
>>> agents = {k: learner.init_agent(k, None) for k in data}
>>> for k in (0, 1, 0):
...     update = learner.local_update(k, eta, agents[k], None)
...     eta, agents[k] = learner.merge(eta, [update]), update.agent_state
>>> learner.family.to_params(eta), learner.evaluate(eta)["kl"] < 1e-12
({'a': 6.0, 'b': 3.0}, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any

import numpy as np

from bflnet.learners.base import NO_WORK, Combines, GlobalStateLearner, Update, Work
from bflnet.learners.conjugate.expfam import (
    BernoulliLikelihood,
    ConjugateLikelihood,
    ExpFam,
    ExponentialLikelihood,
    GaussianLikelihood,
    Likelihood,
    PoissonLikelihood,
    beta,
    gamma,
    kl_to_unnormalised,
    log_integral,
    normal,
)
from bflnet.learners.hyper import GFVL_METHODS, GFVLParams
from bflnet.validation.params import with_overrides

METHODS = GFVL_METHODS
METRICS = ("kl", "state")
#: An agent's status: learning, asked to forget (not yet done), or forgotten.
STATUSES = ("learning", "forgetting", "forgotten")
#: Halvings of a natural-gradient step before giving up on staying in the natural domain.
MAX_HALVINGS = 60


def _real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and bool(np.isfinite(value))


@dataclass(frozen=True)
class GFVLAgent:
    """Agent ``k``'s private state: its local natural parameter ``eta`` (η_k), its
    iterative-unlearning factor ``nu`` (ν_k), its ``status`` (one of ``STATUSES``) and the
    visits it has spent unlearning. (The fields' metadata bound them where a saved state
    is read back: ``bflnet.runs.states.schema``.)"""

    eta: np.ndarray
    nu: np.ndarray
    status: str = field(default="learning", metadata={"choices": STATUSES})
    unlearn_visits: int = field(default=0, metadata={"ge": 0, "visits": True})


class GFVL(GlobalStateLearner):
    """G-FVL over an exponential-family q; global state η, payload Δη (module docstring).

    Arguments: ``prior`` (an :class:`ExpFam`, the family of q), ``likelihood``, ``data``
    ({agent: 1-D array}, every agent non-empty); ``params``, a
    :class:`~bflnet.learners.hyper.GFVLParams`, or its fields as keywords: ``method``
    ("exact" needs a likelihood conjugate to the prior; default: exact when it is, else
    "natgrad"), temperature ``alpha``, natgrad step ``rho``, samples ``S`` and local steps
    ``L`` per visit; the baseline ``c`` (``c="loo"``: each draw's baseline is the mean
    loss of the other S − 1 draws, unbiased and far less noisy than the paper's c = 0 when
    the sum loss is large); ``unlearning`` ("exact" | "iterative") and ``unlearn_visits``;
    ``exclude``
    (agents whose data is never used: retraining from scratch); ``forget_agents``, the
    agents whose forgetting ``evaluate`` measures (``kl_retrained``; the forget request
    itself is an event of the run, a :class:`bflnet.protocols.ForgetRequest`);
    ``metrics``: "kl" (the KL divergences below) or "state" (the state η itself as
    ``eta_0``, ``eta_1``, ...: cheap, for runs whose KL is computed afterwards);
    ``reinforce_draws`` (natgrad): "per-agent" (eq. 18, default) or "per-point" (module
    docstring).

    A natgrad step that would leave the natural domain is halved (up to 60 times, counted
    in the update's ``step_halvings`` metric) until it stays inside; a non-finite gradient
    or state raises ``ValueError``. REINFORCE with an unbounded loss (the exponential
    likelihood's z/θ) is heavy-tailed: keep ρ small (paper: 5e-3) or raise S / tune c when
    ρ is large. The iterative unlearning tilt exp(+L_k/α) rewards mass where the loss is
    large, so its noise feeds back on itself: it needs more samples than learning (S ≈ 100
    in tests).

    ``evaluate(η)`` gives ``kl`` = KL(q ‖ exact global posterior of the data not excluded)
    (closed form when conjugate, else by quadrature against the normalised posterior),
    ``theta_mean`` = E_q[θ], and with ``forget_agents`` ``kl_retrained`` = KL(q ‖ posterior
    without those agents' data).
    """

    #: How the state combines the agents' contributions: η = prior + Σ_k the agents' Δη.
    combines = Combines.ADDITIVE
    #: Why an over-the-air uplink refuses it (quoted by the protocol).
    merges_mean = ("its merge adds natural parameters (a sum, not a mean), and channel "
                   "noise could make them invalid (a negative precision)")

    def __init__(self, prior: ExpFam, likelihood: Likelihood, data: Mapping[Any, Any],
                 params: GFVLParams | None = None, *, c: float | str = 0.0,
                 exclude: Iterable[Any] = (), forget_agents: Iterable[Any] = (),
                 metrics: str = "kl", **hyper: Any) -> None:
        if not isinstance(prior, ExpFam):
            raise ValueError(f"prior: must be an ExpFam (e.g. beta(2, 2)), got {prior!r}")
        if not isinstance(likelihood, Likelihood):
            raise ValueError(f"likelihood: must be a Likelihood, got {likelihood!r}")
        conjugate = (isinstance(likelihood, ConjugateLikelihood)
                     and likelihood.prior_family is prior.family)
        p = with_overrides(params if params is not None else GFVLParams(), hyper)
        if p.method is None:
            p = with_overrides(p, {"method": "exact" if conjugate else "natgrad"})
        if p.method == "exact" and not conjugate:
            raise ValueError(f"method: 'exact' needs a likelihood conjugate to the "
                             f"{prior.family.name} prior, got {likelihood.name}")
        if not isinstance(data, Mapping) or not data:
            raise ValueError("data: must be a non-empty mapping {agent: 1-D array}")
        if not (_real(c) or c == "loo"):
            raise ValueError(f"c: must be a finite number or 'loo', got {c!r}")
        if c == "loo" and p.S < 2:
            raise ValueError(f"S: must be >= 2 with c='loo', got {p.S!r}")
        self.params = p
        self.prior, self.family, self.likelihood = prior, prior.family, likelihood
        self.method, self.conjugate = p.method, conjugate
        self.alpha, self.rho, self.S, self.L = float(p.alpha), float(p.rho), p.S, p.L
        self.c: float | str = c if c == "loo" else float(c)
        self.unlearning, self.unlearn_visits = p.unlearning, p.unlearn_visits
        self.agents: tuple[Any, ...] = tuple(data)
        self._summary = {k: likelihood.summary(likelihood.check(v, f"data[{k!r}]"))
                         for k, v in data.items()}
        self.exclude = self._known("exclude", exclude)
        self.forget_agents = self._known("forget_agents", forget_agents)
        if metrics not in METRICS:
            raise ValueError(f"metrics: must be one of {METRICS}, got {metrics!r}")
        self.metrics = metrics
        self._data = {k: np.array(v, dtype=np.float64) for k, v in data.items()}
        self.reinforce_draws = p.reinforce_draws
        # per-point: each point's own summary, shape (summary dim, N), for one vectorised
        # loss of N x S draws
        self._points = ({k: np.stack([likelihood.summary(v[n:n + 1]) for n in range(v.size)],
                                     axis=1) for k, v in self._data.items()}
                        if self.reinforce_draws == "per-point" else {})
        self._increment = ({k: likelihood.increment(s) / self.alpha  # type: ignore[attr-defined]
                            for k, s in self._summary.items()} if conjugate else {})
        self._targets: dict[frozenset[Any], Any] = {}
        self._zero = np.zeros(self.family.dim)

    # ------------------------------------------------------------------ model factories
    @classmethod
    def beta_bernoulli(cls, data: Mapping[Any, Any], *, a: float = 2.0, b: float = 2.0,
                       **kwargs: Any) -> GFVL:
        """Beta(a, b) prior, Bernoulli data in {0, 1} (conjugate; paper Sec. V-A)."""
        return cls(beta(a, b), BernoulliLikelihood(), data, **kwargs)

    @classmethod
    def gamma_poisson(cls, data: Mapping[Any, Any], *, shape: float = 1.0, rate: float = 1.0,
                      **kwargs: Any) -> GFVL:
        """Gamma(shape, rate) prior, Poisson counts (conjugate)."""
        return cls(gamma(shape, rate), PoissonLikelihood(), data, **kwargs)

    @classmethod
    def gaussian_known_variance(cls, data: Mapping[Any, Any], *, noise_var: float = 1.0,
                                mean: float = 0.0, var: float = 1.0, **kwargs: Any) -> GFVL:
        """N(mean, var) prior on the mean θ of N(θ, noise_var) data (conjugate)."""
        return cls(normal(mean, var), GaussianLikelihood(noise_var), data, **kwargs)

    @classmethod
    def beta_exponential(cls, data: Mapping[Any, Any], *, a: float = 2.0, b: float = 2.0,
                         **kwargs: Any) -> GFVL:
        """Beta(a, b) prior, exponential data with mean θ (non-conjugate; Sec. V-B)."""
        return cls(beta(a, b), ExponentialLikelihood(), data, **kwargs)

    def without(self, agents: Iterable[Any], *, metrics: str | None = None) -> GFVL:
        """Retraining from scratch: a fresh learner with ``agents``' data also excluded
        (``metrics``: as this learner's unless given)."""
        exclude = set(self.exclude) | set(self._known("agents", agents))
        return GFVL(self.prior, self.likelihood, self._data, exclude=exclude,
                    forget_agents=self.forget_agents,
                    metrics=self.metrics if metrics is None else metrics, params=self.params,
                    c=self.c)

    # ------------------------------------------------------------------ learner hooks
    def init(self, rng: np.random.Generator | None) -> np.ndarray:
        """The initial global state: η₀ (the prior)."""
        return self.prior.eta.copy()

    def init_agent(self, agent: Any, rng: np.random.Generator | None) -> GFVLAgent:
        """η_k = 0 (t_k ≡ 1), no unlearning factor, learning."""
        if agent not in self._summary:
            raise ValueError(f"agent: {agent!r} has no data in this learner")
        return GFVLAgent(self._zero.copy(), self._zero.copy())

    def local_update(self, agent: Any, state: np.ndarray, agent_state: GFVLAgent | None,
                     rng: np.random.Generator | None) -> Update:
        """Agent ``agent``'s update Δη of the received global ``state`` (see module doc)."""
        if agent not in self._summary:
            raise ValueError(f"agent: {agent!r} has no data in this learner")
        me = self.init_agent(agent, rng) if agent_state is None else agent_state
        eta = self.family.check(state, "state")
        counter = [0]
        event = None
        if me.status == "forgetting":
            if self.unlearning == "exact" or not np.any(me.eta):
                if not self.family.in_domain(eta - me.eta):
                    raise ValueError(
                        f"unlearning: exact subtraction of agent {agent!r}'s η_k leaves the "
                        f"{self.family.name} natural domain (η − η_k = {(eta - me.eta).tolist()});"
                        f" a noisy natgrad η_k? lower rho, raise S, c='loo' or 'iterative'")
                delta, work = -me.eta, Work(steps=1)
                new = replace(me, eta=self._zero.copy(), status="forgotten")
            else:
                delta = self._landing(eta, self._natgrad(agent, eta, me.nu, -1.0, rng,
                                                         counter), agent, counter)
                visits = me.unlearn_visits + 1
                done = visits >= self.unlearn_visits
                new = replace(me, nu=me.nu + delta, unlearn_visits=visits,
                              status="forgotten" if done else "forgetting")
                work = Work(steps=self.L)
            event = "forgotten" if new.status == "forgotten" else None
        elif agent in self.exclude or me.status == "forgotten":
            delta, work, new = np.zeros_like(eta), NO_WORK, me
        elif self.method == "exact":
            delta, work = self._increment[agent] - me.eta, Work(steps=1)
            new = replace(me, eta=me.eta + delta)
        else:
            delta = self._landing(eta, self._natgrad(agent, eta, me.eta, 1.0, rng, counter),
                                  agent, counter)
            work, new = Work(steps=self.L), replace(me, eta=me.eta + delta)
        metrics = {"step_halvings": float(counter[0])} if counter[0] else None
        return Update(delta, work, agent, agent_state=new, metrics=metrics, event=event)

    def merge(self, state: np.ndarray, updates: Sequence[Update]) -> np.ndarray:
        """η + Σ Δη over the updates that arrived."""
        new = np.array(state, dtype=np.float64, copy=True)
        for update in updates:
            delta = np.asarray(update.payload, dtype=np.float64)
            if delta.shape != new.shape:
                raise ValueError(f"updates: payload shape {delta.shape} does not match the "
                                 f"state {new.shape}")
            new = new + delta
        return self.family.check(new, "state")

    def forget(self, agent: Any, agent_state: GFVLAgent | None) -> GFVLAgent:
        """A forget request reached ``agent``: its next update removes its data (even if it
        never contributed: its subtraction is then zero). Repeated requests are no-ops."""
        if agent not in self._summary:
            raise ValueError(f"agents: unknown agent {agent!r}")
        me = self.init_agent(agent, None) if agent_state is None else agent_state
        if me.status != "learning":
            return me
        return replace(me, status="forgetting", unlearn_visits=0)

    def evaluate(self, state: np.ndarray) -> dict[str, float]:
        """``kl``, ``theta_mean`` and, with ``forget_agents``, ``kl_retrained``; or, with
        ``metrics="state"``, η itself (``eta_0``, ``eta_1``, ...).

        For a non-conjugate model the KLs are bounded below by the gap between the best
        member of the family and the (non-conjugate) posterior: they do not go to zero.
        """
        eta = self.family.check(state, "state")
        if self.metrics == "state":
            return {f"eta_{j}": float(v) for j, v in enumerate(eta)}
        return self.divergences(eta)

    def divergences(self, state: np.ndarray) -> dict[str, float]:
        """``kl``, ``theta_mean`` and, with ``forget_agents``, ``kl_retrained`` of ``state``
        (what ``evaluate`` gives with ``metrics="kl"``)."""
        q = ExpFam(self.family, self.family.check(state, "state"))
        out = {"kl": self._kl(q, self.exclude), "theta_mean": q.mean}
        if self.forget_agents:
            out["kl_retrained"] = self._kl(q, self.exclude | self.forget_agents)
        return out

    def exact_posterior(self, without: Iterable[Any] = ()) -> ExpFam:
        """The exact (generalised) posterior of the data not excluded (conjugate only)."""
        if not self.conjugate:
            raise ValueError(f"likelihood: the exact posterior is not a {self.family.name} "
                             f"(non-conjugate model)")
        return ExpFam(self.family, self._target(self.exclude | self._known("without", without)))

    # ------------------------------------------------------------------ internals
    def _known(self, name: str, agents: Iterable[Any]) -> frozenset[Any]:
        if isinstance(agents, str | bytes) or not isinstance(agents, Iterable):
            agents = (agents,)
        agents = frozenset(agents)
        unknown = agents - set(self._summary)
        if unknown:
            raise ValueError(f"{name}: unknown agents {sorted(unknown, key=repr)}")
        return agents

    def _natgrad(self, agent: Any, eta: np.ndarray, local: np.ndarray, sign: float,
                 rng: np.random.Generator | None, halvings: list[int]) -> np.ndarray:
        """L steps of eq. 17 from η^(i−1) = ``eta``; ``sign`` −1 removes the likelihood;
        draws from ``rng`` (the agent's stream); counts step halvings in ``halvings[0]``."""
        fam, summary = self.family, self._summary[agent]
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng: method 'natgrad' needs the agent's numpy Generator")
        points = self._points.get(agent)
        x = eta
        for _ in range(self.L):
            if points is None:  # eq. 18: S draws shared by the agent's points
                theta = fam.clip_open(fam.sample(x, rng, self.S))
                loss = self.likelihood.sum_loss(theta, summary)[None]    # (1, S)
            else:  # S independent draws per point
                theta = fam.clip_open(fam.sample(x, rng, (points.shape[1], self.S)))
                loss = self.likelihood.sum_loss(theta, points[:, :, None])  # (N, S)
            if self.c == "loo":  # leave-one-out mean of the other draws: still unbiased
                loss = loss - (loss.sum(axis=1, keepdims=True) - loss) / (loss.shape[1] - 1)
            else:
                loss = loss - self.c
            stats = fam.stats(theta).reshape(*loss.shape, -1)           # (., S, dim)
            score = (loss[..., None] * (stats - fam.mean_params(x))).mean(axis=1).sum(axis=0)
            try:
                grad_mu = np.linalg.solve(fam.fisher(x), score)         # eqs. 18-20
            except np.linalg.LinAlgError:
                grad_mu = np.full_like(x, np.nan)
            step = self.rho * ((x - eta + local) + sign * grad_mu / self.alpha)
            if not np.all(np.isfinite(step)):
                raise ValueError(f"agent: non-finite natural gradient at agent {agent!r} "
                                 f"(η = {x.tolist()})")
            x = x - self._guard(x, step, agent, halvings)
        return x

    def _landing(self, eta: np.ndarray, x: np.ndarray, agent: Any,
                 halvings: list[int]) -> np.ndarray:
        """Δη = x − η, halved while η + Δη (what the holder computes, with its own
        rounding) leaves the natural domain: x itself can sit within rounding of the edge."""
        delta = x - eta
        return self._guard(eta, -delta, agent, halvings) * -1.0

    def _guard(self, x: np.ndarray, step: np.ndarray, agent: Any,
               halvings: list[int]) -> np.ndarray:
        """``step`` halved until x − step is in the natural domain (counted in
        ``halvings[0]``)."""
        for _ in range(MAX_HALVINGS):
            if self.family.in_domain(x - step):
                return step
            step = step / 2
            halvings[0] += 1
        raise ValueError(f"rho: step of agent {agent!r} cannot stay in the "
                         f"{self.family.name} natural domain")

    def _target(self, excluded: frozenset[Any]) -> Any:
        """Conjugate: posterior η. Otherwise: (summary of the data, log normaliser)."""
        if excluded not in self._targets:
            keep = [k for k in self.agents if k not in excluded]
            if self.conjugate:
                target = self.prior.eta + sum((self._increment[k] for k in keep),
                                              np.zeros(self.family.dim))
            else:
                total = sum((self._summary[k] for k in keep), np.zeros_like(
                    self._summary[self.agents[0]]))
                target = (total, log_integral(self.family, self._log_target(total)))
            self._targets[excluded] = target
        return self._targets[excluded]

    def _log_target(self, total: np.ndarray) -> Any:
        prior, lik, alpha = self.prior, self.likelihood, self.alpha

        def log_target(theta: np.ndarray) -> np.ndarray:
            return prior.log_density(theta) - lik.sum_loss(theta, total) / alpha

        return log_target

    def _kl(self, q: ExpFam, excluded: frozenset[Any]) -> float:
        target = self._target(frozenset(excluded))
        if self.conjugate:
            return self.family.kl(q.eta, target)
        total, log_z = target
        return kl_to_unnormalised(q, self._log_target(total), log_z)
