"""Power allocation of WFLMC under a privacy budget: the equal allocation and the convex
programme of Liu and Simeone ("Wireless Federated Langevin Monte Carlo: Repurposing
Channel Noise for Bayesian Sampling and Privacy"; their code, ``Opt_func.m``).

Each round s has a scaling ``a_s`` (:mod:`bflnet.radio.aircomp`, in the units of the
payloads), capped by the energy budget and the Langevin level (``caps``: the
``"langevin"`` power rule's scaling), a channel noise ``v_s = n_s / a_s`` on the mean
update (``n_s = N_0 / K_a²``), and a privacy cost ``ρ_s = u a_s`` to every device that
transmits in it (``u = 2 clip² / N_0``: :mod:`bflnet.radio.privacy`). Every device's
total cost must stay within the budget ``R_dp(ε, δ)``.

**The bound** the authors minimise (the W2² between the chain's law at round s and the
posterior, for a μ-strongly convex, L-smooth potential, step η, γ = 1 − ημ):

    B(s) = q^s W_0 + c Σ_{i ≤ s} q^{s−i} (D + b_i + max(0, v_i − 2η)),

``q = ((1 + γ)/2)²``, ``c = 2(1 + γ)/(1 − γ)``, ``D = η⁴L³d/3 + η³L²d`` (discretisation),
``b_i = 4 (clip/K)² (K − K_a,i)²`` (the silent devices' bias), ``W_0`` the W2² of the
initial law. With ``a_s`` at most the Langevin level, ``v_s ≥ 2η`` and each term is convex in
``a_s`` (``n_s / a_s``).

* **Equal allocation** (the authors' "static PA"): one scaling for all rounds, the budget
  spent evenly over the most rounds a device transmits in, capped per round:
  ``a_s = min(cap_s, R_dp / (u max_k T_k))`` (:func:`equal_scales`).
* **Optimised allocation** (their CVX programme): minimise the largest bound over the kept
  rounds, ``max_{s > burn_in} B(s)``, subject to every device's budget and
  ``0 < a_s ≤ cap_s`` (:func:`optimise_scales`): a small convex programme (one variable per
  round), solved in epigraph form with SciPy's SLSQP from the equal allocation (to 1e-6
  of the objective; a dedicated conic solver is not needed at this size). Rounds
  long before the kept ones weigh little in the bound, so the optimum spends little of the
  budget there (a hot burn-in) and more on the kept rounds.

Both use the whole run's fading in advance, as the authors' code does (who transmits in
which round, and each round's cap).

>>> import numpy as np
>>> bound = LangevinBound(eta=0.01, mu=1.0, smooth=2.0, dim=1, initial_w2=1.0)
>>> caps = np.full(4, 2.0); coef = np.full(4, 0.02)           # v = 0.02 / a ≥ 2η = 0.02
>>> charged = np.ones((4, 1), dtype=bool)
>>> eq = equal_scales(caps, charged, rho_unit=1.0, budget=2.0)
>>> eq.tolist()                                             # 2 / (1 · 4 rounds)
[0.5, 0.5, 0.5, 0.5]
>>> opt = optimise_scales(bound, noise_coef=coef, bias=np.zeros(4), caps=caps,
...                       charged=charged, rho_unit=1.0, budget=2.0, burn_in=2)
>>> bool(opt.sum() <= 2.0 + 1e-9), bool(opt[3] > opt[0])
(True, True)
>>> kw = dict(noise_coef=coef, bias=np.zeros(4), burn_in=2)
>>> bool(bound.worst(opt, **kw) < bound.worst(eq, **kw))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Smallest fraction of its cap a round's scaling may take in the programme.
MIN_FRACTION = 1e-6
#: SLSQP's tolerance on the (normalised, about 1) objective.
SOLVER_TOL = 1e-6


@dataclass(frozen=True)
class LangevinBound:
    """The authors' bound (module docstring): step ``eta``, strong convexity ``mu`` and
    smoothness ``smooth`` of the potential, ``dim`` and the initial law's W2²."""

    eta: float
    mu: float
    smooth: float
    dim: int
    initial_w2: float

    @property
    def gamma(self) -> float:
        """``1 − η μ``."""
        return 1.0 - self.eta * self.mu

    def weights(self, rounds: int, burn_in: int) -> tuple[np.ndarray, np.ndarray]:
        """``(start, W)``: for the kept rounds ``s = burn_in+1 … rounds``, the initial
        law's share ``q^s W_0`` and the weights ``W[s, i] = c q^{s−i}`` (i ≤ s) of each
        round's term."""
        g = self.gamma
        q = ((1.0 + g) / 2.0) ** 2
        c = 2.0 * (1.0 + g) / (1.0 - g)
        s = np.arange(burn_in + 1, rounds + 1, dtype=np.float64)[:, None]
        i = np.arange(1, rounds + 1, dtype=np.float64)[None, :]
        with np.errstate(over="ignore"):
            w = np.where(i <= s, c * q ** np.maximum(s - i, 0.0), 0.0)
        return q ** s[:, 0] * self.initial_w2, w

    def terms(self, scales: np.ndarray, noise_coef: np.ndarray,
              bias: np.ndarray) -> np.ndarray:
        """Each round's term ``D + b_i + max(0, v_i − 2η)``; a round nobody transmits in
        (``noise_coef`` 0) adds its discretisation and bias only."""
        e = self.eta
        disc = e ** 4 * self.smooth ** 3 * self.dim / 3.0 + e ** 3 * self.smooth ** 2 * self.dim
        a = np.asarray(scales, dtype=np.float64)
        n = np.asarray(noise_coef, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(n > 0, n / a, 0.0)
        return disc + np.asarray(bias, dtype=np.float64) + np.maximum(0.0, v - 2.0 * e)

    def per_round(self, scales: np.ndarray, *, noise_coef: np.ndarray, bias: np.ndarray,
                  burn_in: int) -> np.ndarray:
        """The bound at each kept round."""
        start, w = self.weights(len(scales), burn_in)
        return start + w @ self.terms(scales, noise_coef, bias)

    def worst(self, scales: np.ndarray, *, noise_coef: np.ndarray, bias: np.ndarray,
              burn_in: int) -> float:
        """The programme's objective: the largest bound over the kept rounds."""
        return float(self.per_round(scales, noise_coef=noise_coef, bias=bias,
                                    burn_in=burn_in).max())


def equal_scales(caps: np.ndarray, charged: np.ndarray, *, rho_unit: float,
                 budget: float) -> np.ndarray:
    """The equal allocation: ``min(cap_s, budget / (rho_unit · max_k T_k))`` with ``T_k``
    the rounds device k transmits in (``charged``, ``(S, K)``)."""
    caps = np.asarray(caps, dtype=np.float64)
    most = int(np.asarray(charged).sum(axis=0).max()) if np.size(charged) else 0
    level = math.inf if most == 0 else budget / (rho_unit * most)
    return np.minimum(caps, level)


def optimise_scales(bound: LangevinBound, *, noise_coef: np.ndarray, bias: np.ndarray,
                    caps: np.ndarray, charged: np.ndarray, rho_unit: float, budget: float,
                    burn_in: int) -> np.ndarray:
    """The optimised allocation (module docstring): the scalings minimising the largest
    kept-round bound under every device's budget and the caps. Falls back to the equal
    allocation (which is feasible) should the solver end anywhere worse."""
    caps = np.asarray(caps, dtype=np.float64)
    n = np.asarray(noise_coef, dtype=np.float64)
    bias = np.asarray(bias, dtype=np.float64)
    charged = np.asarray(charged, dtype=bool)
    S = caps.size
    free = (n > 0) & (caps > 0)
    equal = equal_scales(caps, charged, rho_unit=rho_unit, budget=budget)
    kw = {"noise_coef": n, "bias": bias, "burn_in": burn_in}
    if not free.any() or not budget > 0:
        return equal
    start, w = bound.weights(S, burn_in)
    e = bound.eta
    disc = e ** 4 * bound.smooth ** 3 * bound.dim / 3.0 + e ** 3 * bound.smooth ** 2 * bound.dim
    const = start + w @ np.where(free, disc + bias - 2.0 * e, bound.terms(equal, n, bias))
    idx = np.flatnonzero(free)
    x0 = equal[idx] / caps[idx]                   # x = a / cap, in [MIN_FRACTION, 1]
    coef = w[:, idx] * (n[idx] / caps[idx])[None, :]  # B_s = const_s + Σ_i coef_si / x_i
    ref = float((const + coef @ (1.0 / x0)).max())
    cost = charged[idx].T.astype(np.float64) * (rho_unit * caps[idx] / budget)[None, :]
    cost = np.unique(cost[cost.sum(axis=1) > 0], axis=0)  # one row per distinct device
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):  # small dense solves: threads only wait
        x = minimax_inverse(const / ref, coef / ref, cost, x0)
    out = equal.copy()
    out[idx] = x * caps[idx]
    if bound.worst(out, **kw) > bound.worst(equal, **kw):
        return equal
    return out


