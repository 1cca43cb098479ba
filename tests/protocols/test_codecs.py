"""Codecs: exact bit counts against the letter's formulas, top-k selection, and the
stochastic quantiser's grid and unbiasedness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bflnet.protocols.coding.codec_base import Encoded
from bflnet.protocols.coding.codecs import (
    CODEC_NAMES,
    ComposedCodec,
    RawCodec,
    StochasticQuantizer,
    TopKCodec,
    largest_k_within_budget,
    make_codec,
    position_bits,
    quantizer_bits,
    topk_bits,
    topk_quantized,
    topk_quantized_bits,
)

FAST = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------------ independent formulas


def ceil_log2_comb(d: int, k: int) -> int:
    """ceil(log2 C(d, k)) by a route other than the library's ``(C - 1).bit_length()``."""
    c = math.comb(d, k)
    is_power_of_two = c & (c - 1) == 0
    return c.bit_length() - (1 if is_power_of_two else 0)


def eq9(d: int, k: int, n_particles: int, n_b: int) -> int:
    """Per-particle sparsification: N_p * (log2 C(d, k) + N_b * k)."""
    return n_particles * (ceil_log2_comb(d, k) + n_b * k)


def eq10(d: int, k: int, n_particles: int, n_b: int) -> int:
    """Shared sparsification: log2 C(d, k) + N_p * N_b * k."""
    return ceil_log2_comb(d, k) + n_particles * n_b * k


def eq11(d: int, k: int, n_particles: int, n_b: int, sharing_fraction: float) -> int:
    """alpha-shared sparsification: (1/alpha) log2 C(d, k) + N_p * N_b * k."""
    return round(1 / sharing_fraction) * ceil_log2_comb(d, k) + n_particles * n_b * k


@st.composite
def shapes(draw, max_d: int = 200, max_rows: int = 12):
    """(d, k, n_rows, groups) with groups dividing n_rows."""
    d = draw(st.integers(1, max_d))
    k = draw(st.integers(1, d))
    n_rows = draw(st.integers(1, max_rows))
    groups = draw(st.sampled_from([g for g in range(1, n_rows + 1) if n_rows % g == 0]))
    return d, k, n_rows, groups


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ bit counts


@pytest.mark.parametrize(
    ("d", "k", "expected"),
    [(10, 0, 0), (10, 10, 0), (10, 1, 4), (16, 1, 4), (17, 1, 5), (8, 4, 7), (4, 2, 3), (2, 1, 1)],
)
def test_position_bits_table(d, k, expected):
    assert position_bits(d, k) == expected


@FAST
@given(st.integers(1, 3000), st.data())
def test_position_bits_is_ceil_log2_comb(d, data):
    k = data.draw(st.integers(0, d))
    assert position_bits(d, k) == ceil_log2_comb(d, k)
    if d <= 60:  # small enough for exact float log2
        assert position_bits(d, k) == math.ceil(math.log2(math.comb(d, k)))


@FAST
@given(shapes())
def test_topk_bits_match_eq11_for_every_grouping(shape):
    d, k, n_rows, groups = shape
    x = rng().standard_normal((n_rows, d))
    enc = TopKCodec(k=k, groups=groups).encode(x, rng())
    expected = eq11(d, k, n_rows, 32, sharing_fraction=1 / groups)
    assert enc.bits == expected == topk_bits(d, k, n_rows, groups, 32)
    assert TopKCodec(k=k, groups=groups).bits_for(x.shape) == expected


@FAST
@given(shapes(), st.integers(2, 8))
def test_composed_bits_match_eq11_plus_a_max(shape, n_b):
    d, k, n_rows, groups = shape
    x = rng().standard_normal((n_rows, d))
    codec = topk_quantized(k=k, groups=groups, n_bits=n_b)
    enc = codec.encode(x, rng())
    expected = eq11(d, k, n_rows, n_b, sharing_fraction=1 / groups) + 32
    assert enc.bits == expected == topk_quantized_bits(d, k, n_rows, groups, n_b)
    assert codec.bits_for(x.shape) == expected


