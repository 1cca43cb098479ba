"""Posterior moments of EM-TDAMP's nonlinear nodes (docs/em-tdamp.md, Sec. 2).

All functions are batched elementwise torch code (any broadcastable shapes, float64
advised). Gaussian messages towards a node from *below* (the forward message
``N(z; mean, var)``) are in mean/variance form, since their variance is always positive;
messages from *above* that may be flat (the backward message on a ReLU output, which
starts at zero precision) are in precision form ``exp(−precision·u²/2 + shift·u)``, so
that ``precision = 0`` is an ordinary value, not a limit.

* :func:`relu_moments` — ReLU node ``u = max(0, z)`` (eqs. 2.1-2.6);
* :func:`probit_moments` — a Gaussian tilted by a probit factor (eqs. 2.7-2.9);
* :func:`probit_product_moments` — the probit-product output node, paper eq. 6 and
  Appendix A2 (eqs. 2.10-2.14);
* :func:`gaussian_output_moments` — the Gaussian output node, paper eq. 5 (eq. 2.15).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    "ProbitProductMoments",
    "ReluMoments",
    "gaussian_output_moments",
    "inverse_mills",
    "probit_moments",
    "probit_product_moments",
    "relu_moments",
]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_ASYMPTOTIC_BELOW = -45.0  # a < this: series for a + λ and 1 − λ(λ + a) (cancellation)


class ReluMoments(NamedTuple):
    """Posterior means and variances of ``u = max(0, z)`` and of ``z``; ``active_prob``
    is the posterior probability that ``z > 0``."""

    u_mean: Tensor
    u_var: Tensor
    z_mean: Tensor
    z_var: Tensor
    active_prob: Tensor


class ProbitProductMoments(NamedTuple):
    """Posterior means and variances of the output ``z`` (``(C, B)``) and the number of
    extrinsic precisions clipped at zero (eq. 2.11)."""

    mean: Tensor
    var: Tensor
    clipped: int


def _check_positive(name: str, value: Tensor) -> None:
    if not bool(torch.all(value > 0)) or not bool(torch.all(torch.isfinite(value))):
        raise ValueError(f"{name}: must be finite and > 0 everywhere")


def inverse_mills(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(λ, a + λ, 1 − λ(λ + a))`` with ``λ = φ(a)/Φ(a)``, accurate for every ``a``.

    ``N(m, s²)`` truncated to ``x > 0`` has, with ``a = m/s``, mean ``s(a + λ)`` and
    variance ``s²(1 − λ(λ + a))`` (eq. 2.2). ``λ`` comes from ``erfcx`` (no ``0/0``);
    below ``a = −45`` the two differences lose digits and their asymptotic series (to
    ``a⁻⁷``, ``a⁻⁸``) are used. Relative error: ``λ`` 1e-13, ``a + λ`` 1e-11,
    ``1 − λ(λ + a)`` 2e-9 (worst near ``a = −45``).
    """
    lam = _SQRT_2_OVER_PI / torch.special.erfcx(-a / math.sqrt(2.0))
    shifted = a + lam
    var_factor = 1.0 - lam * shifted
    t = torch.clamp(-a, min=-_ASYMPTOTIC_BELOW)
    t2 = t * t
    shifted_series = (1.0 - (2.0 - (10.0 - 74.0 / t2) / t2) / t2) / t
    var_series = (1.0 - (6.0 - (50.0 - 518.0 / t2) / t2) / t2) / t2
    far = a < _ASYMPTOTIC_BELOW
    return lam, torch.where(far, shifted_series, shifted), torch.where(far, var_series, var_factor)


def relu_moments(
    forward_mean: Tensor, forward_var: Tensor, backward_precision: Tensor, backward_shift: Tensor
) -> ReluMoments:
    """Posterior of a ReLU node ``u = max(0, z)`` (eqs. 2.1-2.6).

    ``forward_mean``, ``forward_var``: the message ``N(z; m_f, v_f)`` from the layer below
    (``v_f > 0``). ``backward_precision`` (``Λ ≥ 0``), ``backward_shift`` (``h``): the
    message ``exp(−Λu²/2 + hu)`` on ``u`` from the layer above, i.e. ``N(u; h/Λ, 1/Λ)``;
    ``Λ = h = 0`` (the first forward sweep) gives the moments of ``max(0, z)`` under the
    forward message alone, exactly.
    """
    _check_positive("forward_var", forward_var)
    if not bool(torch.all(backward_precision >= 0)) or not bool(
        torch.all(torch.isfinite(backward_precision))
    ):
        raise ValueError("backward_precision: must be finite and >= 0 everywhere")
    mf, vf, lam_b, h = torch.broadcast_tensors(
        forward_mean, forward_var, backward_precision, backward_shift
    )
    gain = 1.0 + lam_b * vf  # v_f / v*
    post_var = vf / gain  # v* (eq. 2.1)
    post_mean = (mf + h * vf) / gain  # m*
    post_std = torch.sqrt(post_var)
    std_f = torch.sqrt(vf)
    a_pos = post_mean / post_std
    a_f = mf / std_f
    # log w+ − log w0 (eq. 2.3), written without differences of large terms.
    log_odds = (
        -0.5 * torch.log1p(lam_b * vf)
        + 0.5 * (2.0 * mf * h + h * h * vf - lam_b * mf * mf) / gain
        + torch.special.log_ndtr(a_pos)
        - torch.special.log_ndtr(-a_f)
    )
    active = torch.sigmoid(log_odds)
    _, shifted_pos, var_factor_pos = inverse_mills(a_pos)
    mean_pos = post_std * shifted_pos  # E[z | z > 0] (eq. 2.2)
    var_pos = post_var * var_factor_pos
    _, shifted_neg, var_factor_neg = inverse_mills(-a_f)
    mean_neg = -std_f * shifted_neg  # E[z | z ≤ 0] under the forward message alone
    var_neg = vf * var_factor_neg
    inactive = 1.0 - active
    u_mean = active * mean_pos  # eq. 2.4
    u_var = active * var_pos + active * inactive * mean_pos * mean_pos
    z_mean = active * mean_pos + inactive * mean_neg  # eq. 2.5
    gap = mean_pos - mean_neg
    z_var = active * var_pos + inactive * var_neg + active * inactive * gap * gap
    return ReluMoments(u_mean, u_var, z_mean, z_var, active)


