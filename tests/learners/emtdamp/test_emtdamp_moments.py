"""EM-TDAMP node moments against mpmath and numerical quadrature (scipy.integrate).

Tolerances: inverse Mills ratio against 40-digit mpmath (λ 1e-12, a + λ 1e-10,
1 − λ(λ + a) 5e-9 relative); ReLU and probit moments against adaptive quadrature run at
epsrel 1e-11 (rtol 1e-7, atol 1e-10); the two-class probit-product node against a 2-D
quadrature (rtol 1e-6).
"""

import math

import mpmath
import numpy as np
import pytest
import torch
from scipy import integrate, special

from bflnet.learners.emtdamp.moments import (
    gaussian_output_moments,
    inverse_mills,
    probit_moments,
    probit_product_moments,
    relu_moments,
)

QUAD = {"epsabs": 1e-14, "epsrel": 1e-11, "limit": 200}


def t64(*values):
    return torch.tensor(values, dtype=torch.float64)


def moments_by_quadrature(log_density, pieces, fns):
    """∫ f·p / ∫ p over the given intervals, p = exp(log_density − its max on a grid)."""
    grid = np.concatenate([np.linspace(max(a, -60), min(b, 60), 2001) for a, b in pieces])
    shift = max(log_density(x) for x in grid)
    dens = [lambda x: math.exp(log_density(x) - shift)]
    norm = sum(integrate.quad(dens[0], a, b, **QUAD)[0] for a, b in pieces)
    return [
        sum(integrate.quad(lambda x, f=f: f(x) * dens[0](x), a, b, **QUAD)[0] for a, b in pieces)
        / norm
        for f in fns
    ]


def test_inverse_mills_matches_mpmath_everywhere():
    mpmath.mp.dps = 40
    a_values = [-1e4, -300.0, -60.0, -46.0, -44.0, -30.0, -5.0, -1.0, 0.0, 1.0, 5.0, 30.0]
    lam, shifted, var_factor = inverse_mills(torch.tensor(a_values, dtype=torch.float64))
    for i, a in enumerate(a_values):
        am = mpmath.mpf(a)
        lam_ref = mpmath.npdf(am) / mpmath.ncdf(am)
        assert lam[i].item() == pytest.approx(float(lam_ref), rel=1e-12)
        assert shifted[i].item() == pytest.approx(float(am + lam_ref), rel=1e-10)
        assert var_factor[i].item() == pytest.approx(
            float(1 - lam_ref * (lam_ref + am)), rel=5e-9
        )


# (forward mean, forward var, backward precision Λ, backward shift h)
RELU_CASES = [
    (0.3, 1.0, 0.0, 0.0),  # zero-precision backward message: rectified Gaussian
    (-2.0, 0.5, 0.0, 0.0),
    (4.0, 2.0, 0.0, 0.0),
    (0.5, 1.0, 2.0, 3.0),  # backward pulls u up
    (1.0, 0.7, 3.0, -4.0),  # backward pulls u towards (and below) zero
    (-1.5, 1.2, 0.25, 1.5),  # forward says inactive, backward says active
    (0.0, 3.0, 10.0, 0.0),
]


@pytest.mark.parametrize(("mf", "vf", "lam", "h"), RELU_CASES)
def test_relu_moments_match_quadrature(mf, vf, lam, h):
    out = relu_moments(t64(mf), t64(vf), t64(lam), t64(h))

    def log_density(z):
        u = max(z, 0.0)
        return -0.5 * (z - mf) ** 2 / vf - 0.5 * lam * u * u + h * u

    pieces = [(-np.inf, 0.0), (0.0, np.inf)]
    e_u, e_u2, e_z, e_z2, p_pos = moments_by_quadrature(
        log_density,
        pieces,
        [lambda z: max(z, 0.0), lambda z: max(z, 0.0) ** 2, lambda z: z, lambda z: z * z,
         lambda z: float(z > 0)],
    )
    assert out.u_mean.item() == pytest.approx(e_u, rel=1e-7, abs=1e-10)
    assert out.u_var.item() == pytest.approx(e_u2 - e_u**2, rel=1e-7, abs=1e-10)
    assert out.z_mean.item() == pytest.approx(e_z, rel=1e-7, abs=1e-10)
    assert out.z_var.item() == pytest.approx(e_z2 - e_z**2, rel=1e-7, abs=1e-10)
    assert out.active_prob.item() == pytest.approx(p_pos, rel=1e-7, abs=1e-10)


