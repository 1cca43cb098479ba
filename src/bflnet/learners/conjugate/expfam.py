"""Exponential families in natural coordinates, and the likelihoods G-FVL pairs with them.

A family is a stateless object (:data:`BETA`, :data:`GAMMA`, :data:`GAUSSIAN`) whose methods
act on natural-parameter vectors ``eta`` (numpy float64, shape ``(dim,)``):

    p(θ | η) = exp(ηᵀ s(θ) − A(η)) h(θ),   μ = ∇A(η) = E[s(θ)],   ∇²A(η) = Cov[s(θ)].

| family   | s(θ)                | η                  | usual parameters | h(θ)      |
| -------- | ------------------- | ------------------ | ---------------- | --------- |
| Beta     | [log θ, log(1−θ)]   | [a − 1, b − 1]     | a, b > 0         | 1         |
| Gamma    | [log θ, θ]          | [k − 1, −r]        | shape k, rate r  | 1         |
| Gaussian | [θ, θ²]             | [m/v, −1/(2v)]     | mean m, var v    | (2π)^−½   |

:class:`ExpFam` wraps a family and one ``eta`` as a distribution value. Likelihoods give
the per-data-set *sum* loss Σ_n −log p(z_n|θ) (vectorised over θ) through additive data
summaries; conjugate ones also give the natural-parameter increment Σ_z [s_l(z); 1]
written in the prior's natural coordinates (G-FVL eq. 13).

One-dimensional expectations and normalisers (for KL to non-conjugate targets) are
computed by the trapezoid rule in the family's unconstrained coordinate u (logit θ for
Beta, log θ for Gamma, θ for Gaussian), where the densities are smooth and bell-shaped.

>>> q = beta(2.0, 3.0)
>>> q.eta.tolist(), round(q.mean, 3)
([1.0, 2.0], 0.4)
>>> post = BernoulliLikelihood().posterior(q.eta, np.array([1, 0, 1]))
>>> BETA.to_params(post)
{'a': 4.0, 'b': 4.0}
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

FloatArray = np.ndarray
LogDensity = Callable[[np.ndarray], np.ndarray]


def _fmt(x: Any) -> str:
    return np.array2string(np.asarray(x, dtype=float), precision=6, separator=", ")


# ----------------------------------------------------------------------------- families


class ExpFamily(ABC):
    """A 1-D exponential family in natural coordinates (stateless; see module docstring)."""

    name: str = ""
    dim: int = 2
    param_names: tuple[str, ...] = ()
    #: Closed support of θ.
    support: tuple[float, float] = (-np.inf, np.inf)
    #: Range of the unconstrained coordinate u used for quadrature.
    u_range: tuple[float, float] = (-np.inf, np.inf)
    #: E[log h(θ)] (constant for the families here).
    mean_log_base: float = 0.0

    # -- domain ---------------------------------------------------------------------
    @abstractmethod
    def domain_error(self, eta: FloatArray) -> str | None:
        """Why ``eta`` is not a valid natural parameter, or ``None``."""

    def in_domain(self, eta: FloatArray) -> bool:
        """Whether ``eta`` is finite and in the natural domain."""
        return bool(np.all(np.isfinite(eta))) and self.domain_error(eta) is None

    def check(self, eta: Any, name: str = "eta") -> FloatArray:
        """``eta`` as a float64 vector; one-line ``ValueError`` naming ``name`` if invalid."""
        arr = np.asarray(eta, dtype=np.float64)
        if arr.shape != (self.dim,):
            raise ValueError(f"{name}: {self.name} natural parameters must have shape "
                             f"({self.dim},), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: {self.name} natural parameters must be finite, "
                             f"got {_fmt(arr)}")
        problem = self.domain_error(arr)
        if problem is not None:
            raise ValueError(f"{name}: {self.name} natural parameters {problem}, got {_fmt(arr)}")
        return arr

    # -- the family's functions --------------------------------------------------------
    @abstractmethod
    def stats(self, theta: Any) -> FloatArray:
        """Sufficient statistics s(θ), shape ``θ.shape + (dim,)``."""

    @abstractmethod
    def log_partition(self, eta: FloatArray) -> float:
        """A(η)."""

    @abstractmethod
    def mean_params(self, eta: FloatArray) -> FloatArray:
        """μ = ∇A(η) = E[s(θ)]."""

    @abstractmethod
    def fisher(self, eta: FloatArray) -> FloatArray:
        """Fisher information ∇²A(η) = Cov[s(θ)] (closed form), shape ``(dim, dim)``."""

    @abstractmethod
    def from_params(self, **params: float) -> FloatArray:
        """η from the usual parameters (``param_names``)."""

    @abstractmethod
    def to_params(self, eta: FloatArray) -> dict[str, float]:
        """The usual parameters of η."""

    @abstractmethod
    def mean_var(self, eta: FloatArray) -> tuple[float, float]:
        """Mean and variance of θ."""

    @abstractmethod
    def sample(self, eta: FloatArray, rng: np.random.Generator, size: Any = None) -> Any:
        """Draws of θ from ``rng``."""

    def log_base_measure(self, theta: Any) -> FloatArray:
        """log h(θ) on the support."""
        return np.zeros(np.shape(theta))

    def in_support(self, theta: Any) -> FloatArray:
        """Boolean mask of θ inside the support."""
        t = np.asarray(theta, dtype=np.float64)
        lo, hi = self.support
        return (t >= lo) & (t <= hi)

    def clip_open(self, theta: Any) -> FloatArray:
        """θ moved into the open support (draws that rounded onto a boundary)."""
        return np.asarray(theta, dtype=np.float64)

    def log_density(self, eta: FloatArray, theta: Any) -> FloatArray:
        """log p(θ | η); −inf outside the support."""
        t = np.asarray(theta, dtype=np.float64)
        inside = self.in_support(t)
        safe = np.where(inside, t, self._inside_point())
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(eta == 0.0, 0.0, self.stats(safe) * eta)  # 0·log 0 = 0
            val = terms.sum(axis=-1) - self.log_partition(eta) + self.log_base_measure(safe)
        return np.where(inside, val, -np.inf)

    def entropy(self, eta: FloatArray) -> float:
        """Differential entropy A(η) − ηᵀμ − E[log h]."""
        return float(self.log_partition(eta) - eta @ self.mean_params(eta) - self.mean_log_base)

    def kl(self, eta_q: FloatArray, eta_p: FloatArray) -> float:
        """KL(q ‖ p) = A(η_p) − A(η_q) − (η_p − η_q)ᵀ μ_q (closed form, clipped at 0)."""
        d = self.log_partition(eta_p) - self.log_partition(eta_q) - (
            (eta_p - eta_q) @ self.mean_params(eta_q))
        return max(float(d), 0.0)

    # -- mean -> natural -----------------------------------------------------------------
    def mean_domain_error(self, mu: FloatArray) -> str | None:
        """Why ``mu`` is not a mean parameter of this family, or ``None``."""
        return None

    def _newton_start(self, mu: FloatArray) -> FloatArray:
        return np.zeros(self.dim)

    def natural_from_mean(self, mu: Any) -> FloatArray:
        """η with ∇A(η) = μ: Newton's method on the convex A(η) − ηᵀμ, with backtracking."""
        mu = np.asarray(mu, dtype=np.float64)
        if mu.shape != (self.dim,) or not np.all(np.isfinite(mu)):
            raise ValueError(f"mu: must be a finite vector of shape ({self.dim},), got {_fmt(mu)}")
        problem = self.mean_domain_error(mu)
        if problem is not None:
            raise ValueError(f"mu: {self.name} mean parameters {problem}, got {_fmt(mu)}")
        eta = self._newton_start(mu)
        for _ in range(200):
            grad = self.mean_params(eta) - mu
            step = np.linalg.solve(self.fisher(eta), grad)
            decrement = float(grad @ step)
            if decrement < 1e-26:
                return eta
            obj = self.log_partition(eta) - eta @ mu
            grad_norm = float(np.linalg.norm(grad))
            t = 1.0
            while True:
                cand = eta - t * step
                # Armijo on the objective, or (once the objective's change is lost to
                # rounding, at large η) a smaller gradient.
                if self.in_domain(cand) and (
                        self.log_partition(cand) - cand @ mu <= obj - 0.25 * t * decrement
                        or np.linalg.norm(self.mean_params(cand) - mu) < grad_norm):
                    break
                t *= 0.5
                if t < 1e-14:
                    return eta  # no further progress possible in floating point
            eta = cand
        return eta

    # -- unconstrained coordinate u (for quadrature) ---------------------------------------
    def to_unconstrained(self, theta: Any) -> FloatArray:
        """u(θ)."""
        return np.asarray(theta, dtype=np.float64)

    def from_unconstrained(self, u: Any) -> FloatArray:
        """θ(u)."""
        return np.asarray(u, dtype=np.float64)

    def log_jacobian(self, u: Any) -> FloatArray:
        """log |dθ/du|."""
        return np.zeros(np.shape(u))

    @abstractmethod
    def unconstrained_moments(self, eta: FloatArray) -> tuple[float, float]:
        """Mean and standard deviation of u(θ) under p(θ | η)."""

    def _inside_point(self) -> float:
        return float(self.from_unconstrained(0.0))

    def dist(self, **params: float) -> ExpFam:
        """The member with the given usual parameters."""
        return ExpFam(self, self.from_params(**params))

    def __repr__(self) -> str:
        return f"{self.name}Family()"


