"""Scenario ``d2d-medium``: its settings, its counts on the records, and bad input (one
line, exit code 2, no traceback)."""

from __future__ import annotations

import math

import pytest

from bflnet.cli.main import main
from bflnet.scenarios import get_scenario, run_scenario

FAST = {"tasks": "consensus", "K": 6, "rounds": 3}


def one_error_line(capsys, argv: list[str]) -> str:
    """Run the CLI: exit code 2 and exactly one line ``bflnet: error: ...``."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    final = err.split("\r")[-1]  # after the set-up status line tqdm erased
    assert "Traceback" not in err
    assert err.count("\n") == 1 and final.startswith("bflnet: error: "), err
    return final


@pytest.fixture(scope="module")
def frame():
    return run_scenario("d2d-medium", {**FAST, "macs": "links,tdma,csma,aloha"}, seed=3)


def test_every_setting_has_its_rows_and_the_links_reference_first(frame):
    runs = frame.drop_duplicates("run_id")[["mac", "broadcast"]].values.tolist()
    assert runs == [["links", False], ["tdma", False], ["tdma", True], ["csma", False],
                    ["csma", True], ["aloha", False], ["aloha", True]]
    assert (frame.groupby("run_id").size() == FAST["rounds"] + 1).all()
    assert set(frame["event"]) == {"init", "round"}
    # one geometry for all runs: the area of constant density (the shared radius, 40 m)
    area = 40.0 * math.sqrt(math.pi * 6 / 8.0)
    assert frame["area_m"].eq(area).all()


def test_the_medium_counts_follow_each_mac(frame):
    last = frame.groupby("run_id").tail(1).set_index(["mac", "broadcast"])
    links = last.loc[("links", False)]
    assert links[["collisions", "backoffs", "deferrals"]].sum() == 0
    tdma = last.loc[("tdma", True)]
    # TDMA is conflict-free and a broadcast goes on the air once per device and round
    assert tdma["collisions"] == 0 and tdma["backoffs"] == tdma["deferrals"] == 0
    assert tdma["transmissions"] == 6 * FAST["rounds"]
    assert tdma["cum_bits"] == 6 * FAST["rounds"] * 64
    # unicast: one packet per neighbour and round at least; CSMA draws a back-off for each
    assert last.loc[("tdma", False), "transmissions"] >= tdma["receptions"]
    csma = last.loc[("csma", False)]
    # phy=80211b (the default): each data frame after a back-off, each acknowledged one
    # followed by an ACK frame, which is a transmission too
    assert 0 < csma["backoffs"] < csma["transmissions"] <= 2 * csma["backoffs"]
    assert last.loc[("aloha", False), "backoffs"] == 0
    rate = last["collisions"] / last["receptions"]
    assert (last["collision_rate"] - rate).abs().max() < 1e-12
    # counts never decrease within a run
    for _, run in frame.groupby("run_id"):
        for c in ("transmissions", "receptions", "collisions", "backoffs", "deferrals"):
            assert run[c].is_monotonic_increasing


def test_same_seed_same_table():
    a = run_scenario("d2d-medium", {**FAST, "macs": "links,csma"}, seed=1)
    b = run_scenario("d2d-medium", {**FAST, "macs": "links,csma"}, seed=1)
    assert a.equals(b)


def test_fields_a_run_does_not_read_are_refused():
    scenario = get_scenario("d2d-medium")
    used = scenario.config({**FAST, "macs": "links,aloha"}).used_fields()
    assert {"aloha_p", "mac_slot_s", "max_attempts", "tx_power_dbm"} <= used
    assert not {"cw_min", "tdma_frame_slots", "area_m", "medium", "mac"} & used


def test_threads_is_accepted_without_the_cdbfl_task(tmp_path, capsys):
    """``--threads`` (which fills ``threads``) must not be refused for a consensus-only
    run: it says how the run computes, not what; the table is the one without it."""
    sets = [x for kv in (f"{k}={v}" for k, v in FAST.items()) for x in ("--set", kv)]
    outs = []
    for extra in ([], ["--threads", "2"]):
        out = tmp_path / f"r{len(extra)}.csv"
        assert main(["run", "d2d-medium", *sets, *extra, "--no-progress", "--out",
                     str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("extra, text", [
    (["macs=links,tdma", "aloha_p=0.5"], "aloha_p: not used with macs=links,tdma"),
    (["hidden=8"], "hidden: only read with tasks including cdbfl"),
    (["area_m=50"], "area_m: not used by d2d-medium; degree and radius_m decide"),
    (["medium=shared"], "medium: not used by d2d-medium; macs decides"),
    (["tasks=gossip"], "tasks: each value must be one of cdbfl, consensus"),
    (["macs=links,token"], "macs: each value must be one of links, none"),
    (["broadcasts=yes"], "broadcasts: each value must be one of false, true"),
    (["degree=-3"], "degree: must be a finite number > 0"),
    (["degree=nan"], "degree: must be a finite number > 0"),
    (["radius_m=-1"], "radius_m: must be a finite number >= 0.001"),
    (["sinr_threshold_db=inf"], "sinr_threshold_db: must be a finite number"),
    (["macs=aloha", "aloha_p=0"], "aloha_p: must be a finite number >= 1e-09 and <= 1"),
    (["macs=csma", "cw_min=64", "cw_max=8"], "cw_max: must be >= cw_min (64)"),
    (["macs=csma", "retry_limit=1e9"], "retry_limit: must be an integer >= 0 and <= 1000"),
    (["macs=tdma", "mac_slot_s=0"], "mac_slot_s: must be a finite number >= 1e-09"),
    # the colouring of K = 6 devices within each other's interference range needs 6
    (["macs=tdma", "phy=ideal", "tdma_frame_slots=2"],
     "tdma_frame_slots: a distance-2 colouring of this interference graph needs at least"),
    (["macs=aloha", "mac_slot_s=1e-9"], "mac_slot_s: must be at least the air time"),
    (["round_jitter_s=-1"], "round_jitter_s: must be a finite number >= 0"),
    (["round_jitter_s=nan"], "round_jitter_s: must be a finite number >= 0"),
    (["macs=tdma", "tdma_schedule=greedy"], "tdma_schedule: must be one of auto, distance2"),
    (["macs=tdma", "tdma_schedule=sinr", "tdma_frame_slots=1"],
     "tdma_frame_slots: the SINR schedule of this network needs"),
    # phy=ideal: the automatic schedule is distance2, which has no margin
    (["macs=tdma", "phy=ideal", "tdma_margin_db=3"], "tdma_margin_db: not used with "
     "macs=tdma"),
    # phy=80211b (the default): the automatic schedule is sinr
    (["macs=tdma", "tdma_frame_slots=2"], "tdma_frame_slots: the SINR schedule of this "
     "network needs 6 slots, got 2"),
    (["macs=csma", "guard_s=0.001"], "guard_s: not used with macs=csma"),
    (["macs=aloha", "guard_s=-1"], "guard_s: must be a finite number >= 0"),
    (["macs=aloha", "mac_slot_s=0.0001", "guard_s=0.0001"],
     "mac_slot_s: must be at least the air time of the largest packet (the largest frame, "
     "SIFS and its ACK under phy=80211b, plus the guard time 0.0001 s"),
    (["macs=aloha", "phy=ideal", "mac_slot_s=0.0001", "guard_s=0.0001"],
     "mac_slot_s: must be at least the air time of the largest packet (mtu_bits / rate, "
     "plus the guard time"),
])
def test_bad_input_is_one_line_and_exit_code_2(capsys, tmp_path, extra, text):
    sets = [x for kv in [*(f"{k}={v}" for k, v in FAST.items()), *extra]
            for x in ("--set", kv)]
    final = one_error_line(capsys, ["run", "d2d-medium", *sets, "--no-progress", "--out",
                                    str(tmp_path / "r.csv")])
    assert text in final, final


def test_the_default_plot_draws_both_tasks(frame):
    from bflnet.scenarios.cdbfl.d2d_medium import default_plot

    fig = default_plot(frame.assign(seed=3))
    assert len(fig.axes) == 2  # one task: seconds and bits
    assert len(fig.axes[0].lines) == frame["run_id"].nunique()


def test_round_jitter_spreads_the_round_starts_from_its_own_stream():
    """CSMA consensus: jitter changes when packets go (and the losses), the same seed
    gives the same rows, and 0 is the default's rows."""
    base = {**FAST, "macs": "csma", "broadcasts": "true", "rounds": 4}
    at_once = run_scenario("d2d-medium", base, seed=5)
    zero = run_scenario("d2d-medium", {**base, "round_jitter_s": 0.0}, seed=5)
    spread = run_scenario("d2d-medium", {**base, "round_jitter_s": 0.01}, seed=5)
    again = run_scenario("d2d-medium", {**base, "round_jitter_s": 0.01}, seed=5)
    assert zero.equals(at_once) and spread.equals(again)
    # a round lasts at least until its last device has started and sent
    assert (spread["time_s"].iloc[-1] > at_once["time_s"].iloc[-1])
    assert not spread["collisions"].equals(at_once["collisions"])
