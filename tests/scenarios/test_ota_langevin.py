"""Scenario ota-langevin on a tiny MLP: the table's shape, the power rules on the records,
the digital baselines' operating points and silent rounds, the default truncation rule,
determinism, bad input in one line."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario

SMALL = {"K": 3, "points_per_agent": 40, "hidden": 4, "batch_size": 20, "rounds": 4,
         "burn_in": 2, "eval_every": 2, "eval_size": 50, "snr_db": "-10,60"}


pytestmark = pytest.mark.usefixtures("use_tiny_fashion")


@pytest.fixture(scope="module")
def frame(use_tiny_fashion):
    scenario = get_scenario("ota-langevin")
    return scenario.run(scenario.config(SMALL), seed=2)


def test_rows_and_records(frame):
    assert set(frame["method"]) == {"wfald", "digital", "digital-min", "fald"}
    assert len(frame) == 4 * 2 * 2 and (frame["event"] == "eval").all()
    assert not frame.select_dtypes("number").isna().any().any()
    rows = frame.set_index(["method", "snr_db", "iteration"])
    d = 784 * 4 + 4 + 4 * 10 + 10
    # over the air: d / bandwidth seconds a round, no bits; at 60 dB the channel supplies
    # exactly the Langevin noise
    assert rows.loc[("wfald", 60.0, 4), "time_s"] == pytest.approx(4 * d / 1e6)
    assert rows.loc[("wfald", 60.0, 4), "cum_bits"] == 0
    assert rows.loc[("wfald", 60.0, 4), "channel_noise_ratio"] == pytest.approx(1.0, rel=1e-2)
    # ideal links: 32 bits per coordinate per device per round, no time
    assert rows.loc[("fald", 60.0, 4), "cum_bits"] == 4 * 3 * d * 32
    assert rows.loc[("fald", 60.0, 4), "time_s"] == 0


def test_the_digital_uplink_is_silent_when_its_energy_cannot_carry_the_bits(frame):
    rows = frame.set_index(["method", "snr_db", "iteration"])
    low = rows.loc[("digital", -10.0, 4)]
    assert low["k_active_mean"] == 0 and low["cum_bits"] == 0 and low["energy_j"] == 0
    high = rows.loc[("digital", 60.0, 4)]
    assert high["k_active_mean"] > 0 and high["cum_bits"] > 0 and high["time_s"] > 0


def test_the_digital_operating_points_share_bits_and_air_time_not_energy():
    """``digital`` (full energy) and ``digital-min`` (at most 4 bits per coordinate, least
    energy) under the same fading: at 10 dB both are heard (rate adaptation: no outage by
    construction) and, with fewer than 4 bits, identical but for the energy; at 60 dB
    ``digital-min`` sends fewer bits for less energy in the same air time, a device's
    slot being the analog round's d channel uses."""
    scenario = get_scenario("ota-langevin")
    small = {**SMALL, "methods": "digital,digital-min,wfald", "snr_db": "10,60"}
    rows = scenario.run(scenario.config(small), seed=2).set_index(
        ["method", "snr_db", "iteration"])
    d = 784 * 4 + 4 + 4 * 10 + 10
    full, low = rows.loc[("digital", 10.0, 4)], rows.loc[("digital-min", 10.0, 4)]
    assert full["k_active_mean"] > 0 and full["silent_rounds"] == 0
    assert low["accuracy"] == full["accuracy"] and low["cum_bits"] == full["cum_bits"]
    assert low["energy_j"] <= full["energy_j"] and low["time_s"] == full["time_s"]
    full, low = rows.loc[("digital", 60.0, 4)], rows.loc[("digital-min", 60.0, 4)]
    assert full["k_active_mean"] == low["k_active_mean"] == 3
    assert full["time_s"] == low["time_s"] == pytest.approx(4 * 3 * d / 1e6)
    assert full["energy_j"] == pytest.approx(4 * d * 1e6 / 1e6)  # d P̄ per round, per device
    assert low["cum_bits"] == 4 * 3 * (4 * d + 32) < full["cum_bits"]
    assert low["energy_j"] < full["energy_j"] / 2
    wfald = rows.loc[("wfald", 60.0, 4)]
    assert full["time_s"] == pytest.approx(3 * wfald["time_s"])


