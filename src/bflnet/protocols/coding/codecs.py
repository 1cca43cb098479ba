"""Codecs for particle updates: raw floats, top-k sparsification (per-particle, shared and
group-shared), the stochastic quantiser, and their composition, with exact bit counts.

Bit accounting follows the compressed-DSVGD letter (section III, eqs. 9-13):

* Top-k positions cost ``ceil(log2 C(d, k))`` bits per sparsity pattern (Golomb position
  coding), computed exactly with integers as ``(math.comb(d, k) - 1).bit_length()``.
* With ``groups`` patterns over ``n_rows`` rows of ``d`` entries and ``value_bits`` per kept
  entry, a top-k message costs ``groups * position_bits(d, k) + n_rows * k * value_bits``
  (eq. 9 is ``groups = n_rows``, eq. 10 is ``groups = 1``, eq. 11 is ``groups = 1/sharing``).
* The stochastic quantiser spends ``n_bits`` per value (1 sign bit + ``n_bits - 1``
  magnitude bits) plus 32 bits for the float32 dynamic range ``a_max`` it sends along.

The letter calls the fraction of particles sharing a pattern "alpha"; here it is
``sharing_fraction`` (``groups = 1 / sharing_fraction``), since alpha is the temperature.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from bflnet.protocols.coding.codec_base import Codec, Encoded
from bflnet.protocols.coding.topk_select import top_k_sorted
from bflnet.validation.checks import check_int

__all__ = [
    "A_MAX_BITS",
    "CODEC_NAMES",
    "ComposedCodec",
    "QuantizedData",
    "RawCodec",
    "SparseData",
    "StochasticQuantizer",
    "TopKCodec",
    "largest_k_within_budget",
    "make_codec",
    "position_bits",
    "quantizer_bits",
    "topk_bits",
    "topk_quantized",
    "topk_quantized_bits",
]

A_MAX_BITS = 32
"""Bits of the quantiser's side information: ``a_max`` sent as one float32."""

_VALUE_DTYPES = {16: np.float16, 32: np.float32, 64: np.float64}


