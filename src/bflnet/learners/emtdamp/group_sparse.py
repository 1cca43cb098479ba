"""Module B: exact sum-product over the group-sparse Bernoulli-Gaussian prior (eqs. 25-26).

A group is a set of ``M`` weights that are all active or all zero (the outgoing weights of
one neuron: a column of ``W_l``; a bias is a group of one). Layout: groups along the
second-to-last axis, their elements along the last, ``(..., G, M)``; pass ``W_l.T`` for a
layer's weight matrix. The prior of group ``g`` is

    ρ_g ∏_m N(w_gm; μ_gm, v_gm) + (1 − ρ_g) ∏_m δ(w_gm),

and Module A's messages ``A → B`` are Gaussians in precision form
``exp(−τ_gm w²/2 + h_gm w)`` (``τ = 1/ν_q``, ``h = q̂/ν_q``; ``τ = h = 0`` is the flat
message Algorithm 1 starts from). Because Module B is a tree, sum-product is exact:

* :func:`element_log_evidence_ratio` — ``ℓ_gm = log(slab evidence / spike evidence)`` of
  one element's message (eq. 3.1; the paper's ``η_gm`` is ``exp(−ℓ_gm)``);
* :func:`group_sparse_messages` — the ``B → A`` messages (eq. 25: activity from the other
  elements, slab = prior slab) and the group posterior (eq. 26, with the slab combined with
  Module A's message, not with the prior mean twice as transcribed).

The DAMP sweeps call the same sum-product in Module A's layout instead
(:func:`dense_group_posterior`): ``W̃ = [W, b]`` as ``(N_out, N_in + 1)``, groups are the
weight columns and each bias on its own, the prior's constants ``μ/v``, ``μ²/v`` and its
moments are computed once per minibatch (:func:`dense_group_prior`), and only what Module A
and PasP use is computed (no ``B → A`` activities, no per-element ``ℓ``). These take a
batch of layers too (leading dimensions, e.g. ``(K, N_out, N_in + 1)`` for the clients of
a round), each computed bit for bit as alone.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from . import moments
from .moments import client_sigmoid

__all__ = [
    "DenseGroupPosterior",
    "DenseGroupPrior",
    "GroupSparseMessages",
    "bernoulli_gaussian_moments",
    "dense_group_posterior",
    "dense_group_prior",
    "element_log_evidence_ratio",
    "group_sparse_messages",
]


class GroupSparseMessages(NamedTuple):
    """Module B's output for groups ``(..., G)`` of elements ``(..., G, M)``.

    ``to_a_activity``: ``ρ^{B→A}_gm`` of eq. 25 (the slab of the ``B → A`` message is the
    prior slab ``N(μ_gm, v_gm)``). ``posterior_activity``: ``ρ^post_g``;
    ``posterior_mean``, ``posterior_var``: the posterior slab of eq. 26 (eq. 3.4);
    ``marginal_mean``, ``marginal_var``: each element's posterior mean and variance
    (the Bernoulli-Gaussian mixture's moments, eq. 3.5).
    """

    to_a_activity: Tensor
    posterior_activity: Tensor
    posterior_mean: Tensor
    posterior_var: Tensor
    marginal_mean: Tensor
    marginal_var: Tensor


def _check(activity: Tensor, slab_mean: Tensor, slab_var: Tensor, precision: Tensor) -> None:
    if slab_mean.dim() < 2:
        raise ValueError(f"slab_mean: must be (..., G, M), got shape {tuple(slab_mean.shape)}")
    if activity.shape != slab_mean.shape[:-1]:
        raise ValueError(
            f"activity: must have shape {tuple(slab_mean.shape[:-1])} (one per group), "
            f"got {tuple(activity.shape)}"
        )
    if not bool(torch.all((activity >= 0) & (activity <= 1))):
        raise ValueError("activity: must be probabilities in [0, 1]")
    if not bool(torch.all((slab_var > 0) & torch.isfinite(slab_var))):
        raise ValueError("slab_var: must be finite and > 0 everywhere")
    if not bool(torch.all((precision >= 0) & torch.isfinite(precision))):
        raise ValueError("message_precision: must be finite and >= 0 everywhere")


def element_log_evidence_ratio(
    slab_mean: Tensor, slab_var: Tensor, message_precision: Tensor, message_shift: Tensor
) -> Tensor:
    """``ℓ = log ∫N(w; μ, v)·exp(−τw²/2 + hw) dw − log[exp(−τw²/2 + hw)]_{w=0}`` (eq. 3.1).

    Closed form: ``ℓ = −½ log(1 + τv) + (2hμ + h²v − τμ²) / (2(1 + τv))``; exactly 0 for
    the flat message ``τ = h = 0``.
    """
    gain = 1.0 + message_precision * slab_var
    return -0.5 * torch.log1p(message_precision * slab_var) + (
        2.0 * message_shift * slab_mean
        + message_shift * message_shift * slab_var
        - message_precision * slab_mean * slab_mean
    ) / (2.0 * gain)


def bernoulli_gaussian_moments(
    activity: Tensor, mean: Tensor, var: Tensor
) -> tuple[Tensor, Tensor]:
    """Mean and variance of ``ρ N(μ, v) + (1 − ρ) δ`` (elementwise, broadcasting)."""
    marginal_mean = activity * mean
    return marginal_mean, activity * (var + mean * mean) - marginal_mean * marginal_mean


def group_sparse_messages(
    activity: Tensor,
    slab_mean: Tensor,
    slab_var: Tensor,
    message_precision: Tensor,
    message_shift: Tensor,
) -> GroupSparseMessages:
    """Sum-product over the group-sparse prior given Module A's messages (eqs. 25-26).

    ``activity``: ``(..., G)`` prior ``ρ_g``; ``slab_mean``, ``slab_var``: ``(..., G, M)``
    prior slab; ``message_precision``, ``message_shift``: ``(..., G, M)`` Module A's
    ``A → B`` messages in precision form. Log-odds are summed in the log domain, so
    ``ρ = 0`` and ``ρ = 1`` stay exactly 0 and 1.
    """
    _check(activity, slab_mean, slab_var, message_precision)
    ratio = element_log_evidence_ratio(slab_mean, slab_var, message_precision, message_shift)
    prior_logit = torch.logit(activity).unsqueeze(-1)  # ±inf for ρ ∈ {0, 1}
    total = ratio.sum(-1, keepdim=True)
    # eq. 3.2 (paper eq. 25): activity seen by element m from the prior and the others.
    to_a = torch.sigmoid(prior_logit + (total - ratio))
    # eq. 3.3 (paper eq. 26): group posterior activity.
    posterior_activity = torch.sigmoid(prior_logit + total).squeeze(-1)
    # eq. 3.4: posterior slab = prior slab × Module A's message.
    posterior_var = slab_var / (1.0 + message_precision * slab_var)
    posterior_mean = posterior_var * (slab_mean / slab_var + message_shift)
    marginal_mean, marginal_var = bernoulli_gaussian_moments(
        posterior_activity.unsqueeze(-1), posterior_mean, posterior_var
    )
    return GroupSparseMessages(
        to_a, posterior_activity, posterior_mean, posterior_var, marginal_mean, marginal_var
    )


class DenseGroupPrior(NamedTuple):
    """A layer's group-sparse prior in Module A's layout, with its per-minibatch constants.

    ``weight_activity``: ``(N_in,)`` ``ρ`` of each weight column (one input neuron's
    outgoing weights); ``bias_activity``: ``(N_out,)`` (each bias is a group of one);
    ``weight_logit``, ``bias_logit``: their logits; ``mean``, ``var``: ``(N_out, N_in + 1)``
    slab ``μ``, ``v`` of ``W̃ = [W, b]``; ``marginal_mean``, ``marginal_var``: the prior's
    moments (3.5), which are Module B's marginals for flat messages; ``certain``: every
    activity is 0 or 1 (then no message changes them), ``dense``: every activity is 1
    (then the marginals are the slab's).
    """

    weight_activity: Tensor
    bias_activity: Tensor
    weight_logit: Tensor
    bias_logit: Tensor
    mean: Tensor
    var: Tensor
    marginal_mean: Tensor
    marginal_var: Tensor
    certain: bool = False
    dense: bool = False
    #: ``μ/v`` (3.4's prior term of the posterior mean), once per minibatch; ``None``:
    #: computed at each use.
    mean_over_var: Tensor | None = None


class DenseGroupPosterior(NamedTuple):
    """Module B's output in Module A's layout: group activities ``ρ^post`` (3.3) of the
    weight columns ``(N_in,)`` and biases ``(N_out,)``, the posterior slab (3.4) and the
    marginal moments (3.5), ``(N_out, N_in + 1)``."""

    weight_activity: Tensor
    bias_activity: Tensor
    mean: Tensor
    var: Tensor
    marginal_mean: Tensor
    marginal_var: Tensor


def _dense_moments(
    weight_activity: Tensor, bias_activity: Tensor, mean: Tensor, var: Tensor
) -> tuple[Tensor, Tensor]:
    """:func:`bernoulli_gaussian_moments` with one ``ρ`` per weight column and one per bias,
    the variance as ``ρ(1 − ρ)μ² + ρv`` (no difference of large terms, few passes)."""
    marginal_mean = torch.empty_like(mean)
    columns = weight_activity.unsqueeze(-2)  # (…, 1, N_in) against (…, N_out, N_in)
    torch.mul(mean[..., :-1], columns, out=marginal_mean[..., :-1])
    torch.mul(mean[..., -1], bias_activity, out=marginal_mean[..., -1])
    spread = mean * mean
    spread[..., :-1].mul_(columns * (1.0 - columns)).addcmul_(var[..., :-1], columns)
    spread[..., -1].mul_(bias_activity * (1.0 - bias_activity)).addcmul_(var[..., -1],
                                                                        bias_activity)
    return marginal_mean, spread


def dense_group_prior(
    weight_activity: Tensor,
    bias_activity: Tensor,
    mean: Tensor,
    var: Tensor,
    marginals: tuple[Tensor, Tensor] | None = None,
) -> DenseGroupPrior:
    """A prior in Module A's layout (``mean``, ``var``: ``(N_out, N_in + 1)``, ``var > 0``;
    activities as in :class:`DenseGroupPrior`). ``marginals``: the prior's moments (3.5)
    if already known (a posterior used as the next prior), else computed."""
    weight_logit, bias_logit = torch.logit(weight_activity), torch.logit(bias_activity)
    # Off the CPU the flags are not read (a device sync): the general path gives the same
    # numbers (σ(±∞ + ℓ) is exactly 1 or 0, and moments with ρ = 1 are the slab's).
    certain = moments.on_host(mean) and bool(weight_logit.isinf().all()) and bool(
        bias_logit.isinf().all())
    dense = certain and bool((weight_activity == 1).all()) and bool((bias_activity == 1).all())
    if marginals is None:
        marginals = (mean, var) if dense else _dense_moments(
            weight_activity, bias_activity, mean, var)
    return DenseGroupPrior(weight_activity, bias_activity, weight_logit, bias_logit, mean, var,
                           *marginals, certain, dense, mean / var)


_LOG_CHUNK = 8  # rows multiplied before one log: Σ log g = Σ log ∏_8 g (g ≥ 1)


def _column_log_sum(gain: Tensor) -> Tensor:
    """``Σ_rows log g`` per column for ``g ≥ 1`` (rows: the second-to-last dimension),
    one log per ``_LOG_CHUNK`` rows (products of 8 factors ``≥ 1``; a layer whose products
    overflow falls back to one log per element)."""
    rows, lead = gain.shape[-2], gain.shape[:-2]
    full = rows - rows % _LOG_CHUNK
    if full < 2 * _LOG_CHUNK:
        return torch.log(gain).sum(-2)
    chunks = gain[..., :full, :].view(*lead, _LOG_CHUNK, full // _LOG_CHUNK, gain.shape[-1])
    total = torch.log(chunks.prod(-3)).sum(-2)
    if full < rows:
        total += torch.log(gain[..., full:, :]).sum(-2)
    finite = torch.isfinite(total.sum(-1))
    if not moments.on_host(gain):  # no host round trip: both, chosen per layer
        return torch.where(finite.unsqueeze(-1), total, torch.log(gain).sum(-2))
    if not bool(finite.all()):
        exact = torch.log(gain).sum(-2)
        return exact if finite.dim() == 0 else torch.where(finite.unsqueeze(-1), total, exact)
    return total


def dense_group_posterior(
    prior: DenseGroupPrior, message_precision: Tensor, message_shift: Tensor,
    *, hold_activity: bool = False,
) -> DenseGroupPosterior:
    """Module B (eqs. 3.1-3.5) in Module A's layout for the ``A → B`` messages
    ``(τ, h)`` on ``W̃`` (``(N_out, N_in + 1)``, precision form, ``τ ≥ 0``; unchecked).

    With ``g = 1 + τv``: ``v^post = v/g``, ``μ^post = v^post (μ/v + h)`` (3.4) and
    ``2ℓ = h μ^post + (μ/g)(h − τμ) − log g`` ((3.1) rewritten with the posterior slab); a
    weight column's log-odds add up its ``ℓ``, a bias keeps its own. ``hold_activity``:
    the activities stay the prior's (only the slab is updated)."""
    gain = torch.addcmul(torch.ones((), dtype=prior.var.dtype, device=prior.var.device),
                         message_precision, prior.var)
    hold = prior.certain or hold_activity
    # (the gain is read again below only when the activities move)
    post_var = torch.div(prior.var, gain, out=gain) if hold else prior.var / gain
    # h + μ/v: the same bits as addcdiv(h, μ, v) (one rounding of μ/v, then of the sum)
    post_mean = (torch.addcdiv(message_shift, prior.mean, prior.var)
                 if prior.mean_over_var is None
                 else torch.add(message_shift, prior.mean_over_var)).mul_(post_var)
    if hold:  # σ(±∞ + ℓ) is the prior's 0 or 1 again
        weight_activity, bias_activity = prior.weight_activity, prior.bias_activity
        marginals = (post_mean, post_var) if prior.dense else _dense_moments(
            weight_activity, bias_activity, post_mean, post_var)
        return DenseGroupPosterior(weight_activity, bias_activity, post_mean, post_var,
                                   *marginals)
    ratio = torch.addcmul(message_shift, message_precision, prior.mean, value=-1.0)
    ratio = ratio.mul_(prior.mean).div_(gain).addcmul_(message_shift, post_mean)
    column = ratio.sum(-2)[..., :-1] - _column_log_sum(gain)[..., :-1]
    weight_activity = client_sigmoid(prior.weight_logit + 0.5 * column, core=1)
    bias_ratio = ratio[..., -1] - torch.log(gain[..., -1])
    bias_activity = client_sigmoid(prior.bias_logit + 0.5 * bias_ratio, core=1)
    return DenseGroupPosterior(
        weight_activity, bias_activity, post_mean, post_var,
        *_dense_moments(weight_activity, bias_activity, post_mean, post_var),
    )
