"""Stein variational gradient descent (Liu & Wang 2016) and the kernel-density terms of DSVGD.

Everything is batched torch: a particle set is one ``(N, d)`` tensor, kernels are ``(N, M)``
matrices built from one GEMM, and there is no Python loop over particles or examples.

**SVGD kernel.** ``k(x, x') = exp(-‖x − x'‖² / h)`` (the letter's RBF kernel) with the median
heuristic ``h = med² / log N``, ``med`` the median of the ``N(N−1)/2`` pairwise distances
between distinct particles (interpolated median, as ``numpy.median``). Guards: ``h = 1``
when ``N = 1`` (the kernel is then ``k = 1`` and has no repulsion whatever ``h``) or when
all particles coincide (``med = 0``). The direction for particle ``i`` is

    φ(θ_i) = (1/N) Σ_j [k(θ_j, θ_i) ∇log p(θ_j) + ∇_{θ_j} k(θ_j, θ_i)]
           = (1/N) [K ∇log p + (2/h) (diag(K 1) Θ − K Θ)]_i.

**KDE.** ``log q(θ) = log (1/N) Σ_n N(θ; θ_n, λ I)`` with bandwidth (kernel variance) ``λ``,
default 0.55, evaluated with ``logsumexp`` (in d ≈ 8·10⁴ every ``exp`` underflows); its
score is ``∇ log q(θ) = (Σ_n w_n θ_n − θ) / λ`` with ``w = softmax_n(−‖θ − θ_n‖² / 2λ)``.
(The letter writes the KDE kernel as ``exp(−‖x − x'‖² / λ)``, i.e. variance ``λ/2``, and
Kassab & Simeone's code uses standard deviation ``λ``; here ``λ`` is the variance.)

**AdaGrad** (Liu & Wang's reference code, "AdaGrad with momentum"): with ``φ_t`` the SVGD
direction at step ``t``, ``G_0 = φ_0²`` and ``G_t = β G_{t−1} + (1 − β) φ_t²`` (elementwise,
``β = decay = 0.9``), the step is ``θ ← θ + ε φ_t / (fudge + √G_t)`` with ``fudge = 1e-6``
and master step size ``ε``. By default the accumulator starts afresh for every
:func:`run_svgd` call (every local update of DSVGD, as in Kassab & Simeone's code); pass
``optimizer=AdaGrad(...)`` to :func:`run_svgd` to keep one accumulator across calls (its
``historical`` state persists, and it resets itself when the particle shape changes; the
``step_size``, ``decay`` and ``fudge`` arguments of :func:`run_svgd` are then ignored in
favour of the optimizer's own). On CPU, from the second step on, :meth:`AdaGrad.step_` is
one pass over ``(N, d)`` through torch's fused Adam kernel (same rule, see
:func:`_fused_step_`) instead of five elementwise passes.

Two ways in: the readable reference functions (:func:`svgd_direction`,
:func:`kde_log_density`, :func:`kde_score`, :func:`svgd_update`, :class:`SVGD`) and
:func:`run_svgd`, the fused loop DSVGD uses, which evaluates the SVGD kernel and any number
of signed KDE terms of fixed particle sets with one distance GEMM and one product per
particle set per iteration and preallocated buffers (tested against the reference
functions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Protocol

import torch
from torch import Tensor

from bflnet.learners.hyper import DEFAULT_KDE_BANDWIDTH

__all__ = [
    "DEFAULT_KDE_BANDWIDTH",
    "SVGD",
    "AdaGrad",
    "ConstantStep",
    "KDETerm",
    "Optimizer",
    "kde_log_density",
    "kde_score",
    "median_bandwidth",
    "pairwise_sq_dists",
    "rbf_kernel",
    "run_svgd",
    "svgd_direction",
    "svgd_iteration_flops",
    "svgd_update",
]

Score = Callable[[Tensor], Tensor]
"""``score(theta) -> (N, d)`` gradient of a log density at each particle."""


# --------------------------------------------------------------------------- kernels


def pairwise_sq_dists(x: Tensor, y: Tensor) -> Tensor:
    """``(N, M)`` squared Euclidean distances, by one GEMM after centring (which keeps the
    ``‖x‖² + ‖y‖² − 2 x·y`` cancellation small when the sets sit far from the origin)."""
    c = y.mean(dim=0, keepdim=True)
    xc, yc = x - c, y - c
    d2 = xc.square().sum(1, keepdim=True) + yc.square().sum(1) - 2.0 * (xc @ yc.T)
    return d2.clamp_(min=0.0)


def median_bandwidth(sq_dists: Tensor) -> Tensor:
    """The median heuristic ``h = med² / log N`` from an ``(N, N)`` squared-distance matrix
    (0-dim tensor; 1 when ``N = 1`` or ``med = 0``)."""
    n = sq_dists.shape[0]
    if n < 2:
        return torch.ones((), dtype=sq_dists.dtype, device=sq_dists.device)
    # The N(N−1) off-diagonal entries hold every pair twice, which leaves the median as is.
    off = sq_dists.flatten()[1:].view(n - 1, n + 1)[:, :-1].flatten()
    m = off.shape[0]
    lower = off.kthvalue(m // 2).values.sqrt()  # m is even: average the middle two
    upper = off.kthvalue(m // 2 + 1).values.sqrt()
    med = 0.5 * (lower + upper)
    h = med.square() / math.log(n)
    return torch.where(h > 0, h, torch.ones_like(h))


def rbf_kernel(theta: Tensor, bandwidth: float | Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(K, h)``: the ``(N, N)`` RBF kernel matrix ``exp(−‖θ_i − θ_j‖²/h)`` and its ``h``
    (``bandwidth``, or the median heuristic when ``None``)."""
    d2 = pairwise_sq_dists(theta, theta)
    h = median_bandwidth(d2) if bandwidth is None else torch.as_tensor(
        bandwidth, dtype=theta.dtype, device=theta.device)
    return torch.exp(-d2 / h), h


