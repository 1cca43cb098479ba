"""Scenario ``emtdamp``: both tasks run end to end with finite records; bad settings are
one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bflnet.runs.registry import run_scenario


def test_boston_synthetic_rows_carry_time_bits_and_finite_metrics():
    frame = run_scenario("emtdamp", {"rounds": 2, "sweeps": 1}, seed=1)
    rounds = frame[frame["event"] == "iteration"]
    assert rounds["iteration"].tolist() == [1, 2]
    assert (rounds["time_s"].diff().dropna() > 0).all()
    assert (rounds["uplink_bits"] > 0).all() and (rounds["cum_bits_down"] > 0).all()
    assert np.isfinite(rounds[["test_nmse", "noise_var", "clips"]].to_numpy()).all()
    assert set(frame["task"]) == {"boston-synthetic"}


def test_fashion_mnist_task_runs_on_the_tiny_set(use_tiny_fashion):
    frame = run_scenario("emtdamp", {"task": "fashion-mnist", "K": 2, "points_per_agent": 100,
                                     "eval_size": 50, "rounds": 2, "sweeps": 1}, seed=0)
    rounds = frame[frame["event"] == "iteration"]
    assert np.isfinite(rounds[["accuracy", "noise_var", "clips"]].to_numpy()).all()
    assert rounds["target_groups"].iloc[0] == 784 + 128


@pytest.mark.parametrize("overrides, message", [
    ({"points_per_agent": 10}, "points_per_agent: used only with task=fashion-mnist"),
    ({"likelihood": "probit"}, "likelihood: not used by emtdamp; the task decides"),
    ({"graph": "star"}, "graph: not used by emtdamp"),
    ({"K": 405}, "K: must be <= 404"),
    ({"task": "fashion-mnist", "K": 100, "points_per_agent": 1000},
     "points_per_agent: K·points_per_agent"),
    ({"uplink_bits": 16}, "uplink_bits: must be"),
    ({"target_density": float("nan")}, "target_density: must be"),
])
def test_bad_settings_are_one_line_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        run_scenario("emtdamp", overrides)


def test_boston_shaped_50_rounds_with_k_4_have_no_nan_and_finite_clips():
    """The 13-64-64-1 network, K = 4, 50 rounds, with pruning to
    half the neurons from round 10; every row finite, the clips counted."""
    frame = run_scenario("emtdamp", {"target_density": 0.5}, seed=0)
    rounds = frame[frame["event"] == "iteration"]
    assert rounds["iteration"].tolist() == list(range(1, 51))
    metrics = rounds[["test_nmse", "noise_var", "clips", "active_groups"]].to_numpy()
    assert np.isfinite(metrics).all()
    assert (rounds["clips"] > 0).all()  # the safeguards fire and are counted
    assert (rounds.set_index("iteration").loc[10:, "active_groups"] == 70).all()
    assert rounds["test_nmse"].iloc[-1] < 0.3  # it learns: 1.0 is predicting zero


@pytest.mark.parametrize("client_group", [5, 3])
def test_the_table_does_not_depend_on_the_thread_count(client_group):
    """K = 10 clients in groups of ``client_group``: ``threads`` only decides how many
    groups run at once, so the table is the same, bit for bit, for 1, 2 and 3."""
    settings = {"K": 10, "rounds": 2, "sweeps": 1, "client_group": client_group}
    frames = [run_scenario("emtdamp", {**settings, "threads": threads}, seed=2)
              for threads in (1, 2, 3)]
    for other in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], other, check_exact=True)


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "1e308", "x"])
def test_bad_client_group_is_a_one_line_cli_error(bad, capsys):
    from bflnet.cli.main import main

    assert main(["run", "emtdamp", "--set", f"client_group={bad}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "client_group: must be" in err