class BetaFamily(ExpFamily):
    """Beta(a, b): s = [log θ, log(1−θ)], η = [a−1, b−1], A = log B(a, b)."""

    name = "Beta"
    param_names = ("a", "b")
    support = (0.0, 1.0)
    u_range = (-36.0, 36.0)  # θ within [2e-16, 1 − 2e-16]: log(1−θ) stays finite

    def domain_error(self, eta: FloatArray) -> str | None:
        if np.all(eta > -1.0):
            return None
        return "must be > -1 (a = eta[0] + 1 > 0 and b = eta[1] + 1 > 0)"

    def stats(self, theta: Any) -> FloatArray:
        t = np.asarray(theta, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.stack([np.log(t), np.log1p(-t)], axis=-1)

    def log_partition(self, eta: FloatArray) -> float:
        a, b = eta + 1.0
        return float(special.betaln(a, b))

    def mean_params(self, eta: FloatArray) -> FloatArray:
        a, b = eta + 1.0
        return np.array([special.digamma(a), special.digamma(b)]) - special.digamma(a + b)

    def fisher(self, eta: FloatArray) -> FloatArray:
        a, b = eta + 1.0
        return np.diag([special.polygamma(1, a), special.polygamma(1, b)]) - special.polygamma(
            1, a + b)

    def from_params(self, *, a: float, b: float) -> FloatArray:  # type: ignore[override]
        for name, v in (("a", a), ("b", b)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name}: Beta parameter must be > 0 and finite, got {v}")
        return np.array([a - 1.0, b - 1.0], dtype=np.float64)

    def to_params(self, eta: FloatArray) -> dict[str, float]:
        return {"a": float(eta[0] + 1.0), "b": float(eta[1] + 1.0)}

    def mean_var(self, eta: FloatArray) -> tuple[float, float]:
        a, b = eta + 1.0
        n = a + b
        return float(a / n), float(a * b / (n * n * (n + 1.0)))

    def sample(self, eta: FloatArray, rng: np.random.Generator, size: Any = None) -> Any:
        a, b = eta + 1.0
        return rng.beta(a, b, size=size)

    def clip_open(self, theta: Any) -> FloatArray:
        return np.clip(theta, np.finfo(np.float64).tiny, np.nextafter(1.0, 0.0))

    def mean_domain_error(self, mu: FloatArray) -> str | None:
        if np.all(mu < 0) and np.exp(mu[0]) + np.exp(mu[1]) < 1.0:
            return None
        return "must satisfy exp(mu[0]) + exp(mu[1]) < 1"

    def to_unconstrained(self, theta: Any) -> FloatArray:
        return special.logit(np.asarray(theta, dtype=np.float64))

    def from_unconstrained(self, u: Any) -> FloatArray:
        return special.expit(np.asarray(u, dtype=np.float64))

    def log_jacobian(self, u: Any) -> FloatArray:
        u = np.asarray(u, dtype=np.float64)
        return -np.logaddexp(0.0, u) - np.logaddexp(0.0, -u)  # log θ(1−θ)

    def unconstrained_moments(self, eta: FloatArray) -> tuple[float, float]:
        a, b = eta + 1.0
        mean = special.digamma(a) - special.digamma(b)
        return float(mean), float(np.sqrt(special.polygamma(1, a) + special.polygamma(1, b)))


class GammaFamily(ExpFamily):
    """Gamma(shape k, rate r): s = [log θ, θ], η = [k−1, −r], A = log Γ(k) − k log r."""

    name = "Gamma"
    param_names = ("shape", "rate")
    support = (0.0, np.inf)
    u_range = (-50.0, 50.0)

    def domain_error(self, eta: FloatArray) -> str | None:
        if eta[0] > -1.0 and eta[1] < 0.0:
            return None
        return "must satisfy eta[0] > -1 (shape > 0) and eta[1] < 0 (rate > 0)"

    def stats(self, theta: Any) -> FloatArray:
        t = np.asarray(theta, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.stack([np.log(t), t], axis=-1)

    def log_partition(self, eta: FloatArray) -> float:
        k, r = eta[0] + 1.0, -eta[1]
        return float(special.gammaln(k) - k * np.log(r))

    def mean_params(self, eta: FloatArray) -> FloatArray:
        k, r = eta[0] + 1.0, -eta[1]
        return np.array([special.digamma(k) - np.log(r), k / r])

    def fisher(self, eta: FloatArray) -> FloatArray:
        k, r = eta[0] + 1.0, -eta[1]
        return np.array([[special.polygamma(1, k), 1.0 / r], [1.0 / r, k / (r * r)]])

    def from_params(self, *, shape: float, rate: float) -> FloatArray:  # type: ignore[override]
        for name, v in (("shape", shape), ("rate", rate)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name}: Gamma parameter must be > 0 and finite, got {v}")
        return np.array([shape - 1.0, -rate], dtype=np.float64)

    def to_params(self, eta: FloatArray) -> dict[str, float]:
        return {"shape": float(eta[0] + 1.0), "rate": float(-eta[1])}

    def mean_var(self, eta: FloatArray) -> tuple[float, float]:
        k, r = eta[0] + 1.0, -eta[1]
        return float(k / r), float(k / (r * r))

    def sample(self, eta: FloatArray, rng: np.random.Generator, size: Any = None) -> Any:
        k, r = eta[0] + 1.0, -eta[1]
        return rng.gamma(k, 1.0 / r, size=size)

    def clip_open(self, theta: Any) -> FloatArray:
        return np.maximum(theta, np.finfo(np.float64).tiny)

    def mean_domain_error(self, mu: FloatArray) -> str | None:
        if mu[1] > 0 and mu[0] < np.log(mu[1]):
            return None
        return "must satisfy mu[1] > 0 and mu[0] < log(mu[1])"

    def _newton_start(self, mu: FloatArray) -> FloatArray:
        return np.array([0.0, -1.0 / mu[1]])  # exponential with the right mean

    def to_unconstrained(self, theta: Any) -> FloatArray:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(theta, dtype=np.float64))

    def from_unconstrained(self, u: Any) -> FloatArray:
        return np.exp(np.asarray(u, dtype=np.float64))

    def log_jacobian(self, u: Any) -> FloatArray:
        return np.asarray(u, dtype=np.float64)

    def unconstrained_moments(self, eta: FloatArray) -> tuple[float, float]:
        k, r = eta[0] + 1.0, -eta[1]
        return float(special.digamma(k) - np.log(r)), float(np.sqrt(special.polygamma(1, k)))


class GaussianFamily(ExpFamily):
    """N(m, v): s = [θ, θ²], η = [m/v, −1/(2v)], A = m²/(2v) + ½ log v, h = (2π)^−½."""

    name = "Gaussian"
    param_names = ("mean", "var")
    mean_log_base = -0.5 * np.log(2.0 * np.pi)

    def domain_error(self, eta: FloatArray) -> str | None:
        if eta[1] < 0.0:
            return None
        return "must satisfy eta[1] < 0 (variance > 0)"

    def stats(self, theta: Any) -> FloatArray:
        t = np.asarray(theta, dtype=np.float64)
        return np.stack([t, t * t], axis=-1)

    def log_partition(self, eta: FloatArray) -> float:
        return float(-eta[0] ** 2 / (4.0 * eta[1]) - 0.5 * np.log(-2.0 * eta[1]))

    def mean_params(self, eta: FloatArray) -> FloatArray:
        m, v = self._mv(eta)
        return np.array([m, m * m + v])

    def fisher(self, eta: FloatArray) -> FloatArray:
        m, v = self._mv(eta)
        return np.array([[v, 2.0 * m * v], [2.0 * m * v, 4.0 * m * m * v + 2.0 * v * v]])

    def from_params(self, *, mean: float, var: float) -> FloatArray:  # type: ignore[override]
        if not np.isfinite(mean):
            raise ValueError(f"mean: Gaussian mean must be finite, got {mean}")
        if not (np.isfinite(var) and var > 0):
            raise ValueError(f"var: Gaussian variance must be > 0 and finite, got {var}")
        return np.array([mean / var, -0.5 / var], dtype=np.float64)

    def to_params(self, eta: FloatArray) -> dict[str, float]:
        m, v = self._mv(eta)
        return {"mean": m, "var": v}

    def mean_var(self, eta: FloatArray) -> tuple[float, float]:
        return self._mv(eta)

    def sample(self, eta: FloatArray, rng: np.random.Generator, size: Any = None) -> Any:
        m, v = self._mv(eta)
        return rng.normal(m, np.sqrt(v), size=size)

    def log_base_measure(self, theta: Any) -> FloatArray:
        return np.full(np.shape(theta), self.mean_log_base)

    def mean_domain_error(self, mu: FloatArray) -> str | None:
        return None if mu[1] > mu[0] ** 2 else "must satisfy mu[1] > mu[0]**2"

    def natural_from_mean(self, mu: Any) -> FloatArray:
        mu = np.asarray(mu, dtype=np.float64)
        if mu.shape != (2,) or not np.all(np.isfinite(mu)) or self.mean_domain_error(mu):
            raise ValueError(f"mu: Gaussian mean parameters must be finite with mu[1] > "
                             f"mu[0]**2, got {_fmt(mu)}")
        return self.from_params(mean=float(mu[0]), var=float(mu[1] - mu[0] ** 2))

    def unconstrained_moments(self, eta: FloatArray) -> tuple[float, float]:
        m, v = self._mv(eta)
        return m, float(np.sqrt(v))

    @staticmethod
    def _mv(eta: FloatArray) -> tuple[float, float]:
        v = -0.5 / eta[1]
        return float(eta[0] * v), float(v)


BETA = BetaFamily()
GAMMA = GammaFamily()
GAUSSIAN = GaussianFamily()


@dataclass(frozen=True, eq=False)
class ExpFam:
    """One member ExpFam(θ | η) of ``family`` (η validated, stored read-only).

    >>> gamma(2.0, 4.0).mean
    0.5
    """

    family: ExpFamily
    eta: np.ndarray

    def __post_init__(self) -> None:
        eta = self.family.check(self.eta).copy()
        eta.setflags(write=False)
        object.__setattr__(self, "eta", eta)

    @property
    def params(self) -> dict[str, float]:
        """The usual parameters."""
        return self.family.to_params(self.eta)

    @property
    def mean(self) -> float:
        return self.family.mean_var(self.eta)[0]

    @property
    def var(self) -> float:
        return self.family.mean_var(self.eta)[1]

    def mean_params(self) -> FloatArray:
        return self.family.mean_params(self.eta)

    def fisher(self) -> FloatArray:
        return self.family.fisher(self.eta)

    def log_density(self, theta: Any) -> FloatArray:
        return self.family.log_density(self.eta, theta)

    def sample(self, rng: np.random.Generator, size: Any = None) -> Any:
        return self.family.sample(self.eta, rng, size)

    def entropy(self) -> float:
        return self.family.entropy(self.eta)

    def kl(self, other: ExpFam) -> float:
        """KL(self ‖ other), closed form; both must be of the same family."""
        if other.family is not self.family:
            raise ValueError(f"other: KL needs the same family, got {self.family.name} "
                             f"and {other.family.name}")
        return self.family.kl(self.eta, other.eta)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:.6g}" for k, v in self.params.items())
        return f"{self.family.name}({inner})"