def probit_moments(
    mean: Tensor, var: Tensor, threshold: Tensor, noise_var: Tensor | float, *, upper: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """Moments of ``N(x; mean, var)·Φ(±(x − threshold)/√noise_var)`` (eqs. 2.7-2.9).

    ``upper=True`` tilts towards ``x > threshold`` (``+``), ``upper=False`` towards
    ``x < threshold``. Returns ``(mean, var, log evidence log Φ(k))``.
    """
    _check_positive("var", var)
    noise = torch.as_tensor(noise_var, dtype=var.dtype, device=var.device)
    _check_positive("noise_var", noise)
    sign = 1.0 if upper else -1.0
    total = noise + var
    k = sign * (mean - threshold) / torch.sqrt(total)
    lam, _, var_factor = inverse_mills(k)
    tilted_mean = mean + sign * var * lam / torch.sqrt(total)
    tilted_var = var * (1.0 - var / total * (1.0 - var_factor))
    return tilted_mean, tilted_var, torch.special.log_ndtr(k)


def probit_product_moments(
    forward_mean: Tensor, forward_var: Tensor, labels: Tensor, noise_var: float
) -> ProbitProductMoments:
    """Posterior moments of the outputs under the probit-product likelihood (paper eq. 6).

    ``forward_mean``, ``forward_var``: ``(C, B)`` messages ``N(z; p̂, ν_p)`` on the ``C``
    outputs of ``B`` examples; ``labels``: ``(B,)`` class indices. Appendix A2's schedule
    (eqs. 2.10-2.14): each factor ``Φ((z_y − z_m)/√v)`` first tilts ``z_y`` with ``z_m``
    integrated out, the extrinsic precisions are summed on ``z_y`` (clipped at zero,
    counted), then each ``z_m`` is tilted with ``z_y``'s cavity integrated out. Exact for
    ``C = 2``.
    """
    _check_positive("forward_var", forward_var)
    if forward_mean.shape != forward_var.shape or forward_mean.dim() != 2:
        raise ValueError("forward_mean: must be (C, B) and match forward_var")
    classes, batch = forward_mean.shape
    if classes < 2:
        raise ValueError(f"forward_mean: needs at least 2 classes, got {classes}")
    if labels.shape != (batch,) or bool(torch.any((labels < 0) | (labels >= classes))):
        raise ValueError(f"labels: must be ({batch},) class indices in [0, {classes})")
    if not (noise_var > 0 and math.isfinite(noise_var)):
        raise ValueError(f"noise_var: must be a finite number > 0, got {noise_var!r}")
    idx = labels.long().unsqueeze(0)
    mean_y = forward_mean.gather(0, idx)  # (1, B)
    var_y = forward_var.gather(0, idx)
    is_label = torch.zeros_like(forward_mean, dtype=torch.bool).scatter_(0, idx, True)
    # (2.10) tilt z_y by each m ≠ y, with z_m integrated out: Φ((z_y − p̂_m)/√(v + ν_m)).
    tilt_mean, tilt_var, _ = probit_moments(
        mean_y, var_y, forward_mean, noise_var + forward_var, upper=True
    )
    # (2.11) extrinsic message h_m → z_y in natural form; the label row contributes 0.
    ext_precision = 1.0 / tilt_var - 1.0 / var_y
    ext_shift = tilt_mean / tilt_var - mean_y / var_y
    negative = (ext_precision < 0) & ~is_label
    clipped = int(negative.sum())
    ext_precision = torch.where(is_label, 0.0, torch.clamp(ext_precision, min=0.0))
    ext_shift = torch.where(is_label, 0.0, ext_shift)
    # (2.12) posterior of z_y.
    post_precision_y = 1.0 / var_y + ext_precision.sum(0, keepdim=True)
    post_shift_y = mean_y / var_y + ext_shift.sum(0, keepdim=True)
    # (2.13) cavity z_y → h_m.
    cavity_var = 1.0 / (post_precision_y - ext_precision)
    cavity_mean = (post_shift_y - ext_shift) * cavity_var
    # (2.14) tilt z_m by Φ((ĉ_m − z_m)/√(v + ν_c)).
    other_mean, other_var, _ = probit_moments(
        forward_mean, forward_var, cavity_mean, noise_var + cavity_var, upper=False
    )
    mean = torch.where(is_label, post_shift_y / post_precision_y, other_mean)
    var = torch.where(is_label, 1.0 / post_precision_y, other_var)
    return ProbitProductMoments(mean, var, clipped)


def gaussian_output_moments(
    forward_mean: Tensor, forward_var: Tensor, targets: Tensor, noise_var: float
) -> tuple[Tensor, Tensor]:
    """Posterior ``(mean, var)`` of ``z`` under ``N(z; p̂, ν_p)·N(y; z, v)`` (eq. 2.15)."""
    _check_positive("forward_var", forward_var)
    if not (noise_var > 0 and math.isfinite(noise_var)):
        raise ValueError(f"noise_var: must be a finite number > 0, got {noise_var!r}")
    var = 1.0 / (1.0 / forward_var + 1.0 / noise_var)
    return var * (forward_mean / forward_var + targets / noise_var), var
