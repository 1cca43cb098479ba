"""Module A (DAMP), first piece: one linear layer with known inputs, as GAMP.

Layer 1 of the network sees the data ``X`` itself (``U₀ = X``, zero variance), so its
message passing is GAMP with the data as sensing matrix (docs/em-tdamp.md, Sec. 6,
eqs. 6.1-6.8). The unknowns are ``W̃ = [W, b]`` (``(N_out, N_in + 1)``, the bias is the
last column) and the inputs are ``X̃ = [X; 1ᵀ]`` (``(N_in + 1, B)``). The output and prior
denoisers are passed in, so the same loop serves a Gaussian or probit likelihood and a
Gaussian or Module-B prior:

* ``output_moments(p̂, ν_p) -> (ẑ, ν_z)``: posterior of ``z`` under ``N(z; p̂, ν_p)`` and
  the likelihood (e.g. :func:`~bflnet.learners.emtdamp.moments.gaussian_output_moments`);
* ``prior_moments(q̂, ν_q) -> (ŵ, ν_w)``: posterior of ``w`` under the prior and
  ``N(w; q̂, ν_q)`` (e.g. :func:`gaussian_prior_moments`).

Safeguards (BiG-AMP's defaults): ``ν_z/ν_p`` capped at ``ratio_cap`` and ``ν_q`` at
``var_cap``, each clip counted in :class:`LayerGampResult.clips`; damping on ``ŝ``, ``ν_s``
and ``ŵ``. A non-finite quantity stops the run with a :class:`NonFiniteError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    "LayerGampResult",
    "NonFiniteError",
    "check_finite",
    "gaussian_prior_moments",
    "linear_layer_gamp",
]

Denoiser = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


class LayerGampResult(NamedTuple):
    """Posterior means/variances of ``W̃ = [W, b]`` and of ``z``, the ``ŝ`` of the last
    sweep, the iterations run, whether the weights converged, and the clip counts."""

    weight_mean: Tensor
    weight_var: Tensor
    z_mean: Tensor
    z_var: Tensor
    s_hat: Tensor
    iterations: int
    converged: bool
    clips: dict[str, int]


def gaussian_prior_moments(prior_mean: Tensor, prior_var: Tensor) -> Denoiser:
    """The denoiser of a Gaussian prior ``N(w; μ₀, v₀)``: product with ``N(w; q̂, ν_q)``."""

    def denoise(q_mean: Tensor, q_var: Tensor) -> tuple[Tensor, Tensor]:
        var = 1.0 / (1.0 / prior_var + 1.0 / q_var)
        return var * (prior_mean / prior_var + q_mean / q_var), var

    return denoise


class NonFiniteError(ValueError, FloatingPointError):
    """A message passing quantity became NaN or infinite; the message names the layer and
    the quantity (a ``ValueError`` and, for older callers, a ``FloatingPointError``)."""


def check_finite(name: str, value: Tensor, layer: int = 1) -> Tensor:
    """``value`` unchanged if finite everywhere, else :class:`NonFiniteError` naming it."""
    # A finite sum is the cheap common case; an overflowing sum falls back to the full test.
    if not math.isfinite(value.sum().item()) and not bool(torch.isfinite(value).all()):
        raise NonFiniteError(f"layer {layer}: {name} is not finite")
    return value


_finite = check_finite


def linear_layer_gamp(
    inputs: Tensor,
    output_moments: Denoiser,
    prior_moments: Denoiser,
    initial_mean: Tensor,
    initial_var: Tensor,
    *,
    iterations: int = 200,
    damping: float = 1.0,
    tol: float = 1e-10,
    ratio_cap: float = 0.99,
    var_cap: float = 1e6,
) -> LayerGampResult:
    """GAMP for ``z = W̃ X̃`` with ``X̃ = [inputs; 1ᵀ]`` known (eqs. 6.1-6.8).

    ``inputs``: ``(N_in, B)``; ``initial_mean``, ``initial_var``: ``(N_out, N_in + 1)``
    starting ``ŵ``, ``ν_w`` (the prior's moments). ``damping`` is the weight of the new
    value (1 = undamped). Stops when ``max |Δŵ| < tol`` or after ``iterations`` sweeps.
    """
    if inputs.dim() != 2:
        raise ValueError(f"inputs: must be (N_in, B), got shape {tuple(inputs.shape)}")
    if not 0.0 < damping <= 1.0:
        raise ValueError(f"damping: must be in (0, 1], got {damping!r}")
    if not 0.0 < ratio_cap < 1.0:
        raise ValueError(f"ratio_cap: must be in (0, 1), got {ratio_cap!r}")
    if iterations < 1:
        raise ValueError(f"iterations: must be >= 1, got {iterations!r}")
    x = torch.cat([inputs, torch.ones_like(inputs[:1])], dim=0)  # X̃
    if initial_mean.dim() != 2 or initial_mean.shape[1] != x.shape[0]:
        raise ValueError(f"initial_mean: must be (N_out, {x.shape[0]}) with the bias column")
    if initial_var.shape != initial_mean.shape or not bool(torch.all(initial_var > 0)):
        raise ValueError("initial_var: must match initial_mean and be > 0 everywhere")
    if not tol > 0:
        raise ValueError(f"tol: must be > 0, got {tol!r}")
    x2 = x * x
    w_mean, w_var = initial_mean.clone(), initial_var.clone()
    s_hat = torch.zeros(w_mean.shape[0], x.shape[1], dtype=x.dtype)
    s_var = torch.zeros_like(s_hat)
    clips = {"z_to_p_ratio": 0, "q_var": 0}
    converged = False
    for sweep in range(1, iterations + 1):
        p_var = _finite("ν_p", w_var @ x2)  # (6.1); ν_u = 0 on layer 1
        p_hat = w_mean @ x - s_hat * p_var  # (6.2) Onsager correction
        z_mean, z_var = output_moments(p_hat, p_var)  # (6.3)
        ratio = z_var / p_var
        clips["z_to_p_ratio"] += int((ratio > ratio_cap).sum())
        ratio = torch.clamp(ratio, max=ratio_cap)
        s_new = _finite("ŝ", (z_mean - p_hat) / p_var)  # (6.4)
        s_var_new = _finite("ν_s", (1.0 - ratio) / p_var)
        s_hat = damping * s_new + (1.0 - damping) * s_hat if sweep > 1 else s_new
        s_var = damping * s_var_new + (1.0 - damping) * s_var if sweep > 1 else s_var_new
        q_var = 1.0 / (s_var @ x2.T)  # (6.5)
        clips["q_var"] += int((q_var > var_cap).sum())
        q_var = _finite("ν_q", torch.clamp(q_var, max=var_cap))
        q_hat = _finite("q̂", w_mean + q_var * (s_hat @ x.T))  # (6.6)
        w_new, w_var = prior_moments(q_hat, q_var)  # (6.7)
        w_new = damping * _finite("ŵ", w_new) + (1.0 - damping) * w_mean  # (6.8)
        change = float((w_new - w_mean).abs().max())
        w_mean = w_new
        if change < tol:
            converged = True
            break
    p_var = w_var @ x2
    z_mean, z_var = output_moments(w_mean @ x - s_hat * p_var, p_var)
    return LayerGampResult(w_mean, w_var, z_mean, z_var, s_hat, sweep, converged, clips)
