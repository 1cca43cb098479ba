"""The EM-TDAMP server (Algorithm 2): E-step aggregation and M-step hyperparameters.

Clients are stacked along a leading axis ``K`` and weighted by ``I_k / I``
(:func:`client_weights`). Everything is torch float64 except the tabulated ``F(μ)``,
which is numpy (it is built once per Gumbel side and cached).

* :func:`aggregate_gaussians` — eq. 12, and eq. 14 with μ and v the right way round
  (eq. 14 as transcribed swaps them; the update mirrors eq. 12): the weighted geometric
  mean of Gaussians (eq. 4.1);
* :func:`aggregate_activity` — eqs. 13 and 15 in log-odds form (eq. 4.2);
* :func:`regression_noise_statistic`, :func:`regression_noise_variance` — eqs. 19 and 18;
* :func:`classification_noise_statistics`, :func:`gumbel_moment_match`,
  :func:`gumbel_table`, :func:`gumbel_noise_variance`,
  :func:`classification_noise_variance` — eqs. 20-23;
* :func:`apply_target_sparsity` — the target-sparsity reset of ``ρ_i^W`` (Sec. III-A2a),
  capped so that exactly the target number of groups survives (eq. 4.9);
* :func:`paper_sparsity`, :func:`group_log_odds`, :func:`budget_cap` — the paper's rule
  over the whole network, completed by a shrinking cap on Module B's log-odds (eqs.
  4.10-4.11).
"""

from __future__ import annotations

import functools
import math
from typing import Literal, NamedTuple

import numpy as np
import torch
from scipy import interpolate, special
from torch import Tensor

__all__ = [
    "GumbelSide",
    "NoiseUpdate",
    "PaperReset",
    "SparsityReset",
    "aggregate_activity",
    "aggregate_gaussians",
    "apply_target_sparsity",
    "budget_cap",
    "classification_noise_statistics",
    "classification_noise_variance",
    "client_weights",
    "group_log_odds",
    "gumbel_moment_match",
    "gumbel_noise_variance",
    "gumbel_table",
    "paper_sparsity",
    "regression_noise_statistic",
    "regression_noise_variance",
]

GumbelSide = Literal["min", "max"]
_LOG_F_SATURATED = 800.0  # |log F| where argmax_v is at v → 0 or v → ∞ (exp over/underflows)


class NoiseUpdate(NamedTuple):
    """A noise-variance M-step: the new ``v``, the undamped optimum ``v₀*`` and whether
    ``v₀*`` was clipped into ``[min_noise_var, max_noise_var]`` (0 or 1)."""

    value: float
    optimum: float
    clipped: int


class SparsityReset(NamedTuple):
    """The target-sparsity rule's output: the new ``ρ^W``, whether it fired, and ``S``
    (groups with ``ρ > ρ_th`` before the rule)."""

    activity: Tensor
    fired: bool
    confident_count: int


def client_weights(counts: Tensor | list[int]) -> Tensor:
    """``I_k / I`` for the clients' data counts ``I_k`` (float64, ``(K,)``)."""
    counts_t = torch.as_tensor(counts, dtype=torch.float64)
    if counts_t.dim() != 1 or counts_t.numel() == 0 or bool(torch.any(counts_t <= 0)):
        raise ValueError("counts: must be a non-empty 1-D list of positive data counts")
    return counts_t / counts_t.sum()


def _weights_for(weights: Tensor, stacked: Tensor) -> Tensor:
    if weights.dim() != 1 or weights.shape[0] != stacked.shape[0]:
        raise ValueError(
            f"weights: must be ({stacked.shape[0]},), one per client, got {tuple(weights.shape)}"
        )
    return weights.reshape(-1, *([1] * (stacked.dim() - 1))).to(stacked.dtype)


def aggregate_gaussians(means: Tensor, variances: Tensor, weights: Tensor) -> tuple[Tensor, Tensor]:
    """``∏_k N(θ; μ_k, v_k)^{w_k}`` normalised = ``N(μ, v)`` with ``1/v = Σ w_k/v_k`` and
    ``μ = v Σ w_k μ_k / v_k`` (eqs. 12, 14 corrected; eq. 4.1). Clients along axis 0."""
    if not bool(torch.all((variances > 0) & torch.isfinite(variances))):
        raise ValueError("variances: must be finite and > 0 everywhere")
    w = _weights_for(weights, means)
    precision = (w / variances).sum(0)
    var = 1.0 / precision
    return var * (w * means / variances).sum(0), var


