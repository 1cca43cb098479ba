"""Scenario ``cdbfl-shift`` (CD-BFL Fig. 4) and the radar workspace: rows per round and
reliability bins per method, the bins against the pooled predictions, the shifted set's
labels, determinism, the data/model fields, and one-line config errors. Tiny settings on
the synthetic radar maps."""

import numpy as np
import pandas as pd
import pytest

from bflnet.data.radar import MAP_SHAPE
from bflnet.learners.models.lenet import BayesianLeNet
from bflnet.runs.registry import get_scenario, run_scenario
from bflnet.scenarios.cdbfl.common import CRITICAL_LABELS, make_model, synthetic_radar_test

TINY = {"K": 3, "points_per_agent": 10, "eval_size": 30, "shift_size": 12, "hidden": 4,
        "rounds": 4, "burn_in": 2, "eval_every": 2, "local_steps": 2, "n_bins": 5}


@pytest.fixture(scope="module")
def frame():
    return run_scenario("cdbfl-shift", TINY, seed=3)


def test_rounds_then_reliability_bins_per_method(frame):
    assert list(frame["method"].unique()) == ["dsgld", "cd-bfl", "cf-fl"]
    for method, rows in frame.groupby("method"):
        rounds = rows[rows["event"] != "reliability"]
        assert rounds["iteration"].tolist() == [0, 1, 2, 3, 4]
        evaluated = rounds.dropna(subset=["shift_accuracy"])
        assert evaluated["iteration"].tolist() == [0, 2, 4]
        assert evaluated["shift_accuracy"].between(0, 1).all()
        assert evaluated["critical_accuracy"].between(0, 1).all()
        bins = rows[rows["event"] == "reliability"]
        assert bins["bin"].tolist() == list(range(5))
        assert bins["count"].sum() == 3 * 2 * 12          # K devices x 2 days x 12 maps
        filled = bins[bins["count"] > 0]
        gap = (filled["bin_accuracy"] - filled["bin_confidence"]).abs()
        ece = float((filled["count"] * gap).sum() / filled["count"].sum())
        assert bins["ece"].iloc[0] == pytest.approx(ece)
        assert (rows["local_steps"] == (1 if method == "dsgld" else 2)).all()


def test_same_seed_same_frame(frame):
    pd.testing.assert_frame_equal(frame, run_scenario("cdbfl-shift", TINY, seed=3))


def test_the_shifted_set_holds_only_critical_labels_balanced():
    config = get_scenario("cdbfl-shift").config(TINY)
    x, y = synthetic_radar_test(config, 60, 2, np.random.default_rng(0), CRITICAL_LABELS)
    assert x.shape == (60, MAP_SHAPE[0] * MAP_SHAPE[1]) and x.dtype == np.float32
    assert sorted(np.unique(y)) == list(CRITICAL_LABELS)
    assert np.bincount(y, minlength=7)[1:].tolist() == [10] * 6


def test_model_field_builds_the_named_network():
    no_hidden = {k: v for k, v in TINY.items() if k != "hidden"}
    config = get_scenario("cdbfl-shift").config({**no_hidden, "model": "lenet"})
    assert isinstance(make_model(config, *MAP_SHAPE), BayesianLeNet)
    assert make_model(config, *MAP_SHAPE).d == 1_419_146
    big = get_scenario("cdbfl-shift").config({**no_hidden, "model": "lenet-2.7m"})
    assert make_model(big, *MAP_SHAPE).d == 2_705_019


@pytest.mark.parametrize(("overrides", "message"), [
    ({"methods": "dsgld,sgd"}, "methods: each value must be one of dsgld, cd-bfl, cf-fl"),
    ({"methods": "dsgld,dsgld"}, "methods: values must not repeat"),
    ({"test_days": "0"}, "test_days: each value must be an integer"),
    ({"test_days": "1,1"}, "test_days: values must not repeat"),
    ({"model": "lenet"}, "hidden: only read with model=mlp"),
    ({"radar_dir": "/tmp"}, "radar_dir: only read with data=radar-files"),
    ({"data": "radar-files"}, "radar_dir: must name the folder"),
    ({"data": "fashion-mnist"}, "data: must be one of"),
    ({"points_per_agent": 60_000, "K": 4096},
     "K, points_per_agent, eval_size, shift_size: the run needs about"),
])
def test_bad_config_is_a_one_line_error(overrides, message):
    with pytest.raises(ValueError) as info:
        get_scenario("cdbfl-shift").config({**TINY, **overrides})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_missing_real_maps_give_one_line_with_where_to_get_them(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        run_scenario("cdbfl-shift", {**TINY, "data": "radar-files",
                                     "radar_dir": str(tmp_path)})
    assert "10.21227/0wmc-hq36" in str(info.value) and "\n" not in str(info.value)


def test_default_plot_draws_one_diagram_per_method(frame):
    fig = get_scenario("cdbfl-shift").plot(frame)
    assert len(fig.axes) == 3 and fig.axes[1].get_title().startswith("CD-BFL (ECE ")


def test_bits_per_round_follow_the_formulas(frame):
    from bflnet.protocols.coding.codecs import position_bits

    d = 256 * 63 * 4 + 4 + 4 * 10 + 10                     # the MLP on flattened maps
    k = round(0.01 * d)
    expected = {"dsgld": 32 * d, "cd-bfl": position_bits(d, k) + 32 * k,
                "cf-fl": position_bits(d, k) + 32 * k}
    for method, bits in expected.items():
        rows = frame[(frame["method"] == method) & (frame["event"] != "reliability")]
        assert (rows["message_bits"] == bits).all()
        assert (rows["cum_bits"].diff().dropna() == 3 * 2 * bits).all()   # K = 3, complete
