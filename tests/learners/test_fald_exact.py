"""FALD / WFLMC on Bayesian linear regression is a linear Gaussian chain: its stationary law
is known in closed form (mean ``(I − M)⁻¹ c``, covariance the solution of
``Σ = M Σ Mᵀ + Q``), derived here from the data, independently of the learner. Many chains
run long enough to forget their start are then tested against that law by an exact
chi-square statistic, tight enough that a Langevin noise 2 % too large (or too small) in
standard deviation fails: ``Σ_chains (θ − μ)ᵀ Σ⁻¹ (θ − μ) ~ χ²(n d)``, whose relative
standard deviation at n d = 200 000 is 0.32 %, against a 4 % shift of the variance.

A round at an SNR where truncation silences a device and clipping acts is checked the
same way: the next sample minus the clipped mean of the active devices' changes is
Gaussian with the variance the round reports."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import linalg, stats

from bflnet.learners.langevin.fald import FALD, gaussian_linear_grads
from bflnet.protocols.parameter_server import run_fald
from bflnet.protocols.uplink import AirCompUplink
from bflnet.radio.aircomp import AirCompSpec, plan_round

K, D, PER = 5, 2, 20
CHAINS = 100_000
#: Rounds from the N(0, I) start: the contraction of these chains is at most 0.52 per
#: round, so the start's trace left after 30 rounds is below 1e-8 (asserted).
ROUNDS = 30
#: Smallest two-sided p-value accepted (|z| < 3.9): a correct chain fails with
#: probability 1e-4 (the seeds are fixed); a 2 % error in the noise's standard deviation
#: moves the statistic by about 8 standard deviations.
P_MIN = 1e-4


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((K * PER, D))
    y = x @ rng.standard_normal(D) + rng.standard_normal(K * PER)
    return x, y, [np.arange(k * PER, (k + 1) * PER) for k in range(K)]


def stationary_law(x: np.ndarray, y: np.ndarray, parts: list[np.ndarray], step: float,
                   local_steps: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(μ, Σ, ρ)`` of one FALD round over ideal links, from the data: device k's
    gradient is ``G_k θ − b_k`` (``G_k = x_kᵀx_k + I / K``, ``b_k = x_kᵀy_k``), a local
    step ``θ ← B_k θ + η K b_k (+ sqrt(2 η K) ξ but on the last)`` with
    ``B_k = I − η K G_k``, the merge adds ``sqrt(2 η) ξ``; ρ is the contraction."""
    eye = np.eye(D)
    eta_k = step * K
    M = np.zeros((D, D))
    c = np.zeros(D)
    Q = 2.0 * step * eye
    for p in parts:
        G = x[p].T @ x[p] + eye / K
        b = x[p].T @ y[p]
        B = eye - eta_k * G
        M += np.linalg.matrix_power(B, local_steps) / K
        c += sum(np.linalg.matrix_power(B, j) @ (eta_k * b) for j in range(local_steps)) / K
        for j in range(1, local_steps):  # noise of step L−1−j, then j gradient steps
            Bj = np.linalg.matrix_power(B, j)
            Q += 2.0 * eta_k * Bj @ Bj.T / K ** 2
    mu = np.linalg.solve(eye - M, c)
    sigma = linalg.solve_discrete_lyapunov(M, Q)
    return mu, (sigma + sigma.T) / 2.0, float(np.abs(np.linalg.eigvals(M)).max())


def chi2_p(residuals: np.ndarray, cov: np.ndarray) -> float:
    """Two-sided p-value of ``Σ rᵀ cov⁻¹ r`` (rows r) against χ²(rows · dims)."""
    white = np.linalg.solve(np.linalg.cholesky(cov), residuals.T)
    total, dof = float((white ** 2).sum()), residuals.size
    return 2.0 * min(stats.chi2.cdf(total, dof), stats.chi2.sf(total, dof))


