"""DSVGD (Kassab & Simeone 2022) and Forget-SVGD (Gong et al. 2022), as in the
compressed-DSVGD letter, Sec. II.

The **global state** is the ``(N_p, d)`` particle tensor Θ (float32 torch by default) that
represents ``q(θ)`` through its KDE. The scheduled agent ``k``:

1. runs ``L = local_iters`` AdaGrad-SVGD steps (eqs. 5-6) from Θ^(i−1) on the tilted target
   of eq. 7 with the sum loss of note 1::

       log p̃_k(θ) = log q^(i−1)(θ) − log t_k^(i−1)(θ)
                    + s · (N_k / (M·α)) · Σ_{b∈batch} log p(y_b | x_b, θ)

   with ``s = +1`` (learning) or ``s = −1`` (Forget-SVGD, eq. 8 and note 2), ``α`` the
   ``temperature`` and a fresh minibatch of ``M = min(batch_size, N_k)`` examples per step;
2. sends ``ΔΘ = Θ^[L] − Θ^(i−1)`` (``Update.payload``, ``(N_p, d)``: what the letter
   compresses, Sec. III); the server sets ``Θ^(i) = Θ^(i−1) + ΔΘ`` (``merge``);
3. distils its approximate likelihood: local particles move by ``local_particle_iters``
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
only sees at its next download. The new factor is committed when ``merge`` receives the
agent's update: an update lost on the uplink leaves ``t_k`` unchanged, so ``q = p0 ∏ t_k``
keeps holding between server and agents (``local_update`` computes, ``merge`` commits).

**Several agents per round** (e.g. ``AllAgents``): ``merge`` averages their ΔΘ. The letter
schedules one agent per iteration; averaging is a damped PVI-style step and each agent's
factor bookkeeping then assumes its own ΔΘ was applied in full.

**Forget-SVGD.** ``forget(agents)`` switches those agents to unlearning (``s = −1``) with
a fresh factor ``t_k ≡ 1`` (the letter initialises new local particles for the agents in
U); their learning-phase factor is discarded. The learner does not restrict scheduling:
schedule only the forgetting agents (as the letter does) with the protocol's selector;
others keep running ordinary DSVGD updates. Calling ``forget`` again resets the factor.

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
scaled up from tiny gradients (docs/reproductions.md, Forget-SVGD).

Complexity per SVGD step: the model's forward/backward on ``N_p × M`` examples plus two
GEMMs of ``N_p × (4 N_p) × d`` and ``N_p × (5 N_p) × d`` (SVGD kernel and the three KDEs),
see :func:`bflnet.learners.svgd.run_svgd`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.learners.svgd import (
    DEFAULT_KDE_BANDWIDTH,
    AdaGrad,
    ConstantStep,
    KDETerm,
    Score,
    kde_log_density,
    run_svgd,
    svgd_iteration_flops,
)
from bflnet.simulator.compute import Work

__all__ = ["DSVGD", "STEP_RULES", "AgentFactor", "ConstantStep"]

STEP_RULES = ("adagrad", "constant")
"""SVGD step rules: AdaGrad (fresh each local update) or a constant step size."""


@dataclass(frozen=True)
class AgentFactor:
    """Agent ``k``'s approximate likelihood ``t_k = t̃_k / r_k`` as two particle sets
    (``None`` while ``t_k ≡ 1``), its mode and the number of committed updates."""

    local: Tensor | None = None
    reference: Tensor | None = None
    unlearning: bool = False
    visits: int = 0


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}: must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not (
            np.isfinite(value) and value > 0):
        raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")
    return float(value)


def torch_generator(rng: np.random.Generator | None, device: torch.device) -> torch.Generator:
    """A torch generator seeded from ``rng`` (a fixed seed 0 when ``rng`` is None)."""
    seed = 0 if rng is None else int(rng.integers(0, 2**63 - 1))
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def as_agent_data(agent_data: Mapping[Any, tuple[Any, Any]], dtype: torch.dtype,
                  device: torch.device) -> dict[Any, tuple[Tensor, Tensor]]:
    """Agents' ``(x, y)`` as tensors on ``device`` (``x`` in ``dtype``), validated."""
    if not agent_data:
        raise ValueError("agent_data: must hold at least one agent")
    out = {}
    for agent, pair in agent_data.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"agent_data: agent {agent!r} must map to (x, y), got {type(pair)}")
        x = torch.as_tensor(pair[0], device=device)
        x = x.to(dtype) if x.is_floating_point() else x
        y = torch.as_tensor(pair[1], device=device)
        if x.ndim < 1 or x.shape[0] < 1 or y.shape[:1] != x.shape[:1]:
            raise ValueError(f"agent_data: agent {agent!r} needs x, y with the same number "
                             f"(>= 1) of rows, got {tuple(x.shape)} and {tuple(y.shape)}")
        out[agent] = (x, y)
    return out