def beta(a: float, b: float) -> ExpFam:
    """Beta(a, b)."""
    return BETA.dist(a=a, b=b)


def gamma(shape: float, rate: float) -> ExpFam:
    """Gamma(shape, rate)."""
    return GAMMA.dist(shape=shape, rate=rate)


def normal(mean: float, var: float) -> ExpFam:
    """N(mean, var)."""
    return GAUSSIAN.dist(mean=mean, var=var)


# --------------------------------------------------------------------------- quadrature


def _trapezoid_log(log_f: np.ndarray, u: np.ndarray) -> float:
    """log ∫ exp(log_f) du by the trapezoid rule, stably."""
    w = np.empty_like(u)
    du = np.diff(u)
    w[0], w[-1] = du[0] / 2, du[-1] / 2
    w[1:-1] = (du[:-1] + du[1:]) / 2
    return float(special.logsumexp(log_f + np.log(w)))


def log_integral(family: ExpFamily, log_f: LogDensity, *, points: int = 4001,
                 depth: float = 50.0) -> float:
    """log ∫ f(θ) dθ over the support of ``family`` for a unimodal ``f`` given by its log.

    Trapezoid rule in the unconstrained coordinate u: a coarse grid over ``u_range`` finds
    the mode, then the grid is zoomed onto the region where log f(θ(u)) + log|dθ/du| is
    within ``depth`` nats of its maximum until that region holds ``points`` points.
    """
    lo, hi = family.u_range
    if not np.isfinite(lo):
        lo, hi = -1e4, 1e4
    for _ in range(40):
        u = np.linspace(lo, hi, points)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            g = log_f(family.from_unconstrained(u)) + family.log_jacobian(u)
        g = np.where(np.isnan(g), -np.inf, g)
        top = np.max(g)
        if not np.isfinite(top):
            raise ValueError("log_f: the integrand is zero or not finite everywhere")
        keep = np.flatnonzero(g >= top - depth)
        i, j = max(keep[0] - 1, 0), min(keep[-1] + 1, points - 1)
        if j - i >= points // 2:
            return _trapezoid_log(g, u)
        lo, hi = u[i], u[j]
    return _trapezoid_log(g, u)


