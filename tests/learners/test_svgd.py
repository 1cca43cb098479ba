"""SVGD, the KDE terms and AdaGrad against hand-worked values, naive loops and closed forms."""

import doctest
import math

import pytest
import torch

from bflnet.learners.models import toy_models as toy_models_module
from bflnet.learners.particles import svgd as svgd_module
from bflnet.learners.particles.svgd import (
    SVGD,
    AdaGrad,
    KDETerm,
    kde_log_density,
    kde_score,
    median_bandwidth,
    pairwise_sq_dists,
    rbf_kernel,
    run_svgd,
    svgd_direction,
    svgd_update,
)

F64 = torch.float64



def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


# --------------------------------------------------------------------------- KDE


def test_kde_hand_worked_two_particles_in_2d():
    # Particles (0,0) and (2,0), λ = 1: q(x) = ½ [N(x; θ1, I) + N(x; θ2, I)].
    # At x = (1,0): both squared distances are 1, so log q = −log 2π − ½ and the weights
    # are ½, ½: ∇ log q = (mean θ − x)/λ = 0.
    # At x = (0,1): squared distances 1 and 5, log q = −log 2 − log 2π + log(e^−½ + e^−5/2);
    # w = (1/(1+e^−2), e^−2/(1+e^−2)) = (0.8808, 0.1192), ∇ log q = w2·(2,0) − (0,1).
    particles = torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=F64)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64)
    logq = kde_log_density(x, particles, bandwidth=1.0)
    expected = [-math.log(2 * math.pi) - 0.5,
                -math.log(2) - math.log(2 * math.pi) + math.log(math.exp(-0.5) + math.exp(-2.5))]
    assert logq.tolist() == pytest.approx(expected, abs=1e-12)
    w2 = math.exp(-2) / (1 + math.exp(-2))
    score = kde_score(x, particles, bandwidth=1.0)
    assert torch.allclose(score, torch.tensor([[0.0, 0.0], [2 * w2, -1.0]], dtype=F64),
                          atol=1e-12)
    assert 2 * w2 == pytest.approx(0.2384, abs=1e-4)


def test_kde_bandwidth_is_the_kernel_variance():
    # One particle: the KDE is exactly N(θ, λ I).
    theta = torch.tensor([[1.0, -2.0, 0.5]], dtype=F64)
    x = randn(4, 3)
    lam = 0.55
    exact = torch.distributions.MultivariateNormal(theta[0], lam * torch.eye(3, dtype=F64))
    assert torch.allclose(kde_log_density(x, theta, lam), exact.log_prob(x), atol=1e-12)
    assert torch.allclose(kde_score(x, theta, lam), (theta - x) / lam, atol=1e-12)


def test_kde_score_matches_finite_differences_of_the_log_density():
    particles, x, lam, eps = randn(6, 5, seed=1), randn(3, 5, seed=2), 0.7, 1e-6
    score = kde_score(x, particles, lam)
    for j in range(5):
        e = torch.zeros(5, dtype=F64)
        e[j] = eps
        fd = (kde_log_density(x + e, particles, lam) - kde_log_density(x - e, particles, lam))
        assert torch.allclose(score[:, j], fd / (2 * eps), atol=1e-7)


def test_kde_is_stable_in_high_dimension():
    # d = 79 510 (the letter's MLP): every exp(−‖x − θ‖²/2λ) underflows in float32.
    d = 79_510
    particles = 0.05 * torch.randn(10, d, generator=torch.Generator().manual_seed(0))
    x = particles[:3] + 0.05
    assert (torch.exp(-pairwise_sq_dists(x, particles) / (2 * 0.55)) == 0).all()
    logq, score = kde_log_density(x, particles), kde_score(x, particles)
    assert torch.isfinite(logq).all() and torch.isfinite(score).all()
    # the nearest particle dominates: score = (θ_n − x)/λ
    assert torch.allclose(score, (particles[:3] - x) / 0.55, atol=1e-4)


# --------------------------------------------------------------------------- SVGD direction


def naive_direction(theta, score, h):
    """φ(θ_i) = (1/N) Σ_j [k(θ_j, θ_i) s_j + ∇_{θ_j} k(θ_j, θ_i)], one pair at a time."""
    n = theta.shape[0]
    phi = torch.zeros_like(theta)
    for i in range(n):
        for j in range(n):
            diff = theta[j] - theta[i]
            k = math.exp(-float(diff @ diff) / h)
            phi[i] += k * score[j] - (2.0 / h) * diff * k
    return phi / n


