"""Scenarios ``emtdamp-boston`` and ``emtdamp-mnist`` with tiny settings: every method's
rows, the exact bits of both payloads, the target sparsity reached, the data source
recorded, the validation split, and one-line errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bflnet.data.vision import ENV_VAR
from bflnet.runs.registry import run_scenario
from bflnet.scenarios.emtdamp.compare import BostonConfig, boston_task

TINY = {"rounds": 2, "sweeps": 1, "sparsify_from": 1, "target_density": 0.5}


@pytest.fixture(scope="module")
def boston_csv(tmp_path_factory) -> str:
    """506 rows in Boston's 14-column layout with a learnable target."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, size=(506, 13))
    y = 5 + x[:, 0] - 0.5 * x[:, 5] + rng.normal(0, 0.5, 506)
    path = tmp_path_factory.mktemp("boston") / "housing.csv"
    np.savetxt(path, np.column_stack([x, y]), delimiter=",")
    return str(path)


def rounds_of(frame):
    return frame[frame["event"] == "iteration"]


def test_boston_all_methods_with_exact_bits_and_target_groups(boston_csv):
    frame = run_scenario("emtdamp-boston", {**TINY, "K": 2, "boston_csv": boston_csv}, seed=3)
    rows = rounds_of(frame)
    assert list(dict.fromkeys(rows["method"])) == ["emtdamp", "fedavg", "group-lasso",
                                                   "group-snip"]
    assert set(frame["data_source"]) == {f"csv:{boston_csv}"} and set(frame["seed"]) == {3}
    per_round = rows.groupby("method")["cum_bits_up"].max() / 2  # 2 rounds
    sizes = (13, 64, 64, 1)
    values = sum(a + 2 * a * b + 3 * b for a, b in itertools.pairwise(sizes))  # eq. 7.1
    weights = sum(a * b + b for a, b in itertools.pairwise(sizes))
    assert per_round["emtdamp"] == 2 * 32 * (values + 1)
    for method in ("fedavg", "group-lasso", "group-snip"):
        assert per_round[method] == 2 * 32 * weights
    last = rows.groupby("method").last()
    targets = round(0.5 * 13) + 2 * 32
    assert (last["target_groups"] == targets).all() and (last["active_groups"] == targets).all()
    assert np.isfinite(rows["test_nmse"]).all() and (rows["time_s"] > 0).all()


def test_synthetic_data_is_labelled_and_methods_can_be_chosen():
    frame = run_scenario("emtdamp-boston", {**TINY, "data": "synthetic",
                                            "methods": "group-snip"}, seed=0)
    assert set(frame["method"]) == {"group-snip"}
    assert set(frame["data_source"]) == {"synthetic-boston-shaped"}
    assert rounds_of(frame)["active_groups"].eq(rounds_of(frame)["target_groups"]).all()


def test_validation_split_is_held_out_of_the_training_rows(boston_csv):
    config = BostonConfig(boston_csv=boston_csv, K=3, evaluate_on="validation")
    shards, held, _ = boston_task(config, np.random.default_rng(0))
    assert sum(len(y) for _, y in shards) == 323 and len(held[1]) == 81
    test_config = BostonConfig(boston_csv=boston_csv, K=3)
    train, test, _ = boston_task(test_config, np.random.default_rng(0))
    assert len(test[1]) == 102
    np.testing.assert_array_equal(held[0], np.concatenate([x for x, _ in train])[-81:])


def test_missing_boston_file_is_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("BFLNET_DATA_HOME", str(tmp_path / "empty-data-home"))
    monkeypatch.setattr("bflnet.data.boston.bundled_copy", lambda: None)
    with pytest.raises(FileNotFoundError, match="pass boston_csv=<file>") as info:
        run_scenario("emtdamp-boston", TINY)
    assert "\n" not in str(info.value)


