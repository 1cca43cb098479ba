"""Calibration metrics against examples worked by hand."""

import math

import numpy as np
import pytest
import torch

from bflnet.learners.calibration import accuracy, brier, ece, nll, reliability_data

# Four binary predictions, worked by hand throughout:
#   row  probs        label  confidence  prediction  correct
#   0    [0.9, 0.1]   0      0.9         0           1
#   1    [0.8, 0.2]   1      0.8         0           0
#   2    [0.3, 0.7]   1      0.7         1           1
#   3    [0.6, 0.4]   1      0.6         0           0
PROBS = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
LABELS = np.array([0, 1, 1, 1])


def test_equal_width_ece_by_hand():
    # M = 2, bins (0, .5], (.5, 1]: all four in bin 2; acc 2/4, conf (.9+.8+.7+.6)/4 = .75.
    assert ece(PROBS, LABELS, n_bins=2) == pytest.approx(0.25)
    # M = 4, bins of width .25: (.5, .75] holds .7 and .6 -> acc 1/2, conf .65, gap .15;
    # (.75, 1] holds .9 and .8 -> acc 1/2, conf .85, gap .35. ECE = 2/4*.15 + 2/4*.35 = .25.
    data = reliability_data(PROBS, LABELS, n_bins=4)
    np.testing.assert_array_equal(data.count, [0, 0, 2, 2])
    np.testing.assert_allclose(data.accuracy[2:], [0.5, 0.5])
    np.testing.assert_allclose(data.confidence[2:], [0.65, 0.85])
    assert np.isnan(data.accuracy[:2]).all()
    np.testing.assert_allclose(data.edges, [0, 0.25, 0.5, 0.75, 1])
    assert data.ece == pytest.approx(0.25)


def test_equal_width_bins_include_their_upper_edge():
    # M = 5, bins of width .2: .6 falls in (.4, .6] (acc 0, gap .6), .8 and .7 in (.6, .8]
    # (acc 1/2, conf .75, gap .25), .9 in (.8, 1] (acc 1, gap .1).
    # ECE = 1/4*.6 + 2/4*.25 + 1/4*.1 = .15 + .125 + .025 = .3
    data = reliability_data(PROBS, LABELS, n_bins=5)
    np.testing.assert_array_equal(data.count, [0, 0, 1, 2, 1])
    assert ece(PROBS, LABELS, n_bins=5) == pytest.approx(0.3)


def test_equal_mass_ece_by_hand():
    # Sorted confidences .6 .7 | .8 .9 with correct 0 1 | 0 1.
    # Bin 1: acc .5, conf .65, gap .15; bin 2: acc .5, conf .85, gap .35 -> ECE .25.
    data = reliability_data(PROBS, LABELS, n_bins=2, binning="equal-mass")
    np.testing.assert_array_equal(data.count, [2, 2])
    np.testing.assert_allclose(data.confidence, [0.65, 0.85])
    np.testing.assert_allclose(data.edges, [0, 0.75, 1])  # .75 = midpoint of .7 and .8
    assert data.ece == pytest.approx(0.25)
    # M = 4 gives one example per bin: ECE = mean |correct - conf|
    #   = (|0-.6| + |1-.7| + |0-.8| + |1-.9|) / 4 = (.6 + .3 + .8 + .1) / 4 = .45
    assert ece(PROBS, LABELS, n_bins=4, binning="equal-mass") == pytest.approx(0.45)
    # More bins than examples: one example per bin, the same .45.
    assert ece(PROBS, LABELS, n_bins=10, binning="equal-mass") == pytest.approx(0.45)


def test_nll_brier_and_accuracy_by_hand():
    # p(true label) = .9, .2, .7, .4; -ln of each: .105361 + 1.609438 + .356675 + .916291
    # = 2.987764, mean .746941
    expected_nll = -(math.log(0.9) + math.log(0.2) + math.log(0.7) + math.log(0.4)) / 4
    assert nll(PROBS, LABELS) == pytest.approx(expected_nll)
    assert expected_nll == pytest.approx(0.746941, abs=1e-6)
    # Brier per row: (.1² + .1²) = .02; (.8² + .8²) = 1.28; (.3² + .3²) = .18;
    # (.6² + .6²) = .72; mean = 2.2 / 4 = .55
    assert brier(PROBS, LABELS) == pytest.approx(0.55)
    assert accuracy(PROBS, LABELS) == 0.5


