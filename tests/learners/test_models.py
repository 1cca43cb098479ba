"""Particle models: batched forward, likelihood, gradients and prior vs per-particle loops."""

from __future__ import annotations

import doctest
import math

import pytest
import torch
import torch.nn.functional as F

from bflnet.learners.models import classifiers as models
from bflnet.learners.models.classifiers import BayesianMLP, LogisticRegression, ParticleModel

N, B, N_IN, H, C = 4, 6, 5, 3, 3
DT = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def data(seed: int = 1, n_in: int = N_IN) -> tuple[torch.Tensor, torch.Tensor]:
    g = gen(seed)
    return torch.randn(B, n_in, generator=g, dtype=DT), torch.randint(0, C, (B,), generator=g)


def mlp() -> BayesianMLP:
    return BayesianMLP(N_IN, H, C, prior_var=0.7, dtype=DT, init="prior")


def mlp_reference(theta_n: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """One particle, written out by hand: θ = [W1 (n_in×H), b1, W2 (H×C), b2]."""
    i = 0
    w1 = theta_n[i:i + N_IN * H].reshape(N_IN, H)
    i += N_IN * H
    b1 = theta_n[i:i + H]
    i += H
    w2 = theta_n[i:i + H * C].reshape(H, C)
    b2 = theta_n[i + H * C:]
    return torch.relu(x @ w1 + b1) @ w2 + b2


def logreg_reference(theta_n: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return x @ theta_n[:N_IN * C].reshape(N_IN, C) + theta_n[N_IN * C:]


CASES = [(mlp, mlp_reference),
         (lambda: LogisticRegression(N_IN, C, prior_var=2.0, dtype=DT, init="prior"),
          logreg_reference)]


def test_sizes_and_protocol():
    assert BayesianMLP().d == 784 * 100 + 100 + 100 * 10 + 10 == 79_510
    assert LogisticRegression(100, 10).d == 1010
    for model in (BayesianMLP(), LogisticRegression(3, 2)):
        assert isinstance(model, ParticleModel) and model.n_classes in (10, 2)
    assert BayesianMLP().flops_per_example() == pytest.approx(6 * (784 * 100 + 100 * 10))
    assert LogisticRegression(100, 10).flops_per_example() == pytest.approx(6 * 1000)


@pytest.mark.parametrize(("make", "reference"), CASES)
def test_batched_forward_equals_per_particle_loop(make, reference):
    model = make()
    theta = model.init_particles(N, gen())
    x, _ = data()
    logits = model.logits(theta, x)
    assert logits.shape == (N, B, C) and logits.dtype == DT
    expected = torch.stack([reference(theta[n], x) for n in range(N)])
    torch.testing.assert_close(logits, expected)
    torch.testing.assert_close(model.predict_proba(theta, x), torch.softmax(expected, -1))
    # One batch per particle, (N, B, n_in).
    xs = torch.randn(N, B, N_IN, generator=gen(9), dtype=DT)
    expected = torch.stack([reference(theta[n], xs[n]) for n in range(N)])
    torch.testing.assert_close(model.logits(theta, xs), expected)


@pytest.mark.parametrize(("make", "reference"), CASES)
def test_log_likelihood_is_minus_cross_entropy_times_batch(make, reference):
    model = make()
    theta = model.init_particles(N, gen())
    x, y = data()
    ll = model.log_likelihood(theta, x, y)
    assert ll.shape == (N,)
    expected = torch.stack([-F.cross_entropy(reference(theta[n], x), y) * B for n in range(N)])
    torch.testing.assert_close(ll, expected)
    ys = torch.randint(0, C, (N, B), generator=gen(4))  # per-particle labels
    expected = torch.stack([-F.cross_entropy(reference(theta[n], x), ys[n], reduction="sum")
                            for n in range(N)])
    torch.testing.assert_close(model.log_likelihood(theta, x, ys.int()), expected)


@pytest.mark.parametrize(("make", "reference"), CASES)
def test_per_particle_gradients_from_one_backward(make, reference):
    model = make()
    x, y = data()
    theta = model.init_particles(N, gen()).requires_grad_()
    (model.log_likelihood(theta, x, y) + model.log_prior(theta)).sum().backward()
    for n in range(N):
        t = theta[n].detach().clone().requires_grad_()
        logp = -F.cross_entropy(reference(t, x), y, reduction="sum") \
            - 0.5 * t.square().sum() / model.prior_var
        (grad,) = torch.autograd.grad(logp, t)
        torch.testing.assert_close(theta.grad[n], grad)


def test_log_prior_closed_form():
    model = mlp()
    theta = model.init_particles(N, gen())
    expected = torch.distributions.Normal(0.0, math.sqrt(0.7)).log_prob(theta).sum(dim=1)
    torch.testing.assert_close(model.log_prior(theta), expected)
    zero = torch.zeros(1, model.d, dtype=DT)
    torch.testing.assert_close(model.log_prior(zero),
                               torch.tensor([-0.5 * model.d * math.log(2 * math.pi * 0.7)],
                                            dtype=DT))


def test_logistic_regression_by_hand():
    model = LogisticRegression(2, 2, dtype=DT)
    theta = torch.tensor([[1.0, -1.0, 0.0, 2.0, 0.5, -0.5]], dtype=DT)  # W=[[1,-1],[0,2]]
    x = torch.tensor([[1.0, 1.0]], dtype=DT)
    torch.testing.assert_close(model.logits(theta, x), torch.tensor([[[1.5, 0.5]]], dtype=DT))
    p0 = 1 / (1 + math.exp(-1.0))
    torch.testing.assert_close(model.log_likelihood(theta, x, torch.tensor([0])),
                               torch.tensor([math.log(p0)], dtype=DT))


def test_unpack_gives_views_and_pack_inverts():
    model = mlp()
    theta = model.init_particles(N, gen())
    params = model.unpack(theta)
    assert {k: tuple(v.shape) for k, v in params.items()} == {
        "W1": (N, N_IN, H), "b1": (N, H), "W2": (N, H, C), "b2": (N, C)}
    assert params["W1"].data_ptr() == theta.data_ptr()  # a view, no copy
    torch.testing.assert_close(model.pack(params), theta)


def test_features_are_the_hidden_layer():
    model = mlp()
    theta = model.init_particles(N, gen())
    x, _ = data()
    p = model.unpack(theta)
    expected = torch.relu(torch.einsum("bi,nih->nbh", x, p["W1"]) + p["b1"][:, None])
    torch.testing.assert_close(model.features(theta, x), expected)


def test_init_particles_deterministic_scaled_and_prior():
    scaled = LogisticRegression(50, 10, prior_var=4.0)
    a, b = scaled.init_particles(200, gen(3)), scaled.init_particles(200, gen(3))
    assert a.shape == (200, 510) and a.dtype == torch.float32
    torch.testing.assert_close(a, b)
    w = scaled.unpack(a)
    assert (w["b"] == 0).all()
    assert w["W"].std().item() == pytest.approx(1 / math.sqrt(51), rel=0.03)
    prior = LogisticRegression(50, 10, prior_var=4.0, init="prior").init_particles(200, gen())
    assert prior.var().item() == pytest.approx(4.0, rel=0.03)


def test_dtype_of_x_follows_theta():
    model = LogisticRegression(N_IN, C)  # float32
    theta = model.init_particles(2, gen())
    x, y = data()  # float64
    assert model.log_likelihood(theta, x, y).dtype == torch.float32


@pytest.mark.parametrize(("call", "match"), [
    (lambda m, t, x, y: m.logits(t[:, :-1], x), r"theta: expected shape \(N, d="),
    (lambda m, t, x, y: m.logits(t[0], x), "theta"),
    (lambda m, t, x, y: m.logits(t, x[:, :-1]), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t, x.expand(N + 1, B, N_IN)), "x: expected shape"),
    (lambda m, t, x, y: m.log_likelihood(t, x, y[:-1]), "y: expected shape"),
    (lambda m, t, x, y: m.log_prior(t.T), "theta"),
])
def test_shape_errors_are_one_line(call, match):
    model = mlp()
    theta = model.init_particles(N, gen())
    x, y = data()
    with pytest.raises(ValueError, match=match) as info:
        call(model, theta, x, y)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"prior_var": 0.0}, "prior_var"), ({"n_hidden": 0}, "n_hidden"),
    ({"init": "xavier"}, "init"), ({"dtype": torch.int64}, "dtype"),
])
def test_constructor_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BayesianMLP(**kwargs)