# --------------------------------------------------------------------------- validation


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _as_array(x: Any) -> np.ndarray:
    """A numpy view of ``x``; torch tensors are detached and moved to the CPU."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
    arr = np.asarray(x)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"x: must be a real-valued array, got dtype {arr.dtype}")
    return arr


def _out_dtype(arr: np.ndarray) -> np.dtype:
    return arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.dtype(np.float64)


def _index_dtype(d: int) -> np.dtype:
    return np.dtype(np.int32) if d < 2**31 else np.dtype(np.int64)


def _level_dtype(n_bits: int) -> np.dtype:
    for dt in (np.int8, np.int16, np.int32):
        if n_bits <= np.iinfo(dt).bits:
            return np.dtype(dt)
    return np.dtype(np.int64)


# --------------------------------------------------------------------------- bit counts


def _log2_comb(d: int, k: int) -> float:
    return (math.lgamma(d + 1.0) - math.lgamma(k + 1.0) - math.lgamma(d - k + 1.0)) / math.log(2)


def _log2_comb_error(d: int) -> float:
    """A bound on the rounding error of :func:`_log2_comb` (thousands of ulps of the
    largest term, far above lgamma's few)."""
    return 1e-12 * (1.0 + math.lgamma(d + 1.0))


@lru_cache(maxsize=4096)
def _position_bits_cached(d: int, k: int) -> int:
    if k in (0, d):
        return 0
    # ceil(log2 C(d, k)) from lgamma when no integer lies within its error, else exactly
    # (C(d, k) of a large model has millions of digits)
    x, eps = _log2_comb(d, k), _log2_comb_error(d)
    lo, hi = math.ceil(x - eps), math.ceil(x + eps)
    if lo == hi:
        return max(lo, 0)
    import mpmath  # 160-bit lgamma: decides all but integers within ~1e-30 of log2 C

    ctx = mpmath.mp.clone()
    ctx.prec = 160
    x_hp = (ctx.loggamma(d + 1) - ctx.loggamma(k + 1) - ctx.loggamma(d - k + 1)) / ctx.ln(2)
    eps_hp = ctx.mpf(2) ** -120 * (1 + abs(ctx.loggamma(d + 1)))
    lo, hi = int(ctx.ceil(x_hp - eps_hp)), int(ctx.ceil(x_hp + eps_hp))
    if lo == hi:
        return max(lo, 0)
    return (math.comb(d, k) - 1).bit_length()


def position_bits(d: int, k: int) -> int:
    """Bits to encode one top-k sparsity pattern: ``ceil(log2 C(d, k))``, exactly.

    0 when ``k == 0`` or ``k == d`` (only one pattern is possible).

    >>> position_bits(10, 1), position_bits(8, 4), position_bits(5, 5)
    (4, 7, 0)
    """
    d = check_int("d", d, ge=0)
    k = check_int("k", k, ge=0, le=d)
    return _position_bits_cached(d, k)


def _check_groups(groups: Any, n_rows: int) -> int:
    groups = check_int("groups", groups, ge=1)
    if n_rows % groups:
        raise ValueError(f"groups: must divide the number of rows {n_rows}, got {groups}")
    return groups


def topk_bits(d: int, k: int, n_rows: int = 1, groups: int = 1, value_bits: int = 32) -> int:
    """Bits of a top-k message (letter eqs. 9-11 with the ceiling of the position term).

    ``groups * position_bits(d, k) + n_rows * k * value_bits``: ``groups = n_rows`` is
    per-particle sparsification (eq. 9), ``groups = 1`` shared (eq. 10), otherwise
    group-shared with ``groups = 1 / sharing_fraction`` (eq. 11).
    """
    n_rows = check_int("n_rows", n_rows, ge=0)
    groups = _check_groups(groups, n_rows)
    value_bits = check_int("value_bits", value_bits, ge=1)
    return groups * position_bits(d, k) + n_rows * k * value_bits


def quantizer_bits(n_values: int, n_bits: int, a_max_bits: int = A_MAX_BITS) -> int:
    """Bits of a stochastically quantised message: ``n_values * n_bits + a_max_bits``.

    ``a_max_bits`` is 32 when the dynamic range is sent with the message, 0 when it is fixed.
    """
    n_values = check_int("n_values", n_values, ge=0)
    n_bits = check_int("n_bits", n_bits, ge=2)
    a_max_bits = check_int("a_max_bits", a_max_bits, ge=0)
    return n_values * n_bits + a_max_bits


def topk_quantized_bits(
    d: int, k: int, n_rows: int, groups: int, n_bits: int, a_max_bits: int = A_MAX_BITS
) -> int:
    """Bits of a top-k + quantised message: positions, ``n_bits`` per kept entry and one
    ``a_max`` for the whole message (``a_max_bits = 0`` for a fixed range)."""
    a_max_bits = check_int("a_max_bits", a_max_bits, ge=0)
    return topk_bits(d, k, n_rows, groups, n_bits) + a_max_bits


def largest_k_within_budget(
    budget_bits: int,
    d: int,
    n_rows: int,
    groups: int,
    n_bits: int,
    *,
    a_max_bits: int = A_MAX_BITS,
) -> int:
    """The largest ``k`` in ``[1, d]`` whose top-k + quantised message fits ``budget_bits``.

    The message size is :func:`topk_quantized_bits` (including the 32-bit ``a_max``):
    ``s(k) = per_k·k + groups·P(k) + a_max_bits`` with ``per_k = n_rows·n_bits`` and
    ``P(k) = ceil(log2 C(d, k))``. Found in O(log d) size evaluations, never an array of d
    entries:

    * for ``k <= d/2``, ``C(d, k)`` grows with k, so ``s`` is increasing: bisection;
    * above ``d/2``, with ``j = d − k``, ``s = per_k·d + a_max_bits + h(j)`` where
      ``h(j) = groups·P(j) − per_k·j`` lies within ``groups`` bits above the concave
      ``g(j) = groups·log2 C(d, j) − per_k·j`` (``g(0) = 0``). A ``j`` fits only where
      ``g(j) <= B = budget − per_k·d − a_max_bits``, and every ``j`` with ``g(j) <= B −
      groups`` fits; on the falling side of g those are two thresholds found by bisection,
      and the few ``j`` between them are checked one by one.

    Each size is bracketed with ``lgamma`` and settled with exact integer arithmetic only
    when the bracket straddles the budget. Raises ``ValueError`` if not even ``k = 1`` fits
    (then no ``k`` does).
    """
    budget_bits = check_int("budget_bits", budget_bits, ge=0)
    d = check_int("d", d, ge=1)
    n_rows = check_int("n_rows", n_rows, ge=1)
    groups = _check_groups(groups, n_rows)
    n_bits = check_int("n_bits", n_bits, ge=2)
    a_max_bits = check_int("a_max_bits", a_max_bits, ge=0)
    per_k = n_rows * n_bits
    eps = _log2_comb_error(d)

    def fits(k: int) -> bool:
        return per_k * k + a_max_bits + groups * _position_bits_cached(d, k) <= budget_bits

    def last_true(lo: int, hi: int, pred: Any) -> int:
        """The largest x in [lo, hi] with pred(x), for pred true then false; lo − 1 if none."""
        while lo <= hi:
            mid = (lo + hi) // 2
            if pred(mid):
                lo = mid + 1
            else:
                hi = mid - 1
        return hi

    if not fits(1):
        size1 = topk_quantized_bits(d, 1, n_rows, groups, n_bits, a_max_bits)
        raise ValueError(
            f"budget_bits: {budget_bits} is below the smallest message ({size1} bits for k=1)"
        )
    k_max = min(d, (budget_bits - a_max_bits) // per_k)  # s(k) >= per_k·k + a_max_bits
    if fits(k_max):
        return k_max
    half = d // 2
    best = last_true(1, min(k_max, half), fits)
    if k_max <= half:
        return best
    # Above d/2: j = d - k in [d - k_max, d - half - 1]; g falls after its peak j_peak.
    b_free = budget_bits - per_k * d - a_max_bits              # < 0: k = d does not fit

    def g(j: int) -> float:
        return groups * _log2_comb(d, j) - per_k * j

    j_low, j_high = d - k_max, d - half - 1
    ratio = per_k / groups
    j_peak = int(d / (1.0 + 2.0 ** ratio)) if ratio < 1000 else 0
    start = max(j_low, j_peak)
    # first j >= start with g(j) <= b_free (+ margins), and with g(j) <= b_free - groups
    first_maybe = last_true(start, j_high, lambda j: g(j) > b_free + eps * groups) + 1
    first_sure = last_true(start, j_high, lambda j: g(j) > b_free - groups - eps * groups) + 1
    for j in range(max(first_maybe, j_low), min(first_sure, j_high) + 1):
        if fits(d - j):
            return max(best, d - j)
    return best


# --------------------------------------------------------------------------- payloads


@dataclass(frozen=True, slots=True)
class SparseData:
    """A top-k payload: ``indices`` (groups, k), sorted, shared by the rows of a group, and
    ``values`` (groups, rows_per_group, k), a float array or :class:`QuantizedData`."""

    indices: np.ndarray
    values: Any


@dataclass(frozen=True, slots=True)
class QuantizedData:
    """A quantised payload: signed integer ``levels`` (sign * level, level in
    ``[0, 2**(n_bits-1) - 1]``) and the dynamic range ``a_max`` (the float32 that is sent,
    or the fixed range)."""

    levels: np.ndarray
    a_max: float


# --------------------------------------------------------------------------- codecs


@dataclass(frozen=True)
class RawCodec(Codec):
    """Uncompressed floats: ``bits = n_values * bits_per_value`` (32 or 64).

    With 32 bits the receiver gets the values cast through float32.

    >>> enc = RawCodec(32).encode(np.array([1.0, 2.0]), np.random.default_rng(0))
    >>> enc.bits, RawCodec(32).decode(enc).tolist()
    (64, [1.0, 2.0])
    """

    bits_per_value: int = 32
    draws: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not _is_int(self.bits_per_value) or self.bits_per_value not in (32, 64):
            raise ValueError(f"bits_per_value: must be 32 or 64, got {self.bits_per_value!r}")

    def bits_for(self, shape: tuple[int, ...]) -> int:
        """Exact size of the message for an array of ``shape``."""
        return math.prod(shape) * self.bits_per_value

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> Encoded:
        arr = _as_array(x)
        data = arr.astype(_VALUE_DTYPES[self.bits_per_value], copy=True)
        return Encoded(data, arr.size * self.bits_per_value, arr.shape, _out_dtype(arr))

    def decode(self, encoded: Encoded) -> np.ndarray:
        return np.asarray(encoded.data).astype(encoded.dtype).reshape(encoded.shape)


@dataclass(frozen=True)
class TopKCodec(Codec):
    """Top-k sparsification of the rows of an array (last axis = ``d`` entries).

    A 1-D vector is one row; a 2-D array is ``N_p`` rows (particles), higher dimensions are
    flattened to rows. The rows are split into ``groups`` contiguous groups of
    ``n_rows / groups`` rows (``groups`` must divide ``n_rows``); each group shares one
    sparsity pattern, the top-k of the column sums of ``|x|`` over its rows. ``groups =
    n_rows`` is per-particle, ``groups = 1`` shared sparsification. Give exactly one of
    ``k`` (entries kept per row) or ``ratio`` (``k = round(ratio * d)``, at least 1). Kept
    values are sent as ``value_bits`` floats (16, 32 or 64). Bits: :func:`topk_bits`.

    >>> x = np.array([[3.0, -1.0, 0.5], [0.0, 2.0, -4.0]])
    >>> codec = TopKCodec(k=1, groups=2)
    >>> enc = codec.encode(x, np.random.default_rng(0))
    >>> codec.decode(enc).tolist(), enc.bits  # 2 patterns of 2 bits + 2 floats
    ([[3.0, 0.0, 0.0], [0.0, 0.0, -4.0]], 68)
    """

    k: int | None = None
    ratio: float | None = None
    groups: int = 1
    value_bits: int = 32
    draws: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if (self.k is None) == (self.ratio is None):
            raise ValueError(
                f"k: give exactly one of k or ratio, got k={self.k!r}, ratio={self.ratio!r}"
            )
        if self.k is not None:
            check_int("k", self.k, ge=1)
        if self.ratio is not None and not (
            isinstance(self.ratio, numbers.Real)
            and not isinstance(self.ratio, bool)
            and 0.0 < self.ratio <= 1.0
        ):
            raise ValueError(f"ratio: must be a number in (0, 1], got {self.ratio!r}")
        check_int("groups", self.groups, ge=1)
        if not _is_int(self.value_bits) or self.value_bits not in _VALUE_DTYPES:
            raise ValueError(f"value_bits: must be one of 16, 32, 64, got {self.value_bits!r}")

    @classmethod
    def from_sharing_fraction(
        cls,
        sharing_fraction: float,
        n_particles: int,
        k: int | None = None,
        ratio: float | None = None,
        value_bits: int = 32,
    ) -> TopKCodec:
        """The letter's "alpha-shared" sparsification: ``groups = 1 / sharing_fraction``.

        ``sharing_fraction`` must lie in ``[1/n_particles, 1]`` with ``1/sharing_fraction`` an
        integer dividing ``n_particles`` (``1/n_particles`` is per-particle, 1 is shared).
        """
        n_particles = check_int("n_particles", n_particles, ge=1)
        groups = _groups_from_sharing_fraction(sharing_fraction, n_particles)
        return cls(k=k, ratio=ratio, groups=groups, value_bits=value_bits)

    def k_for(self, d: int) -> int:
        """Entries kept per row of length ``d``."""
        if self.k is not None:
            if self.k > d:
                raise ValueError(f"k: must be <= the row length d={d}, got {self.k}")
            return self.k
        return max(1, min(d, math.floor(self.ratio * d + 0.5)))

    def bits_for(self, shape: tuple[int, ...]) -> int:
        """Exact size of the message for an array of ``shape``."""
        d, n_rows = _rows_of(shape)
        return topk_bits(d, self.k_for(d), n_rows, self.groups, self.value_bits)

    def _select(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(array, rows grouped (G, m, d), indices (G, k), kept values (G, m, k))."""
        arr = _as_array(x)
        d, n_rows = _rows_of(arr.shape)
        k = self.k_for(d)
        groups = _check_groups(self.groups, n_rows)
        xg = arr.reshape(groups, n_rows // groups, d)
        if k == d:
            idx = np.broadcast_to(np.arange(d), (groups, d))
        else:
            # (G, d): column sums of |x| within each group (one row: |x| itself, which is
            # what the sum over a length-1 axis gives, without its copy of the row)
            scores = np.abs(xg[:, 0, :]) if xg.shape[1] == 1 else np.abs(xg).sum(axis=1)
            idx = top_k_sorted(scores, k)  # argpartition's set, faster on long rows
        idx = idx.astype(_index_dtype(d))
        values = np.take_along_axis(xg, idx[:, None, :], axis=2)
        return arr, xg, idx, values

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> Encoded:
        arr, xg, idx, values = self._select(x)
        g, m, d = xg.shape
        k = idx.shape[1]
        data = SparseData(idx, values.astype(_VALUE_DTYPES[self.value_bits]))
        bits = topk_bits(d, k, g * m, g, self.value_bits)
        return Encoded(data, bits, arr.shape, _out_dtype(arr))

    @staticmethod
    def _scatter(encoded: Encoded, values: np.ndarray) -> np.ndarray:
        idx = encoded.data.indices
        d, _ = _rows_of(encoded.shape)
        g, m, k = values.shape
        out = np.zeros((g, m, d), dtype=encoded.dtype)
        np.put_along_axis(out, np.broadcast_to(idx[:, None, :], (g, m, k)), values, axis=2)
        return out.reshape(encoded.shape)

    def decode(self, encoded: Encoded) -> np.ndarray:
        return self._scatter(encoded, np.asarray(encoded.data.values))


@dataclass(frozen=True)
class StochasticQuantizer(Codec):
    """Unbiased stochastic quantiser (letter eqs. 12-13) with ``n_bits`` bits per value.

    Each value costs 1 sign bit and ``n_bits - 1`` magnitude bits, i.e. ``2**(n_bits-1)``
    levels ``{0, δ, ..., (2**(n_bits-1) - 1) δ}`` with ``δ = a_max / (2**(n_bits-1) - 1)``.
    (The letter's ``δ = a_max / (2**n_bits - 1)`` would need ``n_bits`` magnitude bits; this
    is the consistent choice.) ``|x|`` is rounded to level ``t = floor(|x|/δ)`` or ``t + 1``,
    up with probability ``(|x| - tδ)/δ``, so ``E[Q(x)] = x`` whenever ``|x| <= a_max``.

    By default ``a_max`` is the largest ``|x|`` of the message, rounded up to a float32 and
    sent with it (32 extra bits): nothing is clipped and the quantiser is unbiased; an
    all-zero message decodes to zeros. A fixed ``a_max`` given here is known to both sides
    (no side information) but values beyond it are clipped, which biases them towards 0.
    Bits: :func:`quantizer_bits`.

    >>> q = StochasticQuantizer(n_bits=3)  # levels 0, 1/3, 2/3, 1 times a_max
    >>> enc = q.encode(np.array([-3.0, 1.0, 0.0]), np.random.default_rng(0))
    >>> enc.bits, q.decode(enc).tolist()[0]
    (41, -3.0)
    """

    n_bits: int
    a_max: float | None = None

    def __post_init__(self) -> None:
        check_int("n_bits", self.n_bits, ge=2, le=32)
        if self.a_max is not None and not (
            isinstance(self.a_max, numbers.Real)
            and not isinstance(self.a_max, bool)
            and math.isfinite(self.a_max)
            and self.a_max > 0
        ):
            raise ValueError(f"a_max: must be a finite number > 0 or None, got {self.a_max!r}")

    @property
    def n_levels(self) -> int:
        """Number of magnitude levels, ``2**(n_bits - 1)``."""
        return 2 ** (self.n_bits - 1)

    @property
    def side_bits(self) -> int:
        """Bits of side information per message: 32 for the sent ``a_max``, 0 if fixed."""
        return A_MAX_BITS if self.a_max is None else 0

    def step(self, a_max: float) -> float:
        """The step ``δ`` for dynamic range ``a_max``."""
        return float(a_max) / (self.n_levels - 1)

    def bits_for(self, shape: tuple[int, ...]) -> int:
        """Exact size of the message for an array of ``shape``."""
        return quantizer_bits(math.prod(shape), self.n_bits, self.side_bits)

    def _quantize(self, a: np.ndarray, rng: np.random.Generator) -> QuantizedData:
        """Quantise a float array ``a`` of any shape (all values share one ``a_max``)."""
        a = np.asarray(a, dtype=np.float64)
        mag = np.abs(a)
        if self.a_max is None:
            amax = float(mag.max()) if mag.size else 0.0
            if not math.isfinite(amax):
                raise ValueError("x: contains NaN or inf; cannot quantise")
            sent = np.float32(amax)
            if float(sent) < amax:  # round up so that nothing is clipped
                sent = np.nextafter(sent, np.float32(np.inf))
            if not np.isfinite(sent):
                raise ValueError(f"x: max |x| = {amax} exceeds the float32 range of a_max")
            amax = float(sent)
        else:
            amax = float(self.a_max)
            mag = np.minimum(mag, amax)
        top = self.n_levels - 1
        u = rng.random(mag.shape)  # one uniform per value, whatever the data
        if amax > 0:
            scaled = mag / self.step(amax)
            t = np.minimum(np.floor(scaled), top)
            level = np.minimum(t + (u < scaled - t), top)
        else:
            level = np.zeros(mag.shape)
        signed = (np.sign(a) * level).astype(_level_dtype(self.n_bits))
        return QuantizedData(signed, amax)

    def _dequantize(self, data: QuantizedData) -> np.ndarray:
        return data.levels * self.step(data.a_max)

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> Encoded:
        arr = _as_array(x)
        data = self._quantize(arr, rng)
        bits = quantizer_bits(arr.size, self.n_bits, self.side_bits)
        return Encoded(data, bits, arr.shape, _out_dtype(arr))

    def decode(self, encoded: Encoded) -> np.ndarray:
        return self._dequantize(encoded.data).astype(encoded.dtype).reshape(encoded.shape)


@dataclass(frozen=True)
class ComposedCodec(Codec):
    """Top-k sparsification followed by stochastic quantisation of the kept values.

    The kept values (at full precision; the sparsifier's ``value_bits`` is unused) are
    quantised together, with one ``a_max`` for the whole message. Bits:
    :func:`topk_quantized_bits` = positions + ``n_rows * k * n_bits`` + 32 (0 if the
    quantiser's ``a_max`` is fixed).

    >>> codec = topk_quantized(k=2, groups=1, n_bits=5)
    >>> enc = codec.encode(np.ones((4, 10)), np.random.default_rng(0))
    >>> enc.bits == position_bits(10, 2) + 4 * 2 * 5 + 32
    True
    """

    sparsifier: TopKCodec
    quantizer: StochasticQuantizer

    def __post_init__(self) -> None:
        if not isinstance(self.sparsifier, TopKCodec):
            raise ValueError(f"sparsifier: must be a TopKCodec, got {self.sparsifier!r}")
        if not isinstance(self.quantizer, StochasticQuantizer):
            raise ValueError(f"quantizer: must be a StochasticQuantizer, got {self.quantizer!r}")

    def bits_for(self, shape: tuple[int, ...]) -> int:
        """Exact size of the message for an array of ``shape``."""
        d, n_rows = _rows_of(shape)
        k = self.sparsifier.k_for(d)
        q = self.quantizer
        return topk_quantized_bits(d, k, n_rows, self.sparsifier.groups, q.n_bits, q.side_bits)

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> Encoded:
        arr, xg, idx, values = self.sparsifier._select(x)
        g, m, d = xg.shape
        q = self.quantizer
        data = SparseData(idx, q._quantize(values, rng))
        bits = topk_quantized_bits(d, idx.shape[1], g * m, g, q.n_bits, q.side_bits)
        return Encoded(data, bits, arr.shape, _out_dtype(arr))

    def decode(self, encoded: Encoded) -> np.ndarray:
        values = self.quantizer._dequantize(encoded.data.values)
        return TopKCodec._scatter(encoded, values)


def topk_quantized(
    k: int | None = None,
    ratio: float | None = None,
    groups: int = 1,
    n_bits: int = 5,
    a_max: float | None = None,
) -> ComposedCodec:
    """Top-k (``k`` or ``ratio``, ``groups`` patterns) then an ``n_bits`` stochastic
    quantiser; ``a_max=None`` sends the range with each message."""
    return ComposedCodec(
        TopKCodec(k=k, ratio=ratio, groups=groups), StochasticQuantizer(n_bits, a_max)
    )


# --------------------------------------------------------------------------- factory

_FACTORIES: dict[str, tuple[Any, tuple[str, ...]]] = {
    "raw32": (lambda: RawCodec(32), ()),
    "raw64": (lambda: RawCodec(64), ()),
    "topk": (TopKCodec, ("k", "ratio", "groups", "value_bits")),
    "quantize": (StochasticQuantizer, ("n_bits", "a_max")),
    "topk-quantize": (topk_quantized, ("k", "ratio", "groups", "n_bits", "a_max")),
}
CODEC_NAMES: tuple[str, ...] = tuple(_FACTORIES)
"""Names accepted by :func:`make_codec`."""


def make_codec(name: str, **params: Any) -> Codec:
    """Build a codec by name: "raw32", "raw64", "topk", "quantize" or "topk-quantize".

    >>> make_codec("topk-quantize", ratio=0.1, groups=2, n_bits=4)
    ComposedCodec(sparsifier=TopKCodec(k=None, ratio=0.1, groups=2, value_bits=32), \
quantizer=StochasticQuantizer(n_bits=4, a_max=None))
    """
    if name not in _FACTORIES:
        raise ValueError(f"name: must be one of {', '.join(CODEC_NAMES)}, got {name!r}")
    factory, allowed = _FACTORIES[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"params: codec {name!r} accepts {', '.join(allowed) or 'no parameters'}, "
            f"got {', '.join(unknown)}"
        )
    return factory(**params)


# --------------------------------------------------------------------------- helpers


def _rows_of(shape: tuple[int, ...]) -> tuple[int, int]:
    """(d, n_rows) for an array of ``shape``: the last axis is a row, the rest are rows."""
    d = shape[-1] if len(shape) else 1
    n_rows = math.prod(shape[:-1]) if len(shape) else 1
    return int(d), int(n_rows)


def _groups_from_sharing_fraction(sharing_fraction: Any, n_particles: int) -> int:
    msg = (
        f"sharing_fraction: must be 1/g for an integer g dividing n_particles={n_particles}, "
        f"got {sharing_fraction!r}"
    )
    if (
        not isinstance(sharing_fraction, numbers.Real)
        or isinstance(sharing_fraction, bool)
        or not (1.0 / n_particles - 1e-12 <= sharing_fraction <= 1.0)
    ):
        raise ValueError(msg)
    groups = round(1.0 / sharing_fraction)
    if abs(groups * sharing_fraction - 1.0) > 1e-9 or n_particles % groups:
        raise ValueError(msg)
    return groups
