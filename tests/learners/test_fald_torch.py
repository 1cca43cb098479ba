"""TorchFALD's batched devices against the one-by-one path: the same draws from each
device's stream, the same changes up to float rounding, whatever the model's path (the
fused ``sgd_step`` of the MLP, the batched gradient of logistic regression) and however
the devices' minibatch sizes group them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bflnet.learners.langevin.fald_torch import TorchFALD
from bflnet.learners.langevin.langevin import LocalObjective
from bflnet.learners.models.classifiers import BayesianMLP, LogisticRegression

N_IN = 12


def shards(sizes: list[int], seed: int = 0) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return {k: (rng.random((n, N_IN), dtype=np.float32), rng.integers(0, 3, n))
            for k, n in enumerate(sizes)}


def both_paths(model, data, **kw) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """The changes of every device batched and one by one from the same sample and seeds,
    and a draw from each path's streams afterwards."""
    batched = TorchFALD(model, data, **kw)
    looped = TorchFALD(model, data, batch_agents=False, **kw)
    theta = batched.init(np.random.default_rng(1), (model.d,))
    out, after = [], []
    for learner in (batched, looped):
        rngs = [np.random.default_rng(100 + k) for k in range(len(data))]
        out.append(learner.local_updates(theta, rngs))
        after.append([int(r.integers(2**62)) for r in rngs])
    return out[0], out[1], after[0], after[1]


@pytest.mark.parametrize("model", [BayesianMLP(N_IN, 7, 3), LogisticRegression(N_IN, 3)],
                         ids=["mlp-fused", "logistic-batched-grad"])
@pytest.mark.parametrize("local_steps", [1, 3])
def test_batched_devices_equal_the_one_by_one_path(model, local_steps):
    data = shards([40] * 5)
    new, old, after_new, after_old = both_paths(model, data, step_size=1e-3,
                                                local_steps=local_steps, batch_size=16)
    assert new.shape == (5, model.d) and new.dtype == np.float64
    assert after_new == after_old  # each stream gave the same number of draws
    scale = np.abs(old).max()
    assert scale > 1e-3
    np.testing.assert_allclose(new, old, rtol=0, atol=2e-6 * scale)
    # the devices differ (own minibatches and noises), so the match is not trivial
    assert np.abs(new[0] - new[1]).max() > 100 * 2e-6 * scale


def test_devices_with_other_minibatch_sizes_run_as_their_own_stacks_in_order():
    # batch 16: devices 1 and 3 hold fewer rows (whole-set minibatches, other scales)
    data = shards([40, 10, 40, 12, 30])
    model = BayesianMLP(N_IN, 5, 3)
    new, old, _, _ = both_paths(model, data, step_size=1e-3, local_steps=2, batch_size=16)
    np.testing.assert_allclose(new, old, rtol=0, atol=2e-6 * np.abs(old).max())


def test_one_device_and_a_subset_match_the_whole_round():
    data = shards([40] * 4)
    model = BayesianMLP(N_IN, 5, 3)
    fald = TorchFALD(model, data, step_size=1e-3, local_steps=2, batch_size=16)
    theta = fald.init(np.random.default_rng(1), (model.d,))
    every = fald.local_updates(theta, [np.random.default_rng(100 + k) for k in range(4)])
    some = fald.local_updates_of([3, 1], theta, {k: np.random.default_rng(100 + k)
                                                 for k in (1, 3)})
    one = fald.local_update(2, theta, np.random.default_rng(102))
    atol = 2e-6 * np.abs(every).max()
    np.testing.assert_allclose(some, every[[3, 1]], rtol=0, atol=atol)
    np.testing.assert_allclose(one, every[2], rtol=0, atol=atol)


def test_the_fused_step_is_the_langevin_gradient_step():
    """``sgd_step(θ, x, y, a E/M, 1 − a/(K σ²))`` is ``θ − a ∇f_k(θ)`` (the prior N(0, σ²I)
    and the likelihood scaled to the device's E_k examples)."""
    data = shards([40, 40, 40])
    model = BayesianMLP(N_IN, 6, 3, prior_var=0.5, dtype=torch.float64)
    obj = LocalObjective(model, data, 16, torch.float64, torch.device("cpu"))
    assert obj.sgd_form()
    theta = model.init_particles(3, torch.Generator().manual_seed(0))
    gens = [torch.Generator().manual_seed(k) for k in range(3)]
    x, y, scale = obj.minibatch_stack([0, 1, 2], gens)
    assert scale == 40 / 16
    a = 0.01
    fused = theta.clone()
    model.sgd_step(fused, x, y, a * scale, 1.0 - a / (3 * 0.5))
    gens = [torch.Generator().manual_seed(k) for k in range(3)]
    exact = torch.cat([theta[k:k + 1] - a * obj.grad(k, theta[k:k + 1], gens[k])
                       for k in range(3)])
    torch.testing.assert_close(fused, exact, rtol=1e-12, atol=1e-12)


def test_a_stack_of_other_sizes_is_refused_in_one_line():
    obj = LocalObjective(LogisticRegression(N_IN, 3), shards([40, 10]), 16, torch.float32,
                         torch.device("cpu"))
    with pytest.raises(ValueError, match=r"^nodes: must share the minibatch size"):
        obj.minibatch_stack([0, 1], [torch.Generator(), torch.Generator()])
