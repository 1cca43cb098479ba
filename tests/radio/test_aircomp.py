"""The analog over-the-air sum: its noise statistics, truncation, air time and energy in
closed form, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bflnet.radio.aircomp import (
    AirCompSpec,
    draw_amplitudes,
    mean_gains_to_server,
    plan_round,
    transmit,
    truncation_threshold,
    tx_power_from_snr_db,
    wflmc_threshold,
)
from bflnet.radio.pathloss import LogDistance


def test_aggregate_minus_noiseless_sum_has_mean_zero_and_variance_n0_over_scale():
    """Fixed h_k, p_k: over 4000 draws per coordinate, the error of the received sum has
    mean 0 and variance N_0, i.e. N_0 / a on the sum estimate y / sqrt(a), within 4
    standard errors; the noiseless part is exactly sqrt(a) Σ_active x_k."""
    rng = np.random.default_rng(1)
    K, d, draws = 6, 3, 4000
    spec = AirCompSpec(tx_power=2.0, noise_power=0.7, gain_threshold=0.3, power_rule="full")
    amps = np.array([0.2, 0.5, 1.3, 0.9, 0.31, 2.0])
    plan = plan_round(amps, spec, dim=d, clip=1.5)
    assert plan.k_active == 5 and plan.scale == pytest.approx(0.31 ** 2 * d * 2.0 / 1.5 ** 2)
    x = rng.uniform(-0.5, 0.5, size=(draws, K, d))
    rx = transmit(plan, amps, x, spec, np.random.default_rng(2), clip=1.5)
    exact = math.sqrt(plan.scale) * x[:, plan.active].sum(axis=1)
    np.testing.assert_allclose(rx.noiseless, exact, rtol=1e-12, atol=1e-12)
    err = (rx.signal - rx.noiseless) / math.sqrt(plan.scale)  # error of the sum estimate
    target = spec.noise_power / plan.scale
    for j in range(d):
        e = err[:, j]
        assert abs(e.mean()) < 4 * math.sqrt(target / draws)
        # sample variance: standard error sqrt(2/(n-1)) σ² for a normal
        assert abs(e.var(ddof=1) - target) < 4 * target * math.sqrt(2 / (draws - 1))
    # the mean estimate's noise variance is N_0 / (a K_a²), as planned
    mean_err = rx.mean - x[:, plan.active].mean(axis=1)
    assert abs(mean_err.var(ddof=1) - plan.noise_var) < (
        4 * plan.noise_var * math.sqrt(2 / (mean_err.size - 1)))


@pytest.mark.parametrize("threshold", [0.0, 0.35, 0.9, 1.99])
def test_silent_devices_are_exactly_those_below_the_threshold(threshold):
    amps = np.array([0.2, 0.5, 1.3, 0.9, 0.35, 2.0, 0.0])
    spec = AirCompSpec(gain_threshold=threshold)
    plan = plan_round(amps, spec, dim=4, clip=1.0)
    assert plan.active.tolist() == [(a >= threshold and a > 0) for a in amps]
    rx = transmit(plan, amps, np.ones((7, 4)), spec, np.random.default_rng(0), clip=1.0)
    assert (rx.energy[~plan.active] == 0).all() and (rx.energy[plan.active] > 0).all()


def test_wflmc_threshold_minimises_the_authors_error_over_the_sorted_gains():
    rng = np.random.default_rng(3)
    for _ in range(50):
        amps = 0.1 * np.sqrt(rng.standard_exponential(30))
        energy, n0 = 5 * 10 ** 1.5, 1.0
        g = wflmc_threshold(amps, energy, n0)
        errors = {}
        for t in amps:  # brute force over every candidate threshold
            k = int((amps >= t).sum())
            errors[t] = n0 * 30 ** 2 / (energy * k ** 2 * t ** 2) + 4 * (30 - k) ** 2
        assert errors[g] == min(errors.values())


def test_consistent_threshold_minimises_the_whole_vector_error_bound():
    """Brute force over the candidates: d N_0 K² / (E k² h²) + 4 (K − k)² with E = d P̄."""
    rng = np.random.default_rng(4)
    for d in (5, 1000, 79_510):
        spec = AirCompSpec(tx_power=10.0, truncation="consistent")
        for _ in range(20):
            amps = 0.1 * np.sqrt(rng.standard_exponential(10))
            g = truncation_threshold(amps, spec, d)
            errors = {}
            for t in amps:
                k = int((amps >= t).sum())
                errors[t] = d * 10 ** 2 / (d * 10.0 * k ** 2 * t ** 2) + 4 * (10 - k) ** 2
            assert errors[g] == pytest.approx(min(errors.values()), rel=1e-12)


def test_the_consistent_rule_does_not_depend_on_d_and_the_authors_rule_stops_cutting():
    """Same amplitudes and per-use power (10 dB, K = 10, mean gain −20 dB): the consistent
    threshold is the same at d = 5 and d = 79 510 and cuts in most rounds; the authors'
    rule cuts about as often at d = 5 but almost never at d = 79 510 (only a fade
    |h|² below 0.3 % of its mean), as its noise term falls as 1 / d."""
    rng = np.random.default_rng(5)
    consistent = AirCompSpec(tx_power=10.0, truncation="consistent")
    authors = AirCompSpec(tx_power=10.0)
    cuts = {"consistent": 0, "authors 5": 0, "authors 79510": 0}
    for _ in range(200):
        amps = 0.1 * np.sqrt(rng.standard_exponential(10))
        g = truncation_threshold(amps, consistent, 5)
        assert g == truncation_threshold(amps, consistent, 79_510)
        cuts["consistent"] += g > amps.min()
        cuts["authors 5"] += truncation_threshold(amps, authors, 5) > amps.min()
        cuts["authors 79510"] += truncation_threshold(amps, authors, 79_510) > amps.min()
    assert cuts["consistent"] > 100 and cuts["authors 5"] > 50
    assert cuts["authors 79510"] < 10
    fixed = AirCompSpec(gain_threshold=0.05, truncation="consistent")
    assert truncation_threshold(np.array([0.01, 1.0]), fixed, 3) == 0.05  # a set one wins


def test_langevin_rule_caps_the_scale_so_the_channel_noise_is_the_target():
    amps = np.array([1.0, 2.0, 3.0])
    high = AirCompSpec(tx_power=1e6, noise_power=1.0, gain_threshold=0.5)
    plan = plan_round(amps, high, dim=2, clip=1.0, target_var=0.01)
    assert plan.scale == pytest.approx(1.0 / (0.01 * 9)) and plan.noise_var == pytest.approx(
        0.01)
    low = AirCompSpec(tx_power=1e-3, noise_power=1.0, gain_threshold=0.5)
    plan = plan_round(amps, low, dim=2, clip=1.0, target_var=0.01)  # budget binds
    assert plan.scale == pytest.approx(2e-3) and plan.noise_var > 0.01
    full = AirCompSpec(tx_power=1e6, noise_power=1.0, gain_threshold=0.5, power_rule="full")
    assert plan_round(amps, full, dim=2, clip=1.0, target_var=0.01).scale == pytest.approx(2e6)


@pytest.mark.parametrize(("d", "K", "bandwidth", "latency"),
                         [(5, 30, 1e6, 0.0), (100, 3, 2e4, 0.01), (7, 1000, 1e3, 0.5)])
def test_air_time_and_energy_follow_their_closed_forms(d, K, bandwidth, latency):
    """Air time d / B + latency whatever K; device k's energy a ||x_k||² / (h_k² B), the
    weakest active device at full power spending exactly the budget d P̄ / B."""
    rng = np.random.default_rng(K)
    spec = AirCompSpec(tx_power=3.0, noise_power=1.0, bandwidth_hz=bandwidth,
                       latency_s=latency, gain_threshold=0.05, power_rule="full")
    assert spec.airtime_s(d) == d / bandwidth + latency
    amps = draw_amplitudes(rng, np.full(K, 0.04))
    clip = 2.0
    x = rng.standard_normal((K, d))
    x[np.argmin(np.where(amps >= 0.05, amps, np.inf))] *= 10.0  # the weakest is clipped
    plan = plan_round(amps, spec, dim=d, clip=clip)
    rx = transmit(plan, amps, x, spec, rng, clip=clip)
    xc = x * np.minimum(1.0, clip / np.linalg.norm(x, axis=1))[:, None]
    expected = np.where(plan.active, plan.scale * (xc ** 2).sum(1)
                        / np.where(plan.active, amps, 1.0) ** 2 / bandwidth, 0.0)
    np.testing.assert_allclose(rx.energy, expected, rtol=1e-12)
    weakest = np.argmin(np.where(plan.active, amps, np.inf))
    assert rx.energy[weakest] == pytest.approx(d * 3.0 / bandwidth, rel=1e-12)
    assert (rx.energy <= d * 3.0 / bandwidth * (1 + 1e-12)).all()


def test_rayleigh_amplitudes_have_the_mean_power_of_the_path_loss():
    loss = LogDistance(exponent=3.0, ref_distance_m=1.0, ref_loss_db=40.0)
    xy = np.array([[10.0, 0.0], [0.0, 20.0]])
    gains = mean_gains_to_server(xy, np.zeros(2), loss)
    np.testing.assert_allclose(gains, [1e-7, 10 ** (-(40 + 30 * math.log10(20)) / 10)],
                               rtol=1e-12)
    n = 20000
    power = draw_amplitudes(np.random.default_rng(5), np.tile(gains, (n, 1))) ** 2
    for j in range(2):  # Exp(mean): standard error mean / sqrt(n)
        assert abs(power[:, j].mean() - gains[j]) < 4 * gains[j] / math.sqrt(n)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"tx_power": -1.0}, "tx_power"), ({"tx_power": math.nan}, "tx_power"),
    ({"noise_power": 0.0}, "noise_power"), ({"bandwidth_hz": math.inf}, "bandwidth_hz"),
    ({"gain_threshold": -0.1}, "gain_threshold"), ({"power_rule": "loud"}, "power_rule"),
    ({"fading": "rician"}, "fading"), ({"latency_s": 1e308}, "latency_s"),
    ({"truncation": "wflmc"}, "truncation")])
def test_bad_settings_are_one_line_errors_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}: ") as info:
        AirCompSpec(**kwargs)
    assert "\n" not in str(info.value)


def test_nan_snr_is_refused_and_a_threshold_above_every_gain_is_a_silent_round():
    with pytest.raises(ValueError, match="^snr_db: "):
        tx_power_from_snr_db(math.nan)
    with pytest.raises(ValueError, match="^snr_db: "):
        tx_power_from_snr_db(10 ** 400)
    spec = AirCompSpec(gain_threshold=10.0)
    plan = plan_round(np.array([0.1, 0.2]), spec, dim=3, clip=1.0, target_var=0.1)
    assert plan.k_active == 0 and plan.scale == 0.0 and not plan.active.any()
    with pytest.raises(ValueError, match="no device transmits"):
        transmit(plan, np.array([0.1, 0.2]), np.ones((2, 3)), spec,
                 np.random.default_rng(0), clip=1.0)
    with pytest.raises(ValueError, match="^clip: "):
        plan_round(np.array([0.1]), spec, dim=3, clip=math.nan)