def expect(q: ExpFam, f: Callable[[np.ndarray], np.ndarray], *, points: int = 2001,
           width: float = 15.0) -> float:
    """E_q[f(θ)] by the trapezoid rule over u ∈ mean ± ``width`` sd of u(θ) (q's bulk).

    The weights are renormalised to sum to one on the grid; mass of q further out is
    ignored (fine for the bell-shaped q here unless f explodes in the tails).
    """
    fam = q.family
    m, sd = fam.unconstrained_moments(q.eta)
    lo, hi = fam.u_range
    u = np.linspace(max(m - width * sd, lo), min(m + width * sd, hi), points)
    theta = fam.from_unconstrained(u)
    log_w = fam.log_density(q.eta, theta) + fam.log_jacobian(u)
    w = np.exp(log_w - np.max(log_w))
    w[0] *= 0.5
    w[-1] *= 0.5
    vals = f(theta)
    return float(np.sum(w * vals) / np.sum(w))


def kl_to_unnormalised(q: ExpFam, log_target: LogDensity, log_normaliser: float | None = None,
                       *, points: int = 2001) -> float:
    """KL(q ‖ p) with p = exp(log_target)/Z for a 1-D target on q's support.

    KL = −H(q) − E_q[log_target] + log Z: the entropy in closed form, the expectation by
    :func:`expect`, log Z by :func:`log_integral` unless given (cache it for a fixed target).
    """
    if log_normaliser is None:
        log_normaliser = log_integral(q.family, log_target)
    cross = expect(q, log_target, points=points)
    return max(-q.entropy() - cross + log_normaliser, 0.0)


