"""Numerical KL to 1-D targets, checked against closed-form exponential-family KLs."""

import numpy as np
import pytest
from scipy import special

from bflnet.analysis.kl import kl, kl_fast, kl_quadrature, kl_to_density_on_grid, logit_grid
from bflnet.learners.conjugate.expfam import BETA, beta, gamma, normal

PAIRS = [
    (beta(2.0, 3.0), beta(4.0, 4.0)),
    (beta(200.0, 300.0), beta(210.0, 290.0)),   # concentrated
    (beta(1.5, 0.8), beta(3.0, 1.5)),           # mass at the boundary θ → 1
    (gamma(3.0, 2.0), gamma(5.0, 1.0)),
    (normal(1.0, 1e-4), normal(1.01, 2e-4)),
]
IDS = [f"{q}|{p}" for q, p in PAIRS]


def unnormalised(p, offset=7.3):
    """p's log density off by a constant: the numerical KLs must normalise it themselves."""
    return lambda t: p.log_density(t) + offset


def test_closed_form_kl_is_delegated_to_the_family():
    q, p = beta(2.0, 3.0), beta(4.0, 4.0)
    a, b, c, d = 2.0, 3.0, 4.0, 4.0
    textbook = (special.betaln(c, d) - special.betaln(a, b) + (a - c) * special.digamma(a)
                + (b - d) * special.digamma(b) + (c - a + d - b) * special.digamma(a + b))
    assert kl(q, p) == pytest.approx(textbook, rel=1e-13)


@pytest.mark.parametrize(("q", "p"), [pair for pair in PAIRS if pair[0].family is BETA],
                         ids=[i for i, pair in zip(IDS, PAIRS, strict=True)
                              if pair[0].family is BETA])
def test_grid_kl_on_a_logit_grid_matches_the_closed_form(q, p):
    assert kl_to_density_on_grid(q, unnormalised(p), logit_grid()) == pytest.approx(
        kl(q, p), rel=1e-8, abs=1e-10)


def test_logit_grid_beats_a_uniform_grid_near_the_boundary():
    q, p = beta(2.0, 3.0), beta(2000.0, 3000.0)
    exact = kl(q, p)
    uniform = np.linspace(1e-9, 1 - 1e-9, 2001)
    assert abs(kl_to_density_on_grid(q, unnormalised(p), logit_grid(2001)) - exact) < 1e-4
    assert abs(kl_to_density_on_grid(q, unnormalised(p), uniform) - exact) > 1e-3


@pytest.mark.parametrize(("q", "p"), PAIRS, ids=IDS)
def test_quadrature_and_fast_kl_match_the_closed_form(q, p):
    exact = kl(q, p)
    # (rel 1e-7: the Beta(1.5, 0.8) tail beyond logit θ = 36 is cut off.)
    assert kl_quadrature(q, unnormalised(p)) == pytest.approx(exact, rel=1e-7, abs=1e-10)
    assert kl_fast(q, unnormalised(p)) == pytest.approx(exact, rel=1e-7, abs=1e-10)
    # A known normaliser is used as given.
    assert kl_fast(q, unnormalised(p), 7.3) == pytest.approx(exact, rel=1e-7, abs=1e-10)


def test_kl_to_a_non_conjugate_posterior_is_zero_only_at_the_target():
    # Beta prior × exponential likelihood: KL(q ‖ p) > 0 for any Beta q; the Beta with the
    # posterior's mean and variance is close (the posterior is nearly Beta-shaped), the
    # prior is far. The grid and adaptive quadrature agree.
    n, total = 40, 21.0

    def log_post(t):
        return beta(2.0, 2.0).log_density(t) - n * np.log(t) - total / t

    grid = logit_grid()
    p = np.exp(log_post(grid) - log_post(grid).max()) * np.gradient(grid)
    p /= p.sum()
    m = (p * grid).sum()
    k = m * (1 - m) / (p * (grid - m) ** 2).sum() - 1
    near = beta(m * k, (1 - m) * k)
    grid_value = kl_to_density_on_grid(near, log_post, grid)
    assert 0.001 < grid_value < 0.1
    assert kl_quadrature(near, log_post) == pytest.approx(grid_value, rel=1e-6)
    assert kl_quadrature(beta(2.0, 2.0), log_post) > 1.0


def test_target_vanishing_where_q_has_mass_gives_infinity():
    def log_target(t):
        return np.where(t < 0.5, 0.0, -np.inf)

    assert kl_to_density_on_grid(beta(2.0, 2.0), log_target, logit_grid(101)) == np.inf


@pytest.mark.parametrize(("call", "message"), [
    (lambda: logit_grid(2), "n: must be >= 3"),
    (lambda: logit_grid(10, 1.0, -1.0), "lo: must be < hi"),
    (lambda: kl_to_density_on_grid(beta(2, 2), np.log, [0.5, 0.2, 0.7]), "grid: must be"),
])
def test_bad_arguments_raise(call, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        call()


def test_docstring_examples_run():
    import doctest

    from bflnet.analysis import kl as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
