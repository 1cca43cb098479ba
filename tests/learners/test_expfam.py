"""Exponential families and conjugate likelihoods against closed forms and scipy.stats."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from bflnet.learners.conjugate.expfam import (
    BETA,
    GAMMA,
    GAUSSIAN,
    BernoulliLikelihood,
    ExponentialLikelihood,
    GaussianLikelihood,
    PoissonLikelihood,
    beta,
    gamma,
    log_integral,
    normal,
)

# (member, the same distribution in scipy.stats)
CASES = [
    (beta(2.5, 7.0), stats.beta(2.5, 7.0)),
    (beta(0.7, 1.3), stats.beta(0.7, 1.3)),
    (gamma(3.0, 2.0), stats.gamma(3.0, scale=0.5)),
    (gamma(0.8, 0.1), stats.gamma(0.8, scale=10.0)),
    (normal(1.0, 2.0), stats.norm(1.0, np.sqrt(2.0))),
]
IDS = [repr(q) for q, _ in CASES]


@pytest.mark.parametrize(("q", "ref"), CASES, ids=IDS)
def test_moments_density_and_entropy_match_scipy(q, ref):
    assert q.mean == pytest.approx(ref.mean(), rel=1e-12)
    assert q.var == pytest.approx(ref.var(), rel=1e-12)
    assert q.entropy() == pytest.approx(ref.entropy(), rel=1e-10, abs=1e-12)
    theta = ref.ppf([0.01, 0.3, 0.5, 0.9])
    assert np.allclose(q.log_density(theta), ref.logpdf(theta), rtol=1e-12)
    # μ = E[s(θ)] by scipy's own numerical expectation.
    mu = [ref.expect(lambda t, i=i: q.family.stats(t)[..., i]) for i in range(2)]
    assert np.allclose(q.mean_params(), mu, rtol=1e-6, atol=1e-8)


def test_density_is_minus_infinity_outside_the_support():
    assert beta(2, 3).log_density([-0.1, 1.1]).tolist() == [-np.inf, -np.inf]
    assert gamma(2, 1).log_density(-1.0) == -np.inf
    assert beta(1, 2).log_density(0.0) == pytest.approx(np.log(2.0))  # 0·log 0 = 0


@pytest.mark.parametrize(("q", "ref"), CASES, ids=IDS)
def test_fisher_is_the_hessian_of_the_log_partition(q, ref):
    fam, eta, h = q.family, q.eta, 1e-4
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            hess[i, j] = (fam.log_partition(eta + ei + ej) - fam.log_partition(eta + ei - ej)
                          - fam.log_partition(eta - ei + ej)
                          + fam.log_partition(eta - ei - ej)) / (4 * h * h)
    assert np.allclose(fam.fisher(eta), hess, rtol=1e-5, atol=1e-6)
    # ... and the gradient is μ.
    grad = [(fam.log_partition(eta + e * h) - fam.log_partition(eta - e * h)) / (2 * h)
            for e in np.eye(2)]
    assert np.allclose(q.mean_params(), grad, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("q", [beta(2.5, 7.0), gamma(3.0, 2.0), normal(1.0, 2.0)], ids=repr)
def test_fisher_is_the_covariance_of_the_sufficient_statistics(q):
    n = 200_000
    s = q.family.stats(q.sample(np.random.default_rng(5), n))
    cov = np.cov(s.T)
    fisher = q.fisher()
    # Standard error of a sample covariance: sqrt(Var[(s_i − μ_i)(s_j − μ_j)] / n).
    c = s - s.mean(axis=0)
    se = np.sqrt(np.var(c[:, :, None] * c[:, None, :], axis=0) / n)
    assert np.all(np.abs(cov - fisher) < 5 * se)
    assert np.all(np.abs(s.mean(axis=0) - q.mean_params()) < 5 * s.std(axis=0) / np.sqrt(n))


KL_PAIRS = [
    (beta(2.0, 3.0), beta(4.0, 4.0)),
    (beta(30.0, 10.0), beta(25.0, 12.0)),
    (gamma(3.0, 2.0), gamma(5.0, 1.0)),
    (normal(1.0, 2.0), normal(0.0, 1.0)),
]


@pytest.mark.parametrize(("q", "p"), KL_PAIRS, ids=[f"{q}|{p}" for q, p in KL_PAIRS])
def test_closed_form_kl_matches_monte_carlo_and_numerical_integration(q, p):
    exact = q.kl(p)
    theta = q.sample(np.random.default_rng(11), 100_000)
    ratio = q.log_density(theta) - p.log_density(theta)
    assert abs(ratio.mean() - exact) < 5 * ratio.std() / np.sqrt(theta.size)
    lo, hi = q.family.support

    def integrand(t):
        return np.exp(q.log_density(t)) * (q.log_density(t) - p.log_density(t))

    numeric = integrate.quad(integrand, lo, hi, points=None if np.isinf(hi - lo) else
                             [q.mean], limit=200)[0]
    assert exact == pytest.approx(numeric, rel=1e-7, abs=1e-10)
    assert q.kl(q) == 0.0


@given(a=st.floats(0.2, 500), b=st.floats(0.2, 500), c=st.floats(0.2, 500),
       d=st.floats(0.2, 500))
@settings(max_examples=60, deadline=None)
def test_kl_is_nonnegative_and_mean_to_natural_round_trips(a, b, c, d):
    q, p = beta(a, b), beta(c, d)
    assert q.kl(p) >= 0.0
    back = BETA.natural_from_mean(q.mean_params())
    assert np.allclose(back, q.eta, rtol=1e-6, atol=1e-6)
    g = gamma(a, c)
    assert np.allclose(GAMMA.natural_from_mean(g.mean_params()), g.eta, rtol=1e-6, atol=1e-8)


def test_parameter_conversions_round_trip():
    assert BETA.to_params(BETA.from_params(a=2.5, b=0.5)) == {"a": 2.5, "b": 0.5}
    assert GAMMA.to_params(GAMMA.from_params(shape=3.0, rate=0.25)) == {"shape": 3.0,
                                                                        "rate": 0.25}
    g = GAUSSIAN.to_params(GAUSSIAN.from_params(mean=-1.5, var=0.5))
    assert g == pytest.approx({"mean": -1.5, "var": 0.5})
    assert np.allclose(GAUSSIAN.natural_from_mean([1.0, 3.0]), normal(1.0, 2.0).eta)


def test_sampling_uses_the_generator_given():
    q = beta(2.0, 5.0)
    a = q.sample(np.random.default_rng(3), 5)
    b = q.sample(np.random.default_rng(3), 5)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: BETA.check([-1.0, 0.5]), "eta: Beta natural parameters must be > -1"),
    (lambda: BETA.check([0.0, np.nan]), "eta: Beta natural parameters must be finite"),
    (lambda: BETA.check([0.0, 1.0, 2.0]), "eta: Beta natural parameters must have shape"),
    (lambda: GAMMA.check([0.0, 1.0], "state"), "state: Gamma natural parameters must"),
    (lambda: GAUSSIAN.check([0.0, 0.0]), "eta: Gaussian natural parameters must"),
    (lambda: beta(0.0, 1.0), "a: Beta parameter must be > 0"),
    (lambda: gamma(1.0, -2.0), "rate: Gamma parameter must be > 0"),
    (lambda: normal(0.0, 0.0), "var: Gaussian variance must be > 0"),
    (lambda: BETA.natural_from_mean([-0.1, -0.1]), "mu: Beta mean parameters must satisfy"),
    (lambda: GaussianLikelihood(0.0), "noise_var: must be > 0"),
    (lambda: BernoulliLikelihood().check([0, 1, 2]), "data: Bernoulli data must be in {0, 1}"),
    (lambda: PoissonLikelihood().check([1.5]), "data: Poisson data must be non-negative"),
    (lambda: ExponentialLikelihood().check([-1.0]), "data: exponential data must be >= 0"),
    (lambda: ExponentialLikelihood().check([]), "data: must be a non-empty 1-D array"),
    (lambda: beta(1, 1).kl(gamma(1, 1)), "other: KL needs the same family"),
])
def test_bad_arguments_raise_one_line_errors_naming_them(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ conjugate likelihoods


def test_beta_bernoulli_posterior_is_the_textbook_one():
    x = np.array([1, 0, 1, 1, 0, 1, 1])
    post = BernoulliLikelihood().posterior(beta(2.0, 3.0).eta, x)
    assert BETA.to_params(post) == {"a": 2.0 + 5, "b": 3.0 + 2}


def test_gamma_poisson_posterior_is_the_textbook_one():
    x = np.array([3, 0, 2, 5])
    post = PoissonLikelihood().posterior(gamma(2.0, 0.5).eta, x)
    assert GAMMA.to_params(post) == {"shape": 2.0 + 10, "rate": 0.5 + 4}


def test_gaussian_known_variance_posterior_is_the_textbook_one():
    x = np.array([0.3, -1.2, 2.0])
    s2, m0, v0 = 0.5, 1.0, 2.0
    post = GAUSSIAN.to_params(GaussianLikelihood(s2).posterior(normal(m0, v0).eta, x))
    prec = 1 / v0 + len(x) / s2
    assert post["var"] == pytest.approx(1 / prec, rel=1e-14)
    assert post["mean"] == pytest.approx((m0 / v0 + x.sum() / s2) / prec, rel=1e-14)


@pytest.mark.parametrize(("prior", "lik", "data"), [
    (beta(2.0, 3.0), BernoulliLikelihood(), np.array([1.0, 0, 1, 1, 0, 1])),
    (gamma(2.0, 0.5), PoissonLikelihood(), np.array([3.0, 0, 2, 5])),
    (normal(1.0, 2.0), GaussianLikelihood(0.5), np.array([0.3, -1.2, 2.0])),
], ids=["bernoulli", "poisson", "gaussian"])
def test_sum_loss_is_the_log_likelihood_and_the_posterior_is_its_normalisation(prior, lik, data):
    summary = lik.summary(lik.check(data))
    theta = prior.sample(np.random.default_rng(0), 7)
    if isinstance(lik, BernoulliLikelihood):
        ref = stats.bernoulli(theta[:, None]).logpmf(data).sum(axis=1)
    elif isinstance(lik, PoissonLikelihood):
        ref = stats.poisson(theta[:, None]).logpmf(data).sum(axis=1)
    else:
        ref = stats.norm(theta[:, None], np.sqrt(lik.noise_var)).logpdf(data).sum(axis=1)
    assert np.allclose(-lik.sum_loss(theta, summary), ref, rtol=1e-12)
    # prior × likelihood, normalised numerically, is the closed-form posterior.

    def log_joint(t):
        return prior.log_density(t) - lik.sum_loss(t, summary)

    post = prior.family.check(lik.posterior(prior.eta, data))
    log_evidence = log_integral(prior.family, log_joint)
    probe = prior.family.sample(post, np.random.default_rng(1), 5)
    assert np.allclose(log_joint(probe) - log_evidence,
                       prior.family.log_density(post, probe), atol=1e-9)


def test_log_integral_gives_the_beta_function():
    a, b = 3.5, 120.0
    log_z = log_integral(BETA, lambda t: (a - 1) * np.log(t) + (b - 1) * np.log1p(-t))
    assert log_z == pytest.approx(special.betaln(a, b), rel=1e-12)


def test_docstring_examples_run():
    import doctest

    from bflnet.learners.conjugate import expfam

    result = doctest.testmod(expfam)
    assert result.attempted > 0 and result.failed == 0
