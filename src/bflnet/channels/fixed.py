"""Fixed rate, fixed latency and i.i.d. packet loss."""

from __future__ import annotations

import numpy as np

from bflnet.channels.base import Channel
from bflnet.validation.checks import check_real


class FixedRateChannel(Channel):
    """Constant rate and latency; each attempt is lost independently with ``loss_prob``.

    ``duration = latency_s + bits / rate_bps``. With ``loss_prob == 0`` no random numbers
    are drawn.

    >>> ch = FixedRateChannel(rate_bps=1e6, latency_s=0.005, loss_prob=0.1)
    >>> ch.attempt(2000, 0.0, np.random.default_rng(1))[0]
    0.007
    """

    def __init__(self, rate_bps: float, latency_s: float = 0.0, loss_prob: float = 0.0) -> None:
        self._rate_bps = check_real("rate_bps", rate_bps, gt=0)
        self._latency_s = check_real("latency_s", latency_s, ge=0)
        self._loss_prob = check_real("loss_prob", loss_prob, ge=0, lt=1)

    @property
    def rate_bps(self) -> float:
        """Transmission rate in bit/s."""
        return self._rate_bps

    @property
    def latency_s(self) -> float:
        """One-way latency added to every attempt, in seconds."""
        return self._latency_s

    @property
    def loss_prob(self) -> float:
        """Probability that an attempt is lost."""
        return self._loss_prob

    @property
    def draws(self) -> bool:
        """Only a lossy link draws (one uniform per attempt)."""
        return self._loss_prob > 0.0

    @property
    def fixed_attempts(self) -> bool:
        """A lossless link: every attempt of ``bits`` takes ``latency_s + bits / rate_bps``
        and arrives (not for a subclass with its own :meth:`attempt`)."""
        return self._loss_prob == 0.0 and type(self).attempt is FixedRateChannel.attempt

    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Airtime plus latency; lost with probability ``loss_prob`` (``start_s`` unused)."""
        p = self._loss_prob
        return self._latency_s + bits / self._rate_bps, (p > 0.0 and rng.random() < p)

    def __repr__(self) -> str:
        return (
            f"FixedRateChannel(rate_bps={self._rate_bps!r}, latency_s={self._latency_s!r}, "
            f"loss_prob={self._loss_prob!r})"
        )
