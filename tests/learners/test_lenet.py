"""BayesianLeNet: sizes, the batched forward and gradient against a plain torch.nn LeNet
row by row, row independence, shared vs per-row inputs, init, errors."""

from __future__ import annotations

import doctest
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bflnet.learners.langevin.langevin import LocalObjective
from bflnet.learners.models import lenet
from bflnet.learners.models.classifiers import ParticleModel
from bflnet.learners.models.lenet import CDBFL_WIDTHS, BayesianLeNet

DT = torch.float64
# small non-square maps (H != W catches a swapped axis); two 5x5 convs + pools leave 5 x 4
H, W, N, B, C = 34, 30, 3, 4, 5
SMALL = {"conv1": 3, "conv2": 4, "fc1": 7, "fc2": 6}


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def small(**kwargs) -> BayesianLeNet:
    opts = {**SMALL, "dtype": DT, "prior_var": 0.5, **kwargs}
    return BayesianLeNet(H, W, C, **opts)


def data(model: BayesianLeNet, b: int = B, seed: int = 1, rows: int | None = None):
    g = gen(seed)
    lead = (b,) if rows is None else (rows, b)
    x = torch.rand(*lead, model.height, model.width, generator=g, dtype=model.dtype)
    return x, torch.randint(0, model.n_classes, lead, generator=g)


def theta_for(model: BayesianLeNet, n: int = N, seed: int = 2) -> torch.Tensor:
    # scaled init plus non-zero biases, so that every parameter matters
    return model.init_particles(n, gen(seed)) + 0.05 * torch.randn(
        n, model.d, generator=gen(seed + 100), dtype=model.dtype)


def reference(model: BayesianLeNet, row: torch.Tensor) -> nn.Sequential:
    """A plain torch.nn LeNet holding one row's weights (nn.Linear's weight is (out, in))."""
    w = model.widths
    act = nn.ReLU if model.activation == "relu" else nn.Tanh
    pool = nn.AvgPool2d if model.pool == "avg" else nn.MaxPool2d
    net = nn.Sequential(
        nn.Conv2d(1, w["conv1"], 5, padding=model.padding), act(), pool(2),
        nn.Conv2d(w["conv1"], w["conv2"], 5), act(), pool(2), nn.Flatten(),
        nn.Linear(model.n_flat, w["fc1"]), act(), nn.Linear(w["fc1"], w["fc2"]), act(),
        nn.Linear(w["fc2"], model.n_classes)).to(model.dtype)
    p = {k: v[0] for k, v in model.unpack(row.unsqueeze(0)).items()}
    with torch.no_grad():
        for layer, name in zip((0, 3, 7, 9, 11), ("conv1", "conv2", "fc1", "fc2", "fc3"),
                               strict=True):
            weight = p[f"{name}_w"]
            net[layer].weight.copy_(weight.T if name.startswith("fc") else weight)
            net[layer].bias.copy_(p[f"{name}_b"])
    return net


def reference_grad(model: BayesianLeNet, net: nn.Sequential, x: torch.Tensor,
                   y: torch.Tensor) -> torch.Tensor:
    """∇ Σ_b log softmax(net(x_b))[y_b] in the model's row layout."""
    ll = -F.cross_entropy(net(x.unsqueeze(1)), y, reduction="sum")
    grads = torch.autograd.grad(ll, list(net.parameters()))
    named = dict(zip([f"{n}_{k}" for n in ("conv1", "conv2", "fc1", "fc2", "fc3")
                      for k in ("w", "b")], grads, strict=True))
    return model.pack({k: (v.T if k.startswith("fc") and k.endswith("_w") else v).unsqueeze(0)
                       for k, v in named.items()})[0]


# -- sizes ------------------------------------------------------------------------------
def test_parameter_counts_on_radar_maps():
    classic = BayesianLeNet()
    assert (classic.height, classic.width, classic.n_classes) == (256, 63, 10)
    assert classic.d == 1_419_146
    assert classic.n_flat == 16 * 61 * 12 and classic.shapes["fc1_w"] == (11_712, 120)
    preset = BayesianLeNet.cdbfl()
    assert preset.widths == CDBFL_WIDTHS
    assert preset.d == 2_705_019 and abs(preset.d / 2.7e6 - 1) < 0.002
    assert BayesianLeNet(conv2=32).d == 2_827_002
    assert BayesianLeNet.cdbfl(fc1=230).d == 2_716_816
    assert BayesianLeNet(28, 28).d == 44_426
    assert BayesianLeNet(28, 28, padding=2).d == 61_706         # LeNet-5 on 32 x 32
    assert isinstance(classic, ParticleModel) and classic.n_in == 256 * 63


