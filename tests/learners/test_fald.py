"""WFALD / WFLMC over the air sample the exact posterior of Bayesian linear regression when
the channel supplies all of the Langevin noise; the learner adds only the remainder."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bflnet.learners.langevin.fald import (
    FALD,
    gaussian_linear_grads,
    gaussian_linear_posterior,
    gaussian_w2_squared,
)
from bflnet.protocols.parameter_server import run_fald
from bflnet.protocols.uplink import AirCompUplink
from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db

K, D, PER = 5, 2, 20
CHAINS, ROUNDS = 2000, 700


def problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((K * PER, D))
    y = x @ rng.standard_normal(D) + rng.standard_normal(K * PER)
    parts = [np.arange(k * PER, (k + 1) * PER) for k in range(K)]
    mean, cov = gaussian_linear_posterior(x, y)
    # η λ_max = 0.04: the Langevin discretisation inflates the variance by ~2 %, far
    # below 4 standard errors of 2000 chains (~13 %)
    eta = 0.04 / np.linalg.eigvalsh(np.linalg.inv(cov)).max()
    return gaussian_linear_grads(x, y, parts), mean, cov, eta


def check_exact(samples: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> None:
    n = samples.shape[0]
    for j in range(D):
        var = cov[j, j]
        assert abs(samples[:, j].mean() - mean[j]) < 4 * math.sqrt(var / n)
        assert abs(samples[:, j].var(ddof=1) - var) < 4 * var * math.sqrt(2 / (n - 1))


def uplink(snr_db: float, rule: str = "langevin") -> AirCompUplink:
    spec = AirCompSpec(tx_power=tx_power_from_snr_db(snr_db), noise_power=1.0,
                       power_rule=rule)
    return AirCompUplink(spec, np.full(K, 0.01), clip=0.5)


@pytest.mark.parametrize("local_steps", [1, 3])
def test_channel_noise_supplies_all_langevin_noise_and_the_posterior_is_exact(local_steps):
    grads, mean, cov, eta = problem()
    learner = FALD(grads, step_size=eta / local_steps, local_steps=local_steps)
    frame, final = run_fald(learner, ROUNDS, D, seed=3, uplink=uplink(90.0), chains=CHAINS)
    rounds = frame[frame["event"] == "round"]
    assert len(rounds) == ROUNDS and (rounds["k_active"] == K).all()
    assert (rounds["added_var"] == 0).all()  # the channel's noise is all the noise
    np.testing.assert_allclose(rounds["channel_var"], learner.noise_target, rtol=1e-12)
    assert (rounds["clipped"] == 0).all()
    check_exact(final, mean, cov)
    assert frame["time_s"].iloc[-1] == pytest.approx(ROUNDS * D / 1e6)


def test_full_power_leaves_less_channel_noise_and_the_learner_adds_the_rest():
    grads, mean, cov, eta = problem()
    learner = FALD(grads, step_size=eta)
    frame, final = run_fald(learner, ROUNDS, D, seed=4, uplink=uplink(90.0, "full"),
                            chains=CHAINS)
    rounds = frame[frame["event"] == "round"]
    np.testing.assert_allclose(rounds["channel_var"] + rounds["added_var"],
                               learner.noise_target, rtol=1e-9)
    assert (rounds["added_var"] > 0).all()
    check_exact(final, mean, cov)


def test_ideal_links_are_noiseless_fald():
    grads, mean, cov, eta = problem()
    learner = FALD(grads, step_size=eta)
    frame, final = run_fald(learner, ROUNDS, D, seed=5, chains=CHAINS)
    rounds = frame[frame["event"] == "round"]
    assert (rounds["added_var"] == learner.noise_target).all()
    assert frame["cum_bits_up"].iloc[-1] == ROUNDS * K * D * 32 * CHAINS
    check_exact(final, mean, cov)


def test_at_low_snr_the_excess_channel_noise_inflates_the_posterior():
    """The check has power: at 0 dB the channel noise exceeds 2η and the samples are far
    too spread (the learner cannot remove noise)."""
    grads, _mean, cov, eta = problem()
    learner = FALD(grads, step_size=eta)
    frame, final = run_fald(learner, 300, D, seed=6, uplink=uplink(0.0), chains=500)
    rounds = frame[frame["event"].isin(["round", "silent_round"])]
    assert (rounds["added_var"] == 0).all()
    assert (rounds.loc[rounds["event"] == "round", "channel_var"] > learner.noise_target).all()
    assert final[:, 0].var() > 2 * cov[0, 0]


def test_a_threshold_above_every_gain_gives_silent_rounds_and_no_nan():
    grads, _, _, eta = problem()
    learner = FALD(grads, step_size=eta)
    spec = AirCompSpec(tx_power=10.0, gain_threshold=1.0)
    frame, final = run_fald(learner, 5, D, seed=7,
                            uplink=AirCompUplink(spec, np.full(K, 0.01), clip=10.0))
    assert (frame["event"].iloc[1:] == "silent_round").all()
    assert not frame.select_dtypes("number").isna().any().any()
    assert np.isfinite(final).all() and frame["time_s"].iloc[-1] == pytest.approx(5 * D / 1e6)


def test_w2_of_equal_gaussians_is_zero_and_matches_a_closed_form():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    assert gaussian_w2_squared(np.zeros(2), cov, np.zeros(2), cov) == pytest.approx(0, abs=1e-12)
    # diagonal covariances: |m|² + Σ (sqrt(a) − sqrt(b))²
    w2 = gaussian_w2_squared(np.array([1.0, 0.0]), np.diag([4.0, 1.0]), np.zeros(2),
                             np.diag([1.0, 9.0]))
    assert w2 == pytest.approx(1.0 + 1.0 + 4.0)


@pytest.mark.parametrize("local_steps", [1, 4])
def test_batched_local_updates_equal_the_per_device_ones_draw_for_draw(local_steps):
    grads, _, _, eta = problem()
    learner = FALD(grads, step_size=eta, local_steps=local_steps)
    looped = FALD(list(grads), step_size=eta, local_steps=local_steps)
    theta = np.random.default_rng(1).standard_normal((3, D))
    rngs_a = [np.random.default_rng(10 + k) for k in range(K)]
    rngs_b = [np.random.default_rng(10 + k) for k in range(K)]
    np.testing.assert_allclose(learner.local_updates(theta, rngs_a),
                               looped.local_updates(theta, rngs_b), rtol=1e-10, atol=1e-14)
