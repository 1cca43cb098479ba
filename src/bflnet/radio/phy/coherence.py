"""Fading correlated in time: the channel of a pair of nodes keeps its fade for about a
coherence time ``Tc`` (``RadioSpec.coherence_time_s``), so a retry soon after a loss
meets the same deep fade.

Each unordered pair of nodes ``{a, b}`` has one complex small-scale gain ``h``: the
channel is reciprocal (the same carrier both ways, as in 802.11's time-division duplex),
so ``a``'s packet to ``b`` and ``b``'s ACK to ``a`` see the same fade, as they see the
same shadowing (:mod:`bflnet.radio.pathloss`). A packet's power gain is ``|h|^2`` at its
start, times the mean power of path loss and shadowing; ``h`` is held over the packet.
With ``rician`` fading ``h = sqrt(K / (K + 1)) + s`` with ``K`` the K factor: the line of
sight stays, the scattered part ``s`` (complex normal of power ``1 / (K + 1)``) evolves;
with ``rayleigh`` ``h = s`` of power 1. Either way ``|h|^2`` has mean 1 and the marginal
law of the memoryless fading (exponential for Rayleigh), whatever ``Tc``.

Two laws of evolution (``RadioSpec.fading_model``):

* ``block`` (the default): block fading (Biglieri, Proakis and Shamai, "Fading channels:
  information-theoretic and communications aspects", IEEE Trans. Inf. Theory 44(6),
  1998): time is cut into blocks ``[m Tc, (m + 1) Tc)`` aligned on multiples of ``Tc``;
  a pair's gain is constant within a block and independent from block to block. The
  blocks are on a common grid (not restarted at each use), so a pair's channel is a
  function of time alone, not of how often it is used. Only the pairs whose block has
  passed are drawn again: the cheaper law.
* ``gauss-markov``: a first-order Gauss-Markov (complex Ornstein-Uhlenbeck)
  process, ``s' = rho s + sqrt(1 - rho^2) w`` with ``w`` a fresh complex normal of the
  same power and ``rho = exp(-dt / Tc)`` over the time ``dt`` since the pair was last
  updated (Baddour and Beaulieu, "Autoregressive modeling for fading channel
  simulation", IEEE Trans. Wireless Commun. 4(4), 2005, first-order case). The field
  correlation at lag ``dt`` is ``exp(-dt / Tc)`` and that of the power gain under
  Rayleigh fading ``exp(-2 dt / Tc)``. Clarke's isotropic-scattering correlation
  ``J0(2 pi f_d dt)`` (Jakes, "Microwave Mobile Communications", 1974) is not Markov:
  ``J0(x) J0(y) != J0(x + y)``, so a pair updated only when it is used (at irregular
  times) could not follow it; the exponential is the correlation whose updates compose
  exactly, whatever the times in between. ``Tc`` is its 1/e time. Every pair a
  transmission touches draws an innovation: it costs more than ``block``.

State is kept per pair, created when the pair is first used (drawn from the stationary
law: ``rho = 0``), and advanced lazily when the pair is next used: a transmission
advances the pairs of its sender and every node in its interference range (their power
is both signal and interference) in one vectorised step, over arrays aligned with the
sender's neighbours. The draws come from the medium's stream ``radio.fading`` in blocks,
one complex normal per pair a transmission touches (``block``: per pair whose block has
passed), in the order of the transmissions: the same seed gives the same channel.
``coherence_time_s`` ``None`` or ``0`` (a fresh draw per transmission, the limit
``Tc -> 0``) does not build this model: the medium keeps its memoryless draws, row for
row.

>>> import numpy as np
>>> fading = CoherentFading(3, 1e-3, "block", lambda: np.random.default_rng(1))
>>> near = np.array([1, 2])
>>> first = fading.gains(0, near, 0.0002)
>>> bool((fading.gains(0, near, 0.0009) == first).all())  # the same block
True
>>> bool(fading.gain(1, 0, 0.0005) == first[0])  # reciprocal: {1, 0} is {0, 1}
True
>>> bool((fading.gains(0, near, 0.0011) != first).all())  # the next block
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: How the fade of a pair evolves in time (module docstring).
FADING_MODELS = ("block", "gauss-markov")
#: Normals drawn at a time.
NORMAL_BLOCK = 1 << 15


def correlation(model: str, coherence_time_s: float, dt_s: float, t_s: float = 0.0) -> float:
    """The correlation of a pair's scattered gain at ``t_s`` and ``t_s + dt_s``:
    ``exp(-dt / Tc)`` (``gauss-markov``), or 1 within a block and 0 across (``block``).

    >>> round(correlation("gauss-markov", 2.0, 1.0), 6), correlation("block", 1.0, 0.5, 0.6)
    (0.606531, 0.0)
    """
    if model == "block":
        same = math.floor(t_s / coherence_time_s) == math.floor((t_s + dt_s) / coherence_time_s)
        return 1.0 if same else 0.0
    return math.exp(-dt_s / coherence_time_s)


def coherent_fading(radio: Any, nodes: int, stream: Callable[[], np.random.Generator]
                    ) -> CoherentFading | None:
    """The correlated fading of ``radio`` (a :class:`~bflnet.radio.spec.RadioSpec`) over
    ``nodes`` nodes, or ``None`` when each transmission draws afresh (no coherence time,
    or ``0``, or no fading)."""
    if not radio.coherence_time_s or radio.fading == "none":
        return None
    return CoherentFading(nodes, radio.coherence_time_s, radio.fading_model, stream,
                          rician_k=radio.rician_k if radio.fading == "rician" else None)


class CoherentFading:
    """The small-scale fading of every pair of ``nodes`` nodes, correlated over
    ``coherence_time_s`` under ``model`` (module docstring); ``rician_k`` ``None``:
    Rayleigh fading. ``stream()`` makes the generator of the draws (``radio.fading``),
    called once, at the first draw."""

    def __init__(self, nodes: int, coherence_time_s: float, model: str,
                 stream: Callable[[], np.random.Generator], *,
                 rician_k: float | None = None) -> None:
        if model not in FADING_MODELS:
            raise ValueError(f"fading_model: must be one of {', '.join(FADING_MODELS)}, got "
                             f"{model!r}")
        if not (math.isfinite(coherence_time_s) and coherence_time_s > 0):
            raise ValueError(f"coherence_time_s: must be a finite number > 0, got "
                             f"{coherence_time_s!r}")
        self.nodes, self.coherence_time_s, self.model = nodes, coherence_time_s, model
        self._block = model == "block"
        k = 0.0 if rician_k is None else float(rician_k)
        self._los = math.sqrt(k / (k + 1.0))
        #: Standard deviation of each of the scattered part's two components.
        self._scale = math.sqrt(0.5 / (k + 1.0))
        self._stream = stream
        self._rng: np.random.Generator | None = None
        self._buf, self._pos = np.empty(0), 0
        #: ``{lo * nodes + hi: slot}`` of every pair used so far.
        self._table: dict[int, int] = {}
        #: Per slot: the scattered gain (complex) and when it was last advanced, in units
        #: of ``Tc`` (``block``: the block it was drawn in; never: ``-inf``).
        self._h = np.empty(0, dtype=np.complex128)
        self._tau = np.empty(0)
        #: Per sender: (the neighbour array its slots were made for, their slots).
        self._slots: list[tuple[np.ndarray, np.ndarray] | None] = [None] * nodes

    # ------------------------------------------------------------------ power gains
    def gains(self, sender: int, near: np.ndarray, now: float) -> np.ndarray:
        """The power gains (mean 1) at ``now`` of the pairs ``{sender, b}``, ``b`` in
        ``near`` (distinct nodes other than ``sender``), advancing them to ``now``.
        ``near`` is best the same array object on every call of a sender (the pairs'
        slots are kept per sender until it changes)."""
        cached = self._slots[sender]
        if cached is None or cached[0] is not near:
            cached = self._slots[sender] = (near, self._pair_slots(sender, near.tolist()))
        return self._advance(cached[1], now)

    def gain(self, a: int, b: int, now: float) -> float:
        """The power gain of the pair ``{a, b}`` at ``now`` (advanced to it)."""
        return float(self._advance(self._pair_slots(a, [b]), now)[0])

    # ------------------------------------------------------------------ state
    def _pair_slots(self, a: int, others: list[int]) -> np.ndarray:
        """The slots of the pairs ``{a, b}``, ``b`` in ``others``; new pairs get new slots
        (never advanced: drawn from the stationary law when first used)."""
        k, table = self.nodes, self._table
        slots = [table.setdefault(a * k + b if a < b else b * k + a, len(table))
                 for b in others]
        need, size = len(table), self._tau.size
        if need > size:
            grow = max(need, 2 * size, 64) - size
            self._h = np.concatenate([self._h, np.zeros(grow, dtype=np.complex128)])
            self._tau = np.concatenate([self._tau, np.full(grow, -math.inf)])
        return np.asarray(slots, dtype=np.intp)

    def _normals(self, n: int) -> np.ndarray:
        """``n`` complex normals of the scattered part's power from the stream (two
        standard normals each, real part first), drawn in blocks of :data:`NORMAL_BLOCK`
        (a view: read it, do not keep it)."""
        buf, pos = self._buf, self._pos
        if pos + n > buf.size:
            rng = self._rng
            if rng is None:
                rng = self._rng = self._stream()
            size = max(NORMAL_BLOCK, n)
            buf = self._buf = (rng.standard_normal(2 * size) * self._scale).view(np.complex128)
            pos = 0
        self._pos = pos + n
        return buf[pos:pos + n]

    def _advance(self, slots: np.ndarray, now: float) -> np.ndarray:
        """Advance the pairs in ``slots`` (distinct) to ``now``; their power gains."""
        h_all, tau_all = self._h, self._tau
        now_tau = now / self.coherence_time_s
        if self._block:  # pairs drawn in an earlier block are drawn again
            block = math.floor(now_tau)
            stale = slots[tau_all[slots] != block]
            if stale.size:
                h_all[stale] = self._normals(stale.size)
                tau_all[stale] = block
            h = h_all[slots]
        else:
            x = tau_all[slots]
            x -= now_tau
            np.exp(x, out=x)  # rho = exp(-dt / Tc); 0 for a pair never used
            h = h_all[slots] * x + self._normals(slots.size) * np.sqrt(1.0 - x * x)
            h_all[slots] = h
            tau_all[slots] = now_tau
        if self._los:
            h += self._los
        power = np.abs(h)
        power *= power
        return power
