"""Client TDAMP (tdamp_client.py): PasP, the extrinsic reset checked against exact
sequential Bayesian updates, and no-NaN runs through the server's EM on the paper's shapes
(docs/em-tdamp/module-a.md, Sec. 6.5-6.7)."""

import math

import pytest
import torch

from bflnet.learners.emtdamp.damp_mlp import (
    DampSettings,
    gaussian_layer_prior,
    layer_means,
    layer_weight_posterior,
    mlp_forward,
    random_layer_priors,
)
from bflnet.learners.emtdamp.server_em import (
    aggregate_activity,
    aggregate_gaussians,
    classification_noise_variance,
    client_weights,
    regression_noise_variance,
)
from bflnet.learners.emtdamp.tdamp_client import pasp_update, tdamp_client

F64 = torch.float64


def exact_mean(x, y, prior_mean, prior_var, noise_var):
    """Posterior means of ``W̃`` (rows independent) for ``y = W̃ X̃ + noise`` under the
    diagonal Gaussian prior ``N(prior_mean, prior_var)``."""
    x_tilde = torch.cat([x, torch.ones(1, x.shape[1], dtype=F64)])
    rows = []
    for m in range(y.shape[0]):
        precision = x_tilde @ x_tilde.T / noise_var + torch.diag(1 / prior_var[m])
        rhs = x_tilde @ y[m] / noise_var + prior_mean[m] / prior_var[m]
        rows.append(torch.linalg.solve(precision, rhs))
    return torch.stack(rows)


def test_pasp_then_reset_is_the_exact_sequential_update(linear_problem):
    """One Gaussian layer, two minibatches, iterated to convergence in each. Minibatch 1's
    posterior means are exact (eq. 6.9); PasP makes its diagonal posterior the prior of
    minibatch 2, whose means must then be the exact posterior means under that prior:
    any evidence of minibatch 1 left in the messages would be counted twice."""
    x, y, m0, v0 = linear_problem
    prior = [gaussian_layer_prior(m0, v0)]
    options = {"batch_size": 150, "sweeps": 200, "settings": DampSettings(ratio_cap=1 - 1e-12)}
    first = tdamp_client(x[:, :150], y[:, :150], prior, 0.25, **options)
    mean_1 = layer_means(first.posterior)[0]
    torch.testing.assert_close(mean_1, exact_mean(x[:, :150], y[:, :150], m0, v0, 0.25),
                               rtol=0, atol=1e-9)
    var_1 = torch.cat([first.posterior[0].weight_var.T, first.posterior[0].bias_var], dim=1)
    both = tdamp_client(x, y, prior, 0.25, **options)
    assert both.minibatches == 2
    torch.testing.assert_close(
        layer_means(both.posterior)[0],
        exact_mean(x[:, 150:], y[:, 150:], mean_1, var_1, 0.25), rtol=0, atol=1e-9,
    )


def test_pasp_power_scales_the_natural_parameters():
    priors = random_layer_priors([4, 3], torch.Generator().manual_seed(1), activity=0.7)
    q = torch.rand(3, 5, generator=torch.Generator().manual_seed(2), dtype=F64)
    weights, biases = layer_weight_posterior(priors[0], q, q - 0.5)
    same = pasp_update(weights, biases, 1.0)
    torch.testing.assert_close(same.weight_activity, weights.posterior_activity)
    torch.testing.assert_close(same.weight_var, weights.posterior_var)
    half = pasp_update(weights, biases, 0.5)
    torch.testing.assert_close(half.weight_var, 2 * weights.posterior_var)
    torch.testing.assert_close(half.bias_mean, biases.posterior_mean)
    torch.testing.assert_close(torch.logit(half.weight_activity),
                               0.5 * torch.logit(weights.posterior_activity))
    with pytest.raises(ValueError, match="power"):
        pasp_update(weights, biases, 0.0)


def stack(results, field, layer):
    return torch.stack([getattr(r.posterior[layer], field) for r in results])


