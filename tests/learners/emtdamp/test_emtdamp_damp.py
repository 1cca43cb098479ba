"""DAMP on one linear layer (GAMP, data as sensing matrix) against exact Bayesian linear
regression, full batch, iterated to convergence.

At any fixed point of Gaussian GAMP the weight means solve the normal equations exactly
(docs/em-tdamp/module-a.md, eq. 6.9), so the means must match the exact posterior means to the
convergence tolerance: max |error| ≤ 1e-8 · max |mean|. The variances are only the
diagonal approximation; their error is measured and bounded loosely (the numbers are in
docs/em-tdamp/module-a.md, Sec. 6.3).
"""

import pytest
import torch

from bflnet.learners.emtdamp.damp import gaussian_prior_moments, linear_layer_gamp
from bflnet.learners.emtdamp.moments import gaussian_output_moments

NOISE_VAR = 0.25


def regression_problem(n_in, batch, shift, correlation, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n_in, batch, generator=gen, dtype=torch.float64)
    if correlation:
        mix = torch.full((n_in, n_in), correlation, dtype=torch.float64)
        mix += (1 - correlation) * torch.eye(n_in, dtype=torch.float64)
        x = torch.linalg.cholesky(mix) @ x
    x = x + shift
    x_tilde = torch.cat([x, torch.ones(1, batch, dtype=torch.float64)])
    w_true = torch.randn(2, n_in + 1, generator=gen, dtype=torch.float64)
    y = w_true @ x_tilde + NOISE_VAR**0.5 * torch.randn(2, batch, generator=gen,
                                                         dtype=torch.float64)
    prior_mean = 0.1 * torch.ones(2, n_in + 1, dtype=torch.float64)
    prior_var = torch.full((2, n_in + 1), 2.0, dtype=torch.float64)
    # Exact posterior of each output row: precision X̃X̃ᵀ/v + I/v₀.
    precision = x_tilde @ x_tilde.T / NOISE_VAR + torch.eye(n_in + 1, dtype=torch.float64) / 2.0
    cov = torch.linalg.inv(precision)
    exact_mean = (cov @ (x_tilde @ y.T / NOISE_VAR + prior_mean.T / 2.0)).T
    return x, y, prior_mean, prior_var, exact_mean, torch.diag(cov)


def run(x, y, prior_mean, prior_var, **options):
    return linear_layer_gamp(
        x,
        lambda p, vp: gaussian_output_moments(p, vp, y, NOISE_VAR),
        gaussian_prior_moments(prior_mean, prior_var),
        prior_mean,
        prior_var,
        iterations=3000,
        tol=1e-12,
        **options,
    )


# (N_in, B, feature mean, feature correlation, damping, bound on the diagonal-variance error)
CASES = [
    (8, 300, 0.0, 0.0, 1.0, 0.05),  # iid zero-mean features, B ≫ N: undamped
    (20, 100, 0.0, 0.0, 1.0, 0.3),
    (13, 404, 0.5, 0.6, 0.5, 1.0),  # Boston's shape, correlated, non-zero mean: damped
    (50, 60, 0.0, 0.0, 0.5, 1.5),  # nearly square
]


@pytest.mark.parametrize(("n_in", "batch", "shift", "corr", "damping", "var_bound"), CASES)
def test_gamp_means_are_the_exact_posterior_means(n_in, batch, shift, corr, damping, var_bound):
    x, y, m0, v0, exact_mean, exact_var = regression_problem(n_in, batch, shift, corr, seed=1)
    res = run(x, y, m0, v0, damping=damping, ratio_cap=1.0 - 1e-12)
    assert res.converged
    assert float((res.weight_mean - exact_mean).abs().max()) <= 1e-8 * float(
        exact_mean.abs().max())
    # The diagonal variance approximation: measured, reported, loosely bounded.
    rel = res.weight_var / exact_var - 1.0
    print(f"N_in={n_in} B={batch}: iterations {res.iterations}, diagonal variance error "
          f"max {float(rel.abs().max()):.3f}, median {float(rel.median()):+.3f}")
    assert float(rel.abs().max()) < var_bound
    assert res.clips == {"z_to_p_ratio": 0, "q_var": 0}


def test_capping_the_variance_ratio_is_counted_and_keeps_the_means_exact():
    x, y, m0, v0, exact_mean, _ = regression_problem(8, 300, 0.0, 0.0, seed=2)
    res = run(x, y, m0, v0, ratio_cap=0.99)
    assert res.clips["z_to_p_ratio"] > 0
    assert float((res.weight_mean - exact_mean).abs().max()) <= 1e-8 * float(
        exact_mean.abs().max())


def test_undamped_gamp_on_non_zero_mean_inputs_stops_with_a_named_error():
    x, y, m0, v0, _, _ = regression_problem(13, 404, 0.5, 0.6, seed=1)
    with pytest.raises(FloatingPointError, match="layer 1"):
        run(x, y, m0, v0, damping=1.0)


def test_invalid_arguments_are_one_line_value_errors():
    x, y, m0, v0, _, _ = regression_problem(3, 10, 0.0, 0.0, seed=0)
    with pytest.raises(ValueError, match="damping"):
        run(x, y, m0, v0, damping=0.0)
    with pytest.raises(ValueError, match="initial_mean"):
        run(x, y, m0[:, :-1], v0[:, :-1])