def mean_p(samples: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> float:
    """p-value of the sample mean against ``N(μ, cov / n)``: ``n |mean − μ|²_cov⁻¹ ~ χ²(d)``."""
    n = samples.shape[0]
    white = np.linalg.solve(np.linalg.cholesky(cov / n), samples.mean(axis=0) - mu)
    return float(stats.chi2.sf(float(white @ white), D))


def uplink(tx_power: float, rule: str = "langevin") -> AirCompUplink:
    spec = AirCompSpec(tx_power=tx_power, noise_power=1.0, power_rule=rule)
    return AirCompUplink(spec, np.full(K, 0.01), clip=50.0)


@pytest.mark.parametrize(("local_steps", "how", "seed"), [
    (1, "ideal", 11), (3, "ideal", 12), (1, "air", 13), (1, "air-full", 14)])
def test_chains_follow_the_exact_stationary_law_of_the_discretised_chain(local_steps, how,
                                                                         seed):
    """Ideal links (the learner adds all the Langevin noise), local steps (their noise
    too), over the air at 90 dB (the channel supplies it all) and at full power (the
    channel a little, the learner the rest): the exact law, within p >= 1e-4."""
    x, y, parts = data()
    precision = x.T @ x + np.eye(D)
    step = 0.8 / np.linalg.eigvalsh(precision).max() / local_steps
    mu, sigma, rho = stationary_law(x, y, parts, step, local_steps)
    assert rho ** ROUNDS < 1e-8  # the start is forgotten
    learner = FALD(gaussian_linear_grads(x, y, parts), step_size=step,
                   local_steps=local_steps)
    air = {"ideal": None, "air": uplink(1e9), "air-full": uplink(1e9, "full")}[how]
    frame, final = run_fald(learner, ROUNDS, D, seed=seed, uplink=air, chains=CHAINS)
    rounds = frame[frame["event"] == "round"]
    assert len(rounds) == ROUNDS and (rounds["clipped"] == 0).all()
    np.testing.assert_allclose(rounds["channel_var"] + rounds["added_var"],
                               learner.noise_target, rtol=1e-9)
    if how == "air":
        assert (rounds["added_var"] == 0).all()
    if how == "air-full":
        assert (rounds["added_var"] > 0.9 * learner.noise_target).all()
        assert (rounds["channel_var"] > 0).all()
    assert chi2_p(final - mu, sigma) > P_MIN
    assert mean_p(final, mu, sigma) > P_MIN


@pytest.mark.parametrize("scale", [1.02, 0.98])
def test_a_noise_two_percent_off_fails_the_same_check(scale):
    """The check's power, shown without editing the learner: a FALD whose merge noise has
    a standard deviation ``scale`` times the right one is refused."""

    class Off(FALD):
        def merge(self, theta, mean_update, channel_var, rng):
            new, added = super().merge(theta, mean_update, channel_var, rng)
            return theta + mean_update + scale * (new - theta - mean_update), added

    x, y, parts = data()
    step = 0.8 / np.linalg.eigvalsh(x.T @ x + np.eye(D)).max()
    mu, sigma, _ = stationary_law(x, y, parts, step, 1)
    _, final = run_fald(Off(gaussian_linear_grads(x, y, parts), step_size=step), ROUNDS, D,
                        seed=11, chains=CHAINS)
    assert chi2_p(final - mu, sigma) < 1e-8


def clipped_mean(deltas: np.ndarray, active: np.ndarray, clip: float) -> np.ndarray:
    norms = np.linalg.norm(deltas, axis=-1, keepdims=True)
    scaled = deltas * np.minimum(1.0, clip / norms)
    return scaled[:, active].mean(axis=1)


@pytest.mark.parametrize(("tx_power", "budget_binds"), [(1e3, False), (1.0, True)])
def test_a_round_where_truncation_and_clipping_act_has_the_reported_gaussian_noise(
        tx_power, budget_binds):
    """One device in a deep fade (no fading, mean gain 1e-6 against 1e-2): the authors'
    threshold silences it; the clip (0.1) cuts most changes. The next sample minus the
    clipped mean of the four active devices' changes is N(0, channel + added variance)
    per coordinate; at 0 dB the budget binds and that variance exceeds 2η."""
    x, y, parts = data()
    step = 0.5 / np.linalg.eigvalsh(x.T @ x + np.eye(D)).max()
    learner = FALD(gaussian_linear_grads(x, y, parts), step_size=step)
    gains = np.array([1e-2] * (K - 1) + [1e-6])
    clip = 0.1
    spec = AirCompSpec(tx_power=tx_power, noise_power=1.0, fading="none")
    kept: dict[int, np.ndarray] = {}
    frame, _ = run_fald(learner, 2, D, seed=21, uplink=AirCompUplink(spec, gains, clip),
                        chains=20_000, on_round=lambda r, th: kept.__setitem__(r, th.copy()))
    row = frame[frame["event"] == "round"].iloc[-1]
    plan = plan_round(np.sqrt(gains), spec, dim=D, clip=clip, target_var=learner.noise_target)
    assert plan.active.tolist() == [True] * (K - 1) + [False]
    assert row["k_active"] == K - 1 and row["clipped"] > 0.5 * 20_000 * (K - 1)
    theta = kept[1]
    deltas = learner.local_updates(theta, [np.random.default_rng(0)] * K)  # no draws
    residual = kept[2] - theta - clipped_mean(deltas, plan.active, clip)
    var = row["channel_var"] + row["added_var"]
    assert (var > 1.5 * learner.noise_target) == budget_binds
    assert row["channel_var"] == pytest.approx(plan.noise_var, rel=1e-12)
    assert chi2_p(residual, var * np.eye(D)) > P_MIN
    assert chi2_p(residual, 1.0404 * var * np.eye(D)) < 1e-8  # the same power as above
    assert math.isfinite(var)


@pytest.mark.parametrize("local_steps", [1, 3])
def test_the_chain_laws_in_closed_form_are_the_chains_round_by_round(local_steps):
    """:func:`fald_chain_laws` (the scenario's exact W2²): after 3 rounds from N(0, I) the
    chains follow its law (chi-square, 100 000 chains); after many rounds it is the
    stationary law derived above."""
    from bflnet.learners.langevin.fald import fald_chain_laws

    x, y, parts = data()
    step = 0.8 / np.linalg.eigvalsh(x.T @ x + np.eye(D)).max() / local_steps
    grads = gaussian_linear_grads(x, y, parts)
    means, covs = fald_chain_laws(grads, step, local_steps, 200)
    mu, sigma, _ = stationary_law(x, y, parts, step, local_steps)
    np.testing.assert_allclose(means[-1], mu, rtol=1e-9)
    np.testing.assert_allclose(covs[-1], sigma, rtol=1e-9)
    np.testing.assert_allclose(covs[0], np.eye(D)) and np.testing.assert_allclose(means[0], 0)
    kept: dict[int, np.ndarray] = {}
    run_fald(FALD(grads, step_size=step, local_steps=local_steps), 3, D, seed=31,
             chains=CHAINS, on_round=lambda r, th: kept.__setitem__(r, th.copy()))
    assert chi2_p(kept[3] - means[3], covs[3]) > P_MIN
    assert chi2_p(kept[3] - means[3], 1.0404 * covs[3]) < 1e-8
