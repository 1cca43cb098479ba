"""The scenario-level ``data_rate`` and ``reception=mcs`` settings of the shared medium."""

import pytest

from bflnet.radio.phy import phy_preset
from bflnet.scenarios import run_scenario

SHARED = {"K": 6, "rounds": 3, "medium": "shared", "mac": "csma", "channel": "rayleigh",
          "record_messages": True}


@pytest.mark.parametrize(("data_rate", "mbps"), [("54", 54), (None, 6)])
def test_data_frames_go_at_the_data_rate_and_acks_at_the_basic_rate(data_rate, mbps):
    frame = run_scenario("consensus-averaging", {**SHARED, "phy": "80211a",
                                                 "data_rate": data_rate}, seed=3)
    tx = frame[frame.event == "tx"]
    timing = phy_preset("80211a")
    data, acks = tx[tx["frame"].isna()], tx[tx["frame"] == "ack"]
    assert len(data) > 0 and len(acks) > 0
    expected = data.bits.map(lambda b: timing.frame_s(int(b), mbps * 1e6))
    assert ((data.end_s - data.start_s) - expected).abs().max() < 1e-9
    assert ((acks.end_s - acks.start_s) - timing.ack_s).abs().max() < 1e-9


@pytest.mark.parametrize(("sets", "text"), [
    (["medium=shared", "phy=80211a", "data_rate=7"],
     "data_rate: must be auto or a rate of phy=80211a in Mbit/s (6, 9, 12, 18, 24, 36, 48, "
     "54), got '7'"),
    (["medium=shared", "phy=80211b", "data_rate=54"],
     "data_rate: must be auto or a rate of phy=80211b in Mbit/s (1, 2, 5.5, 11)"),
    (["medium=shared", "phy=ideal", "reception=mcs"], "reception: mcs needs a phy preset"),
    (["medium=shared", "phy=ideal", "data_rate=auto"], "data_rate: not used with "
     "reception=threshold and "
     "phy=ideal; used only with medium=shared and reception=mcs"),
    (["medium=shared", "phy=80211g", "reception=per", "data_rate=auto"],
     "data_rate: not used with reception=per and phy=80211g"),
])
def test_bad_rate_settings_are_one_line_errors_with_exit_code_2(settings_error, sets, text):
    settings_error(sets, text)
