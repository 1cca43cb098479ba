"""Block-fading radio channels: Rayleigh and Rician, with path loss and outage.

Each packet attempt sees an independent power gain ``g`` (mean 1). The received SNR is
``mean_snr * g * (distance_m / ref_distance_m) ** -path_loss_exponent`` with ``mean_snr``
the linear mean SNR at the reference distance; no clamping is applied below
``ref_distance_m`` (it only fixes the units). Packets are coded at ``coding_rate``
bit/s/Hz, so they take ``bits / (bandwidth_hz * coding_rate)`` seconds on the air, and an
attempt is lost (outage) iff ``log2(1 + SNR) < coding_rate``.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np

from bflnet.channels.base import Channel
from bflnet.validation.checks import check_real


class _BlockFadingChannel(Channel):
    """Shared parameters, path loss, airtime and outage threshold of the fading channels."""

    distance_dependent = True

    def __init__(
        self,
        bandwidth_hz: float,
        mean_snr_db: float,
        *,
        distance_m: float = 1.0,
        path_loss_exponent: float = 3.0,
        ref_distance_m: float = 1.0,
        coding_rate: float = 1.0,
        latency_s: float = 0.0,
    ) -> None:
        self._bandwidth_hz = check_real("bandwidth_hz", bandwidth_hz, gt=0)
        self._mean_snr_db = check_real("mean_snr_db", mean_snr_db)
        self._distance_m = check_real("distance_m", distance_m, gt=0)
        self._path_loss_exponent = check_real("path_loss_exponent", path_loss_exponent, ge=0)
        self._ref_distance_m = check_real("ref_distance_m", ref_distance_m, gt=0)
        self._coding_rate = check_real("coding_rate", coding_rate, gt=0)
        self._latency_s = check_real("latency_s", latency_s, ge=0)
        self._rate_bps = self._bandwidth_hz * self._coding_rate
        if not math.isfinite(self._rate_bps):
            raise ValueError(
                f"bandwidth_hz: bandwidth_hz * coding_rate must be finite, got {self._rate_bps}"
            )
        # Outage iff g < threshold, threshold = (2^R - 1) / (mean SNR at distance); computed
        # in the log domain so extreme parameters saturate to 0 or inf instead of raising.
        self._path_loss_db = (
            10.0
            * self._path_loss_exponent
            * (math.log10(self._distance_m) - math.log10(self._ref_distance_m))
        )
        x = self._coding_rate * math.log(2.0)
        log_2r_minus_1 = math.log(math.expm1(x)) if x < 700.0 else x + math.log1p(-math.exp(-x))
        log_threshold = log_2r_minus_1 + (self._path_loss_db - self._mean_snr_db) * (
            math.log(10.0) / 10.0
        )
        self._gain_threshold = math.exp(log_threshold) if log_threshold < 709.0 else math.inf

    def _kwargs(self) -> dict[str, Any]:
        return {
            "bandwidth_hz": self._bandwidth_hz,
            "mean_snr_db": self._mean_snr_db,
            "distance_m": self._distance_m,
            "path_loss_exponent": self._path_loss_exponent,
            "ref_distance_m": self._ref_distance_m,
            "coding_rate": self._coding_rate,
            "latency_s": self._latency_s,
        }

    @property
    def bandwidth_hz(self) -> float:
        """Bandwidth in Hz."""
        return self._bandwidth_hz

    @property
    def mean_snr_db(self) -> float:
        """Mean SNR at the reference distance, in dB."""
        return self._mean_snr_db

    @property
    def distance_m(self) -> float:
        """Transmitter-receiver distance."""
        return self._distance_m

    @property
    def path_loss_exponent(self) -> float:
        """Path-loss exponent α of the ``(d / d0) ** -α`` law."""
        return self._path_loss_exponent

    @property
    def ref_distance_m(self) -> float:
        """Reference distance d0 at which the mean SNR is ``mean_snr_db``."""
        return self._ref_distance_m

    @property
    def coding_rate(self) -> float:
        """Spectral efficiency R (bit/s/Hz) at which packets are coded."""
        return self._coding_rate

    @property
    def latency_s(self) -> float:
        """One-way latency added to every attempt, in seconds."""
        return self._latency_s

    @property
    def rate_bps(self) -> float:
        """Packet bit rate, ``bandwidth_hz * coding_rate``."""
        return self._rate_bps

    @property
    def mean_snr_at_distance_db(self) -> float:
        """Mean SNR at ``distance_m`` after path loss, in dB."""
        return self._mean_snr_db - self._path_loss_db

    @property
    def gain_threshold(self) -> float:
        """Power gain below which an attempt is in outage, ``(2^R - 1) / mean SNR at distance``."""
        return self._gain_threshold

    @property
    def outage_probability(self) -> float:
        """Closed-form probability that an attempt is lost."""
        raise NotImplementedError

    def with_distance(self, distance_m: float) -> Self:
        """A copy of this channel at another distance (all other parameters kept)."""
        kwargs = self._kwargs()
        kwargs["distance_m"] = distance_m
        return type(self)(**kwargs)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs().items())
        return f"{type(self).__name__}({args})"


class RayleighChannel(_BlockFadingChannel):
    """Block Rayleigh fading: power gain ``g ~ Exp(1)`` per attempt; one draw per attempt.

    Outage probability ``1 - exp(-(2^R - 1) / mean SNR at distance)``.

    >>> ch = RayleighChannel(bandwidth_hz=1e6, mean_snr_db=10.0, coding_rate=1.0)
    >>> round(ch.outage_probability, 4), ch.rate_bps
    (0.0952, 1000000.0)
    >>> ch.with_distance(2.0).mean_snr_at_distance_db  # 3.0 * 10 log10(2) dB less
    0.9691001300805642
    """

    @property
    def outage_probability(self) -> float:
        """``1 - exp(-gain_threshold)``."""
        return -math.expm1(-self._gain_threshold)

    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Draw the fading gain; lost iff the Shannon rate is below ``coding_rate``."""
        return (
            self._latency_s + bits / self._rate_bps,
            rng.standard_exponential() < self._gain_threshold,
        )


