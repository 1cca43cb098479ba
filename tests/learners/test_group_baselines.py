"""The EM-TDAMP paper's baselines: the MLP against hand-written layers, the group-lasso
penalty and its gradient in closed form, energy pruning to exactly T_l groups, group-SNIP
saliency against finite differences, and the learner under FedAvg."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bflnet.learners.federated.group_baselines import (
    DenseMLP,
    GroupFedAvg,
    active_groups,
    group_lasso_penalty,
    group_saliency,
    layer_targets,
    prune_by_energy,
)
from bflnet.learners.hyper import GroupFedAvgParams

F64 = torch.float64


def tiny(likelihood: str = "gaussian", sizes=(3, 4, 2)) -> tuple[DenseMLP, torch.Tensor]:
    model = DenseMLP(list(sizes), likelihood)
    theta = model.init_particles(2, torch.Generator().manual_seed(0)).to(F64)
    return model, theta


def test_forward_and_likelihoods_match_hand_written_layers():
    model, theta = tiny()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1), dtype=F64)
    y = torch.randn(5, 2, generator=torch.Generator().manual_seed(2), dtype=F64)
    out = model.forward(theta, x)
    for n in range(2):
        (w1, b1), (w2, b2) = [(w[n], b[n]) for w, b in model.unpack(theta)]
        expected = torch.relu(x @ w1.T + b1) @ w2.T + b2
        torch.testing.assert_close(out[n], expected)
        loglik = -0.5 * ((y - expected) ** 2).sum() - 0.5 * 10 * math.log(2 * math.pi)
        torch.testing.assert_close(model.log_likelihood(theta, x, y)[n], loglik)
    soft = DenseMLP([3, 4, 2], "softmax")
    labels = torch.tensor([0, 1, 1, 0, 1])
    ce = torch.nn.functional.cross_entropy(out[0], labels, reduction="sum")
    torch.testing.assert_close(soft.log_likelihood(theta, x, labels)[0], -ce)


def test_group_lasso_penalty_and_gradient_in_closed_form():
    model = DenseMLP([2, 3, 1])
    w1 = torch.tensor([[3.0, 0.0], [4.0, 0.0], [0.0, 0.0]], dtype=F64)  # column 1 is zero
    w2 = torch.tensor([[1.0, 2.0, 2.0]], dtype=F64)
    theta = torch.cat([w1.reshape(-1), torch.zeros(3, dtype=F64), w2.reshape(-1),
                       torch.zeros(1, dtype=F64)])[None].requires_grad_(True)
    lam = 0.5
    penalty = group_lasso_penalty(model, theta, lam)
    # layer 1: sqrt(3) (5 + 0); layer 2: sqrt(1) (1 + 2 + 2)
    torch.testing.assert_close(penalty, torch.tensor([lam * (math.sqrt(3) * 5 + 5)], dtype=F64))
    penalty.sum().backward()
    (g1, gb1), (g2, _) = model.unpack(theta.grad)
    expected1 = lam * math.sqrt(3) * torch.tensor([[0.6, 0.0], [0.8, 0.0], [0.0, 0.0]],
                                                  dtype=F64)
    torch.testing.assert_close(g1[0], expected1)  # 0 at the zero column, not NaN
    torch.testing.assert_close(g2[0], lam * torch.ones(1, 3, dtype=F64))
    assert bool((gb1 == 0).all())


@pytest.mark.parametrize("density", [1.0, 0.5, 0.3, 0.1])
def test_energy_pruning_keeps_exactly_the_targets_of_largest_energy(density):
    model, theta = tiny(sizes=(10, 7, 3))
    targets = layer_targets(model.sizes, density)
    pruned = prune_by_energy(model, theta, targets)
    assert active_groups(model, pruned).tolist() == [sum(targets)] * 2
    for (w, b), (pw, pb), target in zip(model.unpack(theta), model.unpack(pruned), targets,
                                        strict=True):
        energy = w.square().sum(1)
        kept = (pw != 0).any(1)
        assert kept.sum(1).tolist() == [target, target]
        for n in range(2):  # every kept column has at least the energy of every dropped one
            if target < w.shape[2]:
                assert energy[n][kept[n]].min() >= energy[n][~kept[n]].max()
            torch.testing.assert_close(pw[n][:, kept[n]], w[n][:, kept[n]])
        torch.testing.assert_close(pb, b)
    assert targets == [max(1, round(density * 10)), max(1, round(density * 7))]


@pytest.mark.parametrize("likelihood", ["gaussian", "softmax"])
def test_group_saliency_is_the_neuron_mask_derivative(likelihood):
    model, theta = tiny(likelihood, sizes=(4, 5, 3))
    gen = torch.Generator().manual_seed(3)
    x = [torch.randn(6, 4, generator=gen, dtype=F64) for _ in range(2)]
    y = ([torch.randn(6, 3, generator=gen, dtype=F64) for _ in range(2)]
         if likelihood == "gaussian" else [torch.randint(0, 3, (6,), generator=gen)] * 2)
    batches, weights = list(zip(x, y, strict=True)), [0.25, 0.75]
    saliency = group_saliency(model, theta, batches, weights)

    def loss(t: torch.Tensor) -> torch.Tensor:
        return sum(-w * model.log_likelihood(t, xb, yb) / len(yb)
                   for (xb, yb), w in zip(batches, weights, strict=True))

    h = 1e-6
    for layer, (w0, b0, _) in enumerate(model.slices):
        n_out, n_in = model.sizes[layer + 1], model.sizes[layer]
        for n in range(n_in):
            scale = torch.ones(n_out, n_in, dtype=F64)
            scale[:, n] = 1 + h
            up, down = theta.clone(), theta.clone()
            up[:, w0:b0] = theta[:, w0:b0] * scale.reshape(-1)
            scale[:, n] = 1 - h
            down[:, w0:b0] = theta[:, w0:b0] * scale.reshape(-1)
            fd = ((loss(up) - loss(down)) / (2 * h)).abs()
            torch.testing.assert_close(saliency[layer][:, n], fd, rtol=1e-5, atol=1e-9)


def regression_agents(k: int = 2, n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((k * n + 40, 6))
    y = np.tanh(x[:, 0] + x[:, 1]) + 0.1 * rng.standard_normal(len(x))
    agents = {a: (x[a * n:(a + 1) * n], y[a * n:(a + 1) * n]) for a in range(k)}
    return agents, (x[k * n:], y[k * n:])


def run_rounds(learner: GroupFedAvg, rounds: int) -> torch.Tensor:
    rngs = {a: np.random.default_rng(10 + a) for a in learner.agents}
    state = learner.init(np.random.default_rng(0))
    for _ in range(rounds):
        state = learner.merge(state, [learner.local_update(a, state, None, rngs[a])
                                      for a in learner.agents])
    return state


def test_group_snip_prunes_at_initialisation_and_stays_pruned():
    agents, test = regression_agents()
    model = DenseMLP([6, 8, 1])
    params = GroupFedAvgParams(method="group-snip", target_density=0.5, optimizer="adam",
                               lr=0.01, local_steps=3, batch_size=16)
    learner = GroupFedAvg(model, agents, params, eval_data=test)
    start = learner.init(np.random.default_rng(0))
    assert active_groups(model, start).tolist() == [3 + 4]
    state = run_rounds(learner, 4)
    alive0 = [(w != 0).any(1) for w, _ in model.unpack(start)]
    alive = [(w != 0).any(1) for w, _ in model.unpack(state)]
    assert all(bool((a == b).all()) for a, b in zip(alive0, alive, strict=True))
    metrics = learner.evaluate(state)
    assert metrics["active_groups"] == metrics["target_groups"] == 7
    assert metrics["test_nmse"] == metrics["test_nmse_dense"]  # already at the target


def test_plain_learns_and_group_lasso_shrinks_groups():
    agents, test = regression_agents()
    model = DenseMLP([6, 8, 1])
    common = dict(optimizer="adam", lr=0.01, local_steps=10, batch_size=32)
    plain = GroupFedAvg(model, agents, GroupFedAvgParams(**common), eval_data=test)
    lasso = GroupFedAvg(model, agents, GroupFedAvgParams(method="group-lasso", group_lasso=0.05,
                                                         **common), eval_data=test)
    first = plain.evaluate(plain.init(np.random.default_rng(0)))["test_nmse"]
    plain_state, lasso_state = run_rounds(plain, 15), run_rounds(lasso, 15)
    assert plain.evaluate(plain_state)["test_nmse"] < 0.5 * first
    norms = [float(group_lasso_penalty(model, s, 1.0)) for s in (plain_state, lasso_state)]
    assert norms[1] < 0.7 * norms[0]


@pytest.mark.parametrize("overrides, message", [
    ({"method": "group-lasso"}, "group_lasso: must be > 0 with method='group-lasso'"),
    ({"group_lasso": 0.1}, "group_lasso: used only with method='group-lasso'"),
    ({"target_density": float("nan")}, "target_density: must be"),
    ({"target_density": 0.0}, "target_density: must be"),
    ({"group_lasso": 1e308, "method": "group-lasso"}, "group_lasso: must be"),
    ({"method": "snip"}, "method: must be one of"),
])
def test_bad_params_are_one_line_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        GroupFedAvgParams(**overrides)


def test_learner_refuses_batched_agents():
    agents, _ = regression_agents()
    with pytest.raises(ValueError, match="batch_agents: not supported"):
        GroupFedAvg(DenseMLP([6, 4, 1]), agents, GroupFedAvgParams(batch_agents=True))
