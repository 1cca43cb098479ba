"""The ideal channel: instantaneous and lossless."""

from __future__ import annotations

import numpy as np

from bflnet.channels.base import Channel

_RESULT = (0.0, False)


class IdealChannel(Channel):
    """Zero duration, never lost; draws no random numbers.

    >>> IdealChannel().attempt(10_000, 0.0, np.random.default_rng(0))
    (0.0, False)
    """

    @property
    def draws(self) -> bool:
        """Never: no loss, no randomness."""
        return False

    @property
    def fixed_attempts(self) -> bool:
        """Always (not for a subclass with its own :meth:`attempt`)."""
        return type(self).attempt is IdealChannel.attempt

    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Every attempt takes no time and arrives."""
        return _RESULT

    def __repr__(self) -> str:
        return "IdealChannel()"