def test_boston_shaped_13_64_64_1_federated_rounds_have_no_nan():
    """K = 4 clients of synthetic data of Boston's shape (506 × 13), 3 rounds of
    TDAMP (2 passes, 2 sweeps per minibatch of 101) and server EM (eqs. 12-15, 18)."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(13, 506, generator=gen, dtype=F64)
    y = torch.tanh(x[:3].sum(0, keepdim=True)) + 0.3 * torch.randn(1, 506, generator=gen,
                                                                    dtype=F64)
    parts = torch.tensor_split(torch.arange(506), 4)
    priors = random_layer_priors([13, 64, 64, 1], gen, activity=0.9)
    noise_var, clips = 1.0, {}
    weights = client_weights([len(p) for p in parts])
    for _ in range(3):
        results = [
            tdamp_client(x[:, p], y[:, p], priors, noise_var, batch_size=101, tau_max=2,
                         sweeps=2, settings=DampSettings(damping=0.5), generator=gen)
            for p in parts
        ]
        for r in results:
            for key, value in r.clips.items():
                clips[key] = clips.get(key, 0) + value
        new = []
        for layer in range(3):
            layer_prior = []
            for kind in ("weight", "bias"):
                mean, var = aggregate_gaussians(stack(results, f"{kind}_mean", layer),
                                                stack(results, f"{kind}_var", layer), weights)
                activity = aggregate_activity(
                    stack(results, f"{kind}_activity", layer),
                    stack(results, f"{kind}_mean", layer),
                    stack(results, f"{kind}_var", layer), weights, mean, var)
                layer_prior += [activity, mean, var]
            new.append(type(priors[0])(*layer_prior))
        priors = new
        noise_var = regression_noise_variance([r.noise_statistic for r in results],
                                              [len(p) for p in parts])
        assert math.isfinite(noise_var) and noise_var > 0
        for p in priors:
            assert all(bool(torch.isfinite(t).all()) for t in p)
    assert all(isinstance(c, int) and c >= 0 for c in clips.values())
    print(f"13-64-64-1: v = {noise_var:.3f}, clips {clips}")


def test_classification_784_128_10_client_pass_has_no_nan():
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(784, 100, generator=gen, dtype=F64)
    labels = torch.randint(0, 10, (100,), generator=gen)
    priors = random_layer_priors([784, 128, 10], gen, activity=0.5)
    res = tdamp_client(x, labels, priors, 1.0, likelihood="probit", batch_size=100, sweeps=3,
                       settings=DampSettings(damping=0.5))
    assert all(bool(torch.isfinite(t).all()) for p in res.posterior for t in p)
    mu, second = res.noise_statistic
    assert math.isfinite(mu) and second > mu * mu
    assert all(isinstance(c, int) and c >= 0 for c in res.clips.values())


def test_probit_tdamp_with_minibatch_pasp_learns_a_teacher():
    """20-32-10 on 2000 zero-mean examples labelled by the argmax of a random linear map:
    2 rounds of TDAMP (batch 100, 3 sweeps, damping 0.5) with v from eqs. 21-23. Measured
    test accuracy 0.851 (chance 0.1). Inputs must be centred: on non-negative inputs the
    same run stays at chance (docs/em-tdamp/module-a.md, Sec. 6.6)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(20, 3000, generator=gen, dtype=F64)
    teacher = torch.randn(10, 20, generator=gen, dtype=F64)
    labels = (teacher @ x).argmax(0)
    priors = random_layer_priors([20, 32, 10], gen)
    noise_var = 1.0
    for _ in range(2):
        res = tdamp_client(x[:, :2000], labels[:2000], priors, noise_var, likelihood="probit",
                           batch_size=100, sweeps=3, settings=DampSettings(damping=0.5),
                           generator=gen)
        priors = res.posterior
        mu, second = res.noise_statistic
        noise_var = classification_noise_variance([mu], [second], [2000], noise_var).value
    predicted = mlp_forward(layer_means(priors), x[:, 2000:]).argmax(0)
    accuracy = float((predicted == labels[2000:]).double().mean())
    print(f"probit 20-32-10: test accuracy {accuracy:.3f}, v {noise_var:.3f}")
    assert accuracy > 0.8


def test_invalid_arguments_are_one_line_value_errors():
    priors = random_layer_priors([3, 1], torch.Generator().manual_seed(0))
    x = torch.zeros(3, 4, dtype=F64)
    with pytest.raises(ValueError, match="targets"):
        tdamp_client(x, torch.zeros(1, 5, dtype=F64), priors, 1.0)
    with pytest.raises(ValueError, match="likelihood"):
        tdamp_client(x, torch.zeros(1, 4, dtype=F64), priors, 1.0, likelihood="softmax")
    with pytest.raises(ValueError, match="batch_size"):
        tdamp_client(x, torch.zeros(1, 4, dtype=F64), priors, 1.0, tau_max=0)