@FAST
@given(st.integers(1, 100), st.integers(1, 10), st.integers(2, 8))
def test_per_particle_is_eq9_and_shared_is_eq10(d, n_p, n_b):
    k = max(1, d // 7)
    x = rng().standard_normal((n_p, d))
    per_particle = topk_quantized(k=k, groups=n_p, n_bits=n_b).encode(x, rng())
    shared = topk_quantized(k=k, groups=1, n_bits=n_b).encode(x, rng())
    assert per_particle.bits == eq9(d, k, n_p, n_b) + 32
    assert shared.bits == eq10(d, k, n_p, n_b) + 32
    assert TopKCodec(k=k, groups=n_p).encode(x, rng()).bits == eq9(d, k, n_p, 32)
    assert TopKCodec(k=k, groups=1).encode(x, rng()).bits == eq10(d, k, n_p, 32)


def test_letter_figure3_setting():
    """N_p = 10, d = 1000, N_b = 5, k = 10: the three sparsifiers of Fig. 3."""
    d, k, n_p, n_b = 1000, 10, 10, 5
    pos = ceil_log2_comb(d, k)
    assert topk_quantized_bits(d, k, n_p, 10, n_b) == 10 * pos + 500 + 32
    assert topk_quantized_bits(d, k, n_p, 1, n_b) == pos + 500 + 32
    assert topk_quantized_bits(d, k, n_p, 2, n_b) == 2 * pos + 500 + 32


@FAST
@given(st.lists(st.integers(0, 7), min_size=0, max_size=4), st.integers(2, 16))
def test_quantizer_bits(shape, n_b):
    x = rng().standard_normal(tuple(shape))
    n = math.prod(shape)
    assert StochasticQuantizer(n_b).encode(x, rng()).bits == n * n_b + 32
    assert StochasticQuantizer(n_b, a_max=1.0).encode(x, rng()).bits == n * n_b
    assert quantizer_bits(n, n_b) == n * n_b + 32


@pytest.mark.parametrize("bits_per_value", [32, 64])
def test_raw_bits_and_exact_values(bits_per_value):
    x = rng().standard_normal((3, 5, 7))
    codec = RawCodec(bits_per_value)
    enc = codec.encode(x, rng())
    assert enc.bits == 105 * bits_per_value == codec.bits_for(x.shape)
    out = codec.decode(enc)
    assert out.shape == x.shape and out.dtype == x.dtype
    expected = x if bits_per_value == 64 else x.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(out, expected)


def test_raw32_keeps_float32_input_exact():
    x = rng().standard_normal(9).astype(np.float32)
    out = RawCodec(32).decode(RawCodec(32).encode(x, rng()))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x)


# ------------------------------------------------------------------ budget helper


@FAST
@given(shapes(max_d=120, max_rows=6), st.integers(2, 8), st.integers(0, 6000))
def test_budget_helper_is_the_largest_fitting_k(shape, n_b, budget):
    d, _, n_rows, groups = shape

    def size(k):
        return groups * ceil_log2_comb(d, k) + n_rows * n_b * k + 32

    fitting = [k for k in range(1, d + 1) if size(k) <= budget]
    if not fitting:
        with pytest.raises(ValueError, match="budget_bits"):
            largest_k_within_budget(budget, d, n_rows, groups, n_b)
        return
    k = largest_k_within_budget(budget, d, n_rows, groups, n_b)
    assert k == max(fitting)
    assert size(k) <= budget
    assert k == d or size(k + 1) > budget
    codec = topk_quantized(k=k, groups=groups, n_bits=n_b)
    assert codec.encode(rng().standard_normal((n_rows, d)), rng()).bits <= budget