def naive_median_h(theta):
    n = theta.shape[0]
    dists = sorted(float((theta[i] - theta[j]).norm()) for i in range(n) for j in range(i + 1, n))
    m = len(dists)
    med = 0.5 * (dists[(m - 1) // 2] + dists[m // 2])
    return med**2 / math.log(n)


@pytest.mark.parametrize("n, d", [(2, 1), (5, 3), (8, 4)])
def test_svgd_direction_matches_the_double_loop(n, d):
    theta, score = randn(n, d, seed=n), randn(n, d, seed=n + 100)
    assert torch.allclose(svgd_direction(theta, score, bandwidth=0.8),
                          naive_direction(theta, score, 0.8), atol=1e-12)
    h = naive_median_h(theta)
    assert float(rbf_kernel(theta)[1]) == pytest.approx(h, rel=1e-12)
    assert torch.allclose(svgd_direction(theta, score), naive_direction(theta, score, h),
                          atol=1e-12)


def test_svgd_direction_hand_worked_2d():
    # θ1 = (0,0), θ2 = (1,0), scores s1 = (1,0), s2 = (0,1), h = 1: k12 = e^−1.
    # φ(θ1) = ½[s1 + k12 s2 + ∇_{θ2}k(θ2,θ1)] with ∇_{θ2}k(θ2,θ1) = −2(θ2−θ1)k12 = (−2/e, 0)
    #       = (½ − 1/e, 1/(2e)) = (0.1321, 0.1839)
    # φ(θ2) = ½[k12 s1 + s2 + ∇_{θ1}k(θ1,θ2)] with ∇_{θ1}k(θ1,θ2) = (2/e, 0)
    #       = (3/(2e), ½) = (0.5518, 0.5)
    theta = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=F64)
    score = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64)
    e = math.e
    expected = torch.tensor([[0.5 - 1 / e, 1 / (2 * e)], [3 / (2 * e), 0.5]], dtype=F64)
    assert torch.allclose(svgd_direction(theta, score, bandwidth=1.0), expected, atol=1e-15)
    # two particles: med = 1, h = 1/log 2, so k12 = 1/2
    k, h = rbf_kernel(theta)
    assert float(h) == pytest.approx(1 / math.log(2))
    assert torch.allclose(k, torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=F64))


def test_median_bandwidth_guards_and_value():
    line = torch.tensor([[0.0], [1.0], [3.0]], dtype=F64)  # distances 1, 2, 3: med = 2
    assert float(median_bandwidth(pairwise_sq_dists(line, line))) == pytest.approx(
        4 / math.log(3))
    one = torch.zeros(1, 4, dtype=F64)
    assert float(median_bandwidth(pairwise_sq_dists(one, one))) == 1.0
    same = torch.ones(5, 2, dtype=F64)
    assert float(median_bandwidth(pairwise_sq_dists(same, same))) == 1.0
    # a single particle follows its score; coincident particles have no repulsion
    assert torch.equal(svgd_direction(one, torch.ones(1, 4, dtype=F64)),
                       torch.ones(1, 4, dtype=F64))
    assert torch.allclose(svgd_direction(same, -same), -same)


def test_pairwise_distances_survive_a_large_common_offset():
    x = (randn(4, 3) * 1e-2 + 1e3).float()  # spread 1e-2 around 1e3, in float32
    x64 = x.double()
    exact = ((x64.unsqueeze(1) - x64.unsqueeze(0)) ** 2).sum(-1)
    got = pairwise_sq_dists(x, x)
    assert torch.allclose(got.double(), exact, rtol=1e-3, atol=1e-9)


# --------------------------------------------------------------------------- AdaGrad, runner


