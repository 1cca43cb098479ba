"""Module A over a ReLU MLP (damp_mlp.py): exact reduction to one-layer GAMP, teacher
recovery, and no-NaN runs on the paper's network shapes (docs/em-tdamp/module-a.md, Sec. 6.4-6.7).
"""

import math

import pytest
import torch

from bflnet.learners.emtdamp.damp import (
    NonFiniteError,
    gaussian_prior_moments,
    linear_layer_gamp,
)
from bflnet.learners.emtdamp.damp_mlp import (
    DampSettings,
    gaussian_layer_prior,
    gaussian_output,
    init_state,
    layer_means,
    layer_weight_posterior,
    mlp_forward,
    probit_output,
    random_layer_priors,
    run_damp,
    weight_moments,
)
from bflnet.learners.emtdamp.moments import gaussian_output_moments, relu_moments
from bflnet.learners.emtdamp.server_em import (
    regression_noise_statistic,
    regression_noise_variance,
)

F64 = torch.float64


def assert_counts_finite(clips):
    assert all(isinstance(c, int) and 0 <= c < 2**62 for c in clips.values())


@pytest.mark.parametrize("damping", [1.0, 0.5])
def test_one_layer_is_exactly_linear_layer_gamp(damping, linear_problem):
    x, y, m0, v0 = linear_problem
    ref = linear_layer_gamp(
        x, lambda p, vp: gaussian_output_moments(p, vp, y, 0.25),
        gaussian_prior_moments(m0, v0), m0, v0, iterations=7, tol=1e-300, damping=damping,
    )
    state, clips = run_damp(
        x, [gaussian_layer_prior(m0, v0)], gaussian_output(y, 0.25), sweeps=7,
        settings=DampSettings(damping=damping),
    )
    assert ref.iterations == 7
    torch.testing.assert_close(state.weight_mean[0], ref.weight_mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(state.weight_var[0], ref.weight_var, rtol=0, atol=1e-14)
    torch.testing.assert_close(state.s_hat[0], ref.s_hat, rtol=0, atol=1e-10)
    assert clips["layer1/z_to_p_ratio"] == ref.clips["z_to_p_ratio"] > 0


def test_first_forward_sweep_is_the_prior_predictive_relu():
    """Flat backward messages: û of layer 2 is E[max(0, z)] under N(p̂₁, ν_p₁) (eq. 2.6)."""
    gen = torch.Generator().manual_seed(1)
    priors = random_layer_priors([5, 4, 3], gen)
    x = torch.randn(5, 7, generator=gen, dtype=F64)
    state = init_state(priors, 7)
    m, v = weight_moments(*layer_weight_posterior(priors[0], *(2 * [torch.zeros(4, 6, dtype=F64)])))
    torch.testing.assert_close(state.weight_mean[0], m)
    state, _ = run_damp(x, priors, gaussian_output(torch.zeros(3, 7, dtype=F64), 1.0),
                        state=state)
    p_hat = m @ torch.cat([x, torch.ones(1, 7, dtype=F64)])
    p_var = v @ torch.cat([x, torch.ones(1, 7, dtype=F64)]) ** 2
    a = p_hat / p_var.sqrt()
    normal = torch.distributions.Normal(0.0, 1.0)
    expected = p_hat * normal.cdf(a) + p_var.sqrt() * normal.log_prob(a).exp()
    torch.testing.assert_close(state.u_mean[1][:-1], expected, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(state.p_hat[0], p_hat)  # ŝ = 0: no Onsager term yet


def teacher_problem(seed, train=2000, test=2000, noise_var=1e-3):
    """A random 20-10-1 ReLU teacher with unit output variance and Gaussian output noise."""
    gen = torch.Generator().manual_seed(seed)
    weights = [torch.randn(10, 21, generator=gen, dtype=F64) / math.sqrt(20),
               torch.randn(1, 11, generator=gen, dtype=F64) / math.sqrt(10)]
    x = torch.randn(20, train + test, generator=gen, dtype=F64)
    weights[1] = weights[1] / mlp_forward(weights, x).std()
    clean = mlp_forward(weights, x)
    noisy = clean + math.sqrt(noise_var) * torch.randn(clean.shape, generator=gen, dtype=F64)
    return x[:, :train], noisy[:, :train], x[:, train:], clean[:, train:]


def test_teacher_student_20_10_1_is_recovered():
    """Full-batch DAMP (2000 noisy examples), v re-estimated by eq. 18 every 5 sweeps
    (EM-TDAMP with K = 1 and one minibatch); test NMSE of the posterior-mean network."""
    x, y, x_test, y_test = teacher_problem(0)
    priors = random_layer_priors([20, 10, 1], torch.Generator().manual_seed(1))
    settings = DampSettings(damping=0.2)
    state, noise_var, clips = None, 0.1, {}
    for _ in range(80):
        state, new_clips = run_damp(x, priors, gaussian_output(y, noise_var), sweeps=5,
                                    settings=settings, state=state)
        for key, value in new_clips.items():
            clips[key] = clips.get(key, 0) + value
        sigma = regression_noise_statistic(y, state.z_mean, state.z_var)
        noise_var = regression_noise_variance([sigma], [y.shape[1]])
    prediction = mlp_forward(state.weight_mean, x_test)
    nmse = float(((prediction - y_test) ** 2).sum() / (y_test**2).sum())
    print(f"teacher 20-10-1: test NMSE {nmse:.2e}, v {noise_var:.2e}, clips {clips}")
    assert nmse < 1e-2
    assert_counts_finite(clips)


def test_hidden_layer_messages_are_consistent_with_the_relu_node():
    """After a sweep, layer 1's ŝ, ν_s come from the ReLU posterior under (p̂₁, ν_p₁) and
    the backward message layer 2 just sent (6.13)-(6.14), damping off."""
    gen = torch.Generator().manual_seed(2)
    priors = random_layer_priors([6, 5, 2], gen)
    x = torch.randn(6, 40, generator=gen, dtype=F64)
    y = torch.randn(2, 40, generator=gen, dtype=F64)
    state, _ = run_damp(x, priors, gaussian_output(y, 0.5), sweeps=3,
                        settings=DampSettings(ratio_cap=1 - 1e-12))
    relu = relu_moments(state.p_hat[0], state.p_var[0], state.r_precision[1], state.r_shift[1])
    torch.testing.assert_close(state.s_hat[0], (relu.z_mean - state.p_hat[0]) / state.p_var[0])
    # A ReLU posterior can be wider than its forward message (ν_z > ν_p): capped (6.14).
    ratio = torch.clamp(relu.z_var / state.p_var[0], max=1 - 1e-12)
    torch.testing.assert_close(state.s_var[0], (1 - ratio) / state.p_var[0])
    assert bool((state.r_precision[1] > 0).all())


def test_non_finite_values_stop_with_a_named_value_error():
    priors = random_layer_priors([3, 4, 1], torch.Generator().manual_seed(0))
    x = torch.zeros(3, 5, dtype=F64)
    x[1, 2] = math.nan
    with pytest.raises(ValueError, match=r"^layer 1: ν_p is not finite$"):
        run_damp(x, priors, gaussian_output(torch.zeros(1, 5, dtype=F64), 1.0))
    with pytest.raises(NonFiniteError):
        run_damp(x, priors, gaussian_output(torch.zeros(1, 5, dtype=F64), 1.0))


def test_invalid_arguments_are_one_line_value_errors():
    priors = random_layer_priors([3, 4, 1], torch.Generator().manual_seed(0))
    node = gaussian_output(torch.zeros(1, 5, dtype=F64), 1.0)
    with pytest.raises(ValueError, match="inputs"):
        run_damp(torch.zeros(2, 5, dtype=F64), priors, node)
    with pytest.raises(ValueError, match="sweeps"):
        run_damp(torch.zeros(3, 5, dtype=F64), priors, node, sweeps=0)
    with pytest.raises(ValueError, match="damping"):
        DampSettings(damping=0.0)
    with pytest.raises(ValueError, match="ratio_cap"):
        DampSettings(ratio_cap=1.0)
    with pytest.raises(ValueError, match="sizes"):
        random_layer_priors([3], torch.Generator())


def test_classification_784_128_10_one_minibatch_runs_without_nan():
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(784, 100, generator=gen, dtype=F64)  # pixels in [0, 1], Fashion-MNIST's shape
    labels = torch.randint(0, 10, (100,), generator=gen)
    priors = random_layer_priors([784, 128, 10], gen, activity=0.5)
    state, clips = run_damp(x, priors, probit_output(labels, 1.0), sweeps=3,
                            settings=DampSettings(damping=0.5))
    for w in state.weight_mean + state.weight_var:
        assert bool(torch.isfinite(w).all())
    assert bool(torch.isfinite(state.z_mean).all()) and bool((state.z_var > 0).all())
    assert_counts_finite(clips)
    assert layer_means(priors)[0].shape == (128, 785)


def test_weight_posterior_on_access_is_module_b_of_the_last_messages():
    """DampState.weight_posterior (Module B's layout, computed on access from the last
    A → B messages) matches the sweeps' own posterior in Module A's layout."""
    gen = torch.Generator().manual_seed(6)
    priors = random_layer_priors([6, 5, 2], gen, activity=0.6)
    x = torch.randn(6, 40, generator=gen, dtype=F64)
    state, _ = run_damp(x, priors, gaussian_output(torch.randn(2, 40, generator=gen,
                                                               dtype=F64), 0.5), sweeps=3)
    for (weights, biases), dense in zip(state.weight_posterior, state.posterior, strict=True):
        torch.testing.assert_close(weights.posterior_activity, dense.weight_activity)
        torch.testing.assert_close(biases.posterior_activity, dense.bias_activity)
        torch.testing.assert_close(torch.cat([weights.marginal_mean.T, biases.marginal_mean],
                                             dim=1), dense.marginal_mean)
        torch.testing.assert_close(torch.cat([weights.posterior_var.T, biases.posterior_var],
                                             dim=1), dense.var)
