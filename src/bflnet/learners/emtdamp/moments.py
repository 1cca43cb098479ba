"""Posterior moments of EM-TDAMP's nonlinear nodes (docs/em-tdamp.md, Sec. 2).

All functions are batched elementwise torch code (any broadcastable shapes, float64
advised). Leading dimensions batch independent problems (e.g. the clients of a round,
``(K, N, B)``); every result is then bit for bit the one of each ``(N, B)`` slice alone
(:func:`client_sigmoid` and the size rule of :func:`_erfcx` see to it). Gaussian
messages towards a node from *below* (the forward message
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
    "ReluForward",
    "ReluMoments",
    "client_sigmoid",
    "gaussian_output_moments",
    "inverse_mills",
    "on_host",
    "probit_moments",
    "probit_product_moments",
    "relu_forward",
    "relu_moments",
    "relu_posterior",
]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_2 = math.sqrt(2.0)
_LOG_2 = math.log(2.0)
_ERFC_PRODUCT_BELOW = 3.0  # erfcx(x) as exp(x²) erfc(x) up to here (_erfcx) ...
_ERFC_PRODUCT_MIN_SIZE = 4096  # ... on tensors of at least this many elements
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
    if value.numel() == 0:
        return
    low, high = torch.aminmax(value)  # NaN propagates to both
    if not (bool(low > 0) and bool(high < math.inf)):
        raise ValueError(f"{name}: must be finite and > 0 everywhere")


def _check_precision(precision: Tensor) -> None:
    if precision.numel() == 0:
        return
    low, high = torch.aminmax(precision)
    if not (bool(low >= 0) and bool(high < math.inf)):
        raise ValueError("backward_precision: must be finite and >= 0 everywhere")


def on_host(t: Tensor) -> bool:
    """Whether ``t`` lives on the CPU, where reading a reduction (to skip work that cannot
    apply) costs no device sync; elsewhere the code takes a path without host round trips
    that gives the same numbers."""
    return t.device.type == "cpu"


#: Element counts whose vectorised kernels cover a whole slice: a slice of a multiple of
#: this many elements is computed the same alone or inside a larger batch.
_VECTOR_BLOCK = 64


def client_sigmoid(x: Tensor, core: int = 2) -> Tensor:
    """``torch.sigmoid(x)`` computed slice by slice over the leading dimensions (the last
    ``core`` are one problem's) when a slice is not a whole number of vector blocks:
    torch's sigmoid computes the last few elements of a tensor by a scalar path that
    rounds differently, so batching would move those elements' last bits."""
    lead = x.dim() - core
    if lead <= 0 or x.shape[lead:].numel() % _VECTOR_BLOCK == 0:
        return torch.sigmoid(x)
    flat = x.reshape(-1, *x.shape[lead:])
    return torch.stack([torch.sigmoid(part) for part in flat]).reshape(x.shape)


def inverse_mills(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(λ, a + λ, 1 − λ(λ + a))`` with ``λ = φ(a)/Φ(a)``, accurate for every ``a``.

    ``N(m, s²)`` truncated to ``x > 0`` has, with ``a = m/s``, mean ``s(a + λ)`` and
    variance ``s²(1 − λ(λ + a))`` (eq. 2.2). ``λ`` comes from ``erfcx`` (no ``0/0``);
    below ``a = −45`` the two differences lose digits and their asymptotic series (to
    ``a⁻⁷``, ``a⁻⁸``) are used. Relative error: ``λ`` 1e-13, ``a + λ`` 1e-11,
    ``1 − λ(λ + a)`` 2e-9 (worst near ``a = −45``).
    """
    return _inverse_mills(a, _erfcx(-a / _SQRT_2))


def _erfcx(x: Tensor) -> Tensor:
    """``torch.special.erfcx``, faster: ``exp(x²) erfc(x)`` for ``x ≤ 3`` (relative error
    about ``(x² + 2) ε``, as ``torch.special.erfcx``'s ``2 exp(x²) − erfcx(−x)`` for
    ``x < 0``), ``erfcx`` itself above (where ``erfc`` underflows). ``erfc`` and ``exp`` take
    about a third of ``erfcx``'s time. The size rule looks at one problem's ``(N, B)``
    (the last two dimensions), so a batch of problems takes each one's path."""
    if (x.shape[-2:].numel() if x.dim() >= 2 else x.numel()) < _ERFC_PRODUCT_MIN_SIZE:
        return torch.special.erfcx(x)
    out = torch.special.erfc(x).mul_((x * x).exp_())
    if not on_host(x):  # no host round trip: erfcx everywhere, kept in the tail
        return torch.where(x > _ERFC_PRODUCT_BELOW, torch.special.erfcx(x), out)
    _put_erfcx(out, x)
    return out


#: Elements per block of :func:`_tail_index`'s first pass (block maxima).
_TAIL_BLOCK = 64


def _put_erfcx(out: Tensor, x: Tensor) -> None:
    """``out[tail] = erfcx(x[tail])`` in place for the ``tail`` ``x > 3``, through flat
    index copies at the tail's positions (:func:`_tail_index`; the same values as boolean
    indexing, whose gather and scatter take about twice as long), or by boolean indexing
    when a tensor is not contiguous. Nothing after one maximum when no ``x`` is above 3."""
    contiguous = out.is_contiguous() and x.is_contiguous()
    if not contiguous or x.numel() < 2 * _TAIL_BLOCK:
        if float(x.max()) <= _ERFC_PRODUCT_BELOW:  # (NaN: the general path, as before)
            return
        tail = x > _ERFC_PRODUCT_BELOW
        if bool(tail.any()):
            out[tail] = torch.special.erfcx(x[tail])
        return
    index = _tail_index(x.reshape(-1))
    if index is not None and index.numel():
        values = torch.special.erfcx(x.reshape(-1).index_select(0, index))
        out.view(-1).index_copy_(0, index, values)


def _tail_index(flat: Tensor) -> Tensor | None:
    """The ascending positions of ``flat > 3`` (``None``: there are none), the same as
    ``(flat > 3).nonzero()`` but mostly from block maxima: the tail is rare (about 0.03 %
    of a hidden layer's nodes, in about 1 % of the blocks of 64), and a comparison into
    booleans then a ``nonzero`` over the whole tensor cost about ten maxima. Only the
    blocks whose maximum is above 3 are compared element by element; a NaN maximum takes
    the whole comparison (a NaN block may hide a tail)."""
    full = flat.numel() - flat.numel() % _TAIL_BLOCK
    blocks = flat[:full].view(-1, _TAIL_BLOCK).amax(1)
    rest = flat[full:]
    top = float(torch.maximum(blocks.max(), rest.max()) if rest.numel() else blocks.max())
    if top <= _ERFC_PRODUCT_BELOW:
        return None
    if math.isnan(top):
        return (flat > _ERFC_PRODUCT_BELOW).nonzero().squeeze(1)
    hot = (blocks > _ERFC_PRODUCT_BELOW).nonzero().squeeze(1)
    within = (flat[:full].view(-1, _TAIL_BLOCK).index_select(0, hot)
              > _ERFC_PRODUCT_BELOW).nonzero()
    index = hot.index_select(0, within[:, 0]).mul_(_TAIL_BLOCK).add_(within[:, 1])
    if rest.numel():
        index = torch.cat([index, (rest > _ERFC_PRODUCT_BELOW).nonzero().squeeze(1) + full])
    return index


def _inverse_mills(a: Tensor, scaled_erfcx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`inverse_mills` given ``erfcx(−a/√2)``; the series only if some ``a < −45``."""
    lam = torch.reciprocal(scaled_erfcx).mul_(_SQRT_2_OVER_PI)  # (c / t is 1/t · c)
    shifted = a + lam
    var_factor = 1.0 - lam * shifted
    if a.numel() and on_host(a) and float(a.min()) >= _ASYMPTOTIC_BELOW:
        # (NaN, or off the CPU, where reading the minimum would wait: the general path)
        return lam, shifted, var_factor
    t = torch.clamp(-a, min=-_ASYMPTOTIC_BELOW)
    t2 = t * t
    shifted_series = (1.0 - (2.0 - (10.0 - 74.0 / t2) / t2) / t2) / t
    var_series = (1.0 - (6.0 - (50.0 - 518.0 / t2) / t2) / t2) / t2
    far = a < _ASYMPTOTIC_BELOW
    return lam, torch.where(far, shifted_series, shifted), torch.where(far, var_series, var_factor)


def _log_ndtr(scaled: Tensor, scaled_erfcx: Tensor) -> Tensor:
    """``log Φ(x)`` from ``s = −x/√2`` and ``erfcx(s)``: ``log(erfcx(s)/2) − s²`` (the form
    ``torch.special.log_ndtr`` uses below ``x = −1``), capped at 0. For large ``x`` the
    difference cancels to an absolute error of about ``ε x²/2`` (``erfcx`` overflows past
    ``x ≈ 37.7``: the cap gives 0, within 1e-300 of ``log Φ``); a log-odds needs no more."""
    return torch.log(scaled_erfcx).sub_(_LOG_2).addcmul_(scaled, scaled, value=-1.0).clamp_(max=0.0)


class ReluForward(NamedTuple):
    """The parts of a ReLU node's posterior that depend on the forward message
    ``N(z; m_f, v_f)`` alone (a DAMP sweep's forward and backward passes share them):
    ``mean``, ``var`` (``m_f``, ``v_f``), ``std`` (``√v_f``), ``a`` (``m_f/√v_f``),
    ``scaled`` (``a/√2``), ``erfcx`` (``erfcx(a/√2)``), ``log_ndtr`` (``log Φ(−a)``) and,
    if asked for, ``erfcx_reflected`` (``erfcx(−a/√2)``, for a flat backward message)."""

    mean: Tensor
    var: Tensor
    std: Tensor
    a: Tensor
    scaled: Tensor
    erfcx: Tensor
    log_ndtr: Tensor
    erfcx_reflected: Tensor | None


def _erfcx_pair(x: Tensor) -> tuple[Tensor, Tensor]:
    """``(erfcx(x), erfcx(−x))`` from one ``erfc``: with ``y = |x|``, ``erfcx(±y)`` are
    ``exp(y²) erfc(y)`` (``erfcx`` itself past ``y = 3``) and ``exp(y²)(2 − erfc(y))``."""
    y = x.abs()
    scale = torch.exp(y * y)
    tail_erfc = torch.special.erfc(y)
    large = torch.rsub(tail_erfc, 2.0).mul_(scale)
    small = tail_erfc.mul_(scale)
    if not on_host(y):
        small = torch.where(y > _ERFC_PRODUCT_BELOW, torch.special.erfcx(y), small)
    else:
        _put_erfcx(small, y)
    nonnegative = x >= 0
    return torch.where(nonnegative, small, large), torch.where(nonnegative, large, small)


def relu_forward(
    forward_mean: Tensor, forward_var: Tensor, *, reflect: bool = False
) -> ReluForward:
    """:class:`ReluForward` of ``N(z; m_f, v_f)`` (unchecked; ``v_f > 0``). ``reflect``
    also gives ``erfcx(−a/√2)``, from the same ``erfcx`` call."""
    std_f = torch.sqrt(forward_var)
    a_f = forward_mean / std_f
    scaled = a_f / _SQRT_2  # erfcx argument of inverse_mills(−a)
    reflected = None
    if reflect:
        erfcx_f, reflected = _erfcx_pair(scaled)
    else:
        erfcx_f = _erfcx(scaled)
    return ReluForward(forward_mean, forward_var, std_f, a_f, scaled, erfcx_f,
                       _log_ndtr(scaled, erfcx_f), reflected)


def relu_posterior(
    forward: ReluForward,
    backward_precision: Tensor | None,
    backward_shift: Tensor | None,
    *,
    u: bool = True,
    z: bool = True,
) -> tuple[Tensor, ...]:
    """:func:`relu_moments` (eqs. 2.1-2.6) from the forward message's
    :class:`ReluForward` and the backward message (unchecked; ``None``, ``None``: flat,
    which needs ``forward.erfcx_reflected``). Returns ``(u_mean, u_var)`` if ``u``, then
    ``(z_mean, z_var, active)`` if ``z``."""
    mf, vf = forward.mean, forward.var
    if backward_precision is None or backward_shift is None:  # Λ = h = 0: m* = m_f, v* = v_f
        assert forward.erfcx_reflected is not None
        post_var, post_std, a_pos = vf, forward.std, forward.a
        scaled_pos, erfcx_pos = -forward.scaled, forward.erfcx_reflected
        log_odds = _log_ndtr(scaled_pos, erfcx_pos) - forward.log_ndtr
    else:
        lam_b, h = backward_precision, backward_shift
        one = torch.ones((), dtype=vf.dtype, device=vf.device)
        gain = torch.addcmul(one, lam_b, vf)  # v_f / v* = 1 + Λv_f
        post_var = vf / gain  # v* (eq. 2.1)
        shifted_mean = torch.addcmul(mf, h, vf)
        post_mean = shifted_mean / gain  # m*
        post_std = torch.sqrt(post_var)
        a_pos = post_mean.div_(post_std)
        scaled_pos = a_pos.mul(-1.0 / _SQRT_2)  # erfcx argument of inverse_mills(a_pos)
        erfcx_pos = _erfcx(scaled_pos)
        # log w+ − log w0 (eq. 2.3) = ½[(h(2m_f + h v_f) − Λm_f²)/g − log g]
        # + log Φ(a*) − log Φ(−a_f), written without differences of large terms.
        quadratic = shifted_mean.add_(mf).mul_(h).addcmul_(lam_b * mf, mf, value=-1.0)
        log_odds = (quadratic.div_(gain).sub_(gain.log_()).mul_(0.5)
                    .add_(_log_ndtr(scaled_pos, erfcx_pos)).sub_(forward.log_ndtr))
    active = client_sigmoid(log_odds)
    # (Below, each product or sum is written into a temporary of this call that is not
    # read again: the same operations, fewer new arrays.)
    _, shifted_pos, var_factor_pos = _inverse_mills(a_pos, erfcx_pos)
    mean_pos = shifted_pos.mul_(post_std)  # E[z | z > 0] (eq. 2.2)
    var_pos = var_factor_pos.mul_(post_var)
    inactive = 1.0 - active
    out: tuple[Tensor, ...] = ()
    if u:  # eq. 2.4: ρ m+, ρ(v+ + (1 − ρ) m+²)
        spread_u = (torch.addcmul(var_pos, inactive, mean_pos * mean_pos) if z
                    else var_pos.addcmul_(inactive, mean_pos * mean_pos))
        out = (active * mean_pos, spread_u.mul_(active))
    if z:  # eq. 2.5 with m− = E[z | z ≤ 0] under the forward message alone
        _, shifted_neg, var_factor_neg = _inverse_mills(-forward.a, forward.erfcx)
        mean_neg = shifted_neg.mul_(-1.0).mul_(forward.std)
        var_neg = var_factor_neg.mul_(vf)
        gap = mean_pos - mean_neg
        z_mean = mean_neg.addcmul_(active, gap)
        spread = var_pos.sub_(var_neg).addcmul_(inactive, gap.mul_(gap))
        out = (*out, z_mean, spread.mul_(active).add_(var_neg), active)
    return out


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
    _check_precision(backward_precision)
    mf, vf, lam_b, h = torch.broadcast_tensors(
        forward_mean, forward_var, backward_precision, backward_shift
    )
    return ReluMoments(*relu_posterior(relu_forward(mf, vf), lam_b, h))


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
    tilted_mean, tilted_var, k = _probit_tilt(mean, var, threshold, noise, upper=upper)
    return tilted_mean, tilted_var, torch.special.log_ndtr(k)


def _probit_tilt(
    mean: Tensor, var: Tensor, threshold: Tensor, noise: Tensor, *, upper: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`probit_moments` without checks; returns ``k`` instead of ``log Φ(k)``."""
    total = noise + var
    root = torch.sqrt(total)
    k = (mean - threshold if upper else threshold - mean) / root
    lam, _, var_factor = inverse_mills(k)
    tilted_mean = torch.addcmul(mean, var, lam.div_(root), value=1.0 if upper else -1.0)
    # As in probit_moments (same rounding): the clip count of eq. 2.11 depends on it.
    tilted_var = var * (1.0 - var / total * (1.0 - var_factor))
    return tilted_mean, tilted_var, k


def probit_product_moments(
    forward_mean: Tensor,
    forward_var: Tensor,
    labels: Tensor,
    noise_var: float,
    *,
    check: bool = True,
) -> ProbitProductMoments:
    """Posterior moments of the outputs under the probit-product likelihood (paper eq. 6).

    ``forward_mean``, ``forward_var``: ``(C, B)`` messages ``N(z; p̂, ν_p)`` on the ``C``
    outputs of ``B`` examples; ``labels``: ``(B,)`` class indices (or a batch of such
    problems, ``(K, C, B)`` and ``(K, B)``; ``clipped`` is then a ``(K,)`` tensor).
    Appendix A2's schedule (eqs. 2.10-2.14): each factor ``Φ((z_y − z_m)/√v)`` first tilts
    ``z_y`` with ``z_m`` integrated out, the extrinsic precisions are summed on ``z_y``
    (clipped at zero, counted), then each ``z_m`` is tilted with ``z_y``'s cavity
    integrated out. Exact for ``C = 2``. ``check=False`` skips the argument checks (for
    callers that made them).
    """
    if check:
        _check_probit_product(forward_mean, forward_var, labels, noise_var)
    idx = labels.long().unsqueeze(-2)
    mean_y = forward_mean.gather(-2, idx)  # (1, B)
    var_y = forward_var.gather(-2, idx)
    is_label = torch.zeros_like(forward_mean, dtype=torch.bool).scatter_(-2, idx, True)
    # (2.10) tilt z_y by each m ≠ y, with z_m integrated out: Φ((z_y − p̂_m)/√(v + ν_m)).
    tilt_mean, tilt_var, _ = _probit_tilt(
        mean_y, var_y, forward_mean, noise_var + forward_var, upper=True
    )
    # (2.11) extrinsic message h_m → z_y in natural form; the label row contributes 0.
    precision_y, shift_y = 1.0 / var_y, mean_y / var_y
    ext_precision = 1.0 / tilt_var - precision_y
    ext_shift = tilt_mean / tilt_var - shift_y
    ext_precision.masked_fill_(is_label, 0.0)
    negative = ext_precision < 0  # the label row is 0 now, so it is never counted
    counts = negative.sum((-2, -1))
    clipped: Tensor | int = int(counts) if counts.dim() == 0 else counts
    ext_precision.masked_fill_(negative, 0.0)
    ext_shift.masked_fill_(is_label, 0.0)
    # (2.12) posterior of z_y.
    post_precision_y = precision_y + ext_precision.sum(-2, keepdim=True)
    post_shift_y = shift_y + ext_shift.sum(-2, keepdim=True)
    # (2.13) cavity z_y → h_m.
    cavity_var = 1.0 / (post_precision_y - ext_precision)
    cavity_mean = (post_shift_y - ext_shift) * cavity_var
    # (2.14) tilt z_m by Φ((ĉ_m − z_m)/√(v + ν_c)).
    other_mean, other_var, _ = _probit_tilt(
        forward_mean, forward_var, cavity_mean, noise_var + cavity_var, upper=False
    )
    mean = other_mean.scatter_(-2, idx, post_shift_y / post_precision_y)
    var = other_var.scatter_(-2, idx, 1.0 / post_precision_y)
    return ProbitProductMoments(mean, var, clipped)  # type: ignore[arg-type]


def _check_probit_product(
    forward_mean: Tensor, forward_var: Tensor, labels: Tensor, noise_var: float
) -> None:
    _check_positive("forward_var", forward_var)
    if forward_mean.shape != forward_var.shape or forward_mean.dim() not in (2, 3):
        raise ValueError("forward_mean: must be (C, B) (or (K, C, B)) and match forward_var")
    classes, batch = forward_mean.shape[-2:]
    if classes < 2:
        raise ValueError(f"forward_mean: needs at least 2 classes, got {classes}")
    shape = (*forward_mean.shape[:-2], batch)
    if labels.shape != shape or bool(torch.any((labels < 0) | (labels >= classes))):
        raise ValueError(f"labels: must be ({batch},) class indices in [0, {classes})")
    if not (noise_var > 0 and math.isfinite(noise_var)):
        raise ValueError(f"noise_var: must be a finite number > 0, got {noise_var!r}")


def gaussian_output_moments(
    forward_mean: Tensor, forward_var: Tensor, targets: Tensor, noise_var: float,
    *, check: bool = True,
) -> tuple[Tensor, Tensor]:
    """Posterior ``(mean, var)`` of ``z`` under ``N(z; p̂, ν_p)·N(y; z, v)`` (eq. 2.15).
    ``check=False`` skips the check of ``forward_var`` (for callers that made it)."""
    if check:
        _check_positive("forward_var", forward_var)
    if not (noise_var > 0 and math.isfinite(noise_var)):
        raise ValueError(f"noise_var: must be a finite number > 0, got {noise_var!r}")
    var = 1.0 / (1.0 / forward_var + 1.0 / noise_var)
    return var * (forward_mean / forward_var + targets / noise_var), var
