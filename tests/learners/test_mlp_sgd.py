"""``MLPSGDStack``: the hand-written SGD step of a stack of MLPs against the particle
layout's gradient, the layout's round trip, the chunking and the errors."""

import numpy as np
import pytest
import torch

from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.models import mlp_sgd
from bflnet.learners.models.classifiers import BayesianMLP
from bflnet.learners.models.mlp_sgd import MLPSGDStack


def stack_and_batch(n=5, b=10, seed=0, dtype=torch.float32):
    model = BayesianMLP(12, 8, 3, dtype=dtype)
    gen = torch.Generator().manual_seed(seed)
    theta = model.init_particles(n, gen).to(dtype)
    theta += 0.1 * torch.randn(theta.shape, generator=gen, dtype=dtype)  # non-zero biases
    x = torch.randn(n, b, 12, generator=gen, dtype=dtype)
    y = torch.randint(3, (n, b), generator=gen)
    return model, theta, x, y


def test_the_layout_round_trip_is_exact():
    model, theta, _, _ = stack_and_batch()
    assert torch.equal(MLPSGDStack(model, theta).theta(), theta)


@pytest.mark.parametrize("decay", [1.0, 0.97])
def test_a_step_of_some_rows_is_decay_theta_plus_step_gradient(decay):
    """Rows 1-3 step along ``log_likelihood_grad`` of their own minibatch (float64: equal
    to 1e-12); rows 0 and 4 are untouched."""
    model, theta, x, y = stack_and_batch(dtype=torch.float64)
    stack = MLPSGDStack(model, theta)
    stack.step(slice(1, 4), x[1:4], y[1:4], 0.05, decay)
    got = stack.theta()
    expected = decay * theta[1:4] + 0.05 * model.log_likelihood_grad(theta[1:4], x[1:4],
                                                                      y[1:4])
    torch.testing.assert_close(got[1:4], expected, rtol=1e-12, atol=1e-12)
    assert torch.equal(got[[0, 4]], theta[[0, 4]])


def test_many_steps_follow_the_gradient_path():
    """30 steps in float32 against the same steps along the particle layout's gradient."""
    model, theta, _, _ = stack_and_batch(n=3)
    gen = torch.Generator().manual_seed(1)
    stack, ref = MLPSGDStack(model, theta), theta.clone()
    for _ in range(30):
        xs = torch.randn(3, 10, 12, generator=gen)
        ys = torch.randint(3, (3, 10), generator=gen)
        stack.step(slice(0, 3), xs, ys.unsqueeze(1), 0.01, 0.999)
        ref = 0.999 * ref + 0.01 * model.log_likelihood_grad(ref, xs, ys)
    torch.testing.assert_close(stack.theta(), ref, rtol=1e-5, atol=1e-6)


def test_chunks_hold_the_rows_that_fit_the_cache():
    big = BayesianMLP(784, 100, 10)
    theta = torch.zeros(10, big.d)
    assert MLPSGDStack(big, theta).chunk_rows(100) == 1   # ≈ 0.75 MB a row
    small, t, _, _ = stack_and_batch(n=7)
    assert MLPSGDStack(small, t).chunk_rows(10) == 7      # all of them


def test_fedavg_gives_the_same_updates_whatever_the_chunks(monkeypatch):
    """One agent per chunk (a tiny cache budget) against all agents in one chunk: equal up
    to float rounding, and both equal to the one-by-one autograd path."""
    gen = torch.Generator().manual_seed(0)
    data = {k: (torch.randn(40, 12, generator=gen), torch.randint(3, (40,), generator=gen))
            for k in range(4)}
    learner = FedAvg(BayesianMLP(12, 8, 3), data, local_steps=6, lr=0.1, batch_size=10,
                     weight_decay=0.01)
    w = learner.init(np.random.default_rng(0))

    def batched():
        return learner.local_update_batch(list(range(4)), w, [None] * 4,
                                          [np.random.default_rng(k) for k in range(4)])

    together = batched()
    monkeypatch.setattr(mlp_sgd, "CPU_CHUNK_BYTES", 1)
    apart = batched()
    for k, (a, b) in enumerate(zip(together, apart, strict=True)):
        torch.testing.assert_close(a.payload, b.payload, rtol=1e-6, atol=1e-7)
        single = learner.local_update(k, w, None, np.random.default_rng(k))
        torch.testing.assert_close(b.payload, single.payload, rtol=1e-5, atol=1e-6)


def test_errors_name_the_field():
    model, theta, x, y = stack_and_batch()
    stack = MLPSGDStack(model, theta)
    with pytest.raises(ValueError, match=r"x: expected shape \(2, B, 12\)"):
        stack.step(slice(0, 2), x, y[:2], 0.1)
    with pytest.raises(ValueError, match="x: .* of dtype torch.float32"):
        stack.step(slice(0, 5), x.double(), y, 0.1)
    with pytest.raises(ValueError, match="y: expected int64 labels of shape"):
        stack.step(slice(0, 5), x, y.int(), 0.1)
    with pytest.raises(ValueError, match="theta: expected shape"):
        MLPSGDStack(model, theta[:, :-1])