# --------------------------------------------------------------------------- likelihoods


class Likelihood(ABC):
    """p(z | θ) for scalar data; losses are sums Σ_n −log p(z_n | θ) over a data set.

    Data sets are reduced once to an additive ``summary`` (e.g. [N, Σz]), so the loss of a
    data set at many θ is vectorised and the loss of a union of data sets is the loss of
    the summed summaries.
    """

    name: str = ""

    def check(self, data: Any, name: str = "data") -> FloatArray:
        """``data`` as a non-empty 1-D float64 array of valid values (one-line ValueError)."""
        arr = np.asarray(data, dtype=np.float64)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name}: must be a non-empty 1-D array, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: must be finite")
        problem = self._data_error(arr)
        if problem is not None:
            raise ValueError(f"{name}: {self.name} data {problem}")
        return arr

    def _data_error(self, data: FloatArray) -> str | None:
        return None

    @abstractmethod
    def summary(self, data: FloatArray) -> FloatArray:
        """Additive summary of a (checked) data set."""

    @abstractmethod
    def sum_loss(self, theta: Any, summary: FloatArray) -> FloatArray:
        """Σ_n −log p(z_n | θ) for the data set with ``summary``, vectorised over θ."""


class ConjugateLikelihood(Likelihood):
    """A likelihood conjugate to ``prior_family``: posterior = prior η + ``increment``."""

    prior_family: ExpFamily

    @abstractmethod
    def increment(self, summary: FloatArray) -> FloatArray:
        """Σ_z [s_l(z); 1] written in the prior's natural coordinates (G-FVL eq. 13)."""

    def natural_increment(self, data: Any) -> FloatArray:
        """The increment of a raw data array."""
        return self.increment(self.summary(self.check(data)))

    def posterior(self, prior_eta: Any, data: Any) -> FloatArray:
        """Natural parameters of the exact posterior."""
        return self.prior_family.check(prior_eta, "prior_eta") + self.natural_increment(data)


