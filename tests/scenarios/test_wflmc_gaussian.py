"""Scenario wflmc-gaussian: over-the-air Langevin approaches noiseless Langevin as the SNR
grows, the records follow the power rules, the table is deterministic, bad input is one
line."""

from __future__ import annotations

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario

SMALL = {"K": 10, "points_per_agent": 20, "dim": 3, "runs": 30, "rounds": 60, "burn_in": 40,
         "snr_db": "0,40"}


@pytest.fixture(scope="module")
def frame():
    scenario = get_scenario("wflmc-gaussian")
    return scenario.run(scenario.config(SMALL), seed=1)


def test_low_snr_is_far_from_the_posterior_and_high_snr_is_as_close_as_noiseless(frame):
    w2 = frame.set_index(["method", "snr_db"])["w2_mean"]
    assert w2["wflmc", 0.0] > 3 * w2["noiseless", 0.0]
    # at 40 dB the channel supplies exactly the Langevin noise: the same chain law as
    # noiseless Langevin (the two differ by the Monte-Carlo error of 30 runs only)
    assert w2["wflmc", 40.0] < 2 * w2["noiseless", 40.0]
    rows = frame.set_index(["method", "snr_db"])
    # (up to a rare deep fade where the budget binds)
    assert rows.loc[("wflmc", 40.0), "channel_noise_ratio"] == pytest.approx(1.0, rel=1e-2)
    assert rows.loc[("wflmc", 40.0), "added_noise_ratio"] == 0.0
    assert rows.loc[("wflmc", 0.0), "channel_noise_ratio"] > 1.0


def test_full_power_spends_more_energy_for_the_same_law(frame):
    rows = frame.set_index(["method", "snr_db"])
    full, capped = rows.loc[("wflmc-full", 40.0)], rows.loc[("wflmc", 40.0)]
    assert full["energy_j"] > 10 * capped["energy_j"]
    assert full["channel_noise_ratio"] + full["added_noise_ratio"] == pytest.approx(1.0, rel=1e-2)
    # at 0 dB the budget binds for both rules: the very same chains
    assert rows.loc[("wflmc-full", 0.0), "w2"] == rows.loc[("wflmc", 0.0), "w2"]


def test_air_time_and_bits_follow_the_closed_forms(frame):
    air = frame[frame["method"] != "noiseless"]
    np.testing.assert_allclose(air["time_s"], 60 * 3 / 1e6)
    assert (air["cum_bits"] == 0).all() and (air["cum_channel_uses"] == 60 * 3).all()
    ideal = frame[frame["method"] == "noiseless"]
    assert (ideal["cum_bits"] == 60 * 10 * 3 * 32).all() and (ideal["time_s"] == 0).all()
    # every number is set but the privacy spent, which only the DP methods account
    assert frame["epsilon_spent"].isna().all()
    assert not frame.drop(columns="epsilon_spent").select_dtypes("number").isna().any().any()


def test_same_seed_same_table():
    scenario = get_scenario("wflmc-gaussian")
    config = scenario.config({**SMALL, "runs": 3, "rounds": 10, "burn_in": 5})
    a, b = scenario.run(config, seed=4), scenario.run(config, seed=4)
    assert a.equals(b)


def test_a_threshold_above_every_gain_is_recorded_as_silent_rounds():
    scenario = get_scenario("wflmc-gaussian")
    config = scenario.config({**SMALL, "runs": 2, "rounds": 6, "burn_in": 2,
                              "gain_threshold": 10.0, "methods": "wflmc"})
    out = scenario.run(config, seed=0)
    assert (out["silent_rounds"] == 2 * 6).all() and (out["k_active_mean"] == 0).all()
    assert not out.drop(columns="epsilon_spent").select_dtypes("number").isna().any().any()


