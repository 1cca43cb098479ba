"""Posterior-predictive evaluation: the mean of the particles' softmax, and its metrics."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import torch

from bflnet.learners import evaluation
from bflnet.learners.evaluation import (
    per_class_accuracy,
    posterior_predictive,
    predictive_metrics,
)
from bflnet.learners.models.classifiers import BayesianMLP, LogisticRegression

DT = torch.float64


def hand_made() -> tuple[LogisticRegression, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two particles on one-hot inputs e0, e1 (W rows are the log-probabilities, b = 0).

    particle 1: e0 -> (.95, .05), e1 -> (.15, .85); particle 2: e0 -> (.55, .45),
    e1 -> (.5, .5); predictive: e0 -> (.75, .25), e1 -> (.325, .675).
    """
    model = LogisticRegression(2, 2, dtype=DT)
    w1 = torch.tensor([[0.95, 0.05], [0.15, 0.85]], dtype=DT).log()
    w2 = torch.tensor([[0.55, 0.45], [0.5, 0.5]], dtype=DT).log()
    theta = torch.stack([torch.cat([w.flatten(), torch.zeros(2, dtype=DT)]) for w in (w1, w2)])
    x = torch.tensor([[1, 0], [1, 0], [0, 1], [0, 1], [0, 1]], dtype=DT)
    y = torch.tensor([0, 1, 1, 1, 0])
    return model, theta, x, y


def test_posterior_predictive_hand_made():
    model, theta, x, _ = hand_made()
    probs = posterior_predictive(model, theta, x)
    expected = torch.tensor([[0.75, 0.25]] * 2 + [[0.325, 0.675]] * 3, dtype=DT)
    torch.testing.assert_close(probs, expected)


def test_metrics_hand_made():
    model, theta, x, y = hand_made()
    metrics = predictive_metrics(model, theta, x, y, n_bins=10)
    assert set(metrics) == {"accuracy", "ece", "nll", "brier"}
    assert all(isinstance(v, float) for v in metrics.values())
    assert metrics["accuracy"] == pytest.approx(3 / 5)
    # eq. 14: bin (0.7, 0.8] holds e0 (acc 1/2, conf .75), (0.6, 0.7] e1 (acc 2/3, .675)
    assert metrics["ece"] == pytest.approx(2 / 5 * abs(0.5 - 0.75) + 3 / 5 * abs(2 / 3 - 0.675))
    picked = [0.75, 0.25, 0.675, 0.675, 0.325]
    assert metrics["nll"] == pytest.approx(-sum(math.log(p) for p in picked) / 5)
    squared = [2 * 0.25**2, 2 * 0.75**2, 2 * 0.325**2, 2 * 0.325**2, 2 * 0.675**2]
    assert metrics["brier"] == pytest.approx(sum(squared) / 5)  # Σ classes, mean examples


def test_posterior_predictive_is_mean_of_particle_softmax_in_chunks():
    model = BayesianMLP(6, 5, 4, dtype=DT)
    g = torch.Generator().manual_seed(0)
    theta = model.init_particles(7, g).requires_grad_()
    x = torch.randn(11, 6, generator=g, dtype=DT)
    expected = torch.stack([torch.softmax(model.logits(theta[n:n + 1], x)[0], -1)
                            for n in range(7)]).mean(0)
    for batch_size in (1, 3, 11, 1000):
        probs = posterior_predictive(model, theta, x, batch_size=batch_size)
        assert probs.shape == (11, 4) and not probs.requires_grad
        torch.testing.assert_close(probs, expected.detach())
    torch.testing.assert_close(posterior_predictive(model, theta, x.numpy()), expected.detach())
    assert posterior_predictive(model, theta, x[:0]).shape == (0, 4)


def test_metrics_accept_numpy_and_reject_bad_input():
    model, theta, x, y = hand_made()
    a = predictive_metrics(model, theta, x.numpy(), y.numpy())
    b = predictive_metrics(model, theta, x, y)
    assert a == pytest.approx(b)
    with pytest.raises(ValueError, match="y: expected shape"):
        predictive_metrics(model, theta, x, y[:-1])
    with pytest.raises(ValueError, match="non-finite"):
        predictive_metrics(model, theta * float("nan"), x, y)
    with pytest.raises(ValueError, match="batch_size"):
        posterior_predictive(model, theta, x, batch_size=0)


def test_per_class_accuracy():
    model, theta, x, y = hand_made()
    probs = posterior_predictive(model, theta, x)  # predicts 0, 0, 1, 1, 1
    acc = per_class_accuracy(probs, y, 3)
    np.testing.assert_allclose(acc, [1 / 2, 2 / 3, np.nan])
    np.testing.assert_allclose(per_class_accuracy(probs.numpy(), y.numpy(), 3), acc)
    with pytest.raises(ValueError, match=r"labels must be in 0\.\.0"):
        per_class_accuracy(probs, y, 1)


def test_doctests():
    result = doctest.testmod(evaluation)
    assert result.attempted > 0 and result.failed == 0
