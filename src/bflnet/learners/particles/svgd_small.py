"""The fused SVGD loop of :func:`bflnet.learners.particles.svgd.run_svgd` in NumPy, for small
particle sets.

With ``N × d`` in the hundreds (e.g. 6 particles of a 110-parameter logistic regression)
the arithmetic of a step is a few microseconds and torch's per-call dispatch (about 180
operator calls per step of :func:`run_svgd`, kernels sized for ``d ≈ 10⁵``) is the whole
cost; NumPy's calls are several times cheaper at these sizes. Same maths as
:func:`run_svgd` (centred coordinates, one distance product, the median heuristic, block
softmax over the KDE sets, AdaGrad or the constant step), with the products regrouped to
save calls (the KDE drift and the score enter through one ``k @ (...)``), so the two
agree up to float rounding; tested against each other.

:data:`SMALL_PROBLEM` is the size (``N × d``) up to which DSVGD takes this path. Every
documented DSVGD run is larger (Fashion-MNIST: 10 × 79 510; the unlearning layer: 10 ×
1010 and up), so their results do not move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

#: Particle-set sizes ``N × d`` up to which DSVGD runs SVGD in NumPy.
SMALL_PROBLEM = 4096

NumpyScore = Callable[[np.ndarray], np.ndarray]
"""``score(theta) -> (N, d)``: gradient of a log density at each particle (NumPy)."""


def median_bandwidth(sq_dists: np.ndarray) -> float:
    """The median heuristic ``h = med² / log N`` from an ``(N, N)`` squared-distance
    matrix (1 when ``N = 1`` or ``med = 0``), as
    :func:`bflnet.learners.particles.svgd.median_bandwidth`."""
    n = sq_dists.shape[0]
    if n < 2:
        return 1.0
    off = sq_dists.ravel()[1:].reshape(n - 1, n + 1)[:, :-1].ravel()
    m = off.shape[0]
    middle = np.sqrt(np.partition(off, (m // 2 - 1, m // 2))[m // 2 - 1:m // 2 + 1])
    med = 0.5 * (middle[0] + middle[1])
    h = med * med / math.log(n)
    return float(h) if h > 0 else 1.0


def run_svgd_numpy(theta: np.ndarray, n_iter: int, *, score: NumpyScore | None = None,
                   score_scale: float = 1.0,
                   kde_sets: Sequence[tuple[np.ndarray, float]] = (),
                   kde_bandwidth: float, step_size: float, step_rule: str = "adagrad",
                   decay: float = 0.9, fudge: float = 1e-6,
                   bandwidth: float | None = None) -> tuple[np.ndarray, int | None]:
    """``n_iter`` SVGD steps from ``theta`` ``(N, d)`` towards ``Σ_t sign_t log KDE(θ;
    set_t, λ)`` plus a term with gradient ``score_scale · score(θ)``, with a fresh AdaGrad
    (``step_rule="adagrad"``) or the constant step. Returns the new particles and the
    first iteration (1-based) after which a particle was not finite (``None``: all
    finite; 0: the initial particles), as :func:`run_svgd` checks them."""
    n, d = theta.shape
    center = theta.mean(axis=0, keepdims=True)
    sizes = [s.shape[0] for s, _ in kde_sets]
    r = sum(sizes)
    zx = np.empty((r + n, d), dtype=theta.dtype)
    lo = 0
    for (particles, _), size in zip(kde_sets, sizes, strict=True):
        np.subtract(particles, center, out=zx[lo:lo + size])
        lo += size
    x = zx[r:]
    np.subtract(theta, center, out=x)
    zx_t = zx.T  # (a view: x @ zx_t reads the updated x)
    sq = np.einsum("ij,ij->i", zx, zx)
    col_signs = (np.repeat([float(sign) for _, sign in kde_sets], sizes) / kde_bandwidth
                 if r else None)
    sign_sum = float(sum(sign for _, sign in kde_sets))
    inv_lam = 1.0 / kde_bandwidth
    same = len(set(sizes)) == 1
    diag = slice(None, None, n + 1)  # the diagonal of a flat (n, n) matrix
    off_diag = ~np.eye(n, dtype=bool)
    historical: np.ndarray | None = None
    for it in range(n_iter):
        if not np.isfinite(x).all():
            return x + center, it
        g = score(x + center) if score is not None else None
        cross = x @ zx_t
        sq_x = np.einsum("ij,ij->i", x, x)
        sq[r:] = sq_x
        d2 = sq - 2.0 * cross
        d2 += sq_x[:, None]
        np.maximum(d2, 0.0, out=d2)
        d2_xx = d2[:, r:]
        h = _median_bandwidth(d2_xx, off_diag) if bandwidth is None else bandwidth
        k = np.exp(d2_xx * (-1.0 / h))
        # (diag(Σ_j k) − k)·2/h − k·Σsign/λ, then · x: the repulsion and the KDE self-terms
        a = k * (-2.0 / h - sign_sum * inv_lam)
        a.flat[diag] += k.sum(axis=1) * (2.0 / h)
        phi = a @ x
        if r:
            logits = d2[:, :r] * (-0.5 * inv_lam)
            blocks = ([logits.reshape(n, len(sizes), sizes[0])] if same else
                      np.split(logits, np.cumsum(sizes)[:-1], axis=1))
            w = np.concatenate([_softmax(b).reshape(n, -1) for b in blocks], axis=1)
            w *= col_signs
            drift = w @ zx[:r]
            if g is not None:
                drift += score_scale * g
            phi += k @ drift
        elif g is not None:
            phi += k @ (score_scale * g)
        phi *= 1.0 / n
        if step_rule == "constant":
            x += step_size * phi
            continue
        if historical is None:
            historical = phi * phi
        else:
            historical *= decay
            historical += (1 - decay) * phi * phi
        phi /= fudge + np.sqrt(historical)
        phi *= step_size
        x += phi
    bad = None if np.isfinite(x).all() else n_iter
    return x + center, bad


def _median_bandwidth(sq_dists: np.ndarray, off_diag: np.ndarray) -> float:
    """:func:`median_bandwidth` with the off-diagonal mask given (the loop's hot path)."""
    n = sq_dists.shape[0]
    if n < 2:
        return 1.0
    off = sq_dists[off_diag]
    m = off.shape[0]
    lo, hi = np.partition(off, (m // 2 - 1, m // 2))[m // 2 - 1:m // 2 + 1].tolist()
    med = 0.5 * (math.sqrt(lo) + math.sqrt(hi))
    h = med * med / math.log(n)
    return h if h > 0 else 1.0


def _softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    e = logits - logits.max(axis=-1, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e