def test_three_classes_by_hand():
    # rows: conf .5 (pred 0, label 0, correct), conf .6 (pred 2, label 1, wrong)
    probs = [[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]]
    labels = [0, 1]
    # one bin: acc 1/2, conf .55 -> ECE .05
    assert ece(probs, labels, n_bins=1) == pytest.approx(0.05)
    # Brier: (.5² + .3² + .2²) + (.1² + .7² + .6²) = .38 + .86 = 1.24, mean .62
    assert brier(probs, labels) == pytest.approx(0.62)
    assert nll(probs, labels) == pytest.approx(-(math.log(0.5) + math.log(0.3)) / 2)


def test_binary_probabilities_as_a_vector_and_torch_tensors_agree():
    p1 = PROBS[:, 1]
    assert ece(p1, LABELS, n_bins=4) == pytest.approx(ece(PROBS, LABELS, n_bins=4))
    as_torch = torch.tensor(PROBS, dtype=torch.float32)
    assert ece(as_torch, torch.tensor(LABELS), n_bins=2) == pytest.approx(0.25, abs=1e-6)
    assert brier(as_torch, torch.tensor(LABELS)) == pytest.approx(0.55, abs=1e-6)


def test_perfect_confident_predictions_have_zero_error():
    probs = np.eye(3)[[0, 2, 1, 1]]
    labels = [0, 2, 1, 1]
    assert ece(probs, labels) == 0 and brier(probs, labels) == 0
    assert nll(probs, labels) == pytest.approx(0, abs=1e-12)
    assert nll([[1.0, 0.0]], [1], eps=0) == math.inf


@pytest.mark.parametrize(("probs", "labels", "kwargs", "text"), [
    ([[0.5, 0.6]], [0], {}, "probs: every row must sum to 1, row 0 sums to 1.1"),
    ([[1.5, -0.5]], [0], {}, "probs: must be probabilities in [0, 1], got 1.5"),
    ([[[0.5, 0.5]]], [0], {}, "probs: must be an (n, C) array"),
    ([[0.5, 0.5]], [0, 1], {}, "labels: must have shape (1,)"),
    ([[0.5, 0.5]], [2], {}, "labels: must be in [0, 1], got 2"),
    ([[0.5, 0.5]], [0.5], {}, "labels: must be integer class indices"),
    ([[0.5, 0.5]], [0], {"n_bins": 0}, "n_bins: must be an integer >= 1, got 0"),
    ([[0.5, 0.5]], [0], {"binning": "quantile"}, "binning: must be one of equal-width"),
])
def test_bad_inputs_give_one_line_errors(probs, labels, kwargs, text):
    with pytest.raises(ValueError) as info:
        ece(probs, labels, **kwargs)
    assert text in str(info.value) and "\n" not in str(info.value)


def test_two_class_shortcuts_equal_the_generic_reductions():
    """Two columns: the arg-max by comparison (ties: the first class) and the row sums by
    column addition give the generic NumPy results bit for bit."""
    from bflnet.learners.calibration import _confidence_and_correct, _row_sum

    rng = np.random.default_rng(0)
    p1 = rng.random(1000)
    p1[:10] = 0.5  # ties
    p = np.stack([1.0 - p1, p1], axis=1)
    y = rng.integers(0, 2, 1000)
    conf, correct = _confidence_and_correct(p, y)
    prediction = np.argmax(p, axis=1)
    assert np.array_equal(conf, p[np.arange(1000), prediction])
    assert np.array_equal(correct, (prediction == y).astype(np.float64))
    assert np.array_equal(_row_sum(p), p.sum(axis=1))
    wide = rng.random((50, 3))
    assert np.array_equal(_row_sum(wide), wide.sum(axis=1))