class MinibatchSampler:
    """Per-agent minibatches: ``M = min(batch_size, N_k)`` examples drawn without
    replacement with the agent's own generator (the whole set, in order, when ``M = N_k``)."""

    def __init__(self, data: dict[Any, tuple[Tensor, Tensor]], batch_size: int) -> None:
        self.data = data
        self.batch_size = batch_size
        self.generators: dict[Any, torch.Generator] = {}

    def seed(self, rng: np.random.Generator | None) -> None:
        """One torch generator per agent, seeded from ``rng`` in the agents' order."""
        self.generators = {a: torch_generator(rng, torch.device("cpu")) for a in self.data}

    def size(self, agent: Any) -> int:
        """``M`` for ``agent``."""
        return min(self.batch_size, self.data[agent][0].shape[0])

    def __call__(self, agent: Any) -> tuple[Tensor, Tensor]:
        x, y = self.data[agent]
        n = x.shape[0]
        if self.batch_size >= n:
            return x, y
        idx = torch.randperm(n, generator=self.generators[agent])[:self.batch_size]
        idx = idx.to(x.device)
        return x[idx], y[idx]


def apply_mean_delta(state: Tensor, updates: Sequence[Update], context: str,
                     what: str) -> Tensor:
    """``state`` plus the mean of the updates' payloads (deltas of ``state``'s shape);
    one-line errors naming the agent for a wrong shape, or the agents for a non-finite
    result."""
    deltas = []
    for u in updates:
        delta = torch.as_tensor(u.payload, dtype=state.dtype, device=state.device)
        if delta.shape != state.shape:
            raise ValueError(f"{context}: update of agent {u.agent!r} has shape "
                             f"{tuple(delta.shape)}, expected {tuple(state.shape)}")
        deltas.append(delta)
    new = state + (deltas[0] if len(deltas) == 1 else torch.stack(deltas).mean(0))
    if not bool(torch.isfinite(new).all()):
        raise ValueError(f"{context}: non-finite {what} after the updates of agents "
                         f"{[u.agent for u in updates]!r}")
    return new


def check_particles(state: Any, shape: tuple[int, int], dtype: torch.dtype,
                    device: torch.device, who: str) -> Tensor:
    """``state`` as a finite ``shape`` tensor (``ValueError`` naming ``who`` otherwise)."""
    theta = torch.as_tensor(state, dtype=dtype, device=device)
    if tuple(theta.shape) != shape:
        raise ValueError(f"{who}: expected particles of shape {shape}, got {tuple(theta.shape)}")
    if not bool(torch.isfinite(theta).all()):
        raise ValueError(f"{who}: particles contain NaN or inf")
    return theta


