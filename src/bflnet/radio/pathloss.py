"""Large-scale propagation: log-distance path loss, per-link log-normal shadowing, noise.

Received power in dBm over a distance ``d``::

    P_rx = P_tx - L0 - 10 n log10(max(d, d0) / d0) - X

with ``L0`` the loss at the reference distance ``d0`` (``ref_loss_db``; free space at
1 m and 2.4 GHz is about 40 dB), ``n`` the path-loss exponent and ``X`` a zero-mean normal
of standard deviation ``shadowing_db`` drawn once per unordered pair of nodes and run
(shadowing is reciprocal and does not change during a run). ``X`` is a pure function of
the run's key and the pair, so it needs no storage and no draw order. Closer than ``d0``
the loss is ``L0`` (the far-field law does not hold there).

Thermal noise over a bandwidth ``B``: ``-174 dBm/Hz + 10 log10(B) + NF``.

>>> pl = LogDistance(exponent=2.0, ref_distance_m=1.0, ref_loss_db=40.0)
>>> round(pl.loss_db(10.0), 6)
60.0
>>> round(noise_dbm(1e6, 7.0), 6)
-107.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from bflnet.validation.checks import check_real

#: Thermal noise density at 290 K, in dBm/Hz.
THERMAL_NOISE_DBM_HZ = -174.0
_MASK = (1 << 64) - 1


def dbm_to_mw(dbm: float) -> float:
    """Power in milliwatts of ``dbm``."""
    return 10.0 ** (dbm / 10.0)


def noise_dbm(bandwidth_hz: float, noise_figure_db: float) -> float:
    """Thermal noise power over ``bandwidth_hz`` with receiver noise figure ``noise_figure_db``."""
    return THERMAL_NOISE_DBM_HZ + 10.0 * math.log10(bandwidth_hz) + noise_figure_db


def _splitmix(x: int) -> int:
    """One round of SplitMix64 (a 64-bit integer hash)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _splitmix_array(x: np.ndarray) -> np.ndarray:
    """:func:`_splitmix` on a ``uint64`` array (wrapping arithmetic, same values)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def pair_normals(key: int, a: int, others: np.ndarray) -> np.ndarray:
    """A standard normal for each unordered pair ``{a, b}``, ``b`` in ``others``
    (non-negative integers): a fixed function of ``key`` and the pair, the same for
    ``(a, b)`` and ``(b, a)``."""
    b = np.asarray(others, dtype=np.uint64)
    a_ = np.full_like(b, a)
    lo, hi = np.minimum(a_, b), np.maximum(a_, b)
    seed = _splitmix(key & _MASK)
    h = _splitmix_array(_splitmix_array(np.uint64(seed) ^ lo)
                        ^ (hi * np.uint64(0xD1B54A32D192ED03)))
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)  # in (0, 1)
    return ndtri(u)


def pair_normal(key: int, a: int, b: int) -> float:
    """:func:`pair_normals` of one pair."""
    return float(pair_normals(key, a, np.array([b]))[0])


@dataclass(frozen=True)
class LogDistance:
    """Log-distance path loss (module docstring): ``exponent`` n, ``ref_distance_m`` d0,
    ``ref_loss_db`` L0 and per-pair shadowing of ``shadowing_db`` (0: none)."""

    exponent: float = 3.0
    ref_distance_m: float = 1.0
    ref_loss_db: float = 40.0
    shadowing_db: float = 0.0

    def __post_init__(self) -> None:
        check_real("path_loss_exponent", self.exponent, ge=0, le=10)
        check_real("ref_distance_m", self.ref_distance_m, gt=0, le=1e6)
        check_real("ref_loss_db", self.ref_loss_db, ge=-100, le=300)
        check_real("shadowing_db", self.shadowing_db, ge=0, le=50)

    def loss_db(self, distance_m: float) -> float:
        """Mean loss in dB at ``distance_m`` (no shadowing)."""
        if not distance_m >= 0:
            raise ValueError(f"distance_m: must be a number >= 0, got {distance_m!r}")
        d = max(distance_m, self.ref_distance_m)
        return self.ref_loss_db + 10.0 * self.exponent * math.log10(d / self.ref_distance_m)

    def gain(self, distance_m: float) -> float:
        """Mean linear power gain ``10 ** (-loss_db / 10)``."""
        return 10.0 ** (-self.loss_db(distance_m) / 10.0)

    def gains(self, distances_m: np.ndarray) -> np.ndarray:
        """:meth:`gain` of each distance (an array; distances must be >= 0)."""
        d = np.maximum(np.asarray(distances_m, dtype=np.float64), self.ref_distance_m)
        loss = self.ref_loss_db + 10.0 * self.exponent * np.log10(d / self.ref_distance_m)
        return 10.0 ** (-loss / 10.0)

    def shadowing_gains(self, key: int, a: int, others: np.ndarray) -> np.ndarray:
        """:meth:`shadowing_gain` of each pair ``{a, b}``, ``b`` in ``others``."""
        if self.shadowing_db == 0.0:
            return np.ones(len(others))
        return 10.0 ** (-self.shadowing_db * pair_normals(key, a, others) / 10.0)

    def shadowing_gain(self, key: int, a: int, b: int) -> float:
        """Linear gain ``10 ** (-X / 10)`` of the pair's shadowing (1 without shadowing)."""
        if self.shadowing_db == 0.0:
            return 1.0
        return 10.0 ** (-self.shadowing_db * pair_normal(key, a, b) / 10.0)

    def range_m(self, budget_db: float) -> float:
        """The distance at which the mean loss reaches ``budget_db`` (``inf`` for a zero
        exponent; ``d0`` if the budget is below ``L0``)."""
        if budget_db <= self.ref_loss_db:
            return self.ref_distance_m
        if self.exponent == 0.0:
            return math.inf
        log_ratio = (budget_db - self.ref_loss_db) / (10.0 * self.exponent)
        return math.inf if log_ratio > 300 else self.ref_distance_m * 10.0 ** log_ratio
