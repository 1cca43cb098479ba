"""A MAC's random draws, the values of numpy's ``Generator`` calls, drawn in blocks.

A call such as ``rng.integers(16)`` or ``rng.geometric(0.1)`` costs 1-2 µs of argument
handling for a few nanoseconds of work, and a CSMA or ALOHA node makes one a packet.
:class:`BlockDraws` owns the node's stream and reproduces those calls from raw draws
taken in blocks, with numpy's own algorithms, so every value is the one the call would
have returned and the stream's order is kept:

* :meth:`BlockDraws.below` is ``rng.integers(n)`` for ``1 <= n < 2**32``: numpy's
  bounded integers take 32-bit halves of the 64-bit outputs (low half first) and use
  Lemire's multiply-and-reject (``buffered_bounded_lemire_uint32``);
* :meth:`BlockDraws.geometric` is ``rng.geometric(p)``: for ``p < 1/3`` numpy inverts a
  standard exponential, ``ceil(-E / log1p(-p))``, and ``standard_exponential(size=n)``
  gives the same exponentials as ``n`` single calls; for larger ``p`` it calls numpy.

One object uses one kind of draw (a stream read both ways is an error): the raw words
and the exponentials come from the same stream in different amounts.
"""

from __future__ import annotations

import math

import numpy as np

#: Raw 64-bit words (or exponentials) drawn at a time.
BLOCK = 64
_LOW = 0xFFFFFFFF


class BlockDraws:
    """The draws of one ``numpy.random.Generator`` (PCG64, fresh: no half word left over),
    in blocks (module docstring)."""

    __slots__ = ("_halves", "_kind", "_log", "_rng", "_vals")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._halves: list[int] = []  # 32-bit halves still to use, the next one last
        self._vals: list[float] = []  # exponentials still to use, the next one last
        self._kind: str | None = None
        self._log = (math.nan, math.nan)  # (p, log1p(-p)) of the last geometric draw

    def _claim(self, kind: str) -> None:
        if self._kind != kind:
            if self._kind is not None:
                raise RuntimeError(f"BlockDraws: this stream is already read as {self._kind}")
            self._kind = kind

    def _half(self) -> int:
        halves = self._halves
        if not halves:
            self._claim("words")
            raw = self._rng.bit_generator.random_raw(BLOCK).tolist()
            for word in reversed(raw):  # popped from the end: low half first
                halves.append(word >> 32)
                halves.append(word & _LOW)
        return halves.pop()

    def below(self, n: int) -> int:
        """``rng.integers(n)`` (``1 <= n < 2**32``)."""
        if n == 1:  # numpy draws nothing
            return 0
        halves = self._halves  # _half(), its common case inlined (a CSMA node's every packet)
        m = (halves.pop() if halves else self._half()) * n
        leftover = m & _LOW
        if leftover < n:
            threshold = ((1 << 32) - n) % n
            while leftover < threshold:
                m = self._half() * n
                leftover = m & _LOW
        return m >> 32

    def geometric(self, p: float) -> int:
        """``rng.geometric(p)`` (``0 < p <= 1``)."""
        if p >= 1.0 / 3.0:  # numpy's search method: one call (rare: a large p)
            self._claim("numpy")
            return int(self._rng.geometric(p))
        vals = self._vals
        if not vals:
            self._claim("exponentials")
            vals.extend(reversed(self._rng.standard_exponential(BLOCK).tolist()))
        last, log = self._log
        if p != last:  # numpy's log1p(-p), kept for the next draw with this p
            log = math.log1p(-p)
            self._log = (p, log)
        z = math.ceil(-vals.pop() / log)
        return z if z < 9.223372036854776e18 else 2**63 - 1