def _log_normal_at_zero(mean: Tensor, var: Tensor) -> Tensor:
    return -0.5 * (torch.log(2.0 * math.pi * var) + mean * mean / var)


def aggregate_activity(
    activities: Tensor,
    means: Tensor,
    variances: Tensor,
    weights: Tensor,
    aggregated_mean: Tensor,
    aggregated_var: Tensor,
    *,
    log_odds: Tensor | None = None,
) -> Tensor:
    """Group activity of the geometric mean of Bernoulli-Gaussians (eqs. 13, 15; eq. 4.2).

    ``activities``: ``(K, G)`` clients' ``ρ_{g,k}``; ``means``, ``variances``:
    ``(K, G, M)`` their slabs; ``aggregated_mean``, ``aggregated_var``: ``(G, M)`` from
    :func:`aggregate_gaussians`. Returns ``(G,)``:
    ``logit ρ_g = Σ_k w_k logit ρ_{g,k} + log C_g`` with
    ``log C_g = Σ_m [Σ_k w_k log N(0; μ_k, v_k) − log N(0; μ, v)]`` (the ratio is the same
    at every point, 0 is the cheapest).

    Saturated inputs (``ρ`` rounded to exactly 0 or 1). Where every client reports the
    same 0 or the same 1, the group stays exactly there (a pruned group stays pruned).
    Where a group mixes a saturated client with a client that reports the other end or a
    value inside ``(0, 1)``, the probabilities have lost the log-odds the sum needs, so the
    saturated clients' log-odds are read from ``log_odds`` (``(K, G)``: each client's
    unsaturated posterior log-odds, :func:`group_log_odds` of its slab against the round's
    prior), bounded on their own side of ``±T`` with ``T = −log(ε/2)`` (the log-odds at
    which the float type rounds ``ρ`` to 1: a client that sent 1 had at least ``T``, and
    symmetrically ``−T`` for 0); without ``log_odds`` (or where it is not finite) they read
    ``±T``. So the rule is symmetric: flipping every client's ``ρ`` (and its log-odds)
    flips the merged log-odds up to ``log C``, which depends on the slabs only.
    """
    w = _weights_for(weights, activities)
    if not bool(torch.all((activities >= 0) & (activities <= 1))):
        raise ValueError("activities: must be in [0, 1] (no NaN)")
    logits = torch.logit(activities)
    saturated = (activities == 0) | (activities == 1)
    unanimous = saturated.all(0) & (activities == activities[:1]).all(0)
    mixed = saturated.any(0) & ~unanimous
    if bool(torch.any(mixed)):
        bound = -math.log(torch.finfo(activities.dtype).eps / 2)
        side = torch.where(activities == 1, activities.new_tensor(bound),
                           activities.new_tensor(-bound))
        read = side
        if log_odds is not None:
            if log_odds.shape != activities.shape:
                raise ValueError(f"log_odds: must have the shape of activities, "
                                 f"{tuple(activities.shape)}")
            odds = log_odds.to(activities.dtype)
            ok = ~torch.isnan(odds)
            read = torch.where(activities == 1, torch.maximum(odds, side),
                               torch.minimum(odds, side))
            read = torch.where(ok & torch.isfinite(read), read, side)
        logits = torch.where(saturated & mixed, read, logits)
    logit = (w * logits).sum(0)
    w3 = _weights_for(weights, means)
    log_c = (
        (w3 * _log_normal_at_zero(means, variances)).sum(0)
        - _log_normal_at_zero(aggregated_mean, aggregated_var)
    ).sum(-1)
    return torch.sigmoid(logit + log_c)


def regression_noise_statistic(targets: Tensor, z_mean: Tensor, z_var: Tensor) -> float:
    """``σ_k = mean over outputs and examples of (y − μ_z)² + v_z`` (eq. 19)."""
    if targets.shape != z_mean.shape or z_mean.shape != z_var.shape:
        raise ValueError("targets: must have the shape of z_mean and z_var")
    return float(((targets - z_mean) ** 2 + z_var).mean())


