"""The fast top-k selection returns the full partition's set, ties and non-finite rows
included."""

from __future__ import annotations

import numpy as np
import pytest

from bflnet.protocols.coding.topk_select import FAST_MIN_D, top_k_sorted


def reference(scores: np.ndarray, k: int) -> np.ndarray:
    d = scores.shape[-1]
    return np.sort(np.argpartition(scores, d - k, axis=-1)[..., d - k:], axis=-1)


def as_sets(idx: np.ndarray, scores: np.ndarray, k: int) -> None:
    """Sorted, k per row, and the k largest: nothing outside beats the smallest kept."""
    assert idx.shape == (scores.shape[0], k)
    for row, chosen in zip(scores, idx, strict=True):
        assert np.all(np.diff(chosen) > 0)
        rest = np.delete(row, chosen)
        assert rest.max() <= row[chosen].min()


@pytest.mark.parametrize("seed", range(6))
def test_same_set_as_full_partition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = FAST_MIN_D + int(rng.integers(0, 100_000))
    k = int(rng.integers(1, d // 8))
    scores = np.abs(rng.standard_normal((2, d))).astype(np.float32)
    got = top_k_sorted(scores, k)
    assert np.array_equal(got, reference(scores, k))


def test_adversarial_orders_and_heavy_tails() -> None:
    rng = np.random.default_rng(7)
    d, k = 200_000, 2_000
    for row in (np.sort(rng.random(d)), np.sort(rng.random(d))[::-1].copy(),
                rng.standard_cauchy(d) ** 2, np.where(rng.random(d) < 0.99, 0.0, rng.random(d))):
        scores = row[None].astype(np.float64)
        assert np.array_equal(top_k_sorted(scores, k), reference(scores, k))


def test_ties_and_non_finite_fall_back_to_a_valid_top_k() -> None:
    rng = np.random.default_rng(3)
    d, k = 100_000, 1_000
    tied = rng.integers(0, 5, (1, d)).astype(np.float32)  # a tie straddles the boundary
    as_sets(top_k_sorted(tied, k), tied, k)
    for bad in (np.nan, np.inf):
        row = rng.random((1, d))
        row[0, 12345] = bad
        assert np.array_equal(top_k_sorted(row, k), reference(row, k))


def test_short_rows_and_large_k_use_the_full_partition() -> None:
    rng = np.random.default_rng(4)
    small = rng.random((3, 500))
    assert np.array_equal(top_k_sorted(small, 7), reference(small, 7))
    long = rng.random((1, FAST_MIN_D))
    assert np.array_equal(top_k_sorted(long, FAST_MIN_D // 4), reference(long, FAST_MIN_D // 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_row_per_group_scores_are_the_column_sums_bit_for_bit(dtype) -> None:
    # TopKCodec scores a group of one row by |x| itself: what the sum over the length-1
    # axis gives (signed zeros, subnormals, infinities and NaN payloads included)
    from bflnet.protocols.coding.codecs import TopKCodec

    x = np.random.default_rng(3).standard_normal((4, 1, 3000)).astype(dtype)
    x[..., ::7], x[..., 3::11], x[..., 9::13] = 0.0, -0.0, x[..., 9::13] * 1e-40
    x[..., 5], x[..., 6], x[..., 8] = np.nan, np.inf, -np.inf
    uint = np.uint32 if dtype == np.float32 else np.uint64
    assert np.array_equal(np.abs(x[:, 0, :]).view(uint), np.abs(x).sum(axis=1).view(uint))
    codec = TopKCodec(k=40, groups=4)
    idx = codec._select(x.reshape(4, 3000))[2]
    ref = np.sort(np.argpartition(np.abs(x).sum(axis=1), 3000 - 40, axis=-1)[:, -40:], axis=-1)
    assert np.array_equal(idx, ref.astype(idx.dtype))
