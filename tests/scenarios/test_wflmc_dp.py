"""WFLMC under the privacy budget: the planned runs are ``run_fald``'s chains draw for draw
when nothing caps them, noiseless Langevin with DP adds exactly the privacy noise the
budget calls for, every device stays within (ε, δ), and the settings are checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.learners.langevin.fald import (
    FALD,
    gaussian_linear_grads,
    gaussian_linear_posterior,
)
from bflnet.protocols.parameter_server import run_fald
from bflnet.protocols.uplink import AirCompUplink
from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db
from bflnet.radio.privacy import dp_budget
from bflnet.runs.registry import get_scenario
from bflnet.scenarios.ota import wflmc_dp
from bflnet.scenarios.ota.wflmc_power import LangevinBound
from bflnet.simulator.rng import RngStreams

K, D, ROUNDS = 6, 3, 30
SMALL = {"K": K, "points_per_agent": 20, "dim": D, "runs": 8, "rounds": ROUNDS,
         "burn_in": 20, "snr_db": "10,40"}


def _learner() -> tuple[FALD, float]:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((K * 20, D))
    y = x @ rng.standard_normal(D) + rng.standard_normal(K * 20)
    parts = [np.arange(k * 20, (k + 1) * 20) for k in range(K)]
    _, cov = gaussian_linear_posterior(x, y)
    eig = np.linalg.eigvalsh(np.linalg.inv(cov))
    eta = 0.2 * 2 / (eig.min() + eig.max())
    return FALD(gaussian_linear_grads(x, y, parts), step_size=eta), eta


@pytest.mark.parametrize("snr_db", [0.0, 40.0])
def test_uncapped_planned_runs_are_run_falds_chains(snr_db):
    learner, eta = _learner()
    gains, clip = np.full(K, 0.01), eta * K * 5.0       # a clip that acts now and then
    spec = AirCompSpec(tx_power=tx_power_from_snr_db(snr_db))
    theirs, ours = [], []
    frame, _ = run_fald(learner, ROUNDS, D, seed=11, uplink=AirCompUplink(spec, gains, clip),
                        on_round=lambda s, t: theirs.append(t.copy()), common_noise=True)
    amps = wflmc_dp.fading(11, gains, ROUNDS, "rayleigh")
    rec = wflmc_dp.run_air(learner, amps, spec, dim=D, clip=clip, seed=11,
                           scale_caps=np.full(ROUNDS, math.inf),
                           on_round=lambda s, t: ours.append(t.copy()))
    assert np.array_equal(np.array(theirs), np.array(ours))
    rounds = frame[frame["event"].isin(("round", "silent_round"))]
    np.testing.assert_array_equal(rounds["k_active"], rec.k_active)
    np.testing.assert_array_equal(rounds["channel_var"].where(rounds["k_active"] > 0, 0.0),
                                  rec.channel_var)
    assert (frame["clipped"] > 0).any()


@pytest.mark.parametrize("factor", [0.5, 1.0, 3.0])
def test_noiseless_dp_adds_exactly_the_required_variance(factor):
    """With no gradients the chain's every step is its noise: the privacy noise σ_s² on
    the update, from the very standard normals noiseless Langevin adds (stream
    ``learner``), plus from ``learner.remainder`` what 2η lacks, if anything."""
    _, eta = _learner()
    zero = FALD([lambda th: 0.0 * th] * K, step_size=eta)
    var = np.full(ROUNDS, factor * 2 * eta)
    steps = []

    def keep(s, theta):
        steps.append(theta.copy())

    rec = wflmc_dp.run_noiseless_dp(zero, var, dim=D, seed=3, on_round=keep)
    learner_rng = RngStreams(3).numpy("learner")
    theta0 = learner_rng.standard_normal(D)
    z = np.stack([learner_rng.standard_normal(D) for _ in range(ROUNDS)])
    rest = RngStreams(3).numpy("learner.remainder")
    extra = max(0.0, 2 * eta - factor * 2 * eta)
    want, theta = [], theta0
    for s in range(ROUNDS):
        theta = theta + math.sqrt(var[s]) * z[s]
        if extra > 0:
            theta = theta + math.sqrt(extra) * rest.standard_normal(D)
        want.append(theta)
    np.testing.assert_allclose(steps, want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rec.channel_var, var)
    np.testing.assert_allclose(rec.added_var, extra if extra > 1e-9 * 2 * eta else 0.0)


def test_noiseless_dp_noise_spends_the_budget_at_or_above_the_langevin_level():
    _, eta = _learner()
    clip = eta * K * 30.0                   # at the Langevin level the budget would not do
    bound = LangevinBound(eta=eta, mu=50.0, smooth=150.0, dim=D, initial_w2=1.0)
    alloc = wflmc_dp.Allocation(bound, dp_budget(15.0, 0.01), clip, 1.0, 20, K)
    var = alloc.noiseless_var(ROUNDS)
    assert (var >= 2 * eta * (1 - 1e-9)).all()
    # ρ_s = 2 clip² / (σ_s² K²) (the noise on the sum is σ_s² K²): all of the budget
    rho = 2 * clip ** 2 / (var * K ** 2)
    assert rho.sum() == pytest.approx(dp_budget(15.0, 0.01), rel=1e-6)


@pytest.fixture(scope="module")
def dp_frame():
    scenario = get_scenario("wflmc-gaussian")
    config = scenario.config({**SMALL, "methods": "wflmc,wflmc-opt-dp,wflmc-equal-dp,"
                                                  "noiseless,noiseless-dp"})
    return scenario.run(config, seed=0)


def test_every_device_stays_within_its_privacy_budget(dp_frame):
    rows = dp_frame.set_index(["method", "snr_db"])
    for method in ("wflmc-opt-dp", "wflmc-equal-dp", "noiseless-dp"):
        spent = rows.loc[method, "epsilon_spent"]
        assert (spent <= 15.0 * (1 + 1e-9)).all()
    # at 40 dB the budget binds, not the energy: the optimised allocation spends it all
    assert rows.loc[("wflmc-opt-dp", 40.0), "epsilon_spent"] == pytest.approx(15.0, rel=1e-6)
    assert rows.loc[("wflmc", 40.0), "epsilon_spent"] != rows.loc[("wflmc", 40.0),
                                                                  "epsilon_spent"]  # NaN


def test_privacy_costs_noise_and_repeats_for_ideal_links(dp_frame):
    rows = dp_frame.set_index(["method", "snr_db"])
    # with the privacy cap the channel noise exceeds the Langevin level (a hot chain)
    free = rows.loc[("wflmc", 40.0), "channel_noise_ratio"]
    for method in ("wflmc-opt-dp", "wflmc-equal-dp", "noiseless-dp"):
        assert rows.loc[(method, 40.0), "channel_noise_ratio"] > max(1.0, free)
        assert rows.loc[(method, 40.0), "added_noise_ratio"] == 0.0
    ideal = dp_frame[dp_frame["method"] == "noiseless-dp"]
    assert ideal["w2"].nunique() == 1 and (ideal["cum_bits"] == ROUNDS * K * D * 32).all()
    air = dp_frame[dp_frame["method"].str.endswith("-dp") & (dp_frame["method"] != "noiseless-dp")]
    assert (air["cum_channel_uses"] == ROUNDS * D).all() and (air["energy_j"] > 0).all()


@pytest.mark.parametrize(("setting", "field"), [
    ("epsilon=0", "epsilon"), ("epsilon=-3", "epsilon"), ("epsilon=nan", "epsilon"),
    ("delta=0", "delta"), ("delta=1", "delta"), ("delta=abc", "delta")])
def test_bad_privacy_settings_are_one_line(setting, field, capsys):
    assert main(["run", "wflmc-gaussian", "--set", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]
