"""The NumPy SVGD loop for small particle sets against the torch one, and DSVGD's choice
between them."""

import numpy as np
import pytest
import torch

from bflnet.learners.hyper import DSVGDParams
from bflnet.learners.models.classifiers import LogisticRegression
from bflnet.learners.particles import dsvgd as dsvgd_module
from bflnet.learners.particles.dsvgd import DSVGD
from bflnet.learners.particles.svgd import ConstantStep, KDETerm, median_bandwidth, run_svgd
from bflnet.learners.particles.svgd_small import SMALL_PROBLEM, run_svgd_numpy
from bflnet.learners.particles.svgd_small import median_bandwidth as median_bandwidth_numpy


def gaussian_score(theta: torch.Tensor) -> torch.Tensor:
    return -(theta - 1.5) / 0.7


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_median_bandwidth_equals_the_torch_one(n):
    gen = torch.Generator().manual_seed(n)
    for _ in range(20):
        x = torch.randn(n, 4, generator=gen, dtype=torch.float64)
        d2 = torch.cdist(x, x).square()
        assert median_bandwidth_numpy(d2.numpy()) == pytest.approx(
            float(median_bandwidth(d2)), rel=1e-12)


CASES = {
    "score, one KDE set": dict(sets=[(5, 1.0)], score=True),
    "three KDE sets (distillation)": dict(sets=[(5, 1.0), (5, -1.0), (5, 1.0)], score=False),
    "sets of other sizes": dict(sets=[(3, 1.0), (7, -1.0)], score=True),
    "constant step": dict(sets=[(5, 1.0)], score=True, step_rule="constant"),
    "fixed bandwidth": dict(sets=[(5, 1.0)], score=True, bandwidth=0.8),
    "no KDE": dict(sets=[], score=True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_numpy_loop_follows_run_svgd(case):
    """50 steps in float64 from the same particles: the same particles to 1e-9."""
    spec = CASES[case]
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(5, 7, generator=gen, dtype=torch.float64)
    sets = [(torch.randn(size, 7, generator=gen, dtype=torch.float64), sign)
            for size, sign in spec["sets"]]
    step_rule = spec.get("step_rule", "adagrad")
    optimizer = ConstantStep(0.01) if step_rule == "constant" else None
    expected = run_svgd(theta, 50, score=gaussian_score if spec["score"] else None,
                        score_scale=2.0, kde_terms=[KDETerm(p, s) for p, s in sets],
                        kde_bandwidth=0.55, step_size=0.01, optimizer=optimizer,
                        bandwidth=spec.get("bandwidth"))
    got, bad = run_svgd_numpy(
        theta.numpy(), 50,
        score=(lambda t: gaussian_score(torch.from_numpy(t)).numpy()) if spec["score"]
        else None,
        score_scale=2.0, kde_sets=[(p.numpy(), s) for p, s in sets], kde_bandwidth=0.55,
        step_size=0.01, step_rule=step_rule, bandwidth=spec.get("bandwidth"))
    assert bad is None
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-9, atol=1e-9)


def test_non_finite_particles_name_the_iteration():
    theta = np.ones((3, 2))
    calls = []

    def score(t):
        calls.append(1)
        return np.full_like(t, np.inf if len(calls) == 4 else 1.0)

    _, bad = run_svgd_numpy(theta, 10, score=score, kde_bandwidth=0.5, step_size=0.1,
                            step_rule="constant")
    assert bad == 4
    theta[0, 0] = np.nan
    assert run_svgd_numpy(theta, 3, kde_bandwidth=0.5, step_size=0.1)[1] == 0


def small_dsvgd(n_particles, d_in):
    gen = torch.Generator().manual_seed(1)
    data = {k: (torch.randn(30, d_in, generator=gen), torch.randint(2, (30,), generator=gen))
            for k in range(2)}
    return DSVGD(LogisticRegression(d_in, 2), data, n_particles,
                 DSVGDParams(local_steps=5, distill_iters=5, batch_size=10))


@pytest.mark.parametrize("n_particles, d_in, numpy_path", [(6, 54, True), (40, 54, False)])
def test_dsvgd_takes_the_numpy_path_for_small_sets_only(monkeypatch, n_particles, d_in,
                                                        numpy_path):
    learner = small_dsvgd(n_particles, d_in)
    assert (n_particles * learner.d <= SMALL_PROBLEM) == numpy_path
    used = []
    real = dsvgd_module.run_svgd_numpy
    monkeypatch.setattr(dsvgd_module, "run_svgd_numpy",
                        lambda *a, **k: used.append(1) or real(*a, **k))
    theta = learner.init(np.random.default_rng(0))
    factor = None
    for _ in range(2):  # a first and a steady visit (with the distillation)
        update = learner.local_update(0, theta, factor, np.random.default_rng(3))
        theta, factor = learner.merge(theta, [update]), update.agent_state
    assert bool(used) == numpy_path
    assert torch.isfinite(theta).all() and theta.dtype == torch.float32


def test_small_dsvgd_agrees_with_the_torch_path(monkeypatch):
    """The same local update through both paths (float32): close particles."""
    learner = small_dsvgd(6, 20)
    theta = learner.init(np.random.default_rng(0))
    fast = learner.local_update(0, theta, None, np.random.default_rng(3)).payload
    monkeypatch.setattr(dsvgd_module, "SMALL_PROBLEM", 0)
    slow = learner.local_update(0, theta, None, np.random.default_rng(3)).payload
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-5)


def test_small_dsvgd_on_a_large_set_agrees_with_the_torch_path(monkeypatch):
    """Above LARGE_SET_ROWS the NumPy path draws a local update's minibatches at once: the
    same minibatches as the torch path's one-by-one draws (close particles)."""
    gen = torch.Generator().manual_seed(5)
    n = 9000
    data = {k: (torch.randn(n, 8, generator=gen), torch.randint(2, (n,), generator=gen))
            for k in range(2)}
    learner = DSVGD(LogisticRegression(8, 2), data, 6,
                    DSVGDParams(local_steps=40, distill_iters=5, batch_size=50))
    theta = learner.init(np.random.default_rng(0))
    fast = learner.local_update(1, theta, None, np.random.default_rng(3)).payload
    monkeypatch.setattr(dsvgd_module, "SMALL_PROBLEM", 0)
    slow = learner.local_update(1, theta, None, np.random.default_rng(3)).payload
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-5)