def regression_noise_variance(
    statistics: Tensor | list[float], counts: Tensor | list[int]
) -> float:
    """``v* = Σ_k (I_k/I) σ_k`` (eq. 18): the exact maximiser of ``E log p(D_y | z_L)``."""
    sigma = torch.as_tensor(statistics, dtype=torch.float64)
    return float((client_weights(counts) * sigma).sum())


def classification_noise_statistics(
    labels: Tensor, z_mean: Tensor, z_var: Tensor
) -> tuple[float, float]:
    """``(μ_k, E_k)`` of eq. 22: mean and second moment of the margins
    ``ξ_mi = z_mi − z_{y_i i}`` (eq. 20) over examples and wrong classes ``m ≠ y_i``.

    ``z_mean``, ``z_var``: ``(C, B)`` posterior moments of the outputs; ``labels``: ``(B,)``.
    """
    classes, batch = z_mean.shape
    if labels.shape != (batch,) or z_var.shape != z_mean.shape:
        raise ValueError(f"labels: must be ({batch},) and z_var must match z_mean")
    idx = labels.long().unsqueeze(0)
    xi_mean = z_mean - z_mean.gather(0, idx)  # 0 at the label
    xi_var = (z_var + z_var.gather(0, idx)).scatter_(0, idx, 0.0)  # summed over m ≠ y_i only
    count = (classes - 1) * batch
    return (
        float(xi_mean.sum()) / count,
        float((xi_mean * xi_mean + xi_var).sum()) / count,
    )


def gumbel_moment_match(
    margin_means: Tensor | list[float],
    margin_second_moments: Tensor | list[float],
    counts: Tensor | list[int],
    side: GumbelSide = "min",
) -> tuple[float, float]:
    """Location ``α`` and scale ``β`` of the Gumbel matching the pooled margins (eq. 21).

    ``β = (√6/π)·sd``, and ``α = mean + γβ`` for ``side="min"`` (the Gumbel of minima,
    the only one for which eq. 21's ``+γβ`` is the moment match) or ``α = mean − γβ``
    for ``side="max"``.
    """
    w = client_weights(counts)
    mean = float((w * torch.as_tensor(margin_means, dtype=torch.float64)).sum())
    second = float((w * torch.as_tensor(margin_second_moments, dtype=torch.float64)).sum())
    variance = second - mean * mean
    if not variance > 0:
        raise ValueError(f"margin_second_moments: pooled variance must be > 0, got {variance!r}")
    beta = math.sqrt(6.0) / math.pi * math.sqrt(variance)
    shift = np.euler_gamma * beta
    return (mean + shift if side == "min" else mean - shift), beta