def test_flops_count_multiply_adds():
    macs = BayesianLeNet().macs_per_example()
    assert macs == {"conv1": 6 * 25 * 252 * 59, "conv2": 16 * 6 * 25 * 122 * 25,
                    "fc1": 11_712 * 120, "fc2": 120 * 84, "fc3": 84 * 10}
    total = sum(macs.values())
    assert BayesianLeNet().flops_per_example() == 2.0 * (3 * total - macs["conv1"])


# -- forward and gradient against torch.nn, row by row -----------------------------------
CONFIGS = [{}, {"pool": "max"}, {"activation": "tanh"},
           {"activation": "tanh", "pool": "max", "padding": 2}]


@pytest.mark.parametrize("opts", CONFIGS)
def test_logits_equal_torch_nn_reference_per_row(opts):
    model = small(**opts)
    theta = theta_for(model)
    x, _ = data(model)
    logits = model.logits(theta, x)
    assert logits.shape == (N, B, C)
    for n in range(N):
        torch.testing.assert_close(logits[n], reference(model, theta[n])(x.unsqueeze(1)),
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("opts", CONFIGS)
def test_likelihood_gradient_equals_autograd_on_reference(opts):
    model = small(**opts)
    theta = theta_for(model)
    x, y = data(model)
    out = torch.full_like(theta, float("nan"))
    grad = model.log_likelihood_grad(theta, x, y, out=out)
    assert grad is out and grad.shape == (N, model.d) and not grad.requires_grad
    for n in range(N):
        net = reference(model, theta[n])
        torch.testing.assert_close(grad[n], reference_grad(model, net, x, y),
                                   rtol=1e-9, atol=1e-10)
    ll = model.log_likelihood(theta, x, y)
    ref = torch.stack([-F.cross_entropy(reference(model, t)(x.unsqueeze(1)), y,
                                        reduction="sum") for t in theta])
    torch.testing.assert_close(ll, ref, rtol=1e-10, atol=1e-10)


def test_radar_sized_maps_match_reference():
    """The real 256 x 63 shape in float32 (a few maps, two rows)."""
    model = BayesianLeNet(pool="max")
    theta = model.init_particles(2, gen(3))
    g = gen(4)
    x = torch.rand(2, 256, 63, generator=g)
    y = torch.randint(0, 10, (2,), generator=g)
    logits = model.logits(theta, x)
    grad = model.log_likelihood_grad(theta, x, y)
    for n in range(2):
        net = reference(model, theta[n])
        torch.testing.assert_close(logits[n], net(x.unsqueeze(1)), rtol=1e-4, atol=1e-5)
        ref = reference_grad(model, net, x, y)
        torch.testing.assert_close(grad[n], ref, rtol=1e-3, atol=1e-5 * ref.abs().max())


def test_pack_unpack_round_trip_and_layout():
    model = small()
    theta = theta_for(model)
    p = model.unpack(theta)
    assert list(p) == ["conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b",
                       "fc2_w", "fc2_b", "fc3_w", "fc3_b"]
    assert p["conv2_w"].shape == (N, 4, 3, 5, 5) and p["fc1_w"].shape == (N, 4 * 5 * 4, 7)
    assert torch.equal(model.pack(p), theta)
    assert p["fc3_b"].data_ptr() == theta[:, -C:].data_ptr()          # views, not copies
    assert sum(math.prod(s) for s in model.shapes.values()) == model.d


def test_log_prior_and_its_gradient_closed_form():
    model = small(prior_var=0.3)
    theta = theta_for(model).requires_grad_(True)
    lp = model.log_prior(theta)
    expected = (-theta.square().sum(1) / (2 * 0.3)
                - 0.5 * model.d * math.log(2 * math.pi * 0.3))
    torch.testing.assert_close(lp, expected)
    (grad,) = torch.autograd.grad(lp.sum(), theta)
    torch.testing.assert_close(grad, -theta.detach() / 0.3)


# -- batching ------------------------------------------------------------------------------
def test_rows_are_independent():
    model = small()
    theta = theta_for(model)
    x, y = data(model)
    other = theta.clone()
    other[2] = theta_for(model, 1, seed=9)[0]
    for fn in (model.logits, lambda t, x: model.log_likelihood_grad(t, x, y)):
        a, b = fn(theta, x), fn(other, x)
        torch.testing.assert_close(a[:2], b[:2], rtol=0, atol=1e-13)
        assert not torch.allclose(a[2], b[2])


def test_shared_x_per_row_x_and_flat_maps():
    model = small()
    theta = theta_for(model)
    x, y = data(model, rows=N)                                     # (N, B, H, W), (N, B)
    per_row = model.logits(theta, x)
    grad = model.log_likelihood_grad(theta, x, y)
    for n in range(N):                       # row n on its own batch == row n alone, shared
        alone = theta[n:n + 1]
        torch.testing.assert_close(per_row[n], model.logits(alone, x[n])[0])
        torch.testing.assert_close(grad[n], model.log_likelihood_grad(alone, x[n], y[n])[0])
    shared = x[0]                                                 # one batch for every row
    torch.testing.assert_close(model.logits(theta, shared.expand(N, -1, -1, -1)),
                               model.logits(theta, shared))
    torch.testing.assert_close(model.logits(theta, shared.flatten(1)),     # (B, H*W)
                               model.logits(theta, shared))
    torch.testing.assert_close(model.logits(theta, x.flatten(2)), per_row)  # (N, B, H*W)
    f32 = model.logits(theta, shared.float())                      # x follows theta's dtype
    assert f32.dtype == DT


def test_predict_proba_without_graph_and_in_chunks():
    model = small()
    theta = theta_for(model).requires_grad_(True)
    x, _ = data(model, b=7)
    probs = model.predict_proba(theta, x)
    assert not probs.requires_grad and probs.shape == (N, 7, C)
    torch.testing.assert_close(probs, torch.softmax(model.logits(theta, x), -1).detach())
    tiny = small(max_activation=1)                  # one example per chunk
    torch.testing.assert_close(tiny.predict_proba(theta, x), probs)
    xr, _ = data(model, b=7, rows=N)
    torch.testing.assert_close(tiny.predict_proba(theta, xr),
                               torch.softmax(model.logits(theta, xr), -1).detach())
    assert model.predict_proba(theta, x[:0]).shape == (N, 0, C)


def test_features_feed_the_output_layer():
    model = small()
    theta = theta_for(model)
    x, _ = data(model)
    h = model.features(theta, x)
    p = model.unpack(theta)
    assert h.shape == (N, B, 6) and (h >= 0).all()
    torch.testing.assert_close(model.logits(theta, x), h @ p["fc3_w"] + p["fc3_b"][:, None])


def test_langevin_objective_uses_the_model():
    """The Langevin learners' f_k: the closed-form prior path and the model's gradient."""
    model = small()
    x, y = data(model, b=6)
    obj = LocalObjective(model, {0: (x.flatten(1), y), 1: (x, y)}, batch_size=6,
                         dtype=DT, device=torch.device("cpu"))
    theta = theta_for(model, 1)
    expected = -model.log_likelihood_grad(theta, x, y) + theta / (0.5 * 2)
    for node in (0, 1):
        torch.testing.assert_close(obj.grad(node, theta, gen()), expected)


def test_posterior_predictive_on_flat_maps():
    """bflnet.learners.evaluation takes (B, n_in) inputs: flattened maps."""
    from bflnet.learners.evaluation import posterior_predictive, predictive_metrics

    model = small()
    theta = theta_for(model)
    x, y = data(model, b=5)
    probs = posterior_predictive(model, theta, x.flatten(1), batch_size=2)
    torch.testing.assert_close(probs, model.predict_proba(theta, x).mean(0))
    assert set(predictive_metrics(model, theta, x.flatten(1), y)) >= {"accuracy", "nll"}


# -- init ----------------------------------------------------------------------------------
def test_init_particles_deterministic():
    model = small()
    a = model.init_particles(4, gen(7))
    assert torch.equal(a, model.init_particles(4, gen(7)))
    assert not torch.equal(a, model.init_particles(4, gen(8)))
    assert a.shape == (4, model.d) and a.dtype == DT


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_init_scale_per_layer(activation):
    model = BayesianLeNet(32, 32, activation=activation)
    theta = model.init_particles(40, gen(5))
    gain2 = 2.0 if activation == "relu" else 1.0
    fan_in = {"conv1_w": 25, "conv2_w": 6 * 25, "fc1_w": 400, "fc2_w": 120, "fc3_w": 84}
    for name, block in model.unpack(theta).items():
        if name.endswith("_b"):
            assert torch.equal(block, torch.zeros_like(block))
            continue
        target = math.sqrt((1.0 if name == "fc3_w" else gain2) / fan_in[name])
        assert block.std().item() == pytest.approx(target, rel=0.06), name
        assert abs(block.mean().item()) < 0.06 * target, name
    prior = BayesianLeNet(32, 32, prior_var=0.25, init="prior").init_particles(4, gen(5))
    assert prior.std().item() == pytest.approx(0.5, rel=0.01)
    assert prior.mean().abs().item() < 0.01


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"conv1": 0}, "conv1: must be an integer >= 1"),
    ({"fc2": -3}, "fc2: must be an integer >= 1"),
    ({"conv2": 2.5}, "conv2: must be an integer >= 1"),
    ({"fc1": True}, "fc1: must be an integer >= 1"),
    ({"height": 15}, "height: input 15x63 with padding 0 is too small"),
    ({"width": 14, "padding": 0}, "width: input 256x14 with padding 0 is too small"),
    ({"padding": -1}, "padding: must be an integer >= 0"),
    ({"activation": "gelu"}, "activation: must be 'relu' or 'tanh'"),
    ({"pool": "sum"}, "pool: must be 'avg' or 'max'"),
    ({"prior_var": 0.0}, "prior_var: must be finite and > 0"),
    ({"init": "zeros"}, "init: must be 'scaled' or 'prior'"),
])
def test_constructor_errors_are_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        BayesianLeNet(**kwargs)
    assert "\n" not in str(err.value)