def test_doctests():
    result = doctest.testmod(models)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- hand-written gradient


def autograd_grad(model, theta, x, y):
    t = theta.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(model.log_likelihood(t, x, y).sum(), t)
    return grad


GRAD_MODELS = {
    "mlp": mlp,
    "mlp_wide": lambda: BayesianMLP(N_IN, 40, 7, prior_var=2.0, dtype=DT, init="prior"),
    "logreg": lambda: LogisticRegression(N_IN, C, prior_var=2.0, dtype=DT, init="prior"),
}


@pytest.mark.parametrize("name", list(GRAD_MODELS))
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("b", [1, 6, 33])
@pytest.mark.parametrize("x_layout", ["shared", "per_particle"])
@pytest.mark.parametrize("y_layout", ["shared", "per_particle"])
@pytest.mark.parametrize("with_out", [False, True])
def test_log_likelihood_grad_equals_autograd(name, n, b, x_layout, y_layout, with_out):
    model = GRAD_MODELS[name]()
    g = gen(n * 100 + b)
    theta = model.init_particles(n, g)
    x = torch.randn(*((b,) if x_layout == "shared" else (n, b)), N_IN, generator=g, dtype=DT)
    y = torch.randint(0, model.n_classes, (b,) if y_layout == "shared" else (n, b),
                      generator=g)
    expected = autograd_grad(model, theta, x, y)
    if with_out:
        out = torch.full((n, model.d), float("nan"), dtype=DT)  # every entry gets written
        grad = model.log_likelihood_grad(theta, x, y, out=out)
        assert grad is out
    else:
        grad = model.log_likelihood_grad(theta, x, y)
    assert grad.shape == (n, model.d) and grad.dtype == DT and not grad.requires_grad
    torch.testing.assert_close(grad, expected, rtol=1e-12, atol=1e-12)