@pytest.fixture
def keep_torch_threads():
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_threads_is_torchs_thread_count_in_the_run(keep_torch_threads):
    """``threads`` (default 1), as in the other torch scenarios: the run computes with that
    many torch threads; on the tiny model the table stays the same up to float rounding."""
    import pandas as pd
    import torch

    scenario = get_scenario("ota-langevin")
    small = {**SMALL, "rounds": 2, "burn_in": 1, "methods": "wfald,fald", "snr_db": "60"}
    assert scenario.config(small).threads == 1
    frames = {}
    for threads in (2, 1):
        frames[threads] = scenario.run(scenario.config({**small, "threads": threads}),
                                       seed=4)
        assert torch.get_num_threads() == threads
    pd.testing.assert_frame_equal(frames[2], frames[1], check_exact=False, rtol=1e-6)


def test_same_seed_same_table():
    scenario = get_scenario("ota-langevin")
    config = scenario.config({**SMALL, "rounds": 2, "burn_in": 1, "methods": "wfald,digital"})
    a, b = scenario.run(config, seed=5), scenario.run(config, seed=5)
    assert a.equals(b)
    assert np.isfinite(a["accuracy"]).all()


@pytest.mark.parametrize(("setting", "field"), [
    ("snr_db=nan", "snr_db"), ("burn_in=60", "burn_in"), ("methods=analog", "methods"),
    ("step_size=-1", "step_size"), ("points_per_agent=60000", "points_per_agent"),
    ("digital_bits=1", "digital_bits"), ("digital_gap_db=-1", "digital_gap_db"),
    ("digital_gap_db=nan", "digital_gap_db"), ("placement=moon", "placement"),
    ("distance_m=nan", "distance_m"), ("fedavg_lr=inf", "fedavg_lr"),
    ("fedavg_clip=-1", "fedavg_clip"), ("path_loss_exponent=1e308", "path_loss_exponent"),
    ("distance_m=5", "distance_m"), ("threads=0", "threads"), ("threads=1025", "threads")])
