"""The codec interface: payload encoding with an exact bit count."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True, slots=True)
class Encoded:
    """An encoded array: codec-specific ``data``, the exact ``bits`` it costs on the air,
    and the ``shape``/``dtype`` the receiver restores."""

    data: Any
    bits: int
    shape: tuple[int, ...]
    dtype: np.dtype = field(default=np.dtype(np.float64))


class Codec(ABC):
    """Encodes arrays for transmission; ``decode(encode(x))`` is what the receiver uses.

    >>> from bflnet.protocols.coding.codecs import RawCodec
    >>> enc = RawCodec(bits_per_value=32).encode(np.zeros(10), np.random.default_rng(0))
    >>> enc.bits
    320
    """

    #: Whether :meth:`encode` may draw from its ``rng`` (a protocol makes no stream for
    #: a codec that never does); assumed unless a codec says otherwise.
    draws: ClassVar[bool] = True

    @abstractmethod
    def encode(self, x: np.ndarray, rng: np.random.Generator) -> Encoded:
        """Encode ``x`` (any shape); stochastic codecs draw from ``rng`` only."""

    @abstractmethod
    def decode(self, encoded: Encoded) -> np.ndarray:
        """Restore an array of the original shape from ``encoded``."""
