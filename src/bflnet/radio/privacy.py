"""Differential privacy of an analog uplink: the channel's noise as a Gaussian mechanism.

Over the air (:mod:`bflnet.radio.aircomp`) the server receives, per coordinate,
``y = sqrt(a) Σ_active x_k + z`` with ``z ~ N(0, N_0)`` and every payload clipped to norm
``clip``. Replacing one device's data changes its payload by at most ``2 clip`` in norm,
so ``y`` by at most ``Δ = 2 sqrt(a) clip``: one round is the Gaussian mechanism with
sensitivity Δ and noise variance N_0, whose privacy-loss random variable is
``N(ρ, 2ρ)`` with

    ρ = Δ² / (2 N_0) = 2 a clip² / N_0        (:func:`round_rho`).

Rounds compose by adding ρ (the losses are independent Gaussians, their sum
``N(Σρ, 2Σρ)``); a device is charged only for the rounds it transmits in
(:func:`device_rho`). Any noise the server adds after receiving protects nothing: only
the noise on what the device's signal reaches is counted.

**From ρ to (ε, δ)** (Liu and Simeone, "Wireless Federated Langevin Monte Carlo", and
their code): the mechanism is (ε, δ)-DP when the loss exceeds ε with probability at most
δ; with the Gaussian tail bound this holds when ``ε = ρ + 2 c sqrt(ρ)``, where ``c`` solves
``sqrt(π) c e^{c²} = 1/δ`` (:func:`epsilon_of`). Inverted, a device meets (ε, δ) over the
rounds when its total ρ is at most

    R_dp(ε, δ) = (sqrt(ε + c²) − c)²          (:func:`dp_budget`).

>>> round(tail_constant(0.01), 4)     # sqrt(π) c e^{c²} = 100
1.8488
>>> budget = dp_budget(15.0, 0.01)
>>> round(budget, 3)
5.967
>>> round(epsilon_of(budget, 0.01), 9)
15.0
>>> round_rho(scale=2.0, clip=1.0, noise_power=4.0)   # 2 · 2 · 1 / 4
1.0
"""

from __future__ import annotations

import math

import numpy as np

from bflnet.validation.checks import check_real

#: Bounds of the privacy settings (ε up to 10⁶, δ in (0, 1)).
MAX_EPSILON = 1e6


def check_privacy(epsilon: float, delta: float) -> tuple[float, float]:
    """``(epsilon, delta)`` as floats if ε > 0 (at most 10⁶) and 0 < δ < 1; one-line
    errors naming the field otherwise."""
    return (check_real("epsilon", epsilon, gt=0, le=MAX_EPSILON),
            check_real("delta", delta, gt=0, lt=1))


def tail_constant(delta: float) -> float:
    """``c > 0`` with ``sqrt(π) c e^{c²} = 1/δ`` (module docstring); for δ near 1, where
    no positive root is large, the root of the increasing left side is still unique."""
    delta = check_real("delta", delta, gt=0, lt=1)
    target = math.log(1.0 / delta)
    # log of the left side: 0.5 log π + log c + c², increasing in c > 0
    lo, hi = 1e-300, max(1.0, math.sqrt(target) + 1.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 0.5 * math.log(math.pi) + math.log(mid) + mid * mid < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def dp_budget(epsilon: float, delta: float) -> float:
    """The largest total ρ of a device that keeps it (ε, δ)-DP:
    ``(sqrt(ε + c²) − c)²`` (module docstring)."""
    epsilon, delta = check_privacy(epsilon, delta)
    c = tail_constant(delta)
    return (math.sqrt(epsilon + c * c) - c) ** 2


def epsilon_of(rho: float, delta: float) -> float:
    """The ε a total ``rho`` gives at ``delta``: ``ρ + 2 c sqrt(ρ)`` (inf for inf)."""
    rho = float(rho)
    if not rho >= 0:
        raise ValueError(f"rho: must be a number >= 0, got {rho!r}")
    if math.isinf(rho):
        return math.inf
    return rho + 2.0 * tail_constant(delta) * math.sqrt(rho)


def round_rho(scale: float, clip: float, noise_power: float) -> float:
    """One round's ρ for a transmitting device: ``2 a clip² / N_0`` (module docstring)."""
    return 2.0 * float(scale) * float(clip) ** 2 / float(noise_power)


def device_rho(scales: np.ndarray, active: np.ndarray, clip: float,
               noise_power: float) -> np.ndarray:
    """Each device's total ρ over the rounds: ``scales`` ``(S,)`` the rounds' scalings,
    ``active`` ``(S, K)`` who transmitted; a device is charged for its own rounds only."""
    per_round = 2.0 * np.asarray(scales, dtype=np.float64) * float(clip) ** 2 / noise_power
    return np.asarray(active, dtype=np.float64).T @ per_round


def equal_scale(budget: float, rounds_heard: int, clip: float, noise_power: float) -> float:
    """The constant scaling that spends a budget ``R_dp`` evenly over ``rounds_heard``
    rounds (a device's most): ``N_0 R_dp / (2 clip² rounds_heard)``."""
    if rounds_heard <= 0:
        return math.inf
    return noise_power * budget / (2.0 * float(clip) ** 2 * rounds_heard)
