"""The privacy accounting of the analog uplink against closed forms: the tail constant,
the budget and ε as inverses, one round's ρ as the Gaussian mechanism's, and the (ε, δ)
it promises checked against the exact privacy profile of the Gaussian mechanism (Balle
and Wang 2018), for one round and composed over rounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from bflnet.radio.privacy import (
    check_privacy,
    device_rho,
    dp_budget,
    epsilon_of,
    equal_scale,
    round_rho,
    tail_constant,
)


def exact_delta(epsilon: float, mu: float) -> float:
    """The smallest δ of the Gaussian mechanism with sensitivity / noise sd = μ at ε."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


@pytest.mark.parametrize("delta", [0.5, 0.01, 1e-5, 1e-12])
def test_the_tail_constant_solves_its_equation(delta):
    c = tail_constant(delta)
    assert math.sqrt(math.pi) * c * math.exp(c * c) == pytest.approx(1 / delta, rel=1e-12)


def test_the_budget_of_the_papers_setting_and_its_inverse():
    c = tail_constant(0.01)
    budget = dp_budget(15.0, 0.01)
    assert budget == pytest.approx((math.sqrt(15 + c * c) - c) ** 2, rel=1e-15)
    assert epsilon_of(budget, 0.01) == pytest.approx(15.0, rel=1e-12)
    assert epsilon_of(0.0, 0.01) == 0.0 and epsilon_of(math.inf, 0.01) == math.inf


def test_one_round_is_the_gaussian_mechanism():
    # received y = sqrt(a) Σ x_k + N(0, N_0): one device's payload moves by ≤ 2 clip,
    # so y by Δ = 2 sqrt(a) clip; ρ = Δ² / (2 N_0)
    a, clip, n0 = 3.0, 0.7, 2.0
    delta_y = 2 * math.sqrt(a) * clip
    assert round_rho(a, clip, n0) == pytest.approx(delta_y ** 2 / (2 * n0), rel=1e-15)


@pytest.mark.parametrize("delta", [0.01, 1e-5])
@pytest.mark.parametrize("rho", [0.01, 1.0, 6.0, 50.0])
def test_the_promised_epsilon_holds_for_the_exact_gaussian_mechanism(rho, delta):
    # a Gaussian mechanism with ρ = μ²/2 is (ε, δ(ε))-DP with δ(ε) the exact profile:
    # the accounting's ε must be sound (δ(ε) ≤ δ) and not far from tight
    eps = epsilon_of(rho, delta)
    exact = exact_delta(eps, math.sqrt(2 * rho))
    assert exact <= delta
    assert exact >= delta / 100


def test_rounds_compose_as_one_gaussian_mechanism():
    # T rounds of sensitivity / sd μ_i compose to one of μ = sqrt(Σ μ_i²) (exactly, for
    # Gaussians), i.e. ρ adds up: the ε of the summed ρ holds for the composition
    scales = np.array([0.5, 1.0, 2.0, 0.25])
    clip, n0, delta = 1.0, 4.0, 1e-3
    rhos = [round_rho(a, clip, n0) for a in scales]
    mu = math.sqrt(sum((2 * math.sqrt(a) * clip / math.sqrt(n0)) ** 2 for a in scales))
    total = device_rho(scales, np.ones((4, 1), dtype=bool), clip, n0)[0]
    assert total == pytest.approx(sum(rhos), rel=1e-15) == pytest.approx(mu ** 2 / 2)
    assert exact_delta(epsilon_of(total, delta), mu) <= delta


def test_a_device_pays_for_its_own_rounds_only():
    active = np.array([[True, False], [True, True], [False, True]])
    rho = device_rho(np.array([1.0, 2.0, 4.0]), active, clip=1.0, noise_power=2.0)
    np.testing.assert_allclose(rho, [1.0 + 2.0, 2.0 + 4.0])


def test_the_equal_scale_spends_the_budget_exactly():
    a = equal_scale(6.0, 30, clip=0.5, noise_power=2.0)
    assert 30 * round_rho(a, 0.5, 2.0) == pytest.approx(6.0, rel=1e-15)


@pytest.mark.parametrize(("eps", "delta", "field"), [
    (0.0, 0.01, "epsilon"), (-1.0, 0.01, "epsilon"), (math.nan, 0.01, "epsilon"),
    (2e6, 0.01, "epsilon"), (1.0, 0.0, "delta"), (1.0, 1.0, "delta"), (1.0, "x", "delta")])
def test_bad_privacy_settings_are_one_line(eps, delta, field):
    with pytest.raises(ValueError) as err:
        check_privacy(eps, delta)
    assert str(err.value).startswith(f"{field}: ") and "\n" not in str(err.value)