def test_budget_helper_handles_the_non_monotone_tail():
    """Above d/2, C(d, k) shrinks: with N_b = 2, k = d fits a budget k = d - 1 exceeds, so a
    bisection on "fits" would be wrong."""
    d = 1024
    size = [topk_quantized_bits(d, k, 1, 1, 2) for k in (d - 2, d - 1, d)]
    assert size[0] > size[1] > size[2]
    assert largest_k_within_budget(size[2], d, 1, 1, 2) == d
    assert largest_k_within_budget(size[2] - 1, d, 1, 1, 2) < d - 2


def test_budget_helper_large_d_is_fast_and_exact():
    d, n_p, n_b = 79_510, 10, 5
    k = largest_k_within_budget(d, d, n_p, 2, n_b)  # R_u = d bits, alpha = 1/2
    assert topk_quantized_bits(d, k, n_p, 2, n_b) <= d < topk_quantized_bits(d, k + 1, n_p, 2, n_b)


def test_budget_helper_never_builds_a_model_sized_array():
    """O(log d) sizes: a model of 10^12 parameters takes kilobytes, and the k found is the
    boundary (sizes increase below d/2)."""
    import tracemalloc

    tracemalloc.start()
    try:
        for d in (10**9, 10**12):
            for multiple in (0.5, 1, 10):
                k = largest_k_within_budget(int(multiple * d), d, 10, 2, 5)
                assert k < d // 2
                assert (topk_quantized_bits(d, k, 10, 2, 5) <= multiple * d
                        < topk_quantized_bits(d, k + 1, 10, 2, 5))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_position_bits_high_precision_fallback_is_exact(monkeypatch):
    """Where lgamma cannot decide ceil(log2 C(d, k)), 160-bit arithmetic does; forced here
    with a huge error bound, it still gives the exact integer count."""
    from bflnet.protocols.coding import codecs

    monkeypatch.setattr(codecs, "_log2_comb_error", lambda d: 50.0)
    codecs._position_bits_cached.cache_clear()
    try:
        gen = np.random.default_rng(0)
        for _ in range(200):
            d = int(gen.integers(1, 5000))
            k = int(gen.integers(0, d + 1))
            assert codecs.position_bits(d, k) == ceil_log2_comb(d, k)
    finally:
        codecs._position_bits_cached.cache_clear()


def test_budget_helper_rejects_budget_below_k1():
    with pytest.raises(ValueError, match="budget_bits"):
        largest_k_within_budget(40, 100, 1, 1, 5)


# ------------------------------------------------------------------ top-k selection


@FAST
@given(shapes(max_d=80, max_rows=8))
def test_topk_keeps_true_largest_per_row(shape):
    d, k, n_rows, _ = shape
    x = rng(d * 100 + n_rows).permutation(n_rows * d).reshape(n_rows, d) - n_rows * d / 2.0
    x = x + 0.25  # distinct magnitudes
    out = TopKCodec(k=k, groups=n_rows).decode(TopKCodec(k=k, groups=n_rows).encode(x, rng()))
    for row, got in zip(x, out, strict=True):
        top = set(np.argsort(-np.abs(row))[:k])
        assert set(np.flatnonzero(got)) == top
        np.testing.assert_array_equal(got[list(top)], row[list(top)].astype(np.float32))


@FAST
@given(shapes(max_d=80, max_rows=8))
def test_group_pattern_is_topk_of_column_sums(shape):
    d, k, n_rows, groups = shape
    x = rng(k).standard_normal((n_rows, d))
    enc = TopKCodec(k=k, groups=groups).encode(x, rng())
    m = n_rows // groups
    assert enc.data.indices.shape == (groups, k)
    for g in range(groups):
        sums = np.abs(x[g * m : (g + 1) * m]).sum(axis=0)
        np.testing.assert_array_equal(enc.data.indices[g], np.sort(np.argsort(-sums)[:k]))
    out = TopKCodec(k=k, groups=groups).decode(enc)
    for g in range(groups):
        block = out[g * m : (g + 1) * m]
        mask = np.zeros(d, bool)
        mask[enc.data.indices[g]] = True
        assert not block[:, ~mask].any()
        np.testing.assert_array_equal(
            block[:, mask], x[g * m : (g + 1) * m, mask].astype(np.float32)
        )


