"""Conjugate Gaussian toy models with closed-form posteriors, for testing particle learners.

They follow the likelihood part of :class:`bflnet.learners.models.classifiers.ParticleModel`
(``d``, ``log_prior``, ``log_likelihood``, ``init_particles``, ``flops_per_example``); they
are regression models, so they have no ``logits``/``predict_proba`` (``n_classes = 0``).

>>> model = GaussianMeanModel(d=2, prior_var=4.0, noise_var=1.0)
>>> mean, var = model.posterior(torch.ones(3, 2))
>>> mean.tolist(), round(var, 4)          # precision 1/4 + 3 = 3.25
([0.9230769276618958, 0.9230769276618958], 0.3077)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bflnet.validation.checks import check_real

__all__ = ["GaussianMeanModel", "LinearGaussianModel"]


class GaussianMeanModel:
    """Observations ``z_b ~ N(θ, noise_var·I)`` (passed as ``x``, ``(B, d)``; ``y`` is
    ignored) with prior ``θ ~ N(prior_mean·1, prior_var·I)``."""

    n_classes = 0

    def __init__(self, d: int, prior_mean: float = 0.0, prior_var: float = 1.0,
                 noise_var: float = 1.0, *, dtype: torch.dtype = torch.float32) -> None:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"d: must be an integer >= 1, got {d!r}")
        self.d = d
        self.prior_mean = float(prior_mean)
        self.prior_var = check_real("prior_var", prior_var, gt=0)
        self.noise_var = check_real("noise_var", noise_var, gt=0)
        self.dtype = dtype

    def log_prior(self, theta: Tensor) -> Tensor:
        """``(N,)`` log density of the Gaussian prior."""
        return (-0.5 / self.prior_var) * (theta - self.prior_mean).square().sum(1) \
            - 0.5 * self.d * math.log(2 * math.pi * self.prior_var)

    def log_likelihood(self, theta: Tensor, x: Tensor, y: Tensor | None = None) -> Tensor:
        """``(N,)``: ``Σ_b log N(x_b; θ_n, noise_var·I)`` without an ``(N, B, d)`` tensor."""
        b = x.shape[0]
        sq = x.square().sum() - 2.0 * theta @ x.sum(0) + b * theta.square().sum(1)
        return (-0.5 / self.noise_var) * sq - 0.5 * b * self.d * math.log(
            2 * math.pi * self.noise_var)

    def log_likelihood_grad(self, theta: Tensor, x: Tensor, y: Tensor | None = None,
                            out: Tensor | None = None) -> Tensor:
        """``(N, d)``: ``∇_θ log_likelihood(theta, x).sum()`` = Σ_b (x_b − θ_n) / noise_var."""
        grad = (x.sum(0) - x.shape[0] * theta) / self.noise_var
        if out is None:
            return grad
        return out.copy_(grad)

    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` draws from the prior."""
        draw = torch.randn(n, self.d, generator=generator, dtype=self.dtype)
        return self.prior_mean + math.sqrt(self.prior_var) * draw

    def flops_per_example(self) -> float:
        """≈ forward + backward FLOPs per example and particle."""
        return 6.0 * self.d

    def posterior(self, x: Tensor) -> tuple[Tensor, float]:
        """``(mean (d,), variance)`` of the posterior given all observations ``x``; the
        posterior covariance is ``variance · I``."""
        precision = 1.0 / self.prior_var + x.shape[0] / self.noise_var
        mean = (self.prior_mean / self.prior_var + x.sum(0) / self.noise_var) / precision
        return mean, 1.0 / precision


class LinearGaussianModel:
    """Bayesian linear regression ``y_b = x_b·θ + ε``, ``ε ~ N(0, noise_var)``, with prior
    ``θ ~ N(0, prior_var·I)``; ``x`` is ``(B, d)``, ``y`` is ``(B,)``."""

    n_classes = 0

    def __init__(self, d: int, prior_var: float = 1.0, noise_var: float = 1.0, *,
                 dtype: torch.dtype = torch.float32) -> None:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"d: must be an integer >= 1, got {d!r}")
        self.d = d
        self.prior_var = check_real("prior_var", prior_var, gt=0)
        self.noise_var = check_real("noise_var", noise_var, gt=0)
        self.dtype = dtype

    def log_prior(self, theta: Tensor) -> Tensor:
        """``(N,)`` log density of the Gaussian prior."""
        return (-0.5 / self.prior_var) * theta.square().sum(1) \
            - 0.5 * self.d * math.log(2 * math.pi * self.prior_var)

    def log_likelihood(self, theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``(N,)``: ``Σ_b log N(y_b; x_b·θ_n, noise_var)``."""
        resid = y.to(theta.dtype) - theta @ x.to(theta.dtype).T
        return (-0.5 / self.noise_var) * resid.square().sum(1) - 0.5 * x.shape[0] * math.log(
            2 * math.pi * self.noise_var)

    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` draws from the prior."""
        draw = torch.randn(n, self.d, generator=generator, dtype=self.dtype)
        return math.sqrt(self.prior_var) * draw

    def flops_per_example(self) -> float:
        """≈ forward + backward FLOPs per example and particle."""
        return 6.0 * self.d

    def posterior(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """``(mean (d,), covariance (d, d))`` of the posterior (float64)."""
        x64, y64 = x.double(), y.double()
        precision = x64.T @ x64 / self.noise_var + torch.eye(self.d, dtype=torch.float64) \
            / self.prior_var
        cov = torch.linalg.inv(precision)
        return cov @ (x64.T @ y64) / self.noise_var, cov