def test_mnist_runs_on_the_tiny_idx_files(tiny_fashion_dir, tmp_path, monkeypatch):
    """MNIST's IDX files in ``BFLNET_DATA/mnist/`` (the tiny set under MNIST's name; a flat
    BFLNET_DATA directory is Fashion-MNIST's)."""
    import shutil
    shutil.copytree(tiny_fashion_dir, tmp_path / "mnist")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    frame = run_scenario("emtdamp-mnist", {**TINY, "K": 2, "points_per_agent": 100, "eval_size": 50,
                                           "methods": "emtdamp,group-lasso"}, seed=0)
    rows = rounds_of(frame)
    assert set(rows["method"]) == {"emtdamp", "group-lasso"}
    assert frame["data_source"].iloc[0].startswith("mnist-idx:")
    assert rows["test_error"].between(0, 1).all()
    assert (rows.groupby("method")["active_groups"].last() == 392 + 64).all()


@pytest.mark.parametrize("scenario, overrides, message", [
    ("emtdamp-boston", {"methods": "emtdamp,sgd"}, "methods: each value must be one of"),
    ("emtdamp-boston", {"likelihood": "probit"}, "likelihood: not used by emtdamp-boston"),
    ("emtdamp-boston", {"data": "synthetic", "boston_csv": "x.csv"}, "boston_csv: not used"),
    ("emtdamp-boston", {"boston_csv": "a\x00b"}, "boston_csv: must be a file path"),
    ("emtdamp-boston", {"graph": "star"}, "graph: not used by emtdamp-boston"),
    ("emtdamp-boston", {"lr": float("inf")}, "lr: must be"),
    ("emtdamp-mnist", {"K": 100, "points_per_agent": 1000}, "points_per_agent: K·points_per_agent"),
    ("emtdamp-mnist", {"group_lasso": 1e308}, "group_lasso: must be"),
    ("emtdamp-boston", {"sparsity_mode": "paper"}, "initial_activity: must be < 1"),
    ("emtdamp-boston", {"budget_scope": "all"}, "budget_scope: must be one of"),
    ("emtdamp-boston", {"variance_clip": "nan"}, "variance_clip: must be one of"),
    ("emtdamp-boston", {"budget_rounds": 10**400}, "budget_rounds: must be"),
])
def test_bad_settings_are_one_line_errors(scenario, overrides, message):
    with pytest.raises(ValueError, match=message):
        run_scenario(scenario, overrides)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_network_budget_is_met_exactly_at_the_last_round_by_every_method(boston_csv, seed):
    """EM-TDAMP's paper mode and the baselines under the same budget round(ρ Q_W) over all
    layers (Q_W = 13 + 64 + 64 = 141, ρ = 0.2: 28); EM-TDAMP's slab variances recorded
    per layer, NaN for the baselines."""
    frame = run_scenario("emtdamp-boston", {
        "rounds": 3, "sweeps": 1, "target_density": 0.2, "boston_csv": boston_csv,
        "sparsity_mode": "paper", "initial_activity": 0.9, "sparsify_from": 1,
        "budget_rounds": 2, "budget_scope": "network"}, seed=seed)
    last = rounds_of(frame).groupby("method").last()
    assert sorted(last.index) == ["emtdamp", "fedavg", "group-lasso", "group-snip"]
    assert (last["target_groups"] == 28).all()
    assert (last["active_groups"] == 28).all(), last["active_groups"]
    em = frame[frame["method"] == "emtdamp"]
    for layer in (1, 2, 3):
        values = em[f"slab_var_l{layer}"]
        assert values.notna().all() and (values > 0).all()
    assert frame.loc[frame["method"] != "emtdamp", "slab_var_l1"].isna().all()


def test_the_emtdamp_rows_do_not_depend_on_the_thread_count():
    """EM-TDAMP's rows: 10 clients in groups of 3 on 1 to 3 threads, torch on one."""
    import pandas as pd

    settings = {**TINY, "data": "synthetic", "K": 10, "methods": "emtdamp",
                "client_group": 3}
    frames = [run_scenario("emtdamp-boston", {**settings, "threads": threads}, seed=1)
              for threads in (1, 2, 3)]
    for other in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], other, check_exact=True)