def test_shared_pattern_is_topk_of_column_sums_of_abs():
    x = np.array([[5.0, 0.0, 1.0, -2.0], [-5.0, 3.0, 1.0, 2.0], [0.0, 2.0, -1.0, 1.0]])
    enc = TopKCodec(k=2, groups=1).encode(x, rng())  # column sums of |x|: 10, 5, 3, 5 -> tie
    sums = np.abs(x).sum(axis=0)
    assert enc.data.indices[0, 0] == 0 and sums[enc.data.indices[0, 1]] == 5.0
    enc = TopKCodec(k=3, groups=1).encode(x, rng())
    assert enc.data.indices.tolist() == [[0, 1, 3]]


def test_ratio_resolves_k():
    assert TopKCodec(ratio=0.1).k_for(1000) == 100
    assert TopKCodec(ratio=0.001).k_for(10) == 1
    assert TopKCodec(ratio=1.0).k_for(7) == 7


@pytest.mark.parametrize("shape", [(12,), (4, 12), (2, 3, 12), ()])
@pytest.mark.parametrize(
    "codec",
    [
        RawCodec(32),
        RawCodec(64),
        TopKCodec(ratio=0.5),
        StochasticQuantizer(4),
        topk_quantized(ratio=0.25, n_bits=3),
    ],
    ids=repr,
)
def test_decode_restores_shape_and_dtype(codec, shape):
    x = rng().standard_normal(shape)
    out = codec.decode(codec.encode(x, rng()))
    assert out.shape == x.shape and out.dtype == x.dtype
    assert codec.encode(x, rng()).bits == codec.bits_for(shape)


def test_groups_must_divide_rows():
    with pytest.raises(ValueError, match=r"^groups: must divide"):
        TopKCodec(k=1, groups=3).encode(np.ones((4, 5)), rng())


def test_k_larger_than_d_is_an_error():
    with pytest.raises(ValueError, match=r"^k: must be <="):
        TopKCodec(k=6).encode(np.ones(5), rng())


# ------------------------------------------------------------------ quantiser


def grid_levels(values: np.ndarray, delta: float) -> np.ndarray:
    levels = values / delta
    np.testing.assert_allclose(levels, np.round(levels), rtol=0, atol=1e-9)
    return np.round(levels)


@FAST
@given(st.integers(2, 10), st.integers(1, 200), st.floats(1e-6, 1e6))
def test_quantiser_decodes_on_grid_within_one_step(n_b, n, scale):
    x = rng(n).standard_normal(n) * scale
    q = StochasticQuantizer(n_b)
    enc = q.encode(x, rng(n_b))
    a_max = enc.data.a_max
    assert a_max >= np.abs(x).max() and a_max == float(np.float32(a_max))
    delta = a_max / (2 ** (n_b - 1) - 1)
    out = q.decode(enc)
    levels = grid_levels(out, delta)
    assert np.all(np.abs(levels) <= 2 ** (n_b - 1) - 1)
    assert np.all(np.abs(out - x) <= delta * (1 + 1e-12))
    assert np.all((np.sign(out) == np.sign(x)) | (out == 0))


@FAST
@given(shapes(max_d=60, max_rows=6), st.integers(2, 8))
def test_composed_kept_entries_on_grid_within_one_step(shape, n_b):
    d, k, n_rows, groups = shape
    x = rng(d).standard_normal((n_rows, d))
    codec = topk_quantized(k=k, groups=groups, n_bits=n_b)
    enc = codec.encode(x, rng(k))
    out = codec.decode(enc)
    dense = TopKCodec(k=k, groups=groups).decode(TopKCodec(k=k, groups=groups).encode(x, rng()))
    kept = dense != 0
    assert not out[~kept].any()
    a_max = enc.data.values.a_max
    assert a_max >= np.abs(x[kept]).max()
    delta = a_max / (2 ** (n_b - 1) - 1)
    grid_levels(out, delta)
    assert np.all(np.abs(out[kept] - x[kept]) <= delta * (1 + 1e-12))