@pytest.mark.parametrize(("setting", "field"), [
    ("snr_db=nan", "snr_db"), ("snr_db=5,5", "snr_db"), ("snr_db=1e400", "snr_db"),
    ("burn_in=100", "burn_in"), ("methods=wflmc,digital", "methods"),
    ("clip=-1", "clip"), ("step_scale=1", "step_scale"), ("gain_threshold=-1",
                                                          "gain_threshold")])
def test_bad_input_is_one_line_naming_the_field(setting, field, capsys):
    assert main(["run", "wflmc-gaussian", "--set", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]


def test_placed_devices_at_the_fixed_gain_give_the_fixed_table():
    """1 m with 20 dB of loss at 1 m is the default −20 dB mean gain: the same table; at
    100 m the gains follow the path loss; an unread field is refused."""
    from bflnet.scenarios.ota.placement import device_mean_gains

    scenario = get_scenario("wflmc-gaussian")
    small = {"K": 4, "points_per_agent": 10, "dim": 2, "runs": 3, "rounds": 6, "burn_in": 3,
             "snr_db": "10", "methods": "wflmc"}
    fixed = scenario.run(scenario.config(small), seed=1)
    placed = scenario.config({**small, "placement": "distance", "distance_m": 1.0,
                              "ref_loss_db": 20.0})
    assert fixed.equals(scenario.run(placed, seed=1))
    far = scenario.config({**small, "placement": "distance", "distance_m": 100.0})
    gains = device_mean_gains(far, np.random.default_rng(0))
    np.testing.assert_allclose(gains, 10 ** (-(40 + 30 * 2) / 10), rtol=1e-12)
    with pytest.raises(ValueError, match="^mean_gain_db: only read with placement fixed"):
        scenario.config({**small, "placement": "square", "mean_gain_db": -30.0})


def test_methods_share_their_random_numbers():
    """Common random numbers: at 100 dB with nothing clipped the channel supplies exactly
    2η from the standard normals noiseless Langevin adds, so ``wflmc``'s chains are
    noiseless Langevin's draw for draw (the same W2² up to rounding); ``wflmc-full``'s
    remainder comes from the learner's own draws, so its chains differ."""
    scenario = get_scenario("wflmc-gaussian")
    out = scenario.run(scenario.config({**SMALL, "runs": 6, "snr_db": "100",
                                        "clip": 300.0}), seed=2)
    rows = out.set_index("method")
    for column in ("w2", "w2_mean"):
        assert rows.loc["wflmc", column] == pytest.approx(rows.loc["noiseless", column],
                                                          rel=1e-9)
    assert rows.loc["wflmc", "k_active_mean"] == 10
    assert rows.loc["wflmc-full", "w2_mean"] != pytest.approx(rows.loc["noiseless", "w2_mean"],
                                                              rel=1e-3)


def test_w2_exact_is_the_noiseless_chains_closed_form_below_the_fitted_one(frame):
    """``w2_exact`` (the same on every row) is what noiseless's ``w2`` estimates: the
    fit's error of 30 runs only adds to it."""
    assert frame["w2_exact"].nunique() == 1
    exact = frame["w2_exact"].iloc[0]
    noiseless = frame.set_index("method").loc["noiseless", "w2"].iloc[0]
    assert 0 < exact < noiseless


def test_the_default_runs_are_the_papers():
    assert get_scenario("wflmc-gaussian").config({}).runs == 100


def test_the_cli_announces_silent_rounds_in_one_line(capsys):
    args = ["run", "wflmc-gaussian", "--no-progress"]
    for k, v in {**SMALL, "runs": 2, "rounds": 6, "burn_in": 2, "gain_threshold": 10.0,
                 "methods": "wflmc,noiseless", "snr_db": "40"}.items():
        args += ["--set", f"{k}={v}"]
    assert main(args) == 0
    err = capsys.readouterr().err.strip().splitlines()
    warned = [line for line in err if line.startswith("bflnet: warning:")]
    assert warned == ["bflnet: warning: wflmc-gaussian: no device was heard in any round of "
                      "wflmc at 40 dB (a silent baseline: its sample never left its start)"]