def test_relu_zero_precision_is_the_rectified_gaussian_and_the_limit_is_continuous():
    mf, vf = t64(-1.0, 0.0, 0.7, 3.0), t64(0.5, 1.0, 2.0, 0.1)
    flat = torch.zeros(4, dtype=torch.float64)
    zero = relu_moments(mf, vf, flat, flat)
    a = (mf / vf.sqrt()).numpy()
    sd = vf.sqrt().numpy()
    mean_ref = mf.numpy() * special.ndtr(a) + sd * np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
    second_ref = (mf.numpy() ** 2 + vf.numpy()) * special.ndtr(a) + mf.numpy() * sd * np.exp(
        -0.5 * a * a
    ) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(zero.u_mean.numpy(), mean_ref, rtol=1e-12)
    np.testing.assert_allclose(zero.u_var.numpy(), second_ref - mean_ref**2, rtol=1e-10)
    np.testing.assert_allclose(zero.z_mean.numpy(), mf.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(zero.z_var.numpy(), vf.numpy(), rtol=1e-11)
    # A vanishing backward message (precision 1e-10, mean 2) moves everything by O(1e-10).
    tiny = relu_moments(mf, vf, torch.full((4,), 1e-10, dtype=torch.float64),
                        torch.full((4,), 2e-10, dtype=torch.float64))
    for got, ref in zip(tiny, zero, strict=True):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-8, atol=1e-9)


def test_relu_extremes_stay_finite():
    grid = torch.cartesian_prod(
        t64(-1e3, -30.0, 0.0, 30.0, 1e3), t64(1e-12, 1.0, 1e6), t64(0.0, 1e-300, 1.0, 1e12),
        t64(-1e6, 0.0, 1e6),
    ).T
    out = relu_moments(*grid)
    for value in out:
        assert bool(torch.isfinite(value).all())
    assert bool((out.u_var >= 0).all()) and bool((out.z_var >= 0).all())
    assert bool((out.u_mean >= 0).all())


# (mean, var, threshold, noise var, upper)
PROBIT_CASES = [
    (0.0, 1.0, 0.0, 1.0, True),
    (1.0, 0.5, 3.0, 0.2, True),
    (-2.0, 2.0, 1.0, 0.01, True),
    (0.5, 1.5, -1.0, 0.5, False),
    (3.0, 0.3, 0.0, 0.1, False),  # strongly disfavoured side
]