def svgd_direction(theta: Tensor, score: Tensor,
                   bandwidth: float | Tensor | None = None) -> Tensor:
    """The SVGD direction φ ``(N, d)`` for particles ``theta`` with scores ``score``."""
    k, h = rbf_kernel(theta, bandwidth)
    repulsion = (2.0 / h) * (k.sum(1, keepdim=True) * theta - k @ theta)
    return (k @ score + repulsion) / theta.shape[0]


def kde_log_density(x: Tensor, particles: Tensor,
                    bandwidth: float = DEFAULT_KDE_BANDWIDTH) -> Tensor:
    """``(M,)``: ``log (1/N) Σ_n N(x_m; θ_n, λ I)`` for ``x`` ``(M, d)`` and ``particles``
    ``(N, d)``, stable in high dimension (``logsumexp``)."""
    n, d = particles.shape
    logits = pairwise_sq_dists(x, particles) / (-2.0 * bandwidth)
    return (torch.logsumexp(logits, dim=1) - math.log(n)
            - 0.5 * d * math.log(2.0 * math.pi * bandwidth))


def kde_score(x: Tensor, particles: Tensor, bandwidth: float = DEFAULT_KDE_BANDWIDTH) -> Tensor:
    """``(M, d)``: ``∇_x log q(x) = (Σ_n w_n θ_n − x)/λ``, ``w = softmax(−‖x − θ_n‖²/2λ)``."""
    w = torch.softmax(pairwise_sq_dists(x, particles) / (-2.0 * bandwidth), dim=1)
    return (w @ particles - x) / bandwidth


# --------------------------------------------------------------------------- AdaGrad


@dataclass
class AdaGrad:
    """Liu & Wang's AdaGrad with an exponentially decayed accumulator (see module docs).

    >>> opt = AdaGrad(step_size=0.1)
    >>> theta = opt.step_(torch.zeros(1, 2), torch.tensor([[3.0, -0.5]]))
    >>> [round(v, 4) for v in theta[0].tolist()]  # the first step is ≈ ε · sign(φ)
    [0.1, -0.1]
    """

    step_size: float
    decay: float = 0.9
    fudge: float = 1e-6
    historical: Tensor | None = field(default=None, repr=False)
    _denominator: Tensor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.step_size) and self.step_size > 0):
            raise ValueError(f"step_size: must be finite and > 0, got {self.step_size!r}")
        if not 0.0 <= self.decay < 1.0:
            raise ValueError(f"decay: must be in [0, 1), got {self.decay!r}")
        if not (math.isfinite(self.fudge) and self.fudge > 0):
            raise ValueError(f"fudge: must be finite and > 0, got {self.fudge!r}")

    def reset(self) -> None:
        """Forget the accumulated squared directions."""
        self.historical = self._denominator = None

    def step_(self, theta: Tensor, direction: Tensor) -> Tensor:
        """``theta += ε φ / (fudge + √G)`` in place (with ``G`` updated first); returns it."""
        if self.historical is None or self.historical.shape != direction.shape:
            self.historical = torch.mul(direction, direction)
            self._denominator = torch.empty_like(direction)
        elif _fused_step_(theta, direction, self):
            return theta
        else:
            self.historical.mul_(self.decay).addcmul_(direction, direction, value=1 - self.decay)
        assert self._denominator is not None
        torch.sqrt(self.historical, out=self._denominator).add_(self.fudge)
        return theta.addcdiv_(direction, self._denominator, value=self.step_size)


