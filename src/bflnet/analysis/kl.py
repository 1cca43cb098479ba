"""KL divergences for posterior evaluation: closed form within an exponential family, and
numerical KL(q ‖ p) from an exponential-family q to a 1-D unnormalised target density p̃.

* :func:`kl` — closed form (Bregman divergence of the log-partition function).
* :func:`kl_to_density_on_grid` — trapezoid rule on a grid you give; q and p are both
  normalised on that grid, so truncation is consistent. For θ ∈ (0, 1) use
  :func:`logit_grid`, which is uniform in logit θ and hence dense near both boundaries.
* :func:`kl_quadrature` — adaptive ``scipy.integrate.quad`` in q's unconstrained
  coordinate (logit / log / identity), split around q's bulk; the slow, careful reference.
* :func:`kl_fast` — closed-form entropy + trapezoid cross term over q's bulk + a cached
  log normaliser; what :class:`~bflnet.learners.conjugate.gfvl.GFVL` uses every evaluation.

>>> from bflnet.learners.conjugate.expfam import beta
>>> q, p = beta(2.0, 3.0), beta(4.0, 4.0)
>>> round(kl_to_density_on_grid(q, p.log_density, logit_grid()) - kl(q, p), 8)
0.0
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from scipy import integrate, special

from bflnet.learners.conjugate.expfam import ExpFam, kl_to_unnormalised, log_integral

LogDensity = Callable[[np.ndarray], np.ndarray]

__all__ = ["kl", "kl_fast", "kl_quadrature", "kl_to_density_on_grid", "logit_grid"]


def kl(q: ExpFam, p: ExpFam) -> float:
    """KL(q ‖ p) in closed form; q and p must be members of the same family."""
    return q.kl(p)


def logit_grid(n: int = 20001, lo: float = -30.0, hi: float = 30.0) -> np.ndarray:
    """``n`` points of (0, 1), uniform in logit θ over [``lo``, ``hi``]."""
    if n < 3:
        raise ValueError(f"n: must be >= 3, got {n}")
    if not lo < hi:
        raise ValueError(f"lo: must be < hi, got {lo} >= {hi}")
    return special.expit(np.linspace(lo, hi, n))


def _grid_weights(x: np.ndarray) -> np.ndarray:
    """Trapezoid rule in the grid's index: w_i ≈ dθ/di (4th-order differences inside).

    For a grid that is a smooth map of a uniform one (e.g. :func:`logit_grid`) this is far
    more accurate than the plain trapezoid rule in θ; for a uniform grid it is the same.
    """
    w = np.gradient(x)
    if x.size >= 5:
        w[2:-2] = (-x[4:] + 8.0 * x[3:-1] - 8.0 * x[1:-3] + x[:-4]) / 12.0
    w[0] /= 2.0
    w[-1] /= 2.0
    return w


def kl_to_density_on_grid(q: ExpFam, log_target_unnormalised: LogDensity,
                          grid: np.ndarray) -> float:
    """KL(q ‖ p), p ∝ exp(``log_target_unnormalised``), by quadrature on ``grid``.

    ``grid``: strictly increasing θ values inside q's support. Both densities are
    normalised on the grid. Returns ``inf`` if p̃ vanishes where q has mass.
    """
    theta = np.asarray(grid, dtype=np.float64)
    if theta.ndim != 1 or theta.size < 3 or not np.all(np.diff(theta) > 0):
        raise ValueError("grid: must be a strictly increasing 1-D array of >= 3 points")
    log_w = np.log(_grid_weights(theta))
    log_q = q.log_density(theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.asarray(log_target_unnormalised(theta), dtype=np.float64)
    if not np.isfinite(np.max(log_q)):
        raise ValueError("grid: q has no mass on the grid")
    log_q = log_q - special.logsumexp(log_q + log_w)
    log_p = log_p - special.logsumexp(log_p + log_w)
    q_mass = np.exp(log_q + log_w)
    if np.any((q_mass > 0) & ~np.isfinite(log_p)):
        return float("inf")
    diff = np.where(q_mass > 0, log_q - log_p, 0.0)
    return max(float(np.sum(q_mass * diff)), 0.0)


def kl_quadrature(q: ExpFam, log_target_unnormalised: LogDensity,
                  log_normaliser: float | None = None, *, width: float = 10.0) -> float:
    """KL(q ‖ p) by adaptive quadrature (``scipy.integrate.quad``) in q's unconstrained u.

    The integral E_q[log q − log p̃] is split at u-mean ± ``width`` sd of q; log Z of p̃ is
    computed by :func:`~bflnet.learners.conjugate.expfam.log_integral` unless given.
    """
    fam = q.family
    if log_normaliser is None:
        log_normaliser = log_integral(fam, log_target_unnormalised)
    m, sd = fam.unconstrained_moments(q.eta)
    lo, hi = fam.u_range
    cuts = [lo, max(lo, m - width * sd), min(hi, m + width * sd), hi]

    def integrand(u: float) -> float:
        theta = fam.from_unconstrained(np.array([u]))
        log_q = q.log_density(theta)[0]
        weight = np.exp(log_q + fam.log_jacobian(np.array([u]))[0])
        if weight == 0.0:
            return 0.0
        return float(weight * (log_q - log_target_unnormalised(theta)[0]))

    total = sum(integrate.quad(integrand, a, b, limit=500, epsabs=1e-11, epsrel=1e-9)[0]
                for a, b in itertools.pairwise(cuts) if b > a)
    return max(total + log_normaliser, 0.0)


def kl_fast(q: ExpFam, log_target_unnormalised: LogDensity,
            log_normaliser: float | None = None, *, points: int = 2001) -> float:
    """KL(q ‖ p): closed-form entropy, trapezoid cross term over q's bulk, given/fresh log Z."""
    return kl_to_unnormalised(q, log_target_unnormalised, log_normaliser, points=points)