class RicianChannel(_BlockFadingChannel):
    """Block Rician fading with K factor ``k_factor`` (``0`` is Rayleigh); two draws per attempt.

    ``g = |h|^2`` with ``h = sqrt(K/(K+1)) + CN(0, 1/(K+1))`` (mean 1). Outage probability
    ``P(g < t) = F_ncx2(2 (K+1) t; df=2, nc=2K)``, i.e. ``1 - Q_1(sqrt(2K), sqrt(2(K+1)t))``.

    >>> ch = RicianChannel(bandwidth_hz=1e6, mean_snr_db=10.0, k_factor=5.0)
    >>> ch.outage_probability < RayleighChannel(1e6, 10.0).outage_probability
    True
    """

    def __init__(
        self,
        bandwidth_hz: float,
        mean_snr_db: float,
        *,
        k_factor: float,
        distance_m: float = 1.0,
        path_loss_exponent: float = 3.0,
        ref_distance_m: float = 1.0,
        coding_rate: float = 1.0,
        latency_s: float = 0.0,
    ) -> None:
        super().__init__(
            bandwidth_hz,
            mean_snr_db,
            distance_m=distance_m,
            path_loss_exponent=path_loss_exponent,
            ref_distance_m=ref_distance_m,
            coding_rate=coding_rate,
            latency_s=latency_s,
        )
        self._k_factor = check_real("k_factor", k_factor, ge=0)
        self._los = math.sqrt(self._k_factor / (self._k_factor + 1.0))
        self._scatter_std = math.sqrt(0.5 / (self._k_factor + 1.0))  # per real dimension

    def _kwargs(self) -> dict[str, Any]:
        return {**super()._kwargs(), "k_factor": self._k_factor}

    @property
    def k_factor(self) -> float:
        """Ratio of line-of-sight to scattered power."""
        return self._k_factor

    @property
    def outage_probability(self) -> float:
        """Non-central chi-square CDF (scipy); the exact Rayleigh form when ``k_factor == 0``."""
        if self._k_factor == 0.0:
            return -math.expm1(-self._gain_threshold)
        from scipy.stats import ncx2  # deferred: scipy.stats is slow to import

        k = self._k_factor
        return float(ncx2.cdf(2.0 * (k + 1.0) * self._gain_threshold, 2.0, 2.0 * k))

    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Draw the fading gain; lost iff the Shannon rate is below ``coding_rate``."""
        s = self._scatter_std
        re = self._los + s * rng.standard_normal()
        im = s * rng.standard_normal()
        return self._latency_s + bits / self._rate_bps, re * re + im * im < self._gain_threshold