def minimax_inverse(const: np.ndarray, coef: np.ndarray, cost: np.ndarray,
                    x0: np.ndarray) -> np.ndarray:
    """``argmin_x max_s (const_s + Σ_i coef_si / x_i)`` subject to ``cost · x ≤ 1`` and
    ``MIN_FRACTION ≤ x ≤ 1`` (``coef``, ``cost`` ≥ 0; ``x0`` feasible): SciPy's SLSQP on the
    epigraph form (minimise t subject to every kept round's bound at most t), with exact
    gradients; the result is put back within the budget should SLSQP overshoot it by its
    tolerance."""
    from scipy.optimize import minimize

    n = x0.size
    unit_t = np.zeros(n + 1)
    unit_t[-1] = 1.0

    def bound_gap(z: np.ndarray) -> np.ndarray:       # t − B_s ≥ 0
        return z[-1] - (const + coef @ (1.0 / z[:-1]))

    def bound_gap_jac(z: np.ndarray) -> np.ndarray:
        return np.hstack([coef / z[:-1] ** 2, np.ones((const.size, 1))])

    constraints = [{"type": "ineq", "fun": bound_gap, "jac": bound_gap_jac}]
    if cost.size:
        zeros = np.zeros((cost.shape[0], 1))
        constraints.append({"type": "ineq", "fun": lambda z: 1.0 - cost @ z[:-1],
                            "jac": lambda z: np.hstack([-cost, zeros])})
    z0 = np.append(x0, float((const + coef @ (1.0 / x0)).max()))
    result = minimize(lambda z: float(z[-1]), z0, jac=lambda z: unit_t, method="SLSQP",
                      bounds=[(MIN_FRACTION, 1.0)] * n + [(None, None)],
                      constraints=constraints, options={"maxiter": 500, "ftol": SOLVER_TOL})
    x = np.clip(result.x[:-1], MIN_FRACTION, 1.0)
    spent = float((cost @ x).max()) if cost.size else 0.0
    return x / spent if spent > 1.0 else x
