"""The indices of the ``k`` largest entries of each row, sorted: the same set as a full
``numpy.argpartition``, found faster for long rows and small ``k``.

For a row of ``d >= FAST_MIN_D`` entries with ``k <= d / 8``, a strided sample of about
:data:`SAMPLE` entries gives a lower bound ``lb`` a little below the k-th largest value;
only the entries ``>= lb`` (about ``1.5 k``) are partitioned. The result is the full
partition's whenever the top-k set is unique; it falls back to the full partition (so the
answer is always the same set) when fewer than ``k`` entries reach ``lb``, when the row
holds a NaN or an infinity, or when entries equal to the k-th largest are split between
kept and dropped (a tie at the boundary, where the choice is the algorithm's).
On a 2.7 M-entry row with k = 1 % this takes about a tenth of the full partition.
"""

from __future__ import annotations

import numpy as np

#: Rows shorter than this are partitioned whole.
FAST_MIN_D = 65536
#: About this many entries are sampled to place the lower bound.
SAMPLE = 32768


def top_k_sorted(scores: np.ndarray, k: int) -> np.ndarray:
    """``(G, k)`` column indices, ascending, of the ``k`` largest entries of each row of the
    ``(G, d)`` array ``scores`` (``0 < k < d``)."""
    d = scores.shape[-1]
    if d < FAST_MIN_D or 8 * k > d:
        return _full(scores, k)
    return np.stack([_row(row, k) for row in scores])


def _full(scores: np.ndarray, k: int) -> np.ndarray:
    d = scores.shape[-1]
    return np.sort(np.argpartition(scores, d - k, axis=-1)[..., d - k:], axis=-1)


def _row(row: np.ndarray, k: int) -> np.ndarray:
    d = row.shape[0]
    stride = max(1, d // SAMPLE)
    sample = row[::stride]
    s = sample.shape[0]
    # rank (from the top) of the bound in the sample: 1.5x the expected rank of the k-th
    # largest, plus a margin, so that ``>= lb`` holds at least k entries with high probability
    rank = min(s, int(1.5 * k * s / d) + 16)
    lb = np.partition(sample, s - rank)[s - rank]
    if not np.isfinite(lb) or not np.isfinite(row.max()):
        return _full(row[None], k)[0]
    cand = np.flatnonzero(row >= lb)
    if cand.shape[0] < k:
        return _full(row[None], k)[0]
    sub = row[cand]
    n = sub.shape[0]
    part = np.argpartition(sub, n - k)[n - k:]
    kth = sub[part].min()
    if np.count_nonzero(sub == kth) != np.count_nonzero(sub[part] == kth):
        return _full(row[None], k)[0]  # a tie straddles the boundary
    return np.sort(cand[part])