def test_log_likelihood_grad_fills_out_in_place_blockwise():
    """The W1/b1/W2/b2 blocks land where unpack puts them (row-major W per particle)."""
    model = mlp()
    theta = model.init_particles(N, gen())
    x, y = data()
    out = torch.zeros(N, model.d, dtype=DT)
    ptr = out.data_ptr()
    assert model.log_likelihood_grad(theta, x, y, out=out) is out and out.data_ptr() == ptr
    got, want = model.unpack(out), model.unpack(autograd_grad(model, theta, x, y))
    for key in ("W1", "b1", "W2", "b2"):
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12)
    # dW1 = xᵀ dh for particle 0, by hand
    p = model.unpack(theta)
    pre = x @ p["W1"][0] + p["b1"][0]
    dlogits = F.one_hot(y, C).to(DT) - torch.softmax(torch.relu(pre) @ p["W2"][0]
                                                      + p["b2"][0], -1)
    dh = (dlogits @ p["W2"][0].T) * (pre > 0)
    torch.testing.assert_close(got["W1"][0], x.T @ dh)
    # the same buffer, reused, is overwritten entirely
    x2, y2 = data(seed=7)
    model.log_likelihood_grad(theta, x2, y2, out=out)
    torch.testing.assert_close(out, autograd_grad(model, theta, x2, y2), rtol=1e-12,
                               atol=1e-12)


