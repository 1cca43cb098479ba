"""Synthetic regression data of the Boston housing set's shape (506 × 13: 404 training,
102 test examples), for the EM-TDAMP runs: the real set is not shipped with any package
this project installs.

Features are independent standard normals; the target is
``y = tanh(x₁ + x₂ + x₃) + noise_std · ε`` (``ε ~ N(0, 1)``): three relevant features and
ten irrelevant ones, so neuron pruning of the input layer has something to find. The noise
variance ``noise_std²`` (default 0.09) is the floor of any test MSE.

>>> (x, y), (xt, yt) = boston_shaped(np.random.default_rng(0))
>>> x.shape, y.shape, xt.shape
((404, 13), (404,), (102, 13))
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BOSTON_FEATURES", "BOSTON_TEST", "BOSTON_TRAIN", "boston_shaped"]

BOSTON_TRAIN, BOSTON_TEST, BOSTON_FEATURES = 404, 102, 13


def boston_shaped(rng: np.random.Generator, *, noise_std: float = 0.3,
                  relevant: int = 3) -> tuple[tuple[np.ndarray, np.ndarray],
                                              tuple[np.ndarray, np.ndarray]]:
    """``((x_train, y_train), (x_test, y_test))`` as in the module docs."""
    if not (math.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std: must be finite and >= 0, got {noise_std!r}")
    if not 1 <= relevant <= BOSTON_FEATURES:
        raise ValueError(f"relevant: must be in [1, {BOSTON_FEATURES}], got {relevant!r}")
    count = BOSTON_TRAIN + BOSTON_TEST
    x = rng.standard_normal((count, BOSTON_FEATURES))
    y = np.tanh(x[:, :relevant].sum(1)) + noise_std * rng.standard_normal(count)
    return (x[:BOSTON_TRAIN], y[:BOSTON_TRAIN]), (x[BOSTON_TRAIN:], y[BOSTON_TRAIN:])
