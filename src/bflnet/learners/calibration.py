"""Calibration metrics for class-probability predictions: ECE, reliability data, NLL, Brier.

Every function takes ``probs`` of shape ``(n, C)`` (rows are class probabilities; a 1-D
array is read as P(y = 1) of a binary problem) and integer ``labels`` of shape ``(n,)``,
as NumPy arrays, lists or torch tensors (any device). The prediction is the arg-max class
(ties go to the lowest index) and its probability is the *confidence*.

ECE follows eq. (14) of the compressed-DSVGD letter (Guo et al., 2017):
``ECE = Σ_m |B_m| / n · |acc(B_m) − conf(B_m)|``. With ``binning="equal-width"`` bin ``m``
of ``M`` holds the confidences in ``((m−1)/M, m/M]`` (a confidence of exactly 0 goes to the
first bin); with ``"equal-mass"`` the examples, sorted by confidence (stable), are split into
``min(M, n)`` consecutive groups whose sizes differ by at most one.

>>> import numpy as np
>>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
>>> labels = np.array([0, 1, 1, 1])
>>> round(ece(probs, labels, n_bins=2), 6), round(brier(probs, labels), 6)
(0.25, 0.55)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

BINNINGS = ("equal-width", "equal-mass")
_SUM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class ReliabilityData:
    """Per-bin statistics: ``edges`` (M + 1,), and per bin ``count``, ``accuracy`` and mean
    ``confidence`` (NaN for an empty bin). ``ece`` is eq. (14) over these bins."""

    edges: np.ndarray
    count: np.ndarray
    accuracy: np.ndarray
    confidence: np.ndarray

    @property
    def ece(self) -> float:
        """Σ_m |B_m| / n · |acc(B_m) − conf(B_m)| (empty bins contribute nothing)."""
        filled = self.count > 0
        gaps = np.abs(self.accuracy[filled] - self.confidence[filled])
        return float(np.sum(self.count[filled] * gaps) / np.sum(self.count))

    def as_frame(self) -> pd.DataFrame:
        """One row per bin: lower and upper edge, count, accuracy, confidence."""
        return pd.DataFrame({"lower": self.edges[:-1], "upper": self.edges[1:],
                             "count": self.count, "accuracy": self.accuracy,
                             "confidence": self.confidence})


def _to_numpy(x: Any) -> np.ndarray:
    """A NumPy array from a NumPy array, a list or a torch tensor (no torch import)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def check_inputs(probs: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(probs (n, C) float64, labels (n,) int64)`` after checking shapes and ranges."""
    p = _to_numpy(probs).astype(np.float64, copy=False)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] < 2:
        raise ValueError(f"probs: must be an (n, C) array with n >= 1 and C >= 2, "
                         f"got shape {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        bad = p[~(np.isfinite(p) & (p >= 0) & (p <= 1))][0]
        raise ValueError(f"probs: must be probabilities in [0, 1], got {float(bad)!r}")
    sums = _row_sum(p)
    off = np.abs(sums - 1.0) > _SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise ValueError(f"probs: every row must sum to 1, row {row} sums to {sums[row]:.6g}")
    return p, _check_labels(labels, *p.shape)


def _check_labels(labels: Any, n: int, n_classes: int) -> np.ndarray:
    y = _to_numpy(labels)
    if y.shape != (n,):
        raise ValueError(f"labels: must have shape ({n},) to match probs, got {y.shape}")
    integral = y.dtype.kind in "iub" or (
        y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y)))))
    if not integral:
        raise ValueError(f"labels: must be integer class indices, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= n_classes:
        bad = y[(y < 0) | (y >= n_classes)][0]
        raise ValueError(f"labels: must be in [0, {n_classes - 1}], got {bad}")
    return y


def _check_bins(n_bins: int, binning: str) -> None:
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins: must be an integer >= 1, got {n_bins!r}")
    if binning not in BINNINGS:
        raise ValueError(f"binning: must be one of {', '.join(BINNINGS)}, got {binning!r}")


def confidence_and_correct(probs: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per example: the arg-max probability and whether the arg-max class is the label."""
    return _confidence_and_correct(*check_inputs(probs, labels))


def _row_sum(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=1)``; two columns added as columns (the same numbers, without NumPy's
    slow reduction over a length-2 axis)."""
    return a[:, 0] + a[:, 1] if a.shape[1] == 2 else a.sum(axis=1)


def _confidence_and_correct(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # (two classes: argmax, the first of equal values, as a comparison)
    prediction = ((p[:, 1] > p[:, 0]).astype(np.int64) if p.shape[1] == 2
                  else np.argmax(p, axis=1))
    return p[np.arange(len(p)), prediction], (prediction == y).astype(np.float64)


def _bin_stats(groups: list[np.ndarray], conf: np.ndarray,
               correct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    count = np.array([len(g) for g in groups], dtype=np.int64)
    accuracy = np.array([correct[g].mean() if len(g) else np.nan for g in groups])
    confidence = np.array([conf[g].mean() if len(g) else np.nan for g in groups])
    return count, accuracy, confidence


def _equal_width(conf: np.ndarray, n_bins: int) -> tuple[np.ndarray, list[np.ndarray]]:
    edges = np.arange(n_bins + 1) / n_bins  # k / M is exact where a decimal edge is
    index = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, n_bins - 1)
    return edges, [np.flatnonzero(index == m) for m in range(n_bins)]


def _equal_mass(conf: np.ndarray, n_bins: int) -> tuple[np.ndarray, list[np.ndarray]]:
    order = np.argsort(conf, kind="stable")
    groups = list(np.array_split(order, min(n_bins, len(conf))))
    inner = [(conf[a[-1]] + conf[b[0]]) / 2 for a, b in itertools.pairwise(groups)]
    return np.array([0.0, *inner, 1.0]), groups


def reliability_data(probs: Any, labels: Any, n_bins: int = 15,
                     binning: str = "equal-width") -> ReliabilityData:
    """Counts, accuracy and mean confidence per confidence bin (see the module docstring).

    Equal-mass edges are the midpoints between the neighbouring bins' confidences."""
    _check_bins(n_bins, binning)
    return _reliability(*confidence_and_correct(probs, labels), n_bins, binning)


def _reliability(conf: np.ndarray, correct: np.ndarray, n_bins: int,
                 binning: str) -> ReliabilityData:
    split = _equal_width if binning == "equal-width" else _equal_mass
    edges, groups = split(conf, int(n_bins))
    return ReliabilityData(edges, *_bin_stats(groups, conf, correct))


def ece(probs: Any, labels: Any, n_bins: int = 15, binning: str = "equal-width") -> float:
    """Expected calibration error, eq. (14): Σ_m |B_m| / n · |acc(B_m) − conf(B_m)|."""
    return reliability_data(probs, labels, n_bins, binning).ece


def accuracy(probs: Any, labels: Any) -> float:
    """Fraction of examples whose arg-max class is the label."""
    return float(confidence_and_correct(probs, labels)[1].mean())


def nll(probs: Any, labels: Any, eps: float = 1e-12) -> float:
    """Mean negative log-probability of the true label; probabilities below ``eps`` count as
    ``eps`` (``eps=0`` gives ``inf`` for a zero-probability label)."""
    if not eps >= 0:
        raise ValueError(f"eps: must be a number >= 0, got {eps!r}")
    return _nll(*check_inputs(probs, labels), eps)


def _nll(p: np.ndarray, y: np.ndarray, eps: float) -> float:
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(np.maximum(p[np.arange(len(p)), y], eps))))


def brier(probs: Any, labels: Any) -> float:
    """Multi-class Brier score: mean over examples of Σ_c (p_c − 1[c = y])²."""
    return _brier(*check_inputs(probs, labels))


def _brier(p: np.ndarray, y: np.ndarray) -> float:
    onehot = np.zeros_like(p)
    onehot[np.arange(len(p)), y] = 1.0
    return float(np.mean(_row_sum((p - onehot) ** 2)))


def scores(probs: Any, labels: Any, n_bins: int = 15,
           binning: str = "equal-width") -> dict[str, float]:
    """``accuracy``, ``ece``, ``nll`` and ``brier`` of one set of predictions: the values
    of the four functions, with the inputs checked and converted once."""
    _check_bins(n_bins, binning)
    p, y = check_inputs(probs, labels)
    conf, correct = _confidence_and_correct(p, y)
    return {"accuracy": float(correct.mean()),
            "ece": _reliability(conf, correct, n_bins, binning).ece,
            "nll": _nll(p, y, 1e-12), "brier": _brier(p, y)}
