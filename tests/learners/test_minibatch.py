"""Minibatch sampling: O(batch) draws without replacement for large sets, uniform over
ordered samples; small sets keep the draws of ``randperm``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from bflnet.learners.models.torch_utils import (
    LARGE_SET_ROWS,
    MinibatchSampler,
    sample_without_replacement,
)


def draws(n: int, m: int, count: int, seed: int = 0) -> np.ndarray:
    gen = torch.Generator().manual_seed(seed)
    return np.stack([sample_without_replacement(n, m, gen).numpy() for _ in range(count)])


def test_samples_are_distinct_and_in_range() -> None:
    samples = draws(1000, 125, 200)
    assert samples.min() >= 0 and samples.max() < 1000
    assert all(len(set(row)) == 125 for row in samples)


def test_every_position_is_uniform_over_the_rows() -> None:
    """Chi-square of each position's value (and of all values together) against uniform
    over 40 rows, 4000 samples of 5: none rejected at the 1e-3 level."""
    n, m, count = 40, 5, 4000
    samples = draws(n, m, count, seed=1)
    for column in [*samples.T, samples.ravel()]:
        observed = np.bincount(column, minlength=n)
        assert stats.chisquare(observed).pvalue > 1e-3


def test_ordered_pairs_are_uniform() -> None:
    """The first two indices of a sample are uniform over the 12·11 ordered pairs: what
    ``randperm(n)[:m]`` gives, so the change of sampler keeps the distribution."""
    n = 12
    samples = draws(n, 2, 13_200, seed=2)
    observed = np.bincount(samples[:, 0] * n + samples[:, 1], minlength=n * n)
    off_diagonal = observed[~np.eye(n, dtype=bool).ravel()]
    assert observed[np.eye(n, dtype=bool).ravel()].sum() == 0
    assert stats.chisquare(off_diagonal).pvalue > 1e-3


def test_edge_sizes() -> None:
    gen = torch.Generator().manual_seed(0)
    assert sample_without_replacement(5, 0, gen).numel() == 0
    assert sorted(sample_without_replacement(5, 5, gen).tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="m: must be in 0..5"):
        sample_without_replacement(5, 6, gen)


def sampler_for(n: int, batch: int) -> MinibatchSampler:
    data = {"a": (torch.arange(n, dtype=torch.float32).unsqueeze(1), torch.arange(n))}
    return MinibatchSampler(data, batch)


def test_small_sets_keep_the_randperm_draws() -> None:
    """Below LARGE_SET_ROWS the minibatch is the head of randperm, as before the change
    (the documented reproductions' draws do not move)."""
    n = LARGE_SET_ROWS
    x, y = sampler_for(n, 100)("a", torch.Generator().manual_seed(3))
    expected = torch.randperm(n, generator=torch.Generator().manual_seed(3))[:100]
    assert torch.equal(y, expected)
    assert torch.equal(x[:, 0].long(), expected)


def test_large_sets_draw_o_of_batch_and_stay_deterministic() -> None:
    n = LARGE_SET_ROWS + 1
    first = sampler_for(n, 100)("a", torch.Generator().manual_seed(4))
    again = sampler_for(n, 100)("a", torch.Generator().manual_seed(4))
    expected = sample_without_replacement(n, 100, torch.Generator().manual_seed(4))
    assert torch.equal(first[1], again[1]) and torch.equal(first[1], expected)
    assert torch.equal(first[0][:, 0].long(), first[1])


def test_whole_set_when_the_batch_covers_it() -> None:
    x, y = sampler_for(7, 10)("a", torch.Generator())
    assert torch.equal(y, torch.arange(7)) and x.shape == (7, 1)


@pytest.mark.parametrize("n, batch, count", [
    (LARGE_SET_ROWS + 1, 100, 300),   # the bulk draw, a few repeated minibatches
    (232_404, 100, 200),              # covertype's shape
    (10**6, 10, 120_000),             # more minibatches than one draw holds
    (LARGE_SET_ROWS + 1, 1000, 20),   # M² > N: one by one
    (500, 100, 30),                   # randperm
    (7, 10, 3),                       # the whole set
    (LARGE_SET_ROWS + 1, 100, 0),
])
def test_many_indices_are_the_draws_of_one_call_each(n, batch, count) -> None:
    """``many_indices`` gives the minibatches of ``count`` calls of ``indices``, and leaves
    the generator where they leave it."""
    sampler = sampler_for(n, batch)
    one, many = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    rows = [sampler.indices("a", one) for _ in range(count)]
    got = sampler.many_indices("a", many, count)
    assert got.shape == (count, min(batch, n))
    if count:
        assert torch.equal(got, torch.stack(rows))
    assert torch.equal(one.get_state(), many.get_state())


def test_many_indices_rewinds_at_a_repeated_minibatch() -> None:
    """With N = 10 000 and M = 100, about 40 % of the minibatches' first 100 candidates
    repeat a value: each such one is redrawn from the same state as by ``indices``."""
    n = 10_000
    sampler = sampler_for(n, 100)
    gen = torch.Generator().manual_seed(2)
    width = 100 + 100 // 8 + 8
    heads = torch.randint(n, (50, width), generator=gen)[:, :100]
    assert any(row.unique().numel() < 100 for row in heads)  # the case is exercised
    one, many = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    expected = torch.stack([sampler.indices("a", one) for _ in range(50)])
    assert torch.equal(sampler.many_indices("a", many, 50), expected)
    assert all(row.unique().numel() == 100 for row in expected)


def test_many_indices_rejects_a_negative_count() -> None:
    with pytest.raises(ValueError, match="count: must be >= 0"):
        sampler_for(10, 2).many_indices("a", torch.Generator(), -1)
