"""Scenario ``async-fedavg`` on the tiny Fashion-MNIST-shaped data set: one run per
method, rows in time order with cumulative bits, deadline and FedBuff columns, the same
frame for the same seed, one-line config errors and the default plot."""

import numpy as np
import pandas as pd
import pytest

from bflnet.runs.registry import get_scenario, run_scenario

NAME = "async-fedavg"
SMALL = {"K": 4, "points_per_agent": 40, "eval_size": 100, "hidden": 4, "local_steps": 2,
         "batch_size": 8, "duration_s": 4.0, "compute_s_per_step": 0.1, "deadline_s": 0.5,
         "buffer_size": 2, "eval_every": 2}

pytestmark = pytest.mark.usefixtures("use_tiny_fashion")


@pytest.fixture(scope="module")
def frame(use_tiny_fashion):
    return run_scenario(NAME, SMALL, seed=2)


def test_one_run_per_method_with_time_and_bits(frame):
    assert frame.run_id.unique().tolist() == ["sync-s2", "deadline-s2", "fedbuff-s2"]
    assert list(frame.columns[:2]) == ["run_id", "method"]
    for _, run in frame.groupby("run_id"):
        assert run.event.tolist()[0] == "init" and set(run.event[1:]) == {"iteration"}
        for column in ("time_s", "cum_bits", "cum_bits_up"):
            assert (np.diff(run[column].to_numpy()) >= 0).all()
        assert run.time_s.iloc[-1] >= SMALL["duration_s"] > run.time_s.iloc[-2]
        assert run.accuracy.iloc[0] < 0.5 and run.accuracy.notna().sum() >= 2


def test_method_columns(frame):
    it = frame[frame.event == "iteration"]
    sync, deadline, fedbuff = (it[it.method == m] for m in ("sync", "deadline", "fedbuff"))
    assert (sync.updates == SMALL["K"]).all() and sync.late.isna().all()
    assert (deadline.late + deadline.busy).sum() > 0  # stragglers missed deadlines
    assert (deadline.updates <= SMALL["K"] - deadline.busy - deadline.late).all()
    assert (fedbuff.updates == SMALL["buffer_size"]).all()
    assert (fedbuff.staleness_max >= fedbuff.staleness_mean).all()
    assert fedbuff.staleness_max.max() > 0
    # waiting for the slowest agent makes the fewest rounds
    assert len(sync) < len(deadline) and len(sync) < len(fedbuff)


def test_same_seed_same_frame(frame):
    pd.testing.assert_frame_equal(run_scenario(NAME, SMALL, seed=2), frame, check_exact=True)


def test_one_method_alone_is_the_same_run():
    alone = run_scenario(NAME, {**SMALL, "methods": "fedbuff"}, seed=2)
    both = run_scenario(NAME, {**SMALL, "methods": "sync,fedbuff"}, seed=2)
    pd.testing.assert_frame_equal(
        alone, both[both.method == "fedbuff"].dropna(axis=1, how="all").reset_index(drop=True),
        check_exact=True)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"buffer_size": 5}, "^buffer_size: must be <= K = 4, got 5$"),
    ({"methods": "sync,async"}, "^methods: each value must be one of sync, deadline, fedbuff"),
    ({"K": 100, "points_per_agent": 1000},
     "^points_per_agent: K·points_per_agent = 100000 exceeds"),
    ({"straggler_sigma": float("nan")}, "^straggler_sigma: must be"),
    ({"deadline_s": 0.0}, "^deadline_s: must be"),
    ({"compute_s_per_step": 0.0}, "^compute_s_per_step: must be"),
    ({"graph": "star"}, "^graph: not used by async-fedavg"),
])
def test_bad_settings_are_one_line_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        get_scenario(NAME).config({**SMALL, **overrides})


def test_default_plot_draws_one_curve_per_method(frame):
    figure = get_scenario(NAME).plot(frame)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "synchronous FedAvg", "FedAvg with a deadline", "FedBuff"]
    assert ax.get_xlabel() == "simulated time (s)"
