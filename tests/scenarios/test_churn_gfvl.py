"""Scenario ``churn-gfvl``: G-FVL under node churn stays exact at cover when devices keep
their state, double-counts when they lose it, and every fault is a row."""

from __future__ import annotations

import pytest

from bflnet.runs.registry import get_scenario, run_scenario

SMALL = {"K": 6, "runs": 3, "rounds": 120, "downtimes": "0,0.3"}


@pytest.fixture(scope="module")
def frame():
    return run_scenario("churn-gfvl", SMALL, seed=2)


def test_exact_at_cover_whatever_the_downtime(frame):
    rows = frame[frame.event == "iteration"]
    covered = rows["covered"].astype(bool)
    first = rows[covered].groupby(["downtime", "run"]).first()
    assert len(first) == 6 and (first["kl"] < 1e-10).all()
    before = rows[~covered].groupby(["downtime", "run"]).last()
    assert (before["kl"] > 1e-3).all()
    assert (rows.groupby(["downtime", "run"])["kl"].last() < 1e-10).all()


def test_every_fault_is_a_row_and_rows_are_in_time_order(frame):
    faults = frame[frame.event == "fault"]
    assert set(faults["downtime"]) == {0.3}
    assert {"node_down", "node_up"} <= set(faults["kind"])
    for _, run in frame.groupby(["downtime", "run"]):
        assert run["time_s"].is_monotonic_increasing
    churned = frame[(frame.event == "iteration") & (frame.downtime == 0.3)]
    calm = frame[(frame.event == "iteration") & (frame.downtime == 0)]
    assert churned.groupby("run").time_s.max().mean() > calm.groupby("run").time_s.max().mean()


def test_devices_that_lose_their_state_count_their_data_twice():
    frame = run_scenario("churn-gfvl", {**SMALL, "downtimes": "0.4", "keep_state": False,
                                        "rounds": 200}, seed=2)
    lost = frame[(frame.event == "fault") & (frame.kind == "node_down")]
    assert (lost["lost"] == "agent_state").all() and len(lost) > 0
    final = frame[frame.event == "iteration"].groupby("run")["kl"].last()
    assert (final > 1e-3).all()


def test_same_seed_same_frame(frame):
    assert run_scenario("churn-gfvl", SMALL, seed=2).equals(frame)


def test_default_plot_marks_the_faults(frame):
    # churned runs end at different times; the plot says how it draws the median there
    with pytest.warns(UserWarning, match="runs cover different time_s ranges"):
        fig = get_scenario("churn-gfvl").plot(frame)
    ax, strip = fig.axes  # the fault ticks in a strip under the axes
    assert "0.3" in ax.get_legend_handles_labels()[1]
    assert "node_down" in [t.get_text() for t in strip.get_yticklabels()]
    assert sum(len(line.get_xdata()) for line in strip.lines) > 0


@pytest.mark.parametrize("downtimes, message", [
    ("0.2,1", "downtimes: each value must be a fraction in \\[0, 1\\), got '1'"),
    ("nan", "downtimes: each value must be a fraction"),
    ("0.1,0.1", "downtimes: values must not repeat"),
])
def test_bad_downtimes(downtimes, message):
    with pytest.raises(ValueError, match=message):
        run_scenario("churn-gfvl", {"downtimes": downtimes})


def test_mean_down_must_be_positive_and_finite():
    for value in (0.0, float("inf"), -1.0):
        with pytest.raises(ValueError, match="mean_down_s"):
            run_scenario("churn-gfvl", {"mean_down_s": value})