class BernoulliLikelihood(ConjugateLikelihood):
    """Bern(z | θ), z ∈ {0, 1}; Beta prior: η += [Σz, N − Σz]."""

    name = "Bernoulli"
    prior_family = BETA

    def _data_error(self, data: FloatArray) -> str | None:
        return None if np.all((data == 0) | (data == 1)) else "must be in {0, 1}"

    def summary(self, data: FloatArray) -> FloatArray:
        return np.array([data.size, data.sum()], dtype=np.float64)

    def sum_loss(self, theta: Any, summary: FloatArray) -> FloatArray:
        n, ones = summary
        t = np.asarray(theta, dtype=np.float64)
        return -(special.xlogy(ones, t) + special.xlog1py(n - ones, -t))

    def increment(self, summary: FloatArray) -> FloatArray:
        n, ones = summary
        return np.array([ones, n - ones])


class PoissonLikelihood(ConjugateLikelihood):
    """Poisson(z | θ), z ∈ {0, 1, ...}; Gamma prior: η += [Σz, −N]."""

    name = "Poisson"
    prior_family = GAMMA

    def _data_error(self, data: FloatArray) -> str | None:
        ok = np.all(data >= 0) and np.all(data == np.round(data))
        return None if ok else "must be non-negative integers"

    def summary(self, data: FloatArray) -> FloatArray:
        return np.array([data.size, data.sum(), special.gammaln(data + 1.0).sum()])

    def sum_loss(self, theta: Any, summary: FloatArray) -> FloatArray:
        n, total, log_fact = summary
        t = np.asarray(theta, dtype=np.float64)
        return n * t - special.xlogy(total, t) + log_fact

    def increment(self, summary: FloatArray) -> FloatArray:
        n, total, _ = summary
        return np.array([total, -n])