def _standard_gumbel_grid(side: GumbelSide) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and trapezoid weights for expectations under the standard Gumbel."""
    if side not in ("min", "max"):
        raise ValueError(f"side: must be 'min' or 'max', got {side!r}")
    z = np.linspace(-40.0, 5.0, 2001) if side == "min" else np.linspace(-5.0, 40.0, 2001)
    log_pdf = z - np.exp(z) if side == "min" else -z - np.exp(-z)
    weights = np.exp(log_pdf)
    weights[[0, -1]] *= 0.5
    return z, weights / weights.sum()


_LOG_V_BOUNDS = (-30.0, 30.0)


@functools.cache
def gumbel_table(
    side: GumbelSide = "min", low: float = -10.0, high: float = 2.0, step: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Tabulated ``log F(μ)``, ``F(μ) = argmax_v ∫ G(ξ; μ, 1) log Q(ξ/√v) dξ`` (Sec. III-A2b).

    The expectation is a trapezoid rule on 2001 nodes of the standard Gumbel; the maximiser
    over ``log v ∈ [−30, 30]`` is found for all grid points at once by golden-section
    search (35 steps, bracket < 1e-5). Where there is no interior maximum (the maximiser
    ends within 1 of a bound, or the objective is flat there: ``v → 0`` or ``v → ∞``) the
    entry is ``∓800``, which ``exp`` turns into 0 or ``inf``. About 1 s; cached.
    """
    nodes, weights = _standard_gumbel_grid(side)
    mus = np.arange(low, high + 0.5 * step, step)

    def objective(log_v: np.ndarray) -> np.ndarray:  # (n_mu,) → E log Q(ξ/√v), (n_mu,)
        xi = (mus[:, None] + nodes[None, :]) * np.exp(-0.5 * log_v)[:, None]
        return special.log_ndtr(-xi) @ weights

    lo = np.full_like(mus, _LOG_V_BOUNDS[0])
    hi = np.full_like(mus, _LOG_V_BOUNDS[1])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left, right = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f_left, f_right = objective(left), objective(right)
    for _ in range(35):  # vectorised over the grid of μ
        go_right = f_right > f_left
        lo = np.where(go_right, left, lo)
        hi = np.where(go_right, hi, right)
        new = np.where(go_right, lo + ratio * (hi - lo), hi - ratio * (hi - lo))
        f_new = objective(new)
        left, f_left, right, f_right = (
            np.where(go_right, right, new),
            np.where(go_right, f_right, f_new),
            np.where(go_right, new, left),
            np.where(go_right, f_new, f_left),
        )
    best = 0.5 * (lo + hi)
    f_best = objective(best)
    log_f = best.copy()
    low_end = (best < _LOG_V_BOUNDS[0] + 1.0) | (
        objective(np.full_like(mus, _LOG_V_BOUNDS[0])) >= f_best
    )
    high_end = (best > _LOG_V_BOUNDS[1] - 1.0) | (
        objective(np.full_like(mus, _LOG_V_BOUNDS[1])) >= f_best
    )
    log_f[low_end] = -_LOG_F_SATURATED
    log_f[high_end] = _LOG_F_SATURATED
    return mus, log_f


@functools.cache
def _log_f_spline(side: GumbelSide) -> tuple[interpolate.CubicSpline, float, float, float, float]:
    """Cubic spline of the finite part of :func:`gumbel_table`, its range and the values
    taken beyond it (the neighbouring table entries: saturated or the table's end)."""
    mus, log_f = gumbel_table(side)
    finite = np.flatnonzero(np.abs(log_f) < _LOG_F_SATURATED)
    first, last = int(finite[0]), int(finite[-1])
    below = log_f[max(first - 1, 0)]
    above = log_f[min(last + 1, len(mus) - 1)]
    spline = interpolate.CubicSpline(mus[first:last + 1], log_f[first:last + 1])
    return spline, float(mus[first]), float(mus[last]), float(below), float(above)


def gumbel_noise_variance(alpha: float, beta: float, side: GumbelSide = "min") -> float:
    """``v₀* = β² F(α/β)`` (eq. 21's maximiser), ``log F`` from a cubic spline through
    :func:`gumbel_table`'s finite entries; beyond them ``F`` is 0 or ``inf`` where the
    table saturates and constant past the table's ends. May return 0 or ``inf``."""
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta: must be a finite number > 0, got {beta!r}")
    spline, first, last, below, above = _log_f_spline(side)
    ratio = alpha / beta
    if ratio < first:
        log_f = below
    elif ratio > last:
        log_f = above
    else:
        log_f = float(spline(ratio))
    with np.errstate(over="ignore"):
        return float(beta * beta * np.exp(log_f))


def classification_noise_variance(
    margin_means: Tensor | list[float],
    margin_second_moments: Tensor | list[float],
    counts: Tensor | list[int],
    previous: float,
    *,
    damping: float = 0.5,
    side: GumbelSide = "min",
    min_noise_var: float = 1e-6,
    max_noise_var: float = 1e6,
) -> NoiseUpdate:
    """Eqs. 21-23: Gumbel moment match, ``v₀* = β² F(α/β)`` clipped into
    ``[min_noise_var, max_noise_var]`` (counted), then ``v = damping·v₀* + (1 − damping)·v``
    (the paper's damping 0.5)."""
    if not 0.0 <= damping <= 1.0:
        raise ValueError(f"damping: must be in [0, 1], got {damping!r}")
    if not 0.0 < min_noise_var < max_noise_var:
        raise ValueError("min_noise_var: must be > 0 and below max_noise_var")
    if not (previous > 0 and math.isfinite(previous)):
        raise ValueError(f"previous: must be a finite number > 0, got {previous!r}")
    alpha, beta = gumbel_moment_match(margin_means, margin_second_moments, counts, side)
    optimum = gumbel_noise_variance(alpha, beta, side)
    clipped_value = min(max(optimum, min_noise_var), max_noise_var)
    return NoiseUpdate(
        damping * clipped_value + (1.0 - damping) * previous,
        optimum,
        int(clipped_value != optimum),
    )