def test_log_likelihood_grad_with_grad_tracking_theta_and_casts():
    model = LogisticRegression(N_IN, C)  # float32 theta, float64 x, int32 labels
    theta = model.init_particles(3, gen()).requires_grad_()
    x, y = data()
    grad = model.log_likelihood_grad(theta, x, y.int())
    assert grad.dtype == torch.float32 and not grad.requires_grad
    torch.testing.assert_close(grad, autograd_grad(model, theta, x, y))


class DoubledLogitsMLP(BayesianMLP):
    """Redefines the forward maths only: the hand-written gradient no longer applies."""

    def logits(self, theta, x):
        return 2.0 * super().logits(theta, x)


def test_log_likelihood_grad_falls_back_to_autograd_for_a_redefined_forward():
    model = DoubledLogitsMLP(N_IN, H, C, dtype=DT, init="prior")
    assert not model._inherits_maths() and mlp()._inherits_maths()
    theta = model.init_particles(N, gen())
    x, y = data()
    out = torch.empty(N, model.d, dtype=DT)
    assert model.log_likelihood_grad(theta, x, y, out=out) is out
    torch.testing.assert_close(out, autograd_grad(model, theta, x, y))


@pytest.mark.parametrize("make_out", [
    lambda d: torch.empty(N, d - 1, dtype=DT),
    lambda d: torch.empty(N + 1, d, dtype=DT),
    lambda d: torch.empty(N, d, dtype=torch.float32),
])
def test_log_likelihood_grad_errors_are_one_line(make_out):
    model = mlp()
    theta = model.init_particles(N, gen())
    x, y = data()
    with pytest.raises(ValueError, match="out: expected") as info:
        model.log_likelihood_grad(theta, x, y, out=make_out(model.d))
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="y: expected shape"):
        model.log_likelihood_grad(theta, x, y[:-1])
    with pytest.raises(ValueError, match="x: expected shape"):
        model.log_likelihood_grad(theta, x[:, :-1], y)


@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_logistic_regression_predictive_paths_agree(n_classes):
    """The class-major predict_proba / mean_proba (<= SMALL_SOFTMAX_CLASSES classes) against
    the softmax of the logits, to a few ulp; more classes take the direct softmax."""
    gen = torch.Generator().manual_seed(n_classes)
    model = LogisticRegression(7, n_classes)
    theta = torch.randn(5, model.d, generator=gen)
    x = torch.randn(300, 7, generator=gen)
    direct = torch.softmax(model.logits(theta, x), dim=-1)
    got = model.predict_proba(theta, x)
    assert got.shape == (5, 300, n_classes)
    torch.testing.assert_close(got, direct, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(model.mean_proba(theta, x), direct.mean(dim=0), rtol=1e-6,
                               atol=1e-7)
    if n_classes > models.SMALL_SOFTMAX_CLASSES:
        assert torch.equal(model.mean_proba(theta, x),
                           model.predict_proba(theta, x).mean(dim=0))


@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_logistic_regression_numpy_gradient(n_classes):
    """The NumPy gradient equals the torch one, from labels or from one-hot rows."""
    gen = torch.Generator().manual_seed(3)
    model = LogisticRegression(6, n_classes)
    theta = torch.randn(4, model.d, generator=gen)
    x = torch.randn(50, 6, generator=gen)
    y = torch.randint(n_classes, (50,), generator=gen)
    expected = model.log_likelihood_grad(theta, x, y).numpy()
    by_label = model.log_likelihood_grad_numpy(theta.numpy(), x.numpy(), y.numpy())
    onehot = F.one_hot(y, n_classes).float().numpy()
    by_onehot = model.log_likelihood_grad_numpy(theta.numpy(), x.numpy(), onehot)
    assert by_label.shape == theta.shape and by_label.dtype == expected.dtype
    torch.testing.assert_close(torch.from_numpy(by_label), torch.from_numpy(expected),
                               rtol=1e-5, atol=1e-5)
    assert (by_label == by_onehot).all()