def test_bad_input_is_one_line_naming_the_field(setting, field, capsys):
    assert main(["run", "ota-langevin", "--set", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]


def test_ota_fedavg_rows_over_the_air_and_over_ideal_links():
    scenario = get_scenario("ota-langevin")
    frame = scenario.run(scenario.config({**SMALL, "methods": "ota-fedavg,fedavg"}), seed=2)
    assert set(frame["method"]) == {"ota-fedavg", "fedavg"} and len(frame) == 2 * 2 * 2
    assert not frame.select_dtypes("number").isna().any().any()
    rows = frame.set_index(["method", "snr_db", "iteration"])
    d = 784 * 4 + 4 + 4 * 10 + 10
    air = rows.loc[("ota-fedavg", 60.0, 4)]
    assert air["time_s"] == pytest.approx(4 * d / 1e6) and air["cum_bits"] == 0
    assert air["energy_j"] > 0 and air["k_active_mean"] > 0
    ideal = rows.loc[("fedavg", 60.0, 4)]
    assert ideal["cum_bits"] == 4 * 3 * d * 32 and ideal["time_s"] == 0
    # the full power rule: ten times the power, a tenth of the channel noise (same fading)
    low, high = rows.loc[("ota-fedavg", -10.0, 4)], air
    assert high["channel_noise_ratio"] < low["channel_noise_ratio"] * 1e-6


def test_placed_devices_have_the_path_loss_gains():
    from bflnet.scenarios.ota.ota_langevin import device_mean_gains

    scenario = get_scenario("ota-langevin")
    ring = scenario.config({"placement": "distance", "distance_m": 50.0,
                            "path_loss_exponent": 3.5, "ref_loss_db": 30.0})
    gains = device_mean_gains(ring, np.random.default_rng(0))
    np.testing.assert_allclose(gains, 10 ** (-(30 + 35 * math.log10(50)) / 10), rtol=1e-12)
    square = scenario.config({"placement": "square", "distance_m": 200.0, "K": 50})
    gains = device_mean_gains(square, np.random.default_rng(4))
    xy = np.random.default_rng(4).uniform(-100.0, 100.0, size=(50, 2))
    dist = np.maximum(np.hypot(xy[:, 0], xy[:, 1]), 1.0)
    np.testing.assert_allclose(gains, 10 ** (-(40 + 30 * np.log10(dist)) / 10), rtol=1e-12)
    assert len(set(gains.tolist())) == 50 and gains.min() >= 10 ** (-(40 + 30 * math.log10(
        100 * math.sqrt(2))) / 10)
    fixed = scenario.config({"mean_gain_db": -35.0})
    assert (device_mean_gains(fixed, np.random.default_rng(0)) == 10 ** -3.5).all()


def test_a_device_placed_at_the_fixed_gain_gives_the_fixed_table():
    """1 m with 20 dB of loss at 1 m is the default -20 dB mean gain: the same table."""
    scenario = get_scenario("ota-langevin")
    small = {**SMALL, "rounds": 2, "burn_in": 1, "methods": "wfald"}
    fixed = scenario.run(scenario.config(small), seed=1)
    placed = scenario.run(scenario.config({**small, "placement": "distance", "distance_m": 1.0,
                                           "ref_loss_db": 20.0}), seed=1)
    assert fixed.equals(placed)
    far = scenario.run(scenario.config({**small, "placement": "distance",
                                        "distance_m": 1000.0}), seed=1)
    assert far["channel_noise_ratio"].iloc[-1] > fixed["channel_noise_ratio"].iloc[-1]


def test_a_silent_baseline_is_a_column_and_one_warning_line(frame):
    """The digital baseline at −10 dB is never heard: ``silent_rounds`` counts every round
    and ``bflnet run`` says so in exactly one warning line (the table is still written)."""
    rows = frame.set_index(["method", "snr_db", "iteration"])
    for method in ("digital", "digital-min"):
        assert rows.loc[(method, -10.0, 4), "silent_rounds"] == 4
        assert rows.loc[(method, -10.0, 2), "silent_rounds"] == 2
        assert rows.loc[(method, 60.0, 4), "silent_rounds"] == 0
    assert (rows.loc["fald", "silent_rounds"] == 0).all()


def test_the_cli_announces_a_silent_baseline_in_one_line(tmp_path):
    """``bflnet run`` (a subprocess) at −10 dB on the tiny model: neither digital operating
    point is ever heard; exit 0, the table written, and exactly one warning line on
    stderr naming both (beside the line saying where the table went)."""
    out = tmp_path / "ota.csv"
    settings = [f"{k}={v}" for k, v in {**SMALL, "rounds": 2, "burn_in": 1, "eval_every": 1,
                                        "methods": "digital,digital-min"}.items()]
    args = [sys.executable, "-m", "bflnet.cli", "run", "ota-langevin", "--no-progress",
            "--out", str(out)]
    for setting in settings:
        args += ["--set", setting]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    err = done.stderr.strip().splitlines()
    warned = [line for line in err if line.startswith("bflnet: warning:")]
    assert done.returncode == 0 and len(warned) == 1, done.stderr
    assert [line for line in err if line not in warned] == [f"wrote 8 rows to {out}"]
    assert "digital at -10 dB" in warned[0]
    assert "digital-min at -10 dB" in warned[0]  # both operating points, one line
    assert "silent baseline" in warned[0] and "at 60 dB" not in warned[0]
    assert out.is_file()


def test_the_consistent_truncation_silences_deep_fades_where_the_authors_rule_does_not():
    """At 10 dB (d = 3194, K = 3): the authors' rule hears every device every round, the
    consistent one (the default) cuts the deep fades; a gain threshold above every gain
    silences all."""
    scenario = get_scenario("ota-langevin")
    small = {**SMALL, "rounds": 6, "burn_in": 1, "eval_every": 6, "methods": "wfald",
             "snr_db": "10"}
    assert scenario.config(small).truncation == "consistent"
    consistent = scenario.run(scenario.config(small), seed=3)
    authors = scenario.run(scenario.config({**small, "truncation": "authors"}), seed=3)
    assert consistent.equals(scenario.run(scenario.config(
        {**small, "truncation": "consistent"}), seed=3))
    assert authors["k_active_mean"].iloc[-1] == 3
    assert consistent["k_active_mean"].iloc[-1] < 3
    assert (consistent["silent_rounds"] == 0).all()
    with pytest.warns(UserWarning, match="wfald at 10 dB"):
        none = scenario.run(scenario.config({**small, "gain_threshold": 1e3}), seed=3)
    assert none["silent_rounds"].iloc[-1] == 6 and none["k_active_mean"].iloc[-1] == 0


@pytest.mark.parametrize(("setting", "field"), [("truncation=wflmc", "truncation"),
                                                ("gain_threshold=-1", "gain_threshold"),
                                                ("gain_threshold=nan", "gain_threshold")])
def test_bad_truncation_settings_are_one_line(setting, field, capsys):
    assert main(["run", "ota-langevin", "--set", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]