@pytest.mark.parametrize(("m", "s2", "c", "t", "upper"), PROBIT_CASES)
def test_probit_tilt_matches_quadrature(m, s2, c, t, upper):
    sign = 1.0 if upper else -1.0
    mean, var, log_z = probit_moments(t64(m), t64(s2), t64(c), t, upper=upper)

    def log_density(x):
        return -0.5 * (x - m) ** 2 / s2 + special.log_ndtr(sign * (x - c) / math.sqrt(t))

    e1, e2 = moments_by_quadrature(
        log_density, [(-np.inf, c), (c, np.inf)], [lambda x: x, lambda x: x * x]
    )
    assert mean.item() == pytest.approx(e1, rel=1e-7, abs=1e-10)
    assert var.item() == pytest.approx(e2 - e1**2, rel=1e-7, abs=1e-10)
    evidence = integrate.quad(
        lambda x: math.exp(-0.5 * (x - m) ** 2 / s2) / math.sqrt(2 * math.pi * s2)
        * special.ndtr(sign * (x - c) / math.sqrt(t)), -np.inf, np.inf, **QUAD
    )[0]
    assert log_z.item() == pytest.approx(math.log(evidence), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("label", [0, 1])
def test_two_class_probit_product_is_exact(label):
    p_mean, p_var, v = t64(0.4, -0.3), t64(1.3, 0.6), 0.25
    out = probit_product_moments(p_mean[:, None], p_var[:, None], torch.tensor([label]), v)
    other = 1 - label
    pm, pv = p_mean.numpy(), p_var.numpy()

    def dens(zo, zy):
        return (math.exp(-0.5 * (zy - pm[label]) ** 2 / pv[label] - 0.5 * (zo - pm[other]) ** 2
                         / pv[other]) * special.ndtr((zy - zo) / math.sqrt(v)))

    lim = 12.0
    opts = {"epsabs": 1e-13, "epsrel": 1e-10}

    def moment(f):
        return integrate.dblquad(lambda zo, zy: f(zo, zy) * dens(zo, zy), -lim, lim, -lim, lim,
                                 **opts)[0]

    norm = moment(lambda zo, zy: 1.0)
    ey, eo = moment(lambda zo, zy: zy) / norm, moment(lambda zo, zy: zo) / norm
    vy = moment(lambda zo, zy: zy * zy) / norm - ey**2
    vo = moment(lambda zo, zy: zo * zo) / norm - eo**2
    assert out.mean[label, 0].item() == pytest.approx(ey, rel=1e-6)
    assert out.mean[other, 0].item() == pytest.approx(eo, rel=1e-6)
    assert out.var[label, 0].item() == pytest.approx(vy, rel=1e-6)
    assert out.var[other, 0].item() == pytest.approx(vo, rel=1e-6)
    assert out.clipped == 0


def test_probit_product_batches_examples_independently():
    gen = torch.Generator().manual_seed(3)
    mean = torch.randn(5, 7, generator=gen, dtype=torch.float64)
    var = torch.rand(5, 7, generator=gen, dtype=torch.float64) + 0.1
    labels = torch.randint(0, 5, (7,), generator=gen)
    batched = probit_product_moments(mean, var, labels, 0.3)
    for i in range(7):
        one = probit_product_moments(mean[:, i:i + 1], var[:, i:i + 1], labels[i:i + 1], 0.3)
        torch.testing.assert_close(one.mean[:, 0], batched.mean[:, i], rtol=1e-14, atol=0)
        torch.testing.assert_close(one.var[:, 0], batched.var[:, i], rtol=1e-14, atol=0)
    # The label's output moves up, every other output moves down.
    rows = torch.arange(7)
    assert bool((batched.mean[labels, rows] > mean[labels, rows]).all())
    others = torch.ones_like(mean, dtype=torch.bool)
    others[labels, rows] = False
    assert bool((batched.mean[others] < mean[others]).all())


def test_gaussian_output_is_the_product_of_gaussians():
    mean, var = gaussian_output_moments(t64(1.0, -2.0), t64(0.5, 4.0), t64(2.0, 0.0), 0.25)
    torch.testing.assert_close(var, 1 / (1 / t64(0.5, 4.0) + 4.0), rtol=1e-15, atol=0)
    torch.testing.assert_close(mean, var * (t64(1.0, -2.0) / t64(0.5, 4.0) + t64(2.0, 0.0) * 4),
                               rtol=1e-15, atol=0)


def test_invalid_arguments_are_one_line_value_errors():
    with pytest.raises(ValueError, match="forward_var"):
        relu_moments(t64(0.0), t64(0.0), t64(0.0), t64(0.0))
    with pytest.raises(ValueError, match="backward_precision"):
        relu_moments(t64(0.0), t64(1.0), t64(-1.0), t64(0.0))
    with pytest.raises(ValueError, match="labels"):
        probit_product_moments(torch.zeros(3, 2, dtype=torch.float64),
                               torch.ones(3, 2, dtype=torch.float64), torch.tensor([0, 3]), 1.0)