class GaussianLikelihood(ConjugateLikelihood):
    """N(z | θ, σ²) with known ``noise_var`` σ²; Gaussian prior: η += [Σz/σ², −N/(2σ²)]."""

    name = "Gaussian"
    prior_family = GAUSSIAN

    def __init__(self, noise_var: float = 1.0) -> None:
        if not (np.isfinite(noise_var) and noise_var > 0):
            raise ValueError(f"noise_var: must be > 0 and finite, got {noise_var}")
        self.noise_var = float(noise_var)

    def summary(self, data: FloatArray) -> FloatArray:
        return np.array([data.size, data.sum(), (data * data).sum()])

    def sum_loss(self, theta: Any, summary: FloatArray) -> FloatArray:
        n, s1, s2 = summary
        t = np.asarray(theta, dtype=np.float64)
        v = self.noise_var
        return (s2 - 2.0 * t * s1 + n * t * t) / (2.0 * v) + 0.5 * n * np.log(2.0 * np.pi * v)

    def increment(self, summary: FloatArray) -> FloatArray:
        n, s1, _ = summary
        return np.array([s1 / self.noise_var, -n / (2.0 * self.noise_var)])


class ExponentialLikelihood(Likelihood):
    """Exp(z | θ) = (1/θ) exp(−z/θ), z ≥ 0, θ the mean (non-conjugate to Beta; eqs. 22-23)."""

    name = "exponential"

    def _data_error(self, data: FloatArray) -> str | None:
        return None if np.all(data >= 0) else "must be >= 0"

    def summary(self, data: FloatArray) -> FloatArray:
        return np.array([data.size, data.sum()], dtype=np.float64)

    def sum_loss(self, theta: Any, summary: FloatArray) -> FloatArray:
        n, total = summary
        t = np.asarray(theta, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return n * np.log(t) + total / t