@pytest.mark.parametrize("n_b", [2, 3, 5])
def test_quantiser_is_unbiased(n_b):
    """Mean of many independent quantisations is x within a few standard errors."""
    x = np.linspace(-1.0, 1.0, 41) ** 3  # many off-grid values, max |x| = 1
    reps = 4000
    q = StochasticQuantizer(n_b)
    # One message of reps * 41 values: a_max stays max |x| = 1, draws are independent.
    out = q.decode(q.encode(np.tile(x, (reps, 1)), rng(n_b))).reshape(reps, x.size)
    delta = 1.0 / (2 ** (n_b - 1) - 1)
    frac = np.abs(x) / delta - np.floor(np.abs(x) / delta)
    sd = delta * np.sqrt(frac * (1 - frac))  # exact sd of one stochastic rounding
    err = out.mean(axis=0) - x
    stochastic = sd > 1e-12
    z = err[stochastic] / (sd[stochastic] / np.sqrt(reps))
    assert np.all(np.abs(z) < 5.0)
    assert abs(z.mean()) < 5.0 / np.sqrt(z.size)  # no common bias
    np.testing.assert_allclose(err[~stochastic], 0.0, atol=1e-12)  # on-grid: exact


def test_quantiser_unbiased_over_seeds():
    """Same test across independent seeds and messages (a_max recomputed per message)."""
    x = np.array([0.3, -0.7, 0.05, 1.3, -2.0])
    q = StochasticQuantizer(3)
    outs = np.stack([q.decode(q.encode(x, rng(s))) for s in range(3000)])
    delta = 2.0 / 3
    se = delta / 2 / np.sqrt(len(outs))  # upper bound on the standard error
    assert np.all(np.abs(outs.mean(axis=0) - x) < 5 * se)


def test_quantiser_all_zeros():
    q = StochasticQuantizer(4)
    enc = q.encode(np.zeros((3, 2)), rng())
    assert enc.bits == 6 * 4 + 32 and enc.data.a_max == 0.0
    np.testing.assert_array_equal(q.decode(enc), np.zeros((3, 2)))
    codec = topk_quantized(k=1, n_bits=4)
    np.testing.assert_array_equal(codec.decode(codec.encode(np.zeros((2, 5)), rng())), 0.0)


def test_quantiser_fixed_a_max_clips():
    q = StochasticQuantizer(3, a_max=1.5)
    x = np.array([-4.0, 0.0, 1.5, 10.0])
    enc = q.encode(x, rng())
    assert enc.bits == 4 * 3
    np.testing.assert_array_equal(q.decode(enc), [-1.5, 0.0, 1.5, 1.5])


def test_quantiser_rejects_nan():
    with pytest.raises(ValueError, match=r"^x: "):
        StochasticQuantizer(4).encode(np.array([1.0, np.nan]), rng())


def test_same_seed_same_encoding():
    x = rng(1).standard_normal((5, 30))
    for codec in (StochasticQuantizer(4), topk_quantized(k=7, groups=5, n_bits=4)):
        a, b = codec.encode(x, rng(9)), codec.encode(x, rng(9))
        np.testing.assert_array_equal(codec.decode(a), codec.decode(b))
        assert a.bits == b.bits
        c = codec.encode(x, rng(10))
        assert not np.array_equal(codec.decode(a), codec.decode(c))


