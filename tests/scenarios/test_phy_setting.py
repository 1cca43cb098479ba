"""The scenario-level ``phy`` setting of the shared medium: 802.11 timing, or ``ideal``."""

import pytest

from bflnet.scenarios import run_scenario

SHARED = {"K": 6, "rounds": 5, "medium": "shared", "mac": "csma", "channel": "rayleigh",
          "record_messages": True}


def test_80211b_is_the_default_and_stretches_the_time_axis_beyond_ideal():
    default = run_scenario("consensus-averaging", SHARED, seed=3)
    real = run_scenario("consensus-averaging", {**SHARED, "phy": "80211b"}, seed=3)
    wall = [c for c in default.columns if "wall" in c]
    assert default.drop(columns=wall).equals(real.drop(columns=wall))
    ideal = run_scenario("consensus-averaging", {**SHARED, "phy": "ideal"}, seed=3)
    acks = real[(real.event == "tx") & (real["frame"] == "ack")]
    assert len(acks) > 0 and "frame" not in ideal
    assert ((acks.end_s - acks.start_s) - 304e-6).abs().max() < 1e-9  # 802.11b ACK
    # a data frame: its bits at the basic rate (reception=mcs, the default with a preset,
    # at the default data_rate: 1 Mbit/s), plus 192 µs and 224 bits
    rate = 1e6
    data = real[(real.event == "tx") & real["frame"].isna()]
    frame = 192e-6 + (data.bits + 224) / rate
    assert ((data.end_s - data.start_s) - frame).abs().max() < 1e-9
    assert real.time_s.max() > ideal.time_s.max()


@pytest.mark.parametrize(("sets", "text"), [
    (["medium=shared", "phy=80211n"], "phy: must be one of ideal, 80211b, 80211a, 80211g"),
    (["phy=ideal"], "phy: not used with medium=links; used only with medium=shared"),
])
def test_bad_phy_settings_are_one_line_errors_with_exit_code_2(settings_error, sets, text):
    settings_error(sets, text)