def apply_target_sparsity(
    activity: Tensor,
    target_count: int,
    *,
    threshold: float,
    initial_activity: float,
    score: Tensor | None = None,
) -> SparsityReset:
    """Reset ``ρ^W`` so that exactly ``target_count`` groups stay alive (eq. 4.9).

    ``S = #{ρ_i > threshold}``. If ``S > target_count``, the ``target_count`` groups with
    the largest ``score`` (default ``ρ`` itself; ties go to the lower index) among those
    with ``ρ_i ≥ threshold`` are reset to ``initial_activity`` (``ρ₀``) and every other
    group to 0 (pruned for good: a group with prior ``ρ = 0`` keeps posterior 0). The
    paper keeps *all* ``S`` confident groups; capping at the target makes the count exact.
    """
    if activity.dim() != 1:
        raise ValueError(f"activity: must be 1-D (one entry per group), got {activity.dim()}-D")
    if not 0 <= target_count <= activity.numel():
        raise ValueError(f"target_count: must be in [0, {activity.numel()}], got {target_count}")
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold: must be in (0, 1), got {threshold!r}")
    if not 0.0 < initial_activity <= 1.0:
        raise ValueError(f"initial_activity: must be in (0, 1], got {initial_activity!r}")
    confident = int((activity > threshold).sum())
    if confident <= target_count:
        return SparsityReset(activity.clone(), False, confident)
    ranking = (activity if score is None else score).to(torch.float64)
    if ranking.shape != activity.shape:
        raise ValueError(f"score: must have shape {tuple(activity.shape)}")
    eligible = activity >= threshold
    ranking = torch.where(eligible, ranking, -torch.inf)
    order = torch.sort(ranking, descending=True, stable=True).indices[:target_count]
    reset = torch.zeros_like(activity)
    reset[order] = initial_activity
    return SparsityReset(reset, True, confident)


def group_log_odds(prior_activity: Tensor, prior_mean: Tensor, prior_var: Tensor,
                   post_mean: Tensor, post_var: Tensor, *, clamp: float = 40.0) -> Tensor:
    """Module B's posterior log-odds of each group being active, unsaturated (eq. 4.10).

    ``prior_*``: the round's prior (``(G,)`` activities, ``(G, M)`` slab), ``post_*``: the
    merged posterior slab. The slab's Gaussian message is the natural-parameter difference
    ``τ = 1/v_post − 1/v_prior`` (floored at 0), ``h = μ_post/v_post − μ_prior/v_prior``,
    and the log-odds ``logit ρ_prior + Σ_m ℓ_m`` with ``ℓ`` of eq. 3.1: under PasP the
    minibatches' evidence ratios chain, so this is the log-odds the posterior activity has
    before float64 rounds it to 0 or 1. ``logit ρ_prior`` is clamped to ``±clamp`` (a
    saturated prior would tie every such group); a group pruned before this round (prior
    ``ρ = 0``) gets ``−inf``.
    """
    from .group_sparse import element_log_evidence_ratio

    precision = torch.clamp(1.0 / post_var - 1.0 / prior_var, min=0.0)
    shift = post_mean / post_var - prior_mean / prior_var
    evidence = element_log_evidence_ratio(prior_mean, prior_var, precision, shift).sum(-1)
    logit = torch.clamp(torch.logit(prior_activity.to(torch.float64)), -clamp, clamp)
    return torch.where(prior_activity > 0, logit + evidence, -torch.inf)


def budget_cap(total: int, target: int, merge: int, start: int, rounds: int) -> int:
    """Survivors allowed after merge ``merge`` (1-based) in the paper mode's completion:
    ``total`` before ``start``, then ``round(total·(target/total)^f)`` with
    ``f = min(1, (merge − start + 1)/rounds)``, never below ``target`` (eq. 4.11)."""
    if not 1 <= target <= total:
        raise ValueError(f"target: must be in [1, {total}], got {target}")
    if merge < start:
        return total
    fraction = min(1.0, (merge - start + 1) / rounds)
    return max(target, min(total, round(total * (target / total) ** fraction)))


