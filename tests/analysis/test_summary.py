"""``bflnet.analysis.summary``: time and bits to a target, against small tables computed by
hand (first crossing, runs that never reach, NaN rows, ratios to a reference, sd over
seeds), the settings it finds, and the pools it refuses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bflnet.analysis.summary import describe, summarize, text_table
from bflnet.analysis.targets import Target

NAN = float("nan")


def _run(mac: str, seed: int, acc: list[float], dt: float, **extra: object) -> pd.DataFrame:
    n = len(acc)
    return pd.DataFrame({"mac": mac, "seed": seed, "run_id": f"{mac}-s{seed}",
                         **extra, "iteration": range(n),
                         "time_s": [i * dt for i in range(n)],
                         "cum_bits": [100.0 * i for i in range(n)], "acc": acc})


def _table() -> pd.DataFrame:
    """Two settings x three seeds. With the target acc >= 0.8, by hand:
    ref: seed 0 at iteration 2 (t 2), seed 1 at 1 (t 1; a later dip does not matter),
    seed 2 at 3 (t 3; the NaN at iteration 2 is skipped);
    a (twice as slow per iteration): seed 0 at 2 (t 4), seed 1 never, seed 2 at 3 (t 6)."""
    return pd.concat([
        _run("ref", 0, [0.1, 0.5, 0.8, 0.9], 1.0),
        _run("ref", 1, [0.1, 0.9, 0.2, 0.95], 1.0),
        _run("ref", 2, [0.2, 0.3, NAN, 0.85], 1.0),
        _run("a", 0, [0.1, 0.5, 0.81, 0.9], 2.0),
        _run("a", 1, [0.1, 0.2, 0.3, 0.4], 2.0),
        _run("a", 2, [0.1, 0.2, 0.3, 0.8], 2.0),
    ], ignore_index=True)


def test_first_crossing_reached_share_mean_sd_and_ratio_by_hand():
    s = summarize(_table(), "acc>=0.8", reference={"mac": "ref"}).set_index("mac")
    assert s.attrs["summary"]["by"] == ["mac"]
    assert s.loc["ref", "target"] == "acc>=0.8"
    assert s.loc["ref", ["runs", "seeds", "reached"]].tolist() == [3, 3, 3]
    assert s.loc["a", ["runs", "seeds", "reached"]].tolist() == [3, 3, 2]
    assert s.loc["a", "reached_share"] == pytest.approx(2 / 3)
    # ref: times 2, 1, 3; bits 200, 100, 300
    assert s.loc["ref", "time_s_to_target_mean"] == pytest.approx(2.0)
    assert s.loc["ref", "time_s_to_target_sd"] == pytest.approx(1.0)
    assert s.loc["ref", "cum_bits_to_target_median"] == pytest.approx(200.0)
    # a: times 4 and 6 (seed 1 never): mean 5, sd sqrt(2)
    assert s.loc["a", "time_s_to_target_mean"] == pytest.approx(5.0)
    assert s.loc["a", "time_s_to_target_sd"] == pytest.approx(math.sqrt(2))
    # paired by seed: 4 / 2 = 2 and 6 / 3 = 2 in time; 200 / 200 = 1 and 300 / 300 in bits
    assert s.loc["a", "time_s_ratio_to_reference_mean"] == pytest.approx(2.0)
    assert s.loc["a", "time_s_ratio_to_reference_sd"] == pytest.approx(0.0)
    assert s.loc["a", "cum_bits_ratio_to_reference_mean"] == pytest.approx(1.0)
    assert s.loc["ref", "time_s_ratio_to_reference_mean"] == pytest.approx(1.0)


def test_ratios_are_paired_by_seed_not_ratios_of_means():
    t = _table()
    t.loc[(t["mac"] == "a") & (t["seed"] == 0), "time_s"] *= 2.0  # seed 0: t 8, ratio 4
    s = summarize(t, ["acc>=0.8"], reference=["mac=ref"]).set_index("mac")
    assert s.loc["a", "time_s_ratio_to_reference_mean"] == pytest.approx((4 + 2) / 2)
    assert s.loc["a", "time_s_ratio_to_reference_sd"] == pytest.approx(math.sqrt(2))
    assert s.loc["a", "time_s_to_target_mean"] == pytest.approx((8 + 6) / 2)


def test_a_run_that_never_reaches_and_a_setting_that_never_does():
    t = _table()
    t = t[~((t["mac"] == "a") & (t["seed"] != 1))]  # only the run that never reaches
    s = summarize(t, ["acc>=0.8"], reference=["mac=ref"], x=["time_s"]).set_index("mac")
    assert s.loc["a", ["runs", "reached"]].tolist() == [1, 0]
    assert np.isnan(s.loc["a", "time_s_to_target_mean"])
    assert np.isnan(s.loc["a", "time_s_ratio_to_reference_mean"])
    assert np.isnan(s.loc["a", "time_s_to_target_sd"])
    assert "cum_bits_to_target_mean" not in s.columns  # only the x asked for
    assert "—" in text_table(s.reset_index().__finalize__(s))


def test_one_run_has_no_sd_and_a_le_target_relative_to_the_first_value():
    t = pd.DataFrame({"iteration": range(5), "time_s": [0.0, 0.5, 1.0, 1.5, 2.0],
                      "dev": [2.0, 1.0, 0.2, 0.1, 0.05]})
    s = summarize(t, ["dev<=5%", "dev<=0.15"])
    assert s["target"].tolist() == ["dev<=5%", "dev<=0.15"]
    assert s["time_s_to_target_mean"].tolist() == [1.5, 1.5]  # 5 % of 2.0 = 0.1
    assert s["runs"].tolist() == [1, 1] and np.isnan(s["time_s_to_target_sd"]).all()
    assert "seeds" not in s.columns


def test_last_values_and_their_paired_difference():
    s = summarize(_table(), last=["acc"], reference={"mac": "ref"}).set_index("mac")
    # last acc: ref 0.9, 0.95, 0.85 (mean 0.9); a 0.9, 0.4, 0.8 (mean 0.7)
    assert s.loc["a", "acc_last_mean"] == pytest.approx(0.7)
    assert s.loc["a", "acc_last_diff_to_reference_mean"] == pytest.approx(-0.2)
    assert s.loc["a", "acc_last_diff_to_reference_sd"] == pytest.approx(
        np.std([0.0, -0.55, -0.05], ddof=1))
    assert "target" not in s.columns and "reached" not in s.columns


def test_settings_found_measured_constants_and_determined_columns_left_out():
    """K and mac are the settings; area (a function of K) and a per-run constant that
    differs on every seed (mean) are not; the reference pairs over K and seed."""
    frames = []
    for K in (10, 30):
        for seed in (0, 1):
            for mac, dt in (("links", 1.0), ("tdma", 3.0)):
                run = _run(mac, seed, [0.1, 0.9], dt * K / 10, K=K, area=K * 2.5,
                           mean=seed + 0.123 * K)
                run["run_id"] = f"{K}-{seed}-{mac}"
                frames.append(run)
    s = summarize(pd.concat(frames, ignore_index=True), ["acc>=0.5"],
                  reference=["mac=links"])
    assert s.attrs["summary"]["by"] == ["mac", "K"]
    assert s["time_s_ratio_to_reference_mean"].tolist() == [1.0, 3.0, 1.0, 3.0]
    assert s.loc[s["K"] == 30, "time_s_to_target_mean"].tolist() == [3.0, 9.0]


def test_curves_one_after_the_other_without_run_id_are_separate_runs():
    """A table of one call with one curve per method (iteration starts again)."""
    t = pd.concat([_run("x", 0, [0.1, 0.9], 1.0), _run("y", 0, [0.1, 0.2, 0.9], 1.0)])
    t = t.drop(columns=["run_id", "seed"]).rename(columns={"mac": "method"})
    s = summarize(t, ["acc>=0.9"])
    assert s[["method", "runs", "time_s_to_target_mean"]].values.tolist() == [
        ["x", 1, 1.0], ["y", 1, 2.0]]
    assert describe(s) == ("settings (--by): method; runs told apart by where iteration "
                           "starts again; replicates: none")


def test_a_pool_is_refused_naming_the_column():
    t = _table()
    t["run_id"] = t["run_id"] + "-K10"
    other = _table().assign(run_id=lambda f: f["run_id"] + "-K30", K=30)
    t = pd.concat([t.assign(K=10), other], ignore_index=True)
    with pytest.raises(ValueError, match=r"--by: 2 runs share the setting and replicate "
                       r"mac=ref seed=0 \(they would be pooled\); columns that differ "
                       r"between them: K;"):
        summarize(t, ["acc>=0.8"], by=["mac"])
    assert len(summarize(t, ["acc>=0.8"], by=["mac", "K"])) == 4


def test_a_target_column_a_setting_lacks_gives_no_row():
    t = _table()
    t["task"] = np.where(t["seed"] >= 0, "learn", "x")
    other = _run("ref", 0, [NAN] * 3, 1.0).assign(task="avg", run_id="avg", dev=[1, .5, .01])
    t = pd.concat([t, other], ignore_index=True)
    s = summarize(t, ["acc>=0.8", "dev<=10%"], by=["task", "mac"])
    assert s[["task", "mac", "target"]].values.tolist() == [
        ["learn", "ref", "acc>=0.8"], ["learn", "a", "acc>=0.8"], ["avg", "ref", "dev<=10%"]]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "--target: give at least one target"),
    ({"targets": "acc=0.8"}, "--target: expected COLUMN<=VALUE or COLUMN>=VALUE"),
    ({"targets": "acc>=high"}, "--target acc: the value must be a number or N%"),
    ({"targets": "acc>=inf"}, "--target acc: the value must be finite"),
    ({"targets": "nope>=1"}, "--target: unknown column 'nope'"),
    ({"targets": "mac>=1"}, "--target mac: not a numeric column"),
    ({"targets": 3}, "--target: expected a text"),
    ({"targets": "acc>=1", "x": "mac"}, "--x mac: not a numeric column"),
    ({"targets": "acc>=1", "x": []}, "--x: give at least one column"),
    ({"targets": "acc>=1", "by": ["time_s"]}, "--by time_s: not constant within a run"),
    ({"targets": "acc>=1", "by": ["zz"]}, "--by: unknown column 'zz'"),
    ({"targets": "acc>=1", "reference": "mac"}, "--reference: expected column=value"),
    ({"targets": "acc>=1", "reference": "mac=b"}, "--reference mac=b: no run has this value; "
                                                  "mac takes a, ref"),
    ({"targets": "acc>=1", "reference": "seed=0"}, "--reference seed: not one of the setting"),
    ({"targets": "acc>=1", "reference": {}}, "--reference: give at least one"),
    ({"last": ["mac"]}, "--last mac: not a numeric column"),
    ({"targets": "acc>=1", "run_by": ["zz"]}, "--run-by: unknown column 'zz'"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError) as caught:
        summarize(_table(), **kwargs)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_bad_tables():
    with pytest.raises(ValueError, match="table: has no rows"):
        summarize(_table().iloc[:0], "acc>=1")
    with pytest.raises(ValueError, match="table: expected a DataFrame"):
        summarize([1, 2], "acc>=1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="--target acc>=1: no row has a value of acc"):
        summarize(_table().assign(acc=NAN), "acc>=1")
    with pytest.raises(ValueError, match="--x: the table has none of time_s"):
        summarize(_table().drop(columns=["time_s", "cum_bits"]), "acc>=1")


def test_target_labels_round_trip():
    for text in ("acc>=0.8", "max_deviation<=5%", "loss<=-1.5", "w2<=0.0002"):
        assert Target.parse(text).label == text
    assert Target.parse(" acc >= 8e-1 ").label == "acc>=0.8"


def test_runs_and_seeds_are_counted_apart():
    """Two seeds of two runs each (a ``run`` column): 4 runs, 2 seeds."""
    t = pd.concat([_run("ref", seed, [0.1, 0.9], 1.0 + run).assign(run=run)
                   for seed in (0, 1) for run in (0, 1)], ignore_index=True)
    s = summarize(t.drop(columns="run_id"), "acc>=0.9")
    assert s[["runs", "seeds", "reached"]].values.tolist() == [[4, 2, 4]]
    assert s["time_s_to_target_mean"].item() == pytest.approx(1.5)
    assert s.attrs["summary"]["run_key"] == ["seed", "run"]
