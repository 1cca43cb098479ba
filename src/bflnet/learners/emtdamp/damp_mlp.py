"""Module A (DAMP) over a ReLU MLP with biases: one forward and one backward sweep per call.

Each layer ``Z_l = W̃_l Ũ_{l−1}`` (``W̃ = [W, b]``, ``Ũ = [U; 1ᵀ]``) gets BiG-AMP's Gaussian
approximations with the Onsager corrections; layer 1 sees the data (``ν_u = 0``), which is
GAMP with the data as sensing matrix, and with one layer a sweep is exactly one iteration
of :func:`~bflnet.learners.emtdamp.damp.linear_layer_gamp`. Hidden nodes ``u = max(0, z)``
use :func:`~bflnet.learners.emtdamp.moments.relu_moments` with the backward message in
precision form (``0`` before the first backward sweep). Weights get their prior from
Module B (:func:`~bflnet.learners.emtdamp.group_sparse.group_sparse_messages`), which is
sent Module A's messages ``A → B`` in precision form. Equations (6.10)-(6.22) of
docs/em-tdamp.md, Sec. 6.4.

**Batched problems.** The state, priors and data may carry one leading dimension, a batch
of independent problems (the clients of a round, :func:`~.tdamp_client.tdamp_clients`):
``(K, N_l, B)``, ``(K, N_l, N_{l−1} + 1)``. Every client's numbers are then bit for bit
those of its problem run alone (the per-client matrix products are the same BLAS calls,
:func:`_mm`), and clip counts are ``(K,)`` tensors instead of ints.

**Devices.** On the CPU every check is made where it stands and a clip that cannot fire
is skipped after one reduction. On another device (CUDA) nothing waits for the host
inside a sweep: the finiteness checks are collected in ``DampState.pending`` and read
once per minibatch (:func:`flush_checks`, raising for the first quantity that failed,
in the order the CPU would have), and the clips always take their counting and clamping
path (the same numbers).

Safeguards, each clip counted in ``clips["layer<l>/<quantity>"]``: ``ν_z/ν_p`` capped at
``ratio_cap``; ``ν_p`` floored at ``var_floor``; ``ν_q``, ``ν_r`` capped at ``var_cap``
(their precisions floored at ``1/var_cap``); BiG-AMP's gain factors clipped to ``[0, 1]``;
damping on ``ŝ``, ``ν_s`` and the weight means. Non-finite values raise
:class:`~bflnet.learners.emtdamp.damp.NonFiniteError` naming the layer and the quantity.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor

from . import moments
from .damp import NonFiniteError, check_finite
from .group_sparse import (
    DenseGroupPosterior,
    DenseGroupPrior,
    GroupSparseMessages,
    dense_group_posterior,
    dense_group_prior,
    group_sparse_messages,
)
from .heap import keep_freed_memory
from .moments import (
    ReluForward,
    gaussian_output_moments,
    probit_product_moments,
    relu_forward,
    relu_posterior,
)

__all__ = [
    "DampSettings",
    "DampState",
    "LayerPrior",
    "OutputNode",
    "backward_sweep",
    "damp_sweep",
    "dense_prior",
    "flush_checks",
    "forward_sweep",
    "gaussian_layer_prior",
    "gaussian_output",
    "init_state",
    "layer_means",
    "layer_prior",
    "layer_weight_posterior",
    "mlp_forward",
    "probit_output",
    "random_layer_priors",
    "run_damp",
    "weight_moments",
]

OutputNode = Callable[[Tensor, Tensor], tuple[Tensor, Tensor, int]]
#: The ``ν_s`` safeguards of :class:`DampSettings`.
VARIANCE_CLIPS = ("posterior", "extrinsic")


class LayerPrior(NamedTuple):
    """Group Bernoulli-Gaussian prior (or posterior) of one layer, in Module B's layout.

    ``weight_activity``: ``(N_in,)`` ``ρ`` of each input neuron's outgoing weights (one
    column of ``W``); ``weight_mean``, ``weight_var``: ``(N_in, N_out)`` the slab, i.e.
    ``Wᵀ``; ``bias_activity``: ``(N_out,)``; ``bias_mean``, ``bias_var``: ``(N_out, 1)``
    (each bias is a group of one). This is also the server's ``(G, M)`` layout.
    """

    weight_activity: Tensor
    weight_mean: Tensor
    weight_var: Tensor
    bias_activity: Tensor
    bias_mean: Tensor
    bias_var: Tensor


@dataclass(frozen=True)
class DampSettings:
    """Damping (weight of the new value, 1 = none) and the clip bounds."""

    damping: float = 1.0
    ratio_cap: float = 0.99
    var_floor: float = 1e-12
    var_cap: float = 1e6
    #: Where the ``ν_s`` safeguard acts: ``"posterior"`` caps ``ν_z/ν_p`` at ``ratio_cap``
    #: (BiG-AMP's default; under PasP it compounds, docs/em-tdamp.md Sec. 6.8);
    #: ``"extrinsic"`` floors the extrinsic precision ``1/ν_z − 1/ν_p`` at ``1/var_cap``
    #: and sets ``ν_s = 1/(ν_p + ν_e)``, which does not depend on the prior's scale.
    variance_clip: str = "posterior"
    #: Module B keeps the prior's group activities (only the slab is updated): the
    #: client's ``activity_update="round"`` (docs/em-tdamp.md Sec. 6.10).
    hold_activity: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.damping <= 1.0:
            raise ValueError(f"damping: must be in (0, 1], got {self.damping!r}")
        if self.variance_clip not in VARIANCE_CLIPS:
            raise ValueError(f"variance_clip: must be one of {', '.join(VARIANCE_CLIPS)}, "
                             f"got {self.variance_clip!r}")
        if not 0.0 < self.ratio_cap < 1.0:
            raise ValueError(f"ratio_cap: must be in (0, 1), got {self.ratio_cap!r}")
        if not 0.0 < self.var_floor < self.var_cap < math.inf:
            raise ValueError("var_floor: must be > 0 and below a finite var_cap")


@dataclass
class DampState:
    """Module A's state for one minibatch; lists run over layers ``l = 1..L``.

    ``weight_*``: ``(N_l, N_{l−1} + 1)`` posterior means/variances of ``W̃_l``;
    ``s_hat``, ``s_var``: ``(N_l, B)``; ``r_precision``, ``r_shift``: backward message on
    ``u_{l−1}`` (``None`` for ``l = 1``); ``q_precision``, ``q_shift``: ``A → B``
    messages on ``W̃_l``; ``p_hat``, ``p_var``: forward messages on ``z_l``; ``u_mean``,
    ``u_var``: posterior of ``Ũ_{l−1}`` (with the row of ones); ``z_mean``, ``z_var``:
    output posterior; ``sweeps``: sweeps run. ``priors``: the layers' priors in Module A's
    layout (``prior_source``: the :class:`LayerPrior` list they came from, if any);
    ``posterior``: Module B's output per layer from the last backward sweep (for PasP);
    ``u_square``: ``Ũ²`` of the last forward sweep; ``inputs``: the data of the cached
    layer-1 ``X̃`` (``u_mean[0]``); ``relu_parts``: the forward sweep's ReLU parts per
    layer input (``None`` for ``l = 1``), reused by the backward sweep; ``pending``: the
    checks deferred off the CPU (module docs); ``private``: see the field.
    """

    weight_mean: list[Tensor]
    weight_var: list[Tensor]
    s_hat: list[Tensor]
    s_var: list[Tensor]
    r_precision: list[Tensor | None]
    r_shift: list[Tensor | None]
    q_precision: list[Tensor]
    q_shift: list[Tensor]
    p_hat: list[Tensor] = field(default_factory=list)
    p_var: list[Tensor] = field(default_factory=list)
    u_mean: list[Tensor] = field(default_factory=list)
    u_var: list[Tensor | None] = field(default_factory=list)
    z_mean: Tensor | None = None
    z_var: Tensor | None = None
    sweeps: int = 0
    priors: list[DenseGroupPrior] = field(default_factory=list)
    prior_source: list[LayerPrior] | None = None
    posterior: list[DenseGroupPosterior] = field(default_factory=list)
    u_square: list[Tensor] = field(default_factory=list)
    inputs: Tensor | None = None
    relu_parts: list[ReluForward | None] = field(default_factory=list)
    #: Finiteness checks not yet read (off the CPU): ``(quantity, layer, all finite)``.
    pending: list[tuple[str, int, Tensor]] = field(default_factory=list)
    #: The caller never hands this state out (:func:`~.tdamp_client.tdamp_clients`): after
    #: the first sweep the damped ``ŝ``, ``ν_s`` and weight means are written over their
    #: previous values (the state's own arrays) instead of into new ones.
    private: bool = False
    #: Layer 1's ``X̃ᵀ`` and ``X̃²ᵀ`` as contiguous arrays, for the float32 backward
    #: products (:func:`_input_transposes`); made once per cached ``X̃``.
    input_transposes: tuple[Tensor, Tensor] | None = None

    @property
    def weight_posterior(self) -> list[tuple[GroupSparseMessages, GroupSparseMessages]]:
        """Module B's output per layer (weight groups, bias groups) for the last backward
        sweep's ``A → B`` messages, in Module B's layout (computed on access)."""
        if not self.posterior:
            return []
        priors = self.prior_source or [
            layer_prior(p.weight_activity, p.bias_activity, p.mean, p.var) for p in self.priors
        ]
        return [layer_weight_posterior(prior, q, h) for prior, q, h
                in zip(priors, self.q_precision, self.q_shift, strict=True)]


def gaussian_layer_prior(mean: Tensor, var: Tensor) -> LayerPrior:
    """A Gaussian prior (``ρ = 1``) from ``(N_out, N_in + 1)`` means/variances of ``W̃``."""
    if mean.dim() != 2 or var.shape != mean.shape:
        raise ValueError("mean: must be (N_out, N_in + 1) and match var")
    n_out, n_in = mean.shape[0], mean.shape[1] - 1
    ones = torch.ones(n_in, dtype=mean.dtype, device=mean.device)
    return LayerPrior(
        ones, mean[:, :-1].T.clone(), var[:, :-1].T.clone(),
        torch.ones(n_out, dtype=mean.dtype, device=mean.device), mean[:, -1:].clone(),
        var[:, -1:].clone(),
    )


def random_layer_priors(
    sizes: list[int],
    generator: torch.Generator,
    *,
    activity: float = 1.0,
    mean_scale: float = 1.0,
    var_scale: float = 1.0,
    bias_var: float = 1.0,
) -> list[LayerPrior]:
    """Priors for an MLP ``sizes = [N_0, ..., N_L]``: slab means ``N(0, mean_scale/N_in)``
    (random, to break the hidden units' permutation symmetry), slab variances
    ``var_scale/N_in``, biases ``N(0, bias_var)`` with mean 0; activity ``ρ`` everywhere."""
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"sizes: must list at least 2 positive layer widths, got {sizes!r}")
    if not 0.0 < activity <= 1.0:
        raise ValueError(f"activity: must be in (0, 1], got {activity!r}")
    priors = []
    for n_in, n_out in itertools.pairwise(sizes):
        f64 = torch.float64
        mean = torch.randn(n_in, n_out, generator=generator, dtype=f64) * math.sqrt(
            mean_scale / n_in
        )
        priors.append(
            LayerPrior(
                torch.full((n_in,), activity, dtype=f64), mean,
                torch.full((n_in, n_out), var_scale / n_in, dtype=f64),
                torch.full((n_out,), activity, dtype=f64), torch.zeros(n_out, 1, dtype=f64),
                torch.full((n_out, 1), bias_var, dtype=f64),
            )
        )
    return priors


def gaussian_output(targets: Tensor, noise_var: float) -> OutputNode:
    """Gaussian likelihood ``N(y; z, v)`` (paper eq. 5) as an output node (eq. 2.15); the
    arguments are checked at the first call on the CPU (the sweeps floor and check every
    ``ν_p``)."""

    checked = False

    def node(p_hat: Tensor, p_var: Tensor) -> tuple[Tensor, Tensor, int]:
        nonlocal checked
        out = gaussian_output_moments(p_hat, p_var, targets, noise_var,
                                      check=not checked and moments.on_host(p_var))
        checked = True
        return (*out, 0)

    return node


def probit_output(labels: Tensor, noise_var: float) -> OutputNode:
    """Probit-product likelihood (paper eq. 6) as an output node (eqs. 2.10-2.14); the
    third value counts the extrinsic precisions clipped at zero. The arguments are checked
    at the first call (Module A's ``ν_p`` are floored and checked by the sweeps)."""
    checked = False

    def node(p_hat: Tensor, p_var: Tensor) -> tuple[Tensor, Tensor, int]:
        nonlocal checked
        result = probit_product_moments(p_hat, p_var, labels, noise_var,
                                        check=not checked and moments.on_host(p_var))
        checked = True
        return tuple(result)  # type: ignore[return-value]

    return node


def layer_weight_posterior(
    prior: LayerPrior, q_precision: Tensor, q_shift: Tensor
) -> tuple[GroupSparseMessages, GroupSparseMessages]:
    """Module B for one layer (eqs. 3.1-3.5) given the ``A → B`` messages on ``W̃``
    (``(N_out, N_in + 1)``, precision form): weight groups and bias groups."""
    weights = group_sparse_messages(
        prior.weight_activity, prior.weight_mean, prior.weight_var,
        q_precision[:, :-1].T.contiguous(), q_shift[:, :-1].T.contiguous(),  # strided is slower
    )
    biases = group_sparse_messages(
        prior.bias_activity, prior.bias_mean, prior.bias_var,
        q_precision[:, -1:], q_shift[:, -1:],
    )
    return weights, biases


def weight_moments(
    weights: GroupSparseMessages, biases: GroupSparseMessages
) -> tuple[Tensor, Tensor]:
    """Marginal posterior mean and variance of ``W̃ = [W, b]`` (eq. 3.5), ``(N_out, N_in + 1)``."""
    mean = torch.cat([weights.marginal_mean.T, biases.marginal_mean], dim=1)
    var = torch.cat([weights.marginal_var.T, biases.marginal_var], dim=1)
    return mean, var


def dense_prior(prior: LayerPrior) -> DenseGroupPrior:
    """A :class:`LayerPrior` in Module A's ``(N_out, N_in + 1)`` layout, with Module B's
    per-minibatch constants."""
    mean, var = _dense_layout(prior.weight_mean, prior.bias_mean), _dense_layout(
        prior.weight_var, prior.bias_var)
    return dense_group_prior(prior.weight_activity, prior.bias_activity, mean, var)


def _dense_layout(weights: Tensor, biases: Tensor) -> Tensor:
    """``[Wᵀᵀ, b]``: ``(N_in, N_out)`` weights and ``(N_out, 1)`` biases as one
    ``(N_out, N_in + 1)`` array (one pass over the weights)."""
    out = torch.empty(weights.shape[1], weights.shape[0] + 1, dtype=weights.dtype,
                      device=weights.device)
    out[:, :-1].copy_(weights.T)
    out[:, -1:].copy_(biases)
    return out


def layer_prior(
    weight_activity: Tensor, bias_activity: Tensor, mean: Tensor, var: Tensor
) -> LayerPrior:
    """The :class:`LayerPrior` (Module B's and the server's layout) of group activities and
    a slab ``(N_out, N_in + 1)`` in Module A's layout (e.g. of a :class:`DenseGroupPrior`
    or :class:`DenseGroupPosterior`)."""
    return LayerPrior(
        weight_activity, mean[:, :-1].T.contiguous(), var[:, :-1].T.contiguous(),
        bias_activity, mean[:, -1:].clone(), var[:, -1:].clone(),
    )


def _same(priors: list[LayerPrior], source: list[LayerPrior] | None) -> bool:
    return source is not None and len(source) == len(priors) and all(
        a is b for a, b in zip(priors, source, strict=True)
    )


def _dense_priors(state: DampState, priors: list[LayerPrior]) -> list[DenseGroupPrior]:
    """``state.priors`` if they were made from ``priors``, else made from them now."""
    if not _same(priors, state.prior_source):
        state.priors = [dense_prior(p) for p in priors]
        state.prior_source = list(priors)
    return state.priors


def init_state(priors: list[LayerPrior], batch: int) -> DampState:
    """Algorithm 1's initialisation for one minibatch: every message flat (``ŝ = 0``,
    ``A → B`` and backward messages of precision 0), weights at the prior's moments."""
    state = _init_dense_state([dense_prior(p) for p in priors], batch)
    state.prior_source = list(priors)
    return state


def _init_dense_state(priors: list[DenseGroupPrior], batch: int) -> DampState:
    """:func:`init_state` from priors in Module A's layout. Flat messages: Module B's
    marginals are the prior's (3.5 with ``τ = h = 0``); the ``A → B`` zeros are broadcast
    views (they are only ever replaced, never read before)."""
    if batch < 1:
        raise ValueError(f"batch: must be >= 1, got {batch}")
    state = DampState([], [], [], [], [], [], [], [], priors=list(priors))
    for index, prior in enumerate(priors):
        *lead, n_out, n_in = prior.mean.shape
        n_in -= 1
        kind = {"dtype": prior.mean.dtype, "device": prior.mean.device}
        zero_q = torch.zeros((), **kind).expand(*lead, n_out, n_in + 1)
        state.weight_mean.append(prior.marginal_mean)
        state.weight_var.append(prior.marginal_var)
        state.s_hat.append(torch.zeros(*lead, n_out, batch, **kind))
        state.s_var.append(torch.zeros(*lead, n_out, batch, **kind))
        zero_r = torch.zeros(*lead, n_in, batch, **kind) if index > 0 else None
        state.r_precision.append(zero_r)
        state.r_shift.append(zero_r)
        state.q_precision.append(zero_q)
        state.q_shift.append(zero_q)
    return state


#: Counts stay exact in a float sum up to here (float32's 24-bit significand).
_FLOAT_COUNT_MAX = 2**24


def _count_beyond(clips: dict[str, int], key: str, value: Tensor, bound: float,
                  *, below: bool) -> None:
    """:func:`_count` of ``value < bound`` (``below``) or ``value > bound``. For a batch on
    the CPU without a boolean mask: the sign of ``bound − value`` (or ``value − bound``)
    clamped to 0 and 1 and summed, the same count (the difference of two floats is zero
    only where they are equal, and the sums are integers below 2²⁴); here a comparison
    into booleans costs about three arithmetic passes. NaN (never counted by the
    comparison) takes the mask."""
    if (value.dim() <= 2 or not moments.on_host(value)
            or value.shape[-2:].numel() >= _FLOAT_COUNT_MAX):
        _count(clips, key, value < bound if below else value > bound)
        return
    margin = torch.rsub(value, bound) if below else torch.sub(value, bound)
    counts = margin.clamp_(min=0.0).sign_().sum((-2, -1))
    if bool(counts.isnan().any()):
        _count(clips, key, value < bound if below else value > bound)
        return
    clips[key] = clips.get(key, 0) + counts.long()  # type: ignore[assignment]


def _count(clips: dict[str, int], key: str, mask: Tensor) -> None:
    """Add the ``True`` entries of one problem's ``mask`` (at most 2-D) to ``clips[key]``
    (an int), or of each problem's of a batch ``(K, …, …)`` (a ``(K,)`` tensor, no host
    round trip)."""
    if mask.dim() <= 2:
        counts = int(torch.count_nonzero(mask))
    else:  # as bytes into int32: about 4x faster than a bool sum (which converts to int64)
        counts = mask.view(torch.uint8).sum((-2, -1), dtype=torch.int32).long()
    clips[key] = clips.get(key, 0) + counts  # type: ignore[assignment]


_ALIGN = 64  # bytes: torch's CPU allocator aligns every new tensor so


def _aligned(t: Tensor) -> Tensor:
    """``t`` itself, or a copy with the same sizes and strides in fresh (aligned) memory
    when ``t`` starts off the allocator's alignment (a problem's slice of a batch): the
    small BLAS kernels (GEMV) round differently on unaligned data."""
    if t.data_ptr() % _ALIGN == 0:
        return t
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                               device=t.device).copy_(t)


def _vector_shaped(a: Tensor, b: Tensor) -> bool:
    """Whether ``a @ b`` has a dimension of 1, where a 2-D product may take another kernel
    (a GEMV) than a batched one."""
    return 1 in (a.shape[-2], a.shape[-1], b.shape[-1])


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``, for a batch of problems the same BLAS call per problem as alone:
    ``torch.matmul`` of 3-D tensors (one GEMM per problem, packed, so bit for bit the 2-D
    product), except for vector-shaped products, multiplied problem by problem on aligned
    copies (:func:`_aligned`)."""
    if a.dim() == 2 or not _vector_shaped(a, b):
        return torch.matmul(a, b)
    return torch.stack([_aligned(x) @ _aligned(y) for x, y in zip(a, b, strict=True)])


def _mul_addmm(w: Tensor, gain: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``w ⊙ gain + a @ b``, per problem as :func:`_mm`. In float64 one ``addmm``/``baddbmm``
    into ``w ⊙ gain`` (the tables' bits); in other dtypes the product first, then the
    elementwise term added in place: MKL's float32 ``baddbmm`` with ``β = 1`` is slower than
    the product and the add (``bench/emtdamp_products.py``)."""
    if w.dtype == torch.float64:
        return _addmm(torch.mul(w, gain), a, b)
    return _mm(a, b).addcmul_(w, gain)


def _addmm(out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``out + a @ b`` (in place in ``out`` where it can), per problem as :func:`_mm`."""
    if out.dim() == 2:
        return out.addmm_(a, b)
    if not _vector_shaped(a, b):
        return out.baddbmm_(a, b)
    return torch.stack([o.clone().addmm_(_aligned(x), _aligned(y))
                        for o, x, y in zip(out, a, b, strict=True)])


def _check(state: DampState, name: str, value: Tensor, layer: int) -> Tensor:
    """:func:`check_finite` on the CPU; elsewhere the check is queued in
    ``state.pending`` (read by :func:`flush_checks`). Returns ``value``."""
    if moments.on_host(value):
        return check_finite(name, value, layer)
    state.pending.append((name, layer, torch.isfinite(value).all()))
    return value


def flush_checks(state: DampState) -> None:
    """Read the queued finiteness checks (one device sync) and raise
    :class:`NonFiniteError` for the first that failed."""
    if not state.pending:
        return
    passed = torch.stack([flag for _, _, flag in state.pending]).tolist()
    pending, state.pending = state.pending, []
    for (name, layer, _), ok in zip(pending, passed, strict=True):
        if not ok:
            raise NonFiniteError(f"layer {layer}: {name} is not finite")


def _floor(clips: dict[str, int], key: str, value: Tensor, bound: float,
           own: bool = False) -> Tensor:
    """``max(value, bound)``, counting the clipped entries (on the CPU, one reduction if
    none is); in place if ``own`` (``value`` is the caller's new array)."""
    if moments.on_host(value) and float(value.min()) >= bound:
        clips.setdefault(key, 0)
        return value
    _count_beyond(clips, key, value, bound, below=True)
    # the same values as torch.where(below, bound, value)
    return value.clamp_(min=bound) if own else value.clamp(min=bound)


def _cap(clips: dict[str, int], key: str, value: Tensor, bound: float,
         own: bool = False) -> Tensor:
    """``min(value, bound)``, counting the clipped entries (on the CPU, one reduction if
    none is); in place if ``own`` (``value`` is the caller's new array)."""
    if moments.on_host(value) and float(value.max()) <= bound:
        clips.setdefault(key, 0)
        return value
    _count_beyond(clips, key, value, bound, below=False)
    return value.clamp_(max=bound) if own else value.clamp(max=bound)


def _floor_finite(
    clips: dict[str, int], key: str, name: str, value: Tensor, bound: float, layer: int,
    state: DampState | None = None,
) -> Tensor:
    """:func:`check_finite` then :func:`_floor`, from one ``aminmax`` when nothing is wrong
    (off the CPU: :func:`_check` then :func:`_floor`). ``value`` is the caller's own new
    array (a product): on the CPU it is clamped in place."""
    if state is not None and not moments.on_host(value):
        return _floor(clips, key, _check(state, name, value, layer), bound)
    low, high = (float(v) for v in torch.aminmax(value))
    if not (math.isfinite(low) and math.isfinite(high)):  # NaN reaches both
        raise NonFiniteError(f"layer {layer}: {name} is not finite")
    if low >= bound:
        clips.setdefault(key, 0)
        return value
    _count_beyond(clips, key, value, bound, below=True)
    return value.clamp_(min=bound)  # the same values as torch.where(below, bound, value)


def _input_rows(state: DampState, inputs: Tensor) -> tuple[Tensor, Tensor]:
    """Layer 1's ``X̃ = [X; 1ᵀ]`` and ``X̃²``, cached while ``inputs`` is the same tensor."""
    if state.inputs is not inputs or not state.u_mean or not state.u_square:
        ones = torch.ones(*inputs.shape[:-2], 1, inputs.shape[-1], dtype=inputs.dtype,
                          device=inputs.device)
        x = torch.cat([inputs, ones], dim=-2)
        state.inputs, state.input_transposes = inputs, None
        return x, x * x
    return state.u_mean[0], state.u_square[0]


def _input_transposes(state: DampState, index: int) -> tuple[Tensor, Tensor]:
    """``Ũᵀ`` and ``Ũ²ᵀ`` of layer ``index + 1``'s inputs, the right operands of the
    backward products ``ŝ Ũᵀ`` and ``ν_s Ũ²ᵀ`` (6.17)-(6.18): transposed views, except
    layer 1's in float32, which are contiguous copies made once per minibatch (its ``5``
    sweeps reuse them): at these shapes MKL's SGEMM is about 10 % faster on a contiguous
    right operand than on a transposed one, with the same bits; its DGEMM is not faster
    and rounds differently, so float64 keeps the views."""
    u_t, u2 = state.u_mean[index], state.u_square[index]
    if index > 0 or u_t.dtype != torch.float32:
        return u_t.mT, u2.mT
    if state.input_transposes is None:
        x_t = u_t.mT.contiguous()
        state.input_transposes = (x_t, x_t * x_t)
    return state.input_transposes


def forward_sweep(
    state: DampState, inputs: Tensor, settings: DampSettings, clips: dict[str, int]
) -> None:
    """Layers ``l = 1..L``: input posteriors (6.10), forward messages (6.11)-(6.12)."""
    x, x2 = _input_rows(state, inputs)
    state.p_hat, state.p_var, state.u_mean, state.u_var, state.u_square = [], [], [], [], []
    state.relu_parts = [None] * len(state.weight_mean)
    for index, (w_mean, w_var) in enumerate(zip(state.weight_mean, state.weight_var, strict=True)):
        layer = index + 1
        if index == 0:
            u_t, u2, u_var_t = x, x2, None
        else:  # (6.10) ReLU node: forward message below, backward message above
            lam_b, h = state.r_precision[index], state.r_shift[index]
            flat = state.sweeps == 0 and not (bool(lam_b.any()) or bool(h.any()))
            forward = relu_forward(state.p_hat[-1], state.p_var[-1], reflect=flat)
            state.relu_parts[index] = forward
            u_mean, u_var = relu_posterior(forward, *((None, None) if flat else (lam_b, h)),
                                           z=False)
            _check(state, "û", u_mean, layer - 1)
            u_var = _check(state, "ν_u", u_var.clamp_(min=0.0), layer - 1)  # (new array)
            row = (*u_mean.shape[:-2], 1, u_mean.shape[-1])
            kind = {"dtype": u_mean.dtype, "device": u_mean.device}
            u_t = torch.cat([u_mean, torch.ones(row, **kind)], dim=-2)
            u2 = u_t * u_t
            u_var_t = torch.cat([u_var, torch.zeros(row, **kind)], dim=-2)
        p_bar_var = _mm(w_var, u2)  # (6.11)
        p_var = p_bar_var
        if u_var_t is not None:
            p_bar_var = p_bar_var + _mm(w_mean * w_mean, u_var_t)
            p_var = p_bar_var + _mm(w_var, u_var_t)
        p_var = _floor(clips, f"layer{layer}/p_var_floor", _check(state, "ν_p", p_var, layer),
                       settings.var_floor)
        p_hat = _mm(w_mean, u_t).sub_(state.s_hat[index] * p_bar_var)  # (6.12) Onsager
        state.p_hat.append(_check(state, "p̂", p_hat, layer))
        state.p_var.append(p_var)
        state.u_mean.append(u_t)
        state.u_var.append(u_var_t)
        state.u_square.append(u2)


def _scores(clips: dict[str, int], layer: int, z_mean: Tensor, z_var: Tensor, p_hat: Tensor,
            p_var: Tensor, settings: DampSettings) -> tuple[Tensor, Tensor]:
    """``ŝ = (ẑ − p̂)/ν_p`` and ``ν_s = (1 − ν_z/ν_p)/ν_p`` (6.14) with the safeguard of
    ``settings.variance_clip`` (clips counted under ``z_to_p_ratio``).

    ``"posterior"``: ``ν_z/ν_p ≤ ratio_cap``, i.e. ``ν_s ≥ (1 − ratio_cap)/ν_p``: a floor
    that scales with the prior's ``1/ν_p`` (compounds under PasP, docs/em-tdamp.md
    Sec. 6.8). ``"extrinsic"``: ``ν_s = 1/(ν_p + ν_e)`` with the extrinsic precision
    ``π_e = 1/ν_z − 1/ν_p``; where ``π_e < 1/var_cap`` there is no proper Gaussian
    extrinsic message (the node's posterior is wider than its forward message) and the
    message is dropped (``ŝ = ν_s = 0``, expectation propagation's skipped update)."""
    s_hat = torch.sub(z_mean, p_hat).div_(p_var)
    if settings.variance_clip == "posterior":
        ratio = _cap(clips, f"layer{layer}/z_to_p_ratio", z_var / p_var, settings.ratio_cap,
                     own=True)
        return s_hat, torch.rsub(ratio, 1.0).div_(p_var)
    ratio = z_var / p_var
    extrinsic = (1.0 - ratio) / z_var
    bad = extrinsic < 1.0 / settings.var_cap
    _count(clips, f"layer{layer}/z_to_p_ratio", bad)
    if moments.on_host(bad) and not bool(bad.any()):
        return s_hat, (1.0 - ratio) / p_var
    return (torch.where(bad, 0.0, s_hat),
            torch.where(bad, 0.0, (1.0 - ratio) / p_var))


def _damp(new: Tensor, old: Tensor, damping: float, first: bool = False,
          overwrite: bool = False) -> Tensor:
    """``damping · new + (1 − damping) · old`` (one pass: ``old + damping (new − old)``),
    written over ``old`` if ``overwrite``."""
    if first or damping == 1.0:
        return new
    return torch.lerp(old, new, damping, out=old) if overwrite else torch.lerp(old, new, damping)


def backward_sweep(
    state: DampState,
    priors: list[LayerPrior],
    output: OutputNode,
    settings: DampSettings,
    clips: dict[str, int],
) -> None:
    """Layers ``l = L..1``: node posteriors (6.13), ``ŝ``, ``ν_s`` (6.14), messages to the
    inputs (6.15)-(6.16) and to the weights (6.17)-(6.18), Module B and the weight
    update (6.19)-(6.20)."""
    _backward_sweep(state, _dense_priors(state, priors), output, settings, clips)


def _backward_sweep(
    state: DampState,
    priors: list[DenseGroupPrior],
    output: OutputNode,
    settings: DampSettings,
    clips: dict[str, int],
) -> None:
    """:func:`backward_sweep` with the priors in Module A's layout."""
    first = state.sweeps == 0
    # after the first sweep the damped arrays are this state's own (DampState.private)
    overwrite = state.private and not first
    depth = len(priors)
    posterior: list[DenseGroupPosterior | None] = [None] * depth
    for index in reversed(range(depth)):
        layer = index + 1
        p_hat, p_var = state.p_hat[index], state.p_var[index]
        if index == depth - 1:  # (6.13) output node
            z_mean, z_var, clipped = output(p_hat, p_var)
            clips[f"layer{layer}/output_precision"] = (
                clips.get(f"layer{layer}/output_precision", 0) + clipped
            )
            state.z_mean, state.z_var = z_mean, z_var
        else:  # (6.13) ReLU node with the backward message just sent down by layer l + 1
            forward = state.relu_parts[index + 1] if index + 1 < len(state.relu_parts) else None
            if forward is None or forward.mean is not p_hat or forward.var is not p_var:
                forward = relu_forward(p_hat, p_var)
            z_mean, z_var, _ = relu_posterior(forward, state.r_precision[index + 1],
                                              state.r_shift[index + 1], u=False)
        _check(state, "ẑ", z_mean, layer)
        s_new, s_var_new = _scores(clips, layer, z_mean, _check(state, "ν_z", z_var, layer),
                                   p_hat, p_var, settings)  # (6.14)
        _check(state, "ŝ", s_new, layer)
        _check(state, "ν_s", s_var_new, layer)
        s_hat = _damp(s_new, state.s_hat[index], settings.damping, first, overwrite)
        s_var = _damp(s_var_new, state.s_var[index], settings.damping, first, overwrite)
        state.s_hat[index], state.s_var[index] = s_hat, s_var
        w_mean, w_var = state.weight_mean[index], state.weight_var[index]
        u_t, u_var_t = state.u_mean[index], state.u_var[index]
        if index > 0:  # (6.15)-(6.16) backward message on u_{l−1}, precision form
            w_in, w_var_in = w_mean[..., :-1], w_var[..., :-1]
            r_precision = _floor_finite(clips, f"layer{layer}/r_var_cap", "1/ν_r",
                                        _mm((w_in * w_in).mT, s_var), 1.0 / settings.var_cap,
                                        layer, state)
            spread = _mm(w_var_in.mT, s_var)
            gain = _floor(clips, f"layer{layer}/r_gain",
                          torch.sub(r_precision, spread, out=spread), 0.0, own=True)
            r_shift = (u_t[..., :-1, :] * gain).add_(_mm(w_in.mT, s_hat))
            state.r_precision[index] = r_precision
            state.r_shift[index] = _check(state, "r̂/ν_r", r_shift, layer)
        # (6.17)-(6.18) A → B messages on W̃_l, precision form
        u_t_t, u2_t = _input_transposes(state, index)
        q_precision = _floor_finite(clips, f"layer{layer}/q_var_cap", "1/ν_q",
                                    _mm(s_var, u2_t), 1.0 / settings.var_cap, layer, state)
        gain = q_precision
        if u_var_t is not None:
            gain = _floor(clips, f"layer{layer}/q_gain", q_precision - _mm(s_var, u_var_t.mT),
                          0.0)
        q_shift = _check(state, "q̂/ν_q", _mul_addmm(w_mean, gain, s_hat, u_t_t), layer)
        state.q_precision[index], state.q_shift[index] = q_precision, q_shift
        # (6.19)-(6.20) Module B's posterior of W̃_l, damped means
        layer_posterior = dense_group_posterior(priors[index], q_precision, q_shift,
                                                hold_activity=settings.hold_activity)
        posterior[index] = layer_posterior
        new_mean = _check(state, "ŵ", layer_posterior.marginal_mean, layer)
        state.weight_mean[index] = _damp(new_mean, w_mean, settings.damping,
                                         overwrite=overwrite)
        state.weight_var[index] = _check(state, "ν_w", layer_posterior.marginal_var, layer)
    state.posterior = posterior  # type: ignore[assignment]
    state.sweeps += 1


def damp_sweep(
    state: DampState,
    inputs: Tensor,
    priors: list[LayerPrior],
    output: OutputNode,
    settings: DampSettings,
    clips: dict[str, int],
) -> None:
    """One DAMP iteration (Algorithm 1, lines 7-18): forward then backward sweep."""
    forward_sweep(state, inputs, settings, clips)
    backward_sweep(state, priors, output, settings, clips)


def _check_priors(priors: list[LayerPrior], inputs: Tensor) -> None:
    if not priors:
        raise ValueError("priors: must hold one LayerPrior per layer, got none")
    if inputs.dim() != 2 or inputs.shape[0] != priors[0].weight_mean.shape[0]:
        raise ValueError(
            f"inputs: must be (N_0 = {priors[0].weight_mean.shape[0]}, B), "
            f"got shape {tuple(inputs.shape)}"
        )
    for index in range(1, len(priors)):
        if priors[index].weight_mean.shape[0] != priors[index - 1].weight_mean.shape[1]:
            raise ValueError(f"priors: layer {index + 1}'s input width must match layer {index}'s")


def run_damp(
    inputs: Tensor,
    priors: list[LayerPrior],
    output: OutputNode,
    *,
    sweeps: int = 1,
    settings: DampSettings | None = None,
    state: DampState | None = None,
) -> tuple[DampState, dict[str, int]]:
    """``sweeps`` DAMP iterations on one minibatch ``inputs`` (``(N_0, B)``) from ``state``
    (default: Algorithm 1's flat initialisation). Returns the state and the clip counts."""
    _check_priors(priors, inputs)
    if sweeps < 1:
        raise ValueError(f"sweeps: must be >= 1, got {sweeps}")
    settings = settings or DampSettings()
    keep_freed_memory()
    state = state or init_state(priors, inputs.shape[1])
    dense = _dense_priors(state, priors)
    clips: dict[str, int] = {}
    for _ in range(sweeps):
        forward_sweep(state, inputs, settings, clips)
        _backward_sweep(state, dense, output, settings, clips)
    flush_checks(state)
    return state, clips


def mlp_forward(weight_means: list[Tensor], inputs: Tensor) -> Tensor:
    """The point-estimate network ``z_L`` for ``(N_l, N_{l−1} + 1)`` weights ``[W, b]``
    (ReLU on hidden layers), e.g. the posterior means."""
    u = inputs
    for index, w in enumerate(weight_means):
        z = w[:, :-1] @ u + w[:, -1:]
        u = torch.relu(z) if index < len(weight_means) - 1 else z
    return u


def layer_means(priors: list[LayerPrior]) -> list[Tensor]:
    """Marginal means ``ρ μ`` of each layer's ``W̃ = [W, b]`` (``(N_l, N_{l−1} + 1)``):
    the paper's point estimate for testing."""
    return [
        torch.cat([p.weight_mean.T * p.weight_activity, p.bias_mean * p.bias_activity[:, None]],
                  dim=1)
        for p in priors
    ]
