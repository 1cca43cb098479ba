"""The CD-BFL scenarios: columns, bits per round against the formulas, the 1.5 % budget,
determinism and one-line config errors. Tiny settings, on the tiny data set the tests write
(tests/conftest.py)."""

import math

import pandas as pd
import pytest

from bflnet.protocols.coding.codecs import position_bits
from bflnet.runs.registry import get_scenario, run_scenario

TINY = {"K": 4, "points_per_agent": 20, "eval_size": 100, "hidden": 8, "rounds": 6, "burn_in": 3,
        "eval_every": 3, "local_steps_values": "1,3"}


pytestmark = pytest.mark.usefixtures("use_tiny_fashion")


@pytest.fixture(scope="module")
def frame(use_tiny_fashion):
    return run_scenario("cdbfl-local-steps", TINY, seed=2)


def test_one_run_per_method_and_l_with_every_round(frame):
    runs = frame.groupby("run_id")
    assert set(frame["run_id"]) == {"cd-bfl-L1-s2", "cd-bfl-L3-s2", "dsgld-s2"}
    for _, run in runs:
        assert run["iteration"].tolist() == list(range(7))
        assert run["time_s"].is_monotonic_increasing
        evaluated = run.dropna(subset=["accuracy"])
        assert evaluated["iteration"].tolist() == [0, 3, 6]
        assert evaluated["accuracy"].between(0, 1).all() and (evaluated["ece"] >= 0).all()
        assert run["kept_samples"].dropna().iloc[-1] == 3       # rounds 4, 5, 6
    cd = frame[frame["method"] == "cd-bfl"]
    assert (cd["missed_increments"].dropna() == 0).all() and (cd["copy_gap"].dropna() < 1e-4).all()


def test_bits_per_round_follow_the_formulas_and_cdbfl_sends_under_1p5pct(frame):
    d = 784 * 8 + 8 + 8 * 10 + 10
    k = round(0.01 * d)
    messages = 4 * 3                                            # complete graph, K = 4
    expected = {"cd-bfl": position_bits(d, k) + 32 * k, "dsgld": 32 * d}
    for method, bits in expected.items():
        runs = frame[frame["method"] == method]
        assert (runs["message_bits"] == bits).all()
        for _, run in runs.groupby("run_id"):
            assert (run["cum_bits"].diff().dropna() == messages * bits).all()
    assert position_bits(d, k) == math.ceil(math.log2(math.comb(d, k)))
    assert expected["cd-bfl"] <= 0.015 * expected["dsgld"]


def test_same_seed_same_frame(frame):
    pd.testing.assert_frame_equal(frame, run_scenario("cdbfl-local-steps", TINY, seed=2))


@pytest.mark.parametrize(("overrides", "message"), [
    ({"burn_in": 6}, "burn_in: must be < rounds = 6"),
    ({"local_steps_values": "0,2"}, "local_steps_values: each value must be an integer"),
    ({"keep_ratio": 0.0}, "keep_ratio: must be"),
    ({"zeta": 1.5}, "zeta: must be"),
])
def test_bad_config_is_a_one_line_error(overrides, message):
    with pytest.raises(ValueError) as info:
        get_scenario("cdbfl-local-steps").config({**TINY, **overrides})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_default_plot_draws(frame):
    assert get_scenario("cdbfl-local-steps").plot(frame).axes
