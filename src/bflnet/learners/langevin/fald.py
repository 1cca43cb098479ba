"""Federated averaging Langevin dynamics (FALD) whose last Gaussian noise of a round may come
from the channel: WFALD (Zhang, Liu, Simeone and Zhu, "Bayesian Over-the-Air FedAvg via
Channel Driven Stochastic Gradient Langevin Dynamics") and, with one local step, WFLMC
(Liu and Simeone, "Wireless Federated Langevin Monte Carlo: Repurposing Channel Noise for
Bayesian Sampling and Privacy").

The target is ``p(θ | D) ∝ exp(−Σ_k f_k(θ))`` with ``f_k`` device k's share of the negative
log posterior (its negative log-likelihood plus 1/K of the negative log prior). A round
from the global sample θ:

* device k runs ``local_steps`` steps from θ,
  ``θ_k ← θ_k − η K ∇f_k(θ_k) + sqrt(2 η K) ξ``, except that the **last** step adds no
  noise, and returns its change ``Δ_k = θ_k − θ`` (:meth:`local_update`);
* the protocol delivers an estimate of the mean ``(1/K_a) Σ_active Δ_k`` together with the
  variance per coordinate of the Gaussian noise already on it (0 over ideal links;
  ``N_0 / (a K_a²)`` over the air);
* :meth:`merge` adds only the remainder ``max(0, 2η − channel variance)`` of the Langevin
  noise the last step left out: ``θ ← θ + mean + sqrt(remainder) ξ``.

With ideal links and every device this is FALD (local noises of variance 2ηK averaged over
K devices give 2η per step). With one local step it is the WFLMC update
``θ ← θ − η (K / K_a) Σ_active ∇f_k(θ) + noise``. The learner never sees the channel:
only a mean and how noisy it already is. (The WFALD paper's exact local-noise schedule
was not available offline; this is the standard FALD formulation with the channel noise
standing in for the last step's noise.)

>>> import numpy as np
>>> grads = [lambda th: th - 1.0, lambda th: th + 1.0]     # f = θ², posterior N(0, 1/2)
>>> fald = FALD(grads, step_size=0.1, local_steps=1)
>>> fald.local_update(0, np.zeros(1), np.random.default_rng(0))  # -η K ∇f_0(0)
array([0.2])
>>> fald.noise_target
0.2
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from bflnet.validation.checks import check_real

Gradient = Callable[[np.ndarray], np.ndarray]


class FALD:
    """FALD / WFALD / WFLMC (module docstring): ``grads[k](θ)`` is ∇f_k at ``θ`` (an array
    whose last axis is the parameter; leading axes are independent chains),
    ``step_size`` η, ``local_steps`` per round, ``init_scale`` the standard deviation of
    the initial sample around 0."""

    def __init__(self, grads: Sequence[Gradient], *, step_size: float, local_steps: int = 1,
                 init_scale: float = 1.0) -> None:
        if len(grads) == 0:
            raise ValueError("K: at least one device")
        self.grads = list(grads)
        self.grads_source = grads
        self.K = len(self.grads)
        self.step_size = check_real("step_size", step_size, gt=0, le=1e6)
        if not isinstance(local_steps, int) or not 1 <= local_steps <= 10**6:
            raise ValueError(f"local_steps: must be an integer in [1, 1000000], got "
                             f"{local_steps!r}")
        self.local_steps = local_steps
        self.init_scale = check_real("init_scale", init_scale, ge=0, le=1e6)

    @property
    def noise_target(self) -> float:
        """Variance per coordinate of the Gaussian noise a round's mean needs: 2η."""
        return 2.0 * self.step_size

    def init(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """The initial sample(s), ``init_scale`` times standard normals of ``shape``."""
        return self.init_scale * rng.standard_normal(shape)

    def local_update(self, agent: int, theta: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
        """Device ``agent``'s change ``Δ_k`` after its local steps from ``theta``."""
        eta_k = self.step_size * self.K
        local = np.array(theta, dtype=np.float64, copy=True)
        grad = self.grads[agent]
        for step in range(self.local_steps):
            local -= eta_k * grad(local)
            if step < self.local_steps - 1:
                local += math.sqrt(2.0 * eta_k) * rng.standard_normal(local.shape)
        return local - theta

    def local_updates(self, theta: np.ndarray,
                      rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """Every device's change, ``(..., K, d)``: :meth:`local_update` of each, at once
        when the gradients have a ``batched`` form (the same draws from each device's
        stream ``rngs[k]``)."""
        batched = getattr(self.grads_source, "batched", None)
        if batched is None:
            return np.stack([self.local_update(k, theta, rngs[k]) for k in range(self.K)],
                            axis=-2)
        eta_k = self.step_size * self.K
        start = np.repeat(np.expand_dims(theta, -2), self.K, axis=-2)
        local = start.copy()
        for step in range(self.local_steps):
            local -= eta_k * batched(local)
            if step < self.local_steps - 1:
                noise = np.stack([rngs[k].standard_normal(theta.shape)
                                  for k in range(self.K)], axis=-2)
                local += math.sqrt(2.0 * eta_k) * noise
        return local - start

    def merge(self, theta: np.ndarray, mean_update: np.ndarray, channel_var: float,
              rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """The next sample from the delivered ``mean_update`` already carrying Gaussian
        noise of variance ``channel_var`` per coordinate, and the variance added here."""
        if not channel_var >= 0:
            raise ValueError(f"channel_var: must be a number >= 0, got {channel_var!r}")
        added = self.noise_target - channel_var
        if added <= 1e-9 * self.noise_target:  # the channel supplied it (up to rounding)
            added = 0.0
        new = theta + mean_update
        if added > 0:
            new = new + math.sqrt(added) * rng.standard_normal(new.shape)
        if not np.isfinite(new).all():
            raise ValueError(f"FALD: the sample is no longer finite: {_why(theta, mean_update)}")
        return new, added


#: A sample coordinate this large before an update means the chain was running away.
_RUNAWAY = 1e100


def _why(theta: np.ndarray, mean_update: np.ndarray) -> str:
    """What made the new sample non-finite, as the numbers say: a chain that had grown
    without bound (a step too large for the gradients), an update that was itself not
    finite, or a finite sample and update whose sum overflowed."""
    before = float(np.max(np.abs(theta))) if np.size(theta) else 0.0
    finite = bool(np.isfinite(mean_update).all())
    size = float(np.max(np.abs(mean_update))) if finite and np.size(mean_update) else math.inf
    if before >= _RUNAWAY or (finite and size >= _RUNAWAY):
        return (f"the chain grew without bound (largest |coordinate| {before:.3g} before this "
                f"round, largest |update| {size:.3g}): step_size is too large for these "
                f"gradients")
    if not finite:
        return (f"this round's mean update is not finite (largest |coordinate| of the "
                f"sample before it {before:.3g}): the devices' steps or the uplink overflowed")
    return (f"the sample (largest |coordinate| {before:.3g}) plus this round's update "
            f"(largest |coordinate| {size:.3g}) and its noise overflowed")


class LinearGaussianGrads(Sequence[Gradient]):
    """∇f_k of Bayesian linear regression ``y = x θ + N(0, noise_var)``, prior
    ``N(0, prior_var I)``, device k holding the rows ``parts[k]``: ``x_kᵀ(x_k θ − y_k) /
    noise_var + θ / (K prior_var)``, from the sufficient statistics ``x_kᵀx_k`` and
    ``x_kᵀy_k``. ``self[k](θ)`` is one device's (broadcast over leading axes of θ);
    :meth:`batched` every device's at once."""

    def __init__(self, x: np.ndarray, y: np.ndarray, parts: Sequence[np.ndarray], *,
                 prior_var: float = 1.0, noise_var: float = 1.0) -> None:
        self.K = len(parts)
        self.gram = np.stack([x[p].T @ x[p] for p in parts]) / noise_var  # (K, d, d)
        self.xty = np.stack([x[p].T @ y[p] for p in parts]) / noise_var   # (K, d)
        self.prior_prec = 1.0 / (self.K * prior_var)

    def __len__(self) -> int:
        return self.K

    def __getitem__(self, k: int) -> Gradient:  # type: ignore[override]
        gram, xty, prec = self.gram[k], self.xty[k], self.prior_prec
        return lambda theta: theta @ gram - xty + prec * theta

    def batched(self, local: np.ndarray) -> np.ndarray:
        """``(..., K, d)``: device k's gradient at ``local[..., k, :]``."""
        return (np.einsum("kij,...kj->...ki", self.gram, local) - self.xty
                + self.prior_prec * local)


def gaussian_linear_grads(x: np.ndarray, y: np.ndarray, parts: Sequence[np.ndarray], *,
                          prior_var: float = 1.0, noise_var: float = 1.0
                          ) -> LinearGaussianGrads:
    """:class:`LinearGaussianGrads` of the data."""
    return LinearGaussianGrads(x, y, parts, prior_var=prior_var, noise_var=noise_var)


def fald_round_map(grads: LinearGaussianGrads, step_size: float, local_steps: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One FALD round over ideal links on these gradients as an affine Gaussian map,
    ``θ' = M θ + c + N(0, Q)``: device k's step ``θ ← B_k θ + η K b_k`` (``B_k = I − η K
    G_k``, ``G_k`` its gradient's matrix, ``b_k`` its ``x_kᵀ y_k``) with noise
    ``sqrt(2 η K) ξ`` on all but the last step, the mean over the K devices, and the
    merge's ``sqrt(2 η) ξ``: ``M = mean_k B_k^L``, ``c = mean_k Σ_{j<L} B_k^j η K b_k``,
    ``Q = 2η I + (2 η K / K²) Σ_k Σ_{1≤j<L} B_k^j B_k^jᵀ``."""
    d = grads.gram.shape[-1]
    eye = np.eye(d)
    eta_k = step_size * grads.K
    M, c, Q = np.zeros((d, d)), np.zeros(d), 2.0 * step_size * eye
    for gram, xty in zip(grads.gram, grads.xty, strict=True):
        B = eye - eta_k * (gram + grads.prior_prec * eye)
        power = eye
        for j in range(local_steps):
            if j > 0:
                Q += 2.0 * eta_k * power @ power.T / grads.K ** 2
            c += power @ (eta_k * xty) / grads.K
            power = B @ power
        M += power / grads.K
    return M, c, Q


def fald_chain_laws(grads: LinearGaussianGrads, step_size: float, local_steps: int,
                    rounds: int, init_var: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The exact law of noiseless FALD's sample after each round 0..``rounds`` from
    ``N(0, init_var I)`` (:func:`fald_round_map`): means ``(rounds + 1, d)`` and
    covariances ``(rounds + 1, d, d)``."""
    M, c, Q = fald_round_map(grads, step_size, local_steps)
    d = c.size
    means, covs = np.zeros((rounds + 1, d)), np.zeros((rounds + 1, d, d))
    covs[0] = init_var * np.eye(d)
    for r in range(1, rounds + 1):
        means[r] = M @ means[r - 1] + c
        cov = M @ covs[r - 1] @ M.T + Q
        covs[r] = (cov + cov.T) / 2.0
    return means, covs


def gaussian_linear_posterior(x: np.ndarray, y: np.ndarray, *, prior_var: float = 1.0,
                              noise_var: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior ``(mean, cov)`` of that model: ``cov = (xᵀx / noise_var + I /
    prior_var)⁻¹``, ``mean = cov xᵀ y / noise_var``."""
    precision = x.T @ x / noise_var + np.eye(x.shape[1]) / prior_var
    cov = np.linalg.inv(precision)
    cov = (cov + cov.T) / 2.0
    return cov @ (x.T @ y) / noise_var, cov


def psd_sqrt(m: np.ndarray) -> np.ndarray:
    """The symmetric square root of a symmetric positive semi-definite matrix."""
    w, v = np.linalg.eigh((m + m.T) / 2.0)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def gaussian_w2_squared(mean_a: np.ndarray, cov_a: np.ndarray, mean_b: np.ndarray,
                        cov_b: np.ndarray) -> float:
    """Squared 2-Wasserstein distance between two Gaussians:
    ``|m_a − m_b|² + tr(Σ_a + Σ_b − 2 (Σ_a^½ Σ_b Σ_a^½)^½)`` (≥ 0)."""
    ra = psd_sqrt(cov_a)
    cross = psd_sqrt(ra @ cov_b @ ra)
    value = float(np.sum((mean_a - mean_b) ** 2)
                  + np.trace(cov_a) + np.trace(cov_b) - 2.0 * np.trace(cross))
    return max(value, 0.0)