def test_adagrad_follows_the_reference_rule():
    # G0 = φ0², G1 = 0.9 G0 + 0.1 φ1²; θ += ε φ / (fudge + √G)
    opt = AdaGrad(step_size=0.5, decay=0.9, fudge=1e-6)
    theta = torch.zeros(1, 2, dtype=F64)
    phi0 = torch.tensor([[2.0, -1.0]], dtype=F64)
    phi1 = torch.tensor([[1.0, 3.0]], dtype=F64)
    opt.step_(theta, phi0)
    assert torch.allclose(theta, torch.tensor([[1 / (2 + 1e-6), -0.5 / (1 + 1e-6)]],
                                              dtype=F64), atol=1e-15)
    expected = theta + 0.5 * phi1 / (1e-6 + torch.sqrt(0.9 * phi0**2 + 0.1 * phi1**2))
    opt.step_(theta, phi1)
    assert torch.allclose(theta, expected, atol=1e-15)
    with pytest.raises(ValueError, match="decay"):
        AdaGrad(0.1, decay=1.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_adagrad_fused_and_elementwise_paths_agree(dtype):
    # From the second step on a CPU step is one fused pass (torch's fused Adam kernel); a
    # non-contiguous theta takes the elementwise path. Both follow the reference rule and
    # leave the direction as it was.
    tol = 1e-13 if dtype == torch.float64 else 1e-5
    phis = [randn(3, 5, seed=10 + t).to(dtype) for t in range(4)]
    fused, strided = AdaGrad(0.3, decay=0.8), AdaGrad(0.3, decay=0.8)
    theta = randn(3, 5, seed=9).to(dtype)
    theta_t = theta.T.contiguous().T  # same values, column-major
    assert not theta_t.is_contiguous()
    ref, g = theta.clone(), phis[0] ** 2
    for t, phi in enumerate(phis):
        before = phi.clone()
        fused.step_(theta, phi)
        strided.step_(theta_t, phi)
        assert torch.equal(phi, before)
        if t:
            g = 0.8 * g + 0.2 * phi**2
        ref = ref + 0.3 * phi / (1e-6 + g.sqrt())
        assert torch.allclose(theta, ref, rtol=0, atol=tol)
        assert torch.allclose(theta_t, ref, rtol=0, atol=tol)
    assert torch.allclose(fused.historical, g, rtol=0, atol=tol)


def test_fused_runner_matches_the_reference_functions():
    theta, y1, y2 = randn(7, 3, seed=1), randn(5, 3, seed=2), randn(7, 3, seed=3)
    lam = 0.7

    def target_score(x):
        return -x / 2.0

    opt, ref = AdaGrad(0.1), theta.clone()
    for _ in range(6):
        s = target_score(ref) + kde_score(ref, y1, lam) - kde_score(ref, y2, lam)
        ref = svgd_update(ref, s, opt)
    fused = run_svgd(theta, 6, score=target_score, step_size=0.1, kde_bandwidth=lam,
                     kde_terms=[KDETerm(y1, 1.0), KDETerm(y2, -1.0)])
    assert torch.allclose(fused, ref, atol=1e-12)
    # unequal set sizes, no score, fixed kernel bandwidth
    opt, ref = AdaGrad(0.05), theta.clone()
    for _ in range(3):
        ref = svgd_update(ref, kde_score(ref, y1, lam) - 2 * kde_score(ref, y2, lam), opt,
                          bandwidth=0.9)
    fused = run_svgd(theta, 3, step_size=0.05, kde_bandwidth=lam, bandwidth=0.9,
                     kde_terms=[KDETerm(y1, 1.0), KDETerm(y2, -2.0)])
    assert torch.allclose(fused, ref, atol=1e-12)
    assert torch.equal(theta, randn(7, 3, seed=1))  # input untouched


def test_runner_shares_an_adagrad_accumulator_across_calls():
    # A deterministic target (Gaussian score + fixed KDE terms): two runs of n steps with
    # one AdaGrad equal one run of 2n steps; a fresh AdaGrad per run restarts G and differs.
    theta, y1, y2 = randn(6, 4, seed=4), randn(5, 4, seed=5), randn(6, 4, seed=6)
    mean = randn(1, 4, seed=7)
    kw = dict(score=lambda x: -(x - mean) / 1.5, score_scale=0.8, kde_bandwidth=0.7,
              kde_terms=[KDETerm(y1, 1.0), KDETerm(y2, -1.0)])
    once = run_svgd(theta, 8, step_size=0.05, **kw)
    opt = AdaGrad(0.05)
    # the step_size/decay/fudge arguments are ignored when an optimizer is given
    half = run_svgd(theta, 4, optimizer=opt, step_size=7.0, decay=0.0, **kw)
    assert opt.historical is not None and opt.historical.shape == theta.shape
    twice = run_svgd(half, 4, optimizer=opt, **kw)
    assert torch.allclose(twice, once, rtol=0.0, atol=1e-12)
    fresh = run_svgd(run_svgd(theta, 4, step_size=0.05, **kw), 4, step_size=0.05, **kw)
    assert not torch.allclose(fresh, once, rtol=0.0, atol=1e-6)
    # its own step size is the one used
    assert torch.allclose(run_svgd(theta, 3, optimizer=AdaGrad(0.02), **kw),
                          run_svgd(theta, 3, step_size=0.02, **kw), rtol=0.0, atol=1e-12)


def test_runner_names_the_iteration_that_went_non_finite():
    calls = []

    def score(x):
        calls.append(1)
        return torch.full_like(x, float("nan")) if len(calls) == 3 else -x

    with pytest.raises(ValueError, match=r"after local iteration 3 of 5 \(agent 7\)"):
        run_svgd(randn(4, 2), 5, score=score, context=" (agent 7)")
    calls.clear()  # the last update broke them: caught by the check after the loop
    with pytest.raises(ValueError, match=r"after local iteration 3 of 3$"):
        run_svgd(randn(4, 2), 3, score=score)
    start = randn(4, 2)
    start[2, 1] = float("inf")
    with pytest.raises(ValueError, match="initial particles are not finite"):
        run_svgd(start, 5, score=lambda x: -x)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_svgd_recovers_a_correlated_gaussian(seed):
    mean = torch.tensor([1.0, -2.0], dtype=F64)
    cov = torch.tensor([[1.0, 0.8], [0.8, 2.0]], dtype=F64)
    prec = torch.linalg.inv(cov)
    sampler = SVGD(lambda th: -(th - mean) @ prec, step_size=0.05)
    start = randn(200, 2, seed=seed) * 0.5 + 3.0  # far from the target, too narrow
    theta = sampler.run(start, 500)
    assert torch.allclose(theta.mean(0), mean, atol=0.05)
    assert torch.allclose(torch.cov(theta.T), cov, atol=0.2)  # 10% of the largest variance
    # deterministic: the same start gives the same particles
    assert torch.equal(sampler.run(start, 500), theta)


def test_doctests():
    assert doctest.testmod(svgd_module).failed == 0
    assert doctest.testmod(toy_models_module).failed == 0