_FUSED_DTYPES = (torch.float32, torch.float64)
_fused_available = hasattr(torch, "_fused_adam_")
_NO_BIAS_CORRECTION = torch.tensor(1e9)
"""Adam's step count for :func:`_fused_step_`: so large that ``β^t`` is 0 in double
precision for every ``β < 1`` (the kernel reads it and leaves it as is)."""


def _fused_step_(theta: Tensor, direction: Tensor, opt: AdaGrad) -> bool:
    """``G ← β G + (1 − β) φ²; θ ← θ + ε φ/(fudge + √G)`` in one pass, with torch's fused
    CPU Adam kernel (``torch._fused_adam_``, torch ≥ 2.4); ``False`` (nothing done) when it
    does not apply. With ``β1 = 0`` Adam's first moment is ``φ`` itself, and with its step
    count at 10⁹ both bias corrections are exactly 1, which leaves exactly this rule
    (``maximize`` for ascent); its first-moment output goes to the scratch buffer
    ``opt._denominator``. The unfused path takes five passes over ``(N, d)``."""
    global _fused_available
    hist, scratch = opt.historical, opt._denominator
    assert hist is not None and scratch is not None
    if not (_fused_available and theta.device.type == "cpu"
            and theta.dtype in _FUSED_DTYPES
            and theta.dtype == direction.dtype == hist.dtype == scratch.dtype
            and theta.shape == direction.shape
            and theta.is_contiguous() and direction.is_contiguous() and hist.is_contiguous()
            and scratch.is_contiguous() and hist.device == direction.device == theta.device
            and not (theta.requires_grad or direction.requires_grad)):
        return False
    try:
        torch._fused_adam_([theta], [direction], [scratch], [hist], [],
                           [_NO_BIAS_CORRECTION], lr=opt.step_size, beta1=0.0,
                           beta2=opt.decay, weight_decay=0.0, eps=opt.fudge, amsgrad=False,
                           maximize=True)
    except (NotImplementedError, RuntimeError):  # e.g. torch < 2.4: no CPU kernel
        _fused_available = False
        return False
    return True


class Optimizer(Protocol):
    """What :func:`run_svgd` steps with: ``step_(theta, φ)`` updates ``theta`` in place
    (:class:`AdaGrad`, :class:`ConstantStep`)."""

    def step_(self, theta: Tensor, direction: Tensor) -> Tensor: ...


@dataclass
class ConstantStep:
    """The plain SVGD step ``θ ← θ + ε φ`` (no per-coordinate normalisation).

    >>> ConstantStep(0.5).step_(torch.zeros(1, 2), torch.tensor([[2.0, -4.0]])).tolist()
    [[1.0, -2.0]]
    """

    step_size: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.step_size) and self.step_size > 0):
            raise ValueError(f"step_size: must be finite and > 0, got {self.step_size!r}")

    def step_(self, theta: Tensor, direction: Tensor) -> Tensor:
        """``theta += ε φ`` in place; returns it."""
        return theta.add_(direction, alpha=self.step_size)


def svgd_update(theta: Tensor, score: Tensor, optimizer: Optimizer, *,
                bandwidth: float | Tensor | None = None) -> Tensor:
    """One SVGD step: a new tensor ``theta + AdaGrad(φ(theta, score))``."""
    return optimizer.step_(theta.clone(), svgd_direction(theta, score, bandwidth))


class SVGD:
    """Plain SVGD sampler for a target given by its score ``∇ log p``.

    >>> sampler = SVGD(lambda th: -th, step_size=0.05)  # standard normal target
    >>> theta = sampler.run(torch.linspace(3.0, 4.0, 50).unsqueeze(1), 500)
    >>> abs(float(theta.mean())) < 0.05, round(float(theta.var()), 1)
    (True, 1.0)
    """

    def __init__(self, score: Score, *, step_size: float = 0.05, decay: float = 0.9,
                 fudge: float = 1e-6, bandwidth: float | None = None) -> None:
        AdaGrad(step_size, decay, fudge)  # validates
        self.score = score
        self.step_size, self.decay, self.fudge = step_size, decay, fudge
        self.bandwidth = bandwidth

    def run(self, theta: Tensor, n_iter: int) -> Tensor:
        """``n_iter`` SVGD steps from ``theta`` (not modified); returns the new particles."""
        return run_svgd(theta, n_iter, score=self.score, step_size=self.step_size,
                        decay=self.decay, fudge=self.fudge, bandwidth=self.bandwidth)