def test_torch_tensor_input():
    torch = pytest.importorskip("torch")
    t = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4).requires_grad_()
    out = TopKCodec(k=2, groups=3).decode(TopKCodec(k=2, groups=3).encode(t, rng()))
    assert isinstance(out, np.ndarray) and out.shape == (3, 4)
    assert RawCodec(64).decode(RawCodec(64).encode(t, rng())).tolist() == t.tolist()


# ------------------------------------------------------------------ constructors, factory


def test_from_sharing_fraction():
    assert TopKCodec.from_sharing_fraction(0.5, 10, k=3).groups == 2
    assert TopKCodec.from_sharing_fraction(0.1, 10, k=3).groups == 10
    assert TopKCodec.from_sharing_fraction(1.0, 10, ratio=0.1).groups == 1
    assert TopKCodec.from_sharing_fraction(1 / 3, 6, k=1).groups == 3
    for bad in (0.3, 0.25, 0.05, 1.5, 0):
        with pytest.raises(ValueError, match=r"^sharing_fraction: "):
            TopKCodec.from_sharing_fraction(bad, 10, k=3)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: RawCodec(16), "bits_per_value"),
        (lambda: TopKCodec(), "k"),
        (lambda: TopKCodec(k=2, ratio=0.1), "k"),
        (lambda: TopKCodec(k=0), "k"),
        (lambda: TopKCodec(k=1.5), "k"),
        (lambda: TopKCodec(ratio=0.0), "ratio"),
        (lambda: TopKCodec(ratio=1.2), "ratio"),
        (lambda: TopKCodec(k=1, groups=0), "groups"),
        (lambda: TopKCodec(k=1, value_bits=8), "value_bits"),
        (lambda: StochasticQuantizer(1), "n_bits"),
        (lambda: StochasticQuantizer(True), "n_bits"),
        (lambda: StochasticQuantizer(4, a_max=-1.0), "a_max"),
        (lambda: StochasticQuantizer(4, a_max=float("inf")), "a_max"),
        (lambda: ComposedCodec(StochasticQuantizer(4), StochasticQuantizer(4)), "sparsifier"),
        (lambda: ComposedCodec(TopKCodec(k=1), RawCodec(32)), "quantizer"),
        (lambda: position_bits(5, 6), "k"),
        (lambda: topk_bits(10, 2, n_rows=4, groups=3), "groups"),
        (lambda: largest_k_within_budget(1000, 10, 4, 3, 5), "groups"),
        (lambda: largest_k_within_budget(1000, 10, 4, 2, 1), "n_bits"),
        (lambda: make_codec("gzip"), "name"),
        (lambda: make_codec("topk", k=3, n_bits=4), "params"),
        (lambda: make_codec("raw32", k=3), "params"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_argument(build, name):
    with pytest.raises(ValueError, match=f"^{name}: ") as info:
        build()
    assert "\n" not in str(info.value)


def test_error_message_format():
    with pytest.raises(ValueError) as info:
        StochasticQuantizer(1)
    assert str(info.value) == "n_bits: must be an integer >= 2 and <= 32, got 1"
    with pytest.raises(ValueError) as info:
        make_codec("gzip")
    assert all(n in str(info.value) for n in CODEC_NAMES)


def test_make_codec_builds_each_name():
    assert make_codec("raw32") == RawCodec(32)
    assert make_codec("raw64") == RawCodec(64)
    assert make_codec("topk", ratio=0.1, groups=2) == TopKCodec(ratio=0.1, groups=2)
    assert make_codec("quantize", n_bits=5) == StochasticQuantizer(5)
    assert make_codec("topk-quantize", k=4, groups=2, n_bits=3) == ComposedCodec(
        TopKCodec(k=4, groups=2), StochasticQuantizer(3)
    )
    assert set(CODEC_NAMES) == {"raw32", "raw64", "topk", "quantize", "topk-quantize"}


def test_encoded_is_the_base_type():
    enc = make_codec("topk-quantize", k=2).encode(np.arange(6.0), rng())
    assert isinstance(enc, Encoded) and isinstance(enc.bits, int)