class PaperReset(NamedTuple):
    """The paper mode's rule: new activities per layer, ``S`` (confident groups before),
    whether the paper's literal reset fired, and the groups the cap removed."""

    activities: list[Tensor]
    confident_count: int
    fired: bool
    capped: int


def paper_sparsity(activities: list[Tensor], log_odds: list[Tensor], *, target: int,
                   cap: int, threshold: float, initial_activity: float) -> PaperReset:
    """The paper's target-sparsity rule over all layers at once, with our completion.

    1. ``S = #{ρ_i > ρ_th}`` over the ``Q_W`` weight groups of every layer; if ``S``
       exceeds ``target`` (``ρQ_W``), groups with ``ρ_i ≥ ρ_th`` are reset to ``ρ₀`` and the
       others to 0 (Sec. III-A2a, as written).
    2. Completion (ours): if more than ``cap`` groups are alive (``ρ > 0``), only the
       ``cap`` with the largest ``log_odds`` (:func:`group_log_odds`) stay: the most
       probable support of that size under the factorised posterior. If fewer than
       ``target`` are alive (Module B's activities underflow to exactly 0 in float64), the
       most probable of those with a finite ``log_odds`` (not pruned by an earlier merge)
       are reset to ``ρ₀``, so that exactly ``target`` survive once ``cap = target``.
    In both steps every layer keeps at least its most probable group not pruned before
    (reset to ``ρ₀`` if its activity is 0: a layer with none cuts the output off the
    input). Ties go to the lower index.
    """
    if len(activities) != len(log_odds) or not activities:
        raise ValueError("log_odds: must hold one tensor per layer, like activities")
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold: must be in (0, 1), got {threshold!r}")
    if not 0.0 < initial_activity < 1.0:
        raise ValueError(f"initial_activity: must be in (0, 1), got {initial_activity!r}")
    flat = torch.cat([a.to(torch.float64) for a in activities])
    scores = torch.cat([s.to(torch.float64) for s in log_odds])
    if scores.shape != flat.shape:
        raise ValueError("log_odds: must have one entry per group")
    if not len(activities) <= target <= cap <= flat.numel():
        raise ValueError(f"target: must be in [{len(activities)}, cap = {cap}] and cap <= "
                         f"{flat.numel()}")
    sizes = [a.numel() for a in activities]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    finite = torch.isfinite(scores)
    best = [start + int(torch.argmax(scores[start:start + n]))
            for start, n in zip(starts, sizes, strict=True)
            if bool(finite[start:start + n].any())]
    confident = int((flat > threshold).sum())
    new = flat.clone()
    fired = confident > target
    if fired:
        new = torch.where(flat >= threshold, torch.full_like(flat, initial_activity),
                          torch.zeros_like(flat))
    for index in best:  # each layer's most probable group stays (revived at ρ₀ if 0)
        if float(new[index]) == 0.0:
            new[index] = initial_activity
    alive = new > 0
    capped = 0
    short = target - int(alive.sum())
    if short > 0:  # Module B drove groups to exactly 0 (float64): revive the most probable
        candidates = torch.where(~alive & torch.isfinite(scores), scores, -torch.inf)
        order = torch.sort(candidates, descending=True, stable=True).indices[:short]
        order = order[torch.isfinite(candidates[order])]
        new[order] = initial_activity
        alive = new > 0
    if int(alive.sum()) > cap:
        ranking = torch.where(alive, scores, -torch.inf)
        keep = torch.zeros_like(alive)
        for index in best:
            keep[index] = bool(alive[index])
        room = cap - int(keep.sum())
        order = torch.sort(torch.where(keep, -torch.inf, ranking), descending=True,
                           stable=True).indices[:room]
        keep[order] = True
        keep &= alive
        capped = int(alive.sum()) - int(keep.sum())
        new = torch.where(keep, new, torch.zeros_like(new))
    out, index = [], 0
    for n in sizes:
        out.append(new[index:index + n].to(activities[0].dtype))
        index += n
    return PaperReset(out, confident, fired, capped)