# --------------------------------------------------------------------------- fused loop


@dataclass(frozen=True)
class KDETerm:
    """``sign · log KDE(θ; particles, λ)`` as one term of an SVGD target."""

    particles: Tensor
    sign: float = 1.0


def svgd_iteration_flops(n: int, d: int, n_kde: int = 0, with_score: bool = True) -> float:
    """FLOPs of one :func:`run_svgd` iteration besides the score: the two GEMMs
    (``n × (n_kde + n)`` distances, ``n × (n_kde + n [+ n])`` combination) and ~10
    elementwise passes over the ``n × d`` particles."""
    cols = n_kde + n
    return 2.0 * n * d * cols + 2.0 * n * d * (cols + (n if with_score else 0)) + 10.0 * n * d


def run_svgd(theta: Tensor, n_iter: int, *, score: Score | None = None,
             score_scale: float = 1.0, kde_terms: Sequence[KDETerm] = (),
             kde_bandwidth: float = DEFAULT_KDE_BANDWIDTH,
             step_size: float = 0.05, decay: float = 0.9, fudge: float = 1e-6,
             bandwidth: float | None = None, context: str = "",
             optimizer: Optimizer | None = None) -> Tensor:
    """``n_iter`` AdaGrad-SVGD steps from ``theta`` towards the target

        log p(θ) = Σ_t sign_t · log KDE(θ; particles_t, λ) + (a term whose gradient is
        ``score_scale · score(θ)``),

    all particle sets being fixed during the run. Returns new particles (``theta`` is not
    modified). Per iteration it does one GEMM for all squared distances (particles vs the
    KDE sets and themselves, in coordinates centred on ``mean(theta)``) and forms φ from a
    small coefficient matrix as one product per particle set (the KDE sets, the particles,
    the scores) accumulated into one buffer; the ``(N, d)`` buffers are allocated once.
    ``score`` gets a scratch copy of the particles and its result is read, not kept (it
    is released before the next call, so the allocator can reuse its block).
    Raises ``ValueError`` (with ``context`` appended) naming the first iteration whose
    update made a particle non-finite; the check reads the diagonal ``‖x_i‖²`` of the
    distance GEMM and, after the last update, the particles' norms (tensor flags,
    synchronised once at the end).

    ``optimizer``: an :class:`Optimizer` (an :class:`AdaGrad`, a :class:`ConstantStep`) to
    step with instead of a fresh ``AdaGrad(step_size, decay, fudge)``; its own settings are
    used (the ``step_size``, ``decay`` and ``fudge`` arguments are then ignored), and an
    AdaGrad's accumulated ``historical`` state carries over from and into other calls, so
    two calls of ``n`` steps sharing it equal one call of ``2n`` steps (for a deterministic
    target). Only its ``step_(theta, direction)`` method is used.
    """
    if theta.ndim != 2:
        raise ValueError(f"theta: must be (N, d), got shape {tuple(theta.shape)}")
    if not (isinstance(n_iter, int) and n_iter >= 0):
        raise ValueError(f"n_iter: must be an integer >= 0, got {n_iter!r}")
    if not (math.isfinite(kde_bandwidth) and kde_bandwidth > 0):
        raise ValueError(f"kde_bandwidth: must be finite and > 0, got {kde_bandwidth!r}")
    n, d = theta.shape
    opt = AdaGrad(step_size, decay, fudge) if optimizer is None else optimizer
    for t in kde_terms:
        if t.particles.ndim != 2 or t.particles.shape[1] != d:
            raise ValueError(f"kde_terms: particle sets must be (M, {d}), "
                             f"got {tuple(t.particles.shape)}")
    if n_iter == 0:
        return theta.clone()
    dtype, device = theta.dtype, theta.device
    center = theta.mean(dim=0, keepdim=True)
    sizes = [t.particles.shape[0] for t in kde_terms]
    r = sum(sizes)
    # ZX = [KDE sets (r rows) | particles X (n rows)], centred on mean(theta).
    zx = torch.empty(r + n, d, dtype=dtype, device=device)
    lo = 0
    for t, size in zip(kde_terms, sizes, strict=True):
        torch.sub(t.particles, center, out=zx[lo:lo + size])
        lo += size
    x = zx[r:]
    torch.sub(theta, center, out=x)
    # φ = coef @ [ZX; G] as one product per particle set, accumulated into φ (addmm_):
    # with MKL, for N_p = 10 and d ≈ 8·10⁴, this runs faster than one product over all
    # the rows and lets G be the score's own output, unscaled (score_scale goes in coef).
    ends = list(accumulate([*sizes, n]))
    blocks = list(zip([0, *ends[:-1]], ends, strict=True))
    uncentred = torch.empty_like(x) if score is not None else None
    phi = torch.empty_like(x)
    coef = torch.zeros(n, r + n + (n if score is not None else 0), dtype=dtype, device=device)
    cross = torch.empty(n, r + n, dtype=dtype, device=device)
    sq = torch.empty(r + n, dtype=dtype, device=device)  # [‖KDE rows‖² | ‖x_i‖²]
    torch.linalg.vector_norm(zx[:r], dim=1, out=sq[:r]).square_()
    d2 = torch.empty_like(cross)
    # Block softmax over the KDE sets: one reshape when they all have the same size.
    same = len(set(sizes)) == 1
    signs = torch.tensor([float(t.sign) for t in kde_terms], dtype=dtype, device=device)
    col_signs = signs.repeat_interleave(torch.tensor(sizes, device=device)) if r else signs
    sign_sum = float(signs.sum()) if r else 0.0
    inv_lam = 1.0 / kde_bandwidth
    fixed_h = None if bandwidth is None else torch.tensor(bandwidth, dtype=dtype, device=device)
    # finite[it]: the particles entering iteration it (finite[n_iter]: the result) are
    # finite; read once at the end.
    finite = torch.ones(n_iter + 1, dtype=torch.bool, device=device)
    for it in range(n_iter):
        if score is not None:
            assert uncentred is not None
            torch.add(x, center, out=uncentred)
            g = score(uncentred).detach()
            if g.shape != x.shape or g.dtype != dtype or g.device != device:
                g = g.to(dtype=dtype, device=device).expand_as(x)
        torch.mm(x, zx.T, out=cross)
        sq_x = cross[:, r:].diagonal()
        # ‖x_i‖² is non-finite iff particle i is: the previous update (it − 1) broke it.
        torch.all(torch.isfinite(sq_x), out=finite[it])
        sq[r:] = sq_x
        torch.add(sq, cross, alpha=-2.0, out=d2).add_(sq_x.unsqueeze(1)).clamp_(min=0.0)
        d2_xx = d2[:, r:]
        h = median_bandwidth(d2_xx) if fixed_h is None else fixed_h
        k = torch.exp(-d2_xx / h)
        if r:
            logits = d2[:, :r] * (-0.5 * inv_lam)
            if same:
                w = torch.softmax(logits.view(n, len(sizes), sizes[0]), dim=2).view(n, r)
            else:
                w = torch.cat([torch.softmax(part, dim=1)
                               for part in logits.split(sizes, dim=1)], dim=1)
            coef[:, :r] = (k @ w) * (col_signs * inv_lam)
        coef[:, r:r + n] = (torch.diag_embed(k.sum(1)) - k) * (2.0 / h) - k * (sign_sum * inv_lam)
        if score is not None:
            coef[:, r + n:] = k * score_scale
        coef.mul_(1.0 / n)
        (lo, hi), *rest = blocks
        torch.mm(coef[:, lo:hi], zx[lo:hi], out=phi)
        for lo, hi in rest:
            phi.addmm_(coef[:, lo:hi], zx[lo:hi])
        if score is not None:
            phi.addmm_(coef[:, r + n:], g)
            # free the score before the next one is allocated: the allocator then reuses
            # its (N, d) block instead of mapping fresh pages
            del g
        opt.step_(x, phi)
    # the last update: the particles' norms are finite (like the per-iteration check; one
    # read-only pass, where isfinite(x) takes several)
    torch.all(torch.isfinite(torch.linalg.vector_norm(x, dim=1)), out=finite[n_iter])
    if not bool(finite.all()):
        bad = int(torch.argmin(finite.to(torch.uint8))) - 1
        if bad < 0:
            raise ValueError(f"SVGD: the initial particles are not finite{context}")
        raise ValueError(f"SVGD: non-finite particles after local iteration {bad + 1} of "
                         f"{n_iter}{context}")
    return x + center
