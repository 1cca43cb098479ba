"""DSVGD (Kassab & Simeone 2022) and Forget-SVGD (Gong et al. 2022), as in the
compressed-DSVGD letter, Sec. II.

The **global state** is the ``(N_p, d)`` particle tensor Θ (float32 torch by default) that
represents ``q(θ)`` through its KDE. The scheduled agent ``k``:

1. runs ``L = local_steps`` AdaGrad-SVGD steps (eqs. 5-6) from Θ^(i−1) on the tilted target
   of eq. 7 with the sum of the per-example losses (N_k times the average loss, so that the
   fixed point is the global posterior)::

       log p̃_k(θ) = log q^(i−1)(θ) − log t_k^(i−1)(θ)
                    + s · (N_k / (M·α)) · Σ_{b∈batch} log p(y_b | x_b, θ)

   with ``s = +1`` (learning) or ``s = −1`` (Forget-SVGD, eq. 8: the flipped sign removes
   the agent's likelihood), ``α`` the ``temperature`` and a fresh minibatch of
   ``M = min(batch_size, N_k)`` examples per step;
2. sends ``ΔΘ = Θ^[L] − Θ^(i−1)`` (``Update.payload``, ``(N_p, d)``: what the letter
   compresses, Sec. III); the server sets ``Θ^(i) = Θ^(i−1) + ΔΘ`` (``merge``);
3. distils its approximate likelihood: local particles move by ``distill_iters``
   SVGD steps towards ``t_k^(i) ∝ q^(i)/q^(i−1) · t_k^(i−1)`` (three KDEs).

**What the local particles represent.** ``t_k`` itself need not be a normalisable density
(``t_k ≈ p(D_k|θ)`` while learning, ``≈ 1/p(D_k|θ)`` while unlearning), so the agent keeps
particles of the proper density ``t̃_k = t_k · r_k``, with a fixed reference ``r_k`` that is
also kept as particles, and uses ``log t_k = log KDE(t̃_k) − log KDE(r_k)``. The factor starts
at ``t_k^(0) ≡ 1``: until the agent's first committed update it has no particles and the
``t_k`` term is skipped. At that first update ``r_k`` is the Θ^(i−1) the agent downloaded,
so ``t̃_k^(0) = r_k = q^(i−1)`` and the distillation target ``q^(i)/q^(i−1)·t̃_k^(0) = q^(i)``
is met exactly by the new global particles Θ^[L] (no SVGD needed). Later visits run the
distillation SVGD from the old local particles. (Kassab & Simeone's code uses the prior as
the reference, which is proper for learning but not for unlearning.)

**Bookkeeping under compression and loss.** The distillation uses the global particles
the agent computed, Θ^[L], not the server's Θ^(i−1) + decode(encode(ΔΘ)), which the agent
only sees at its next download. The agent's factor is its private state (an
:class:`AgentFactor`, kept at its node): ``local_update`` returns the new one with the
update, and the protocol keeps it only when the update is merged, so an update lost on the
uplink leaves ``t_k`` unchanged and ``q = p0 ∏ t_k`` keeps holding between server and
agents. Each agent's minibatches come from its own stream.

**Several agents per round** (e.g. ``AllAgents``): ``merge`` averages their ΔΘ. The letter
schedules one agent per iteration; averaging is a damped PVI-style step and each agent's
factor bookkeeping then assumes its own ΔΘ was applied in full.

**Forget-SVGD.** A forget request (``forget(agent, factor)``, an event of the run) switches
the agent to unlearning (``s = −1``) with a fresh factor ``t_k ≡ 1`` (the letter
initialises new local particles for the agents in U); its learning-phase factor is
discarded. The learner does not restrict scheduling: schedule only the forgetting agents
(as the letter does) with the request's phase or the protocol's selector; others keep
running ordinary DSVGD updates. A second request resets the factor again.

**Behaviour worth knowing.** The prior enters only through q^(0) = KDE(Θ^(0)) (eq. 7 has
no prior term), so it is smoothed by the KDE (variance + λ). Each KDE term pulls a particle
towards the particles of its set with stiffness 1/λ: when λ is small against the particle
spacing (always the case in high d) every particle is anchored to its own old position, a
proximal step of variance λ, and the particles cannot redistribute mass; in low d the
conjugate-Gaussian tests need λ well above the spacing and get posterior variances within
a few tens of percent. AdaGrad restarts at every local update and its first step is
≈ ε·sign(φ) per coordinate, so a revisit moves converged particles by O(ε).
``step_rule="constant"`` replaces AdaGrad by the plain step ``θ ← θ + ε φ`` (no
per-coordinate normalisation), which keeps the relative sizes of φ's coordinates: a top-k
uplink then sends the coordinates the target actually moves rather than ones AdaGrad
scaled up from tiny gradients (docs/reproductions/dsvgd.md, Forget-SVGD).

Complexity per SVGD step: the model's forward/backward on ``N_p × M`` examples plus two
GEMMs of ``N_p × (4 N_p) × d`` and ``N_p × (5 N_p) × d`` (SVGD kernel and the three KDEs),
see :func:`bflnet.learners.particles.svgd.run_svgd`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.learners.hyper import DSVGD_NO_MEAN, STEP_RULES, DSVGDParams
from bflnet.learners.models.torch_utils import (
    MinibatchSampler,
    apply_mean_delta,
    as_agent_data,
    check_particles,
    predictive_evaluation,
    torch_generator,
)
from bflnet.learners.particles.svgd import (
    ConstantStep,
    KDETerm,
    Score,
    kde_log_density,
    run_svgd,
    svgd_iteration_flops,
)
from bflnet.learners.particles.svgd_small import SMALL_PROBLEM, run_svgd_numpy
from bflnet.validation.checks import check_int
from bflnet.validation.params import with_overrides

__all__ = ["DSVGD", "STEP_RULES", "AgentFactor", "ConstantStep", "DSVGDParams"]



@dataclass(frozen=True)
class AgentFactor:
    """Agent ``k``'s approximate likelihood ``t_k = t̃_k / r_k`` as two particle sets
    (``None`` while ``t_k ≡ 1``), its mode and the number of committed updates."""

    local: Tensor | None = None
    reference: Tensor | None = None
    unlearning: bool = False
    visits: int = 0


class DSVGD(GlobalStateLearner):
    """Distributed SVGD with Forget-SVGD unlearning (module docs give the maths).

    >>> from bflnet.learners.models.toy_models import GaussianMeanModel
    >>> model = GaussianMeanModel(d=1, prior_var=4.0)
    >>> data = {k: (torch.full((5, 1), 1.0), torch.zeros(5)) for k in range(2)}
    >>> learner = DSVGD(model, data, 20, DSVGDParams(local_steps=100, step_size=0.05))
    >>> theta = learner.init(np.random.default_rng(0))
    >>> factors = {k: learner.init_agent(k, None) for k in (0, 1)}
    >>> for k in (0, 1, 0, 1):
    ...     update = learner.local_update(k, theta, factors[k], np.random.default_rng(k))
    ...     theta, factors[k] = learner.merge(theta, [update]), update.agent_state
    >>> round(float(theta.mean()), 1)     # posterior mean 10/(1/4 + 10) ≈ 0.98
    1.0
    """

    #: How the state combines the agents' contributions: the particle set
    #: moves by the mean of the updates' moves; no gossip average.
    combines = Combines.PARTICLES
    #: Why an over-the-air uplink refuses it (quoted by the protocol).
    merges_mean = DSVGD_NO_MEAN

    def __init__(self, model: Any, agent_data: Mapping[Any, tuple[Any, Any]],
                 n_particles: int = 10, params: DSVGDParams | None = None, *,
                 eval_data: tuple[Any, Any] | None = None, eval_per_class: bool = False,
                 forget_check_agents: Sequence[Any] = (),
                 initial_particles: Tensor | None = None,
                 dtype: torch.dtype = torch.float32,
                 device: str | torch.device | None = None, **hyper: Any) -> None:
        self.model = model
        self.n_particles = check_int("n_particles", n_particles, ge=1)
        self.params = with_overrides(params if params is not None else DSVGDParams(), hyper)
        p = self.params
        self.local_steps, self.step_size, self.step_rule = p.local_steps, p.step_size, p.step_rule
        self.local_particle_iters = p.local_steps if p.distill_iters is None else p.distill_iters
        self.kde_bandwidth, self.temperature = p.kde_bandwidth, p.temperature
        self.batch_size, self.svgd_bandwidth = p.batch_size, p.svgd_bandwidth
        self.adagrad_decay, self.adagrad_fudge = p.adagrad_decay, p.adagrad_fudge
        self.dtype = dtype
        self.device = torch.device(device if device is not None
                                   else getattr(model, "device", "cpu"))
        self.d = check_int("model.d", model.d, ge=1)
        self.shape = (self.n_particles, self.d)
        self.data = as_agent_data(agent_data, dtype, self.device)
        self.sampler = MinibatchSampler(self.data, self.batch_size)
        self.eval_data = eval_data
        self.eval_per_class = bool(eval_per_class)
        self.forget_check_agents = list(forget_check_agents)
        unknown = [a for a in self.forget_check_agents if a not in self.data]
        if unknown:
            raise ValueError(f"forget_check_agents: no data for agents {unknown!r}")
        self.initial_particles = None if initial_particles is None else check_particles(
            initial_particles, self.shape, dtype, self.device, "initial_particles").clone()

    # -- interface ----------------------------------------------------------------------
    @property
    def agents(self) -> list[Any]:
        """Agents with data, in ``agent_data`` order."""
        return list(self.data)

    def init(self, rng: np.random.Generator | None) -> Tensor:
        """Θ^(0): ``model.init_particles`` (or ``initial_particles``), drawn from ``rng``."""
        if self.initial_particles is not None:
            return self.initial_particles.clone()
        gen = torch_generator(rng, torch.device("cpu"))
        theta = self.model.init_particles(self.n_particles, gen)
        return check_particles(theta, self.shape, self.dtype, self.device,
                               "model.init_particles")

    def init_agent(self, agent: Any, rng: np.random.Generator | None) -> AgentFactor:
        """``t_k ≡ 1``, learning."""
        if agent not in self.data:
            raise ValueError(f"agent: no data for agent {agent!r}")
        return AgentFactor()

    def local_update(self, agent: Any, state: Any, agent_state: AgentFactor | None,
                     rng: np.random.Generator | None) -> Update:
        """Steps 2-3 for ``agent`` on the downloaded Θ^(i−1), from its factor
        ``agent_state``, minibatches drawn from its stream ``rng``: payload ``ΔΘ`` and the
        new factor (kept by the protocol once the update is merged)."""
        if agent not in self.data:
            raise ValueError(f"agent: no data for agent {agent!r}")
        factor = AgentFactor() if agent_state is None else agent_state
        mode = "unlearning" if factor.unlearning else "learning"
        where = f"agent {agent!r}, {mode} update {factor.visits + 1}"
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                f"DSVGD ({where}): downloaded global state")
        terms = [KDETerm(theta, 1.0)]
        if factor.local is not None:
            terms += [KDETerm(factor.local, -1.0), KDETerm(factor.reference, 1.0)]
        score, scale = self._data_score(agent, factor, torch_generator(rng, torch.device("cpu")),
                                        self.local_steps)
        new = self._svgd(theta, self.local_steps, score=score, score_scale=scale,
                         kde_terms=terms, context=f" ({where}, tilted target)")
        flops = self.local_steps * (
            svgd_iteration_flops(self.n_particles, self.d, len(terms) * self.n_particles)
            + self.n_particles * self.sampler.size(agent) * self._model_flops())
        if factor.local is None:  # t̃_k^(0) = r_k = q^(i-1): the target is q^(i) itself
            local, reference = new.clone(), theta.clone()
        else:
            local = self._svgd(factor.local, self.local_particle_iters,
                               kde_terms=[KDETerm(new, 1.0), KDETerm(theta, -1.0),
                                          KDETerm(factor.local, 1.0)],
                               context=f" ({where}, distillation of the local particles)")
            reference = factor.reference
            flops += self.local_particle_iters * svgd_iteration_flops(
                self.n_particles, self.d, 3 * self.n_particles, with_score=False)
        new_factor = AgentFactor(local, reference, factor.unlearning, factor.visits + 1)
        return Update(new - theta, Work(steps=self.local_steps, flops=flops), agent,
                      agent_state=new_factor)

    def merge(self, state: Any, updates: Sequence[Update]) -> Tensor:
        """``Θ + ΔΘ`` (the mean ΔΘ when several updates arrive)."""
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                "DSVGD merge: global state")
        if not updates:
            return theta
        return apply_mean_delta(theta, updates, "DSVGD merge", "global particles")

    def forget(self, agent: Any, agent_state: AgentFactor | None) -> AgentFactor:
        """Forget-SVGD: ``agent`` switches to unlearning with a fresh factor ``t_k ≡ 1``."""
        if agent not in self.data:
            raise ValueError(f"agents: no data for {agent!r}")
        return AgentFactor(unlearning=True)

    def evaluate(self, state: Any) -> dict[str, float]:
        """Posterior-predictive metrics of Θ on ``eval_data`` (accuracy, ece, nll, brier,
        and ``acc_class_<c>`` with ``eval_per_class``), and with ``forget_check_agents``
        ``forget_train_acc``: the largest, over those agents, posterior-predictive accuracy
        on the agent's own training data (what the forgetting agents can check
        themselves)."""
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                "DSVGD evaluate: global state")
        out = ({} if self.eval_data is None else
               predictive_evaluation(self.model, theta, self.eval_data, self.eval_per_class))
        if self.forget_check_agents:
            from bflnet.learners.evaluation import posterior_predictive

            accs = []
            for agent in self.forget_check_agents:
                x, y = self.data[agent]
                probs = posterior_predictive(self.model, theta, x)
                accs.append(float((probs.argmax(-1) == y).float().mean()))
            out["forget_train_acc"] = max(accs)
        return out

    def cavity_log_density(self, factor: AgentFactor, state: Any, theta: Tensor) -> Tensor:
        """``(M,)``: ``log q(θ) − log t_k(θ)`` at ``theta`` ``(M, d)``, the KDE part of an
        agent's tilted target given the global particles ``state`` and its ``factor``
        (``log KDE(Θ) − log KDE(t̃_k) + log KDE(r_k)``)."""
        particles = check_particles(state, self.shape, self.dtype, self.device, "state")
        out = kde_log_density(theta, particles, self.kde_bandwidth)
        if factor.local is not None:
            assert factor.reference is not None
            out = out - kde_log_density(theta, factor.local, self.kde_bandwidth) \
                + kde_log_density(theta, factor.reference, self.kde_bandwidth)
        return out

    # -- helpers ------------------------------------------------------------------------
    def _svgd(self, theta: Tensor, n_iter: int, *, kde_terms: list[KDETerm], context: str,
              score: Score | None = None, score_scale: float = 1.0) -> Tensor:
        """:func:`run_svgd`, or for small particle sets on the CPU (``N × d <=
        SMALL_PROBLEM``) its NumPy twin :func:`run_svgd_numpy` (module
        :mod:`bflnet.learners.particles.svgd_small`), with the model's NumPy likelihood gradient
        when it has one."""
        if self.device.type != "cpu" or self.n_particles * self.d > SMALL_PROBLEM:
            return run_svgd(theta, n_iter, score=score, score_scale=score_scale,
                            kde_terms=kde_terms, context=context, **self._svgd_kwargs())
        new, bad = run_svgd_numpy(
            theta.numpy(), n_iter, score=None if score is None else _numpy_score(score),
            score_scale=score_scale,
            kde_sets=[(t.particles.numpy(), float(t.sign)) for t in kde_terms],
            kde_bandwidth=self.kde_bandwidth, step_size=self.step_size,
            step_rule=self.step_rule, decay=self.adagrad_decay, fudge=self.adagrad_fudge,
            bandwidth=self.svgd_bandwidth)
        if bad == 0:
            raise ValueError(f"SVGD: the initial particles are not finite{context}")
        if bad is not None:
            raise ValueError(f"SVGD: non-finite particles after local iteration {bad} of "
                             f"{n_iter}{context}")
        return torch.from_numpy(new)

    def _svgd_kwargs(self) -> dict[str, Any]:
        optimizer = ConstantStep(self.step_size) if self.step_rule == "constant" else None
        return dict(kde_bandwidth=self.kde_bandwidth, step_size=self.step_size,
                    decay=self.adagrad_decay, fudge=self.adagrad_fudge,
                    bandwidth=self.svgd_bandwidth, optimizer=optimizer)

    def _numpy_data(self, agent: Any) -> tuple[np.ndarray, np.ndarray]:
        """``agent``'s ``x`` as NumPy (a view) and its labels one-hot ``(N_k, C)`` in the
        particles' dtype (for classifiers; else the labels), made once."""
        cache = self.__dict__.setdefault("_numpy_cache", {})
        if agent not in cache:
            x, y = self.data[agent]
            labels = y.numpy()
            n_classes = int(getattr(self.model, "n_classes", 0) or 0)
            if n_classes and labels.ndim == 1 and not np.issubdtype(labels.dtype,
                                                                   np.floating):
                onehot = np.zeros((labels.shape[0], n_classes), dtype=x.numpy().dtype)
                onehot[np.arange(labels.shape[0]), labels] = 1.0
                labels = onehot
            cache[agent] = (x.numpy(), labels)
        return cache[agent]

    def _model_flops(self) -> float:
        fn = getattr(self.model, "flops_per_example", None)
        return float(fn()) if callable(fn) else 0.0

    def _data_score(self, agent: Any, factor: AgentFactor,
                    gen: torch.Generator, steps: int = 1) -> tuple[Score, float]:
        """``(θ ↦ ∇ Σ_batch log p(y|x, θ), s · N_k/(M·α))``: a fresh minibatch per call;
        the score of the data term is their product.

        With a model that has ``log_likelihood_grad(theta, x, y, out=None)`` (the
        classifiers of :mod:`bflnet.learners.models.classifiers`) the gradient is that hand-written
        one, written into one ``(N_p, d)`` buffer that this score reuses across its calls
        (so each call overwrites the previous result: :func:`run_svgd` reads a score's
        output before the next call and keeps none); other models go through autograd
        with a fresh tensor per call. On the NumPy path (small particle sets) the indices
        of the ``steps`` minibatches of the local update are drawn at once
        (:meth:`MinibatchSampler.many_indices`: the same draws)."""
        n_k = self.data[agent][0].shape[0]
        sign = -1.0 if factor.unlearning else 1.0
        scale = sign * n_k / (self.sampler.size(agent) * self.temperature)
        model, sampler = self.model, self.sampler
        grad_fn = getattr(model, "log_likelihood_grad", None)

        numpy_grad = getattr(model, "log_likelihood_grad_numpy", None)
        if callable(numpy_grad) and self.device.type == "cpu" \
                and self.n_particles * self.d <= SMALL_PROBLEM:

            x_all, y_all = self._numpy_data(agent)
            left: list[np.ndarray] = []  # the prefetched minibatches' indices, in order

            def numpy_score(theta: np.ndarray) -> np.ndarray:
                if not left:  # the minibatches of a whole local update in one draw
                    left.extend(reversed(sampler.many_indices(agent, gen, steps).numpy()))
                idx = left.pop()
                return numpy_grad(theta, x_all[idx], y_all[idx])

            numpy_score.is_numpy = True  # type: ignore[attr-defined]
            return numpy_score, scale  # type: ignore[return-value]

        if callable(grad_fn):
            buffer: list[Tensor] = []

            def analytic_score(theta: Tensor) -> Tensor:
                x, y = sampler(agent, gen)
                if not buffer or (buffer[0].shape, buffer[0].dtype, buffer[0].device) != (
                        theta.shape, theta.dtype, theta.device):
                    buffer[:] = [torch.empty(theta.shape, dtype=theta.dtype,
                                             device=theta.device)]
                return grad_fn(theta, x, y, out=buffer[0])

            return analytic_score, scale

        def score(theta: Tensor) -> Tensor:
            x, y = sampler(agent, gen)
            with torch.enable_grad():
                t = theta.detach().requires_grad_(True)
                (grad,) = torch.autograd.grad(model.log_likelihood(t, x, y).sum(), t)
            return grad

        return score, scale


def _numpy_score(score: Any) -> Any:
    """``score`` as a function of NumPy particles (a torch score is wrapped)."""
    if getattr(score, "is_numpy", False):
        return score
    return lambda theta: score(torch.from_numpy(theta)).numpy()
