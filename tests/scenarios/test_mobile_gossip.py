"""Scenario ``mobile-gossip``: one run per speed with time, bits and the deviation from
the mean in every row, edge changes only where nodes move, the same frame for the same
seed, a plot per speed and one-line errors for bad settings."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from bflnet.runs.registry import get_scenario, run_scenario

NAME = "mobile-gossip"
SMALL = {"K": 12, "duration_s": 15.0}


@pytest.fixture(scope="module")
def frame():
    return run_scenario(NAME, SMALL, seed=1)


def test_one_run_per_speed_with_time_bits_and_deviation(frame):
    assert sorted(frame.speed.unique()) == [0.0, 1.0, 5.0]
    for col in ("time_s", "iteration", "event", "cum_bits", "cum_bits_delivered",
                "max_deviation", "mean_value", "outcome"):
        assert col in frame.columns
    for speed, run in frame.groupby("speed"):
        assert run.time_s.is_monotonic_increasing and run.cum_bits.is_monotonic_increasing
        assert run.event.iloc[0] == "init" and run.event.iloc[-1] == "end"
        assert run.time_s.iloc[-1] == 15.0
        rows = run.dropna(subset=["max_deviation"])
        assert rows.max_deviation.iloc[-1] < 0.2 * rows.max_deviation.iloc[0]
        settled = rows[rows.replies_in_flight.fillna(0) == 0]
        assert np.allclose(settled.mean_value, rows.mean_value.iloc[0], rtol=0, atol=1e-12)
        faults = run[run.event == "fault"]
        if speed == 0:
            assert faults.empty
        else:
            assert len(faults) > 0 and (faults.cause == "mobility").all()
    # the same start: graph, values and clocks (speed 0 and 1 wake at the same times first)
    init = frame[frame.event == "init"]
    assert init.max_deviation.nunique() == 1


def test_faster_nodes_change_more_edges(frame):
    counts = frame[frame.event == "fault"].groupby("speed").size()
    assert counts[5.0] > counts[1.0]


def test_synchronous_mode_runs_rounds(frame):
    sync = run_scenario(NAME, {**SMALL, "mode": "sync", "speeds": "2", "duration_s": 3.0},
                        seed=1)
    rounds = sync[sync.event == "round"]
    assert len(rounds) > 100 and (sync.speed == 2.0).all()
    assert np.allclose(rounds.mean_value, rounds.mean_value.iloc[0], rtol=0, atol=1e-12)
    assert rounds.max_deviation.iloc[-1] < 1e-3 * rounds.max_deviation.iloc[0]


def test_same_seed_same_frame_other_seed_other_frame(frame):
    assert frame.equals(run_scenario(NAME, SMALL, seed=1))
    assert not frame.equals(run_scenario(NAME, SMALL, seed=2))


def test_the_default_plot_draws_a_line_per_speed(frame):
    fig = get_scenario(NAME).plot(frame)
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].get_lines()) == 3


@pytest.mark.parametrize(("overrides", "field"), [
    ({"speeds": "-1"}, "speeds"), ({"speeds": "nan"}, "speeds"), ({"speeds": "1,1"}, "speeds"),
    ({"speeds": "1e9"}, "speeds"), ({"speeds": ""}, "speeds"), ({"pause_s": -1.0}, "pause_s"),
    ({"update_s": 1e-12}, "update_s"), ({"update_s": float("inf")}, "update_s"),
    ({"speed_spread": 1.0}, "speed_spread"), ({"rate": 0.0}, "rate"),
    ({"mode": "sync", "rate": 2.0}, "rate"), ({"mode": "sync", "weight": 0.3}, "weight"),
    ({"mixing": "max-degree"}, "mixing"), ({"graph": "ring"}, "graph"),
    ({"distance_m": 3.0}, "distance_m"), ({"duration_s": float("nan")}, "duration_s"),
])
def test_bad_settings_are_one_line_errors_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=f"^{field}:") as info:
        get_scenario(NAME).config(overrides)
    assert "\n" not in str(info.value)