def test_smallest_inputs_work():
    assert BayesianLeNet(16, 16).p2_hw == (1, 1)
    assert BayesianLeNet(12, 12, padding=2).p2_hw == (1, 1)


@pytest.mark.parametrize(("call", "match"), [
    (lambda m, t, x, y: m.logits(t, x[:, :, :-1]), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t, x.transpose(1, 2)), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t, x.expand(N + 1, -1, -1, -1)), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t, x.unsqueeze(1)), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t, x.flatten()), "x: expected shape"),
    (lambda m, t, x, y: m.logits(t[:, 1:], x), "theta: expected shape"),
    (lambda m, t, x, y: m.log_likelihood_grad(t, x, y[:-1]), "y: expected shape"),
    (lambda m, t, x, y: m.log_likelihood_grad(t, x, y, out=t[:, :5]), "out: expected"),
    (lambda m, t, x, y: m.init_particles(0, gen()), "n: must be >= 1"),
])
def test_shape_errors_are_one_line(call, match):
    model = small()
    theta = theta_for(model)
    x, y = data(model)
    with pytest.raises(ValueError, match=match) as err:
        call(model, theta, x, y)
    assert "\n" not in str(err.value)


def test_doctests():
    result = doctest.testmod(lenet)
    assert result.attempted > 0 and result.failed == 0


def test_predict_proba_runs_the_convolutions_on_cache_sized_sub_batches(monkeypatch):
    """Sub-batches of the convolutions (one map each here) give the one-pass result."""
    import bflnet.learners.models.lenet as lenet

    model = small()
    theta = theta_for(model)
    x, _ = data(model, b=7)
    xr, _ = data(model, b=7, rows=N)
    whole = model.predict_proba(theta, x), model.predict_proba(theta, xr)
    calls = []
    conv_flat = BayesianLeNet._conv_flat
    monkeypatch.setattr(lenet, "CACHE_ACTIVATIONS", 1)
    monkeypatch.setattr(BayesianLeNet, "_conv_flat",
                        lambda self, p, maps, n: calls.append(maps.shape[-3])
                        or conv_flat(self, p, maps, n))
    torch.testing.assert_close(model.predict_proba(theta, x), whole[0])
    torch.testing.assert_close(model.predict_proba(theta, xr), whole[1])
    assert calls == [1] * 14
    assert model.predict_proba(theta, x[:0]).shape == (N, 0, C)
