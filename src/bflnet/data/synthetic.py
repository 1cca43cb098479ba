"""Synthetic per-agent data sets for the G-FVL experiments: K agents × N points each.

The ``*_agents`` generators are i.i.d. across agents (one θ for everyone). The
``agent_skewed_*`` ones give every agent its own law, as the original G-FVL experiments
do: agent i (1-based, i = 1..K) draws, for each of its points, its own parameter
t ~ Beta(K + 1 − i, i) (for K = 10: Beta(11 − i, i), mean (K + 1 − i)/(K + 1), from
0.91 for agent 1 down to 0.09 for agent 10), then the point given t.

>>> data = bernoulli_agents(3, 5, 0.3, np.random.default_rng(0))
>>> sorted(data), data[0].shape
([0, 1, 2], (5,))
"""

from __future__ import annotations

import numpy as np


def _check(K: int, N: int) -> None:
    for name, v in (("K", K), ("N", N)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")


def bernoulli_agents(K: int, N: int, theta: float, rng: np.random.Generator
                     ) -> dict[int, np.ndarray]:
    """Agent k ↦ N draws of Bern(θ) in {0, 1} (float64)."""
    _check(K, N)
    if not 0.0 <= theta <= 1.0:
        raise ValueError(f"theta: must be in [0, 1], got {theta!r}")
    draws = (rng.random((K, N)) < theta).astype(np.float64)
    return {k: draws[k] for k in range(K)}


def exponential_agents(K: int, N: int, theta: float, rng: np.random.Generator
                       ) -> dict[int, np.ndarray]:
    """Agent k ↦ N draws of the exponential distribution with mean θ (paper eq. 23)."""
    _check(K, N)
    if not (np.isfinite(theta) and theta > 0):
        raise ValueError(f"theta: must be > 0 and finite, got {theta!r}")
    draws = rng.exponential(theta, size=(K, N))
    return {k: draws[k] for k in range(K)}


def poisson_agents(K: int, N: int, theta: float, rng: np.random.Generator
                   ) -> dict[int, np.ndarray]:
    """Agent k ↦ N Poisson(θ) counts (float64)."""
    _check(K, N)
    if not (np.isfinite(theta) and theta >= 0):
        raise ValueError(f"theta: must be >= 0 and finite, got {theta!r}")
    draws = rng.poisson(theta, size=(K, N)).astype(np.float64)
    return {k: draws[k] for k in range(K)}


def gaussian_agents(K: int, N: int, theta: float, noise_var: float, rng: np.random.Generator
                    ) -> dict[int, np.ndarray]:
    """Agent k ↦ N draws of N(θ, noise_var)."""
    _check(K, N)
    if not (np.isfinite(noise_var) and noise_var > 0):
        raise ValueError(f"noise_var: must be > 0 and finite, got {noise_var!r}")
    draws = theta + np.sqrt(noise_var) * rng.standard_normal((K, N))
    return {k: draws[k] for k in range(K)}


def agent_skewed_parameters(K: int, N: int, rng: np.random.Generator) -> np.ndarray:
    """Per-point parameters t, shape (K, N): row k (agent i = k + 1) ~ Beta(K − k, k + 1),
    i.e. Beta(K + 1 − i, i)."""
    _check(K, N)
    k = np.arange(K, dtype=np.float64)[:, None]
    return rng.beta(np.broadcast_to(K - k, (K, N)), np.broadcast_to(k + 1.0, (K, N)))


def agent_skewed_exponential_agents(K: int, N: int, rng: np.random.Generator
                                    ) -> dict[int, np.ndarray]:
    """Agent k ↦ N exponential points, point n with mean t_{k,n} ~ Beta(K − k, k + 1) (the
    likelihood's θ of eq. 23, so t lies in the Beta prior's support (0, 1))."""
    t = agent_skewed_parameters(K, N, rng)
    draws = rng.exponential(t)
    return {k: draws[k] for k in range(K)}


def agent_skewed_bernoulli_agents(K: int, N: int, rng: np.random.Generator
                                  ) -> dict[int, np.ndarray]:
    """Agent k ↦ N Bernoulli points, point n with P(z = 1) = t_{k,n} ~ Beta(K − k, k + 1):
    marginally Bern((K − k)/(K + 1)), a beta-binomial with one trial per point."""
    t = agent_skewed_parameters(K, N, rng)
    draws = (rng.random((K, N)) < t).astype(np.float64)
    return {k: draws[k] for k in range(K)}
