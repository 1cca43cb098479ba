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
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    "GroupSparseMessages",
    "bernoulli_gaussian_moments",
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