class DSVGD(GlobalStateLearner):
    """Distributed SVGD with Forget-SVGD unlearning (module docs give the maths).

    >>> from bflnet.learners.toy_models import GaussianMeanModel
    >>> model = GaussianMeanModel(d=1, prior_var=4.0)
    >>> data = {k: (torch.full((5, 1), 1.0), torch.zeros(5)) for k in range(2)}
    >>> learner = DSVGD(model, data, 20, local_iters=100, step_size=0.05)
    >>> theta = learner.init(np.random.default_rng(0))
    >>> for k in (0, 1, 0, 1):
    ...     theta = learner.merge(theta, [learner.local_update(k, theta)])
    >>> round(float(theta.mean()), 1)     # posterior mean 10/(1/4 + 10) ≈ 0.98
    1.0
    """

    def __init__(self, model: Any, agent_data: Mapping[Any, tuple[Any, Any]],
                 n_particles: int = 10, *, local_iters: int = 200, step_size: float = 0.05,
                 kde_bandwidth: float = DEFAULT_KDE_BANDWIDTH, temperature: float = 1.0,
                 batch_size: int = 100, local_particle_iters: int | None = None,
                 adagrad_decay: float = 0.9, adagrad_fudge: float = 1e-6,
                 svgd_bandwidth: float | None = None, step_rule: str = "adagrad",
                 eval_data: tuple[Any, Any] | None = None, eval_per_class: bool = False,
                 initial_particles: Tensor | None = None,
                 dtype: torch.dtype = torch.float32,
                 device: str | torch.device | None = None) -> None:
        self.model = model
        self.n_particles = _check_int("n_particles", n_particles, 1)
        self.local_iters = _check_int("local_iters", local_iters, 1)
        self.local_particle_iters = self.local_iters if local_particle_iters is None else \
            _check_int("local_particle_iters", local_particle_iters, 0)
        self.step_size = _check_positive("step_size", step_size)
        self.kde_bandwidth = _check_positive("kde_bandwidth", kde_bandwidth)
        self.temperature = _check_positive("temperature", temperature)
        self.batch_size = _check_int("batch_size", batch_size, 1)
        AdaGrad(self.step_size, adagrad_decay, adagrad_fudge)  # validates
        if step_rule not in STEP_RULES:
            raise ValueError(f"step_rule: must be one of {', '.join(STEP_RULES)}, "
                             f"got {step_rule!r}")
        self.step_rule = step_rule
        self.adagrad_decay, self.adagrad_fudge = float(adagrad_decay), float(adagrad_fudge)
        self.svgd_bandwidth = None if svgd_bandwidth is None else _check_positive(
            "svgd_bandwidth", svgd_bandwidth)
        self.dtype = dtype
        self.device = torch.device(device if device is not None
                                   else getattr(model, "device", "cpu"))
        self.d = _check_int("model.d", model.d, 1)
        self.shape = (self.n_particles, self.d)
        self.data = as_agent_data(agent_data, dtype, self.device)
        self.sampler = MinibatchSampler(self.data, self.batch_size)
        self.eval_data = eval_data
        self.eval_per_class = bool(eval_per_class)
        self.initial_particles = None if initial_particles is None else check_particles(
            initial_particles, self.shape, dtype, self.device, "initial_particles").clone()
        self.factors: dict[Any, AgentFactor] = {}
        self._pending: dict[Any, AgentFactor] = {}

    # -- interface ----------------------------------------------------------------------
    @property
    def agents(self) -> list[Any]:
        """Agents with data, in ``agent_data`` order."""
        return list(self.data)

    @property
    def forgotten(self) -> set[Any]:
        """Agents currently in unlearning mode."""
        return {a for a, f in self.factors.items() if f.unlearning}

    def init(self, rng: np.random.Generator | None) -> Tensor:
        """Θ^(0): ``model.init_particles`` (or ``initial_particles``); every ``t_k ≡ 1``.
        The particle draw and each agent's minibatch generator are seeded from ``rng``."""
        gen = torch_generator(rng, torch.device("cpu"))
        self.sampler.seed(rng)
        self.factors = {a: AgentFactor() for a in self.data}
        self._pending = {}
        if self.initial_particles is not None:
            return self.initial_particles.clone()
        theta = self.model.init_particles(self.n_particles, gen)
        return check_particles(theta, self.shape, self.dtype, self.device,
                               "model.init_particles")

    def local_update(self, agent: Any, state: Any) -> Update:
        """Steps 2-3 for ``agent`` on the downloaded Θ^(i−1): payload ``ΔΘ``; the new local
        factor is committed by :meth:`merge`."""
        if agent not in self.data:
            raise ValueError(f"agent: no data for agent {agent!r}")
        if not self.factors:
            raise RuntimeError("DSVGD: call init(rng) before local_update")
        factor = self.factors[agent]
        mode = "unlearning" if factor.unlearning else "learning"
        where = f"agent {agent!r}, {mode} update {factor.visits + 1}"
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                f"DSVGD ({where}): downloaded global state")
        terms = [KDETerm(theta, 1.0)]
        if factor.local is not None:
            terms += [KDETerm(factor.local, -1.0), KDETerm(factor.reference, 1.0)]
        score, scale = self._data_score(agent, factor)
        new = run_svgd(theta, self.local_iters, score=score, score_scale=scale,
                       kde_terms=terms, context=f" ({where}, tilted target)",
                       **self._svgd_kwargs())
        flops = self.local_iters * (
            svgd_iteration_flops(self.n_particles, self.d, len(terms) * self.n_particles)
            + self.n_particles * self.sampler.size(agent) * self._model_flops())
        if factor.local is None:  # t̃_k^(0) = r_k = q^(i-1): the target is q^(i) itself
            local, reference = new.clone(), theta.clone()
        else:
            local = run_svgd(factor.local, self.local_particle_iters,
                             kde_terms=[KDETerm(new, 1.0), KDETerm(theta, -1.0),
                                        KDETerm(factor.local, 1.0)],
                             context=f" ({where}, distillation of the local particles)",
                             **self._svgd_kwargs())
            reference = factor.reference
            flops += self.local_particle_iters * svgd_iteration_flops(
                self.n_particles, self.d, 3 * self.n_particles, with_score=False)
        self._pending[agent] = AgentFactor(local, reference, factor.unlearning,
                                           factor.visits + 1)
        return Update(new - theta, Work(steps=self.local_iters, flops=flops), agent)

    def merge(self, state: Any, updates: Sequence[Update]) -> Tensor:
        """``Θ + ΔΘ`` (the mean ΔΘ when several updates arrive); commits the factors of
        the agents whose updates arrived."""
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                "DSVGD merge: global state")
        if not updates:
            return theta
        new = apply_mean_delta(theta, updates, "DSVGD merge", "global particles")
        for u in updates:
            pending = self._pending.pop(u.agent, None)
            if pending is not None:
                self.factors[u.agent] = pending
        return new

    def forget(self, agents: Sequence[Any]) -> None:
        """Forget-SVGD: ``agents`` switch to unlearning with a fresh factor ``t_k ≡ 1``."""
        if not self.factors:
            raise RuntimeError("DSVGD: call init(rng) before forget")
        agents = list(agents)
        unknown = [a for a in agents if a not in self.data]
        if unknown:
            raise ValueError(f"agents: no data for {unknown!r}")
        for a in agents:
            self.factors[a] = AgentFactor(unlearning=True)
            self._pending.pop(a, None)

    def evaluate(self, state: Any) -> dict[str, float]:
        """Posterior-predictive metrics of Θ on ``eval_data`` (accuracy, ece, nll, brier,
        and ``acc_class_<c>`` with ``eval_per_class``); ``{}`` without ``eval_data``."""
        if self.eval_data is None:
            return {}
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                "DSVGD evaluate: global state")
        return predictive_evaluation(self.model, theta, self.eval_data, self.eval_per_class)

    def cavity_log_density(self, agent: Any, state: Any, theta: Tensor) -> Tensor:
        """``(M,)``: ``log q(θ) − log t_k(θ)`` at ``theta`` ``(M, d)``, the KDE part of
        ``agent``'s tilted target given the global particles ``state`` and its committed
        factor (``log KDE(Θ) − log KDE(t̃_k) + log KDE(r_k)``)."""
        particles = check_particles(state, self.shape, self.dtype, self.device, "state")
        out = kde_log_density(theta, particles, self.kde_bandwidth)
        factor = self.factors[agent]
        if factor.local is not None:
            assert factor.reference is not None
            out = out - kde_log_density(theta, factor.local, self.kde_bandwidth) \
                + kde_log_density(theta, factor.reference, self.kde_bandwidth)
        return out

    # -- helpers ------------------------------------------------------------------------
    def _svgd_kwargs(self) -> dict[str, Any]:
        optimizer = ConstantStep(self.step_size) if self.step_rule == "constant" else None
        return dict(kde_bandwidth=self.kde_bandwidth, step_size=self.step_size,
                    decay=self.adagrad_decay, fudge=self.adagrad_fudge,
                    bandwidth=self.svgd_bandwidth, optimizer=optimizer)

    def _model_flops(self) -> float:
        fn = getattr(self.model, "flops_per_example", None)
        return float(fn()) if callable(fn) else 0.0

    def _data_score(self, agent: Any, factor: AgentFactor) -> tuple[Score, float]:
        """``(θ ↦ ∇ Σ_batch log p(y|x, θ), s · N_k/(M·α))``: a fresh minibatch per call;
        the score of the data term is their product.

        With a model that has ``log_likelihood_grad(theta, x, y, out=None)`` (the
        classifiers of :mod:`bflnet.learners.models`) the gradient is that hand-written
        one, written into one ``(N_p, d)`` buffer that this score reuses across its calls
        (so each call overwrites the previous result: :func:`run_svgd` reads a score's
        output before the next call and keeps none); other models go through autograd
        with a fresh tensor per call."""
        n_k = self.data[agent][0].shape[0]
        sign = -1.0 if factor.unlearning else 1.0
        scale = sign * n_k / (self.sampler.size(agent) * self.temperature)
        model, sampler = self.model, self.sampler
        grad_fn = getattr(model, "log_likelihood_grad", None)

        if callable(grad_fn):
            buffer: list[Tensor] = []

            def analytic_score(theta: Tensor) -> Tensor:
                x, y = sampler(agent)
                if not buffer or (buffer[0].shape, buffer[0].dtype, buffer[0].device) != (
                        theta.shape, theta.dtype, theta.device):
                    buffer[:] = [torch.empty(theta.shape, dtype=theta.dtype,
                                             device=theta.device)]
                return grad_fn(theta, x, y, out=buffer[0])

            return analytic_score, scale

        def score(theta: Tensor) -> Tensor:
            x, y = sampler(agent)
            with torch.enable_grad():
                t = theta.detach().requires_grad_(True)
                (grad,) = torch.autograd.grad(model.log_likelihood(t, x, y).sum(), t)
            return grad

        return score, scale


def predictive_evaluation(model: Any, theta: Tensor, eval_data: tuple[Any, Any],
                          per_class: bool) -> dict[str, float]:
    """:func:`bflnet.learners.evaluation.predictive_metrics` (plus per-class accuracy)."""
    from bflnet.learners.evaluation import (
        per_class_accuracy,
        posterior_predictive,
        predictive_metrics,
    )

    x, y = eval_data
    metrics = predictive_metrics(model, theta, x, y)
    if per_class:
        probs = posterior_predictive(model, theta, x)
        acc = per_class_accuracy(probs, y, model.n_classes)
        metrics.update({f"acc_class_{c}": float(a) for c, a in enumerate(acc)})
    return metrics
