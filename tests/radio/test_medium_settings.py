"""The shared medium from a scenario: settings, one-line errors (exit code 2), and the
default ``medium=links`` untouched."""

import pytest

from bflnet.cli.main import main
from bflnet.scenarios import get_scenario, run_scenario

SHARED = ["--set", "medium=shared", "--set", "channel=rayleigh", "--set", "K=6",
          "--set", "rounds=2"]


@pytest.mark.parametrize("extra, text", [
    (["--set", "distance_m=-3"], "distance_m: must be a finite number >= 0.001"),
    (["--set", "sense_range_m=-1"], "sense_range_m: must be a finite number >= 0"),
    (["--set", "sinr_threshold_db=nan"], "sinr_threshold_db: must be a finite number"),
    (["--set", "mac=aloha", "--set", "aloha_p=1.5"], "aloha_p: must be a finite number >= 1e-09"),
    (["--set", "cw_min=64", "--set", "cw_max=8"], "cw_max: must be >= cw_min (64)"),
    (["--set", "retry_limit=-1"], "retry_limit: must be an integer >= 0"),
    (["--set", "mac=tdma", "--set", "phy=ideal", "--set", "tdma_frame_slots=1"],
     "tdma_frame_slots: a distance-2 colouring of this interference graph needs at least"),
    # phy=80211b (the default): the SINR schedule
    (["--set", "mac=tdma", "--set", "tdma_frame_slots=1"],
     "tdma_frame_slots: the SINR schedule of this network needs"),
    (["--set", "mac=aloha", "--set", "mac_slot_s=1e-9"], "slot_s: must be at least the air"),
    (["--set", "tx_power_dbm=1e308"], "tx_power_dbm: must be a finite number"),
    (["--set", "channel=gilbert-elliott"], "channel: must be rayleigh, rician"),
])
def test_bad_shared_medium_input_is_one_line_and_exit_code_2(capsys, tmp_path, extra, text):
    argv = ["run", "consensus-averaging", *SHARED, *extra, "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    final = err.split("\r")[-1]  # after the set-up status line that tqdm erased
    assert err.count("\n") == 1 and final.startswith("bflnet: error: ") and text in final, err


def test_shared_settings_are_refused_where_not_read(capsys):
    argv = ["run", "consensus-averaging", "--set", "mac=tdma"]
    assert main(argv) == 2
    assert "mac: not used with medium=links; used only with medium=shared" in \
        capsys.readouterr().err
    assert main(["run", "cover-time", "--set", "medium=shared"]) == 2
    assert "medium: not used by cover-time" in capsys.readouterr().err


def test_consensus_averaging_on_a_shared_medium_with_broadcast():
    overrides = {"medium": "shared", "channel": "rayleigh", "K": 8, "rounds": 3,
                 "graph": "complete", "mac": "tdma", "broadcast": True,
                 "record_messages": True}
    frame = run_scenario("consensus-averaging", overrides, seed=2)
    rounds = frame[frame.event == "round"]
    assert len(rounds) == 3
    assert (frame.event == "message").sum() == 8 * 3  # one broadcast a node and round
    assert (frame[frame.event == "message"].peer == "*").all()
    config = get_scenario("consensus-averaging").config(overrides)
    assert {"mac", "broadcast", "tx_power_dbm", "layout", "tdma_frame_slots"} <= \
        config.used_fields()
    assert "max_attempts" not in config.used_fields()  # broadcast: no ARQ
