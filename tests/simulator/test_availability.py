"""Availability of devices and links: exponential on/off processes (down fraction, mean
durations, stationary start) and traces (merging, CSV errors)."""

import itertools
import math

import numpy as np
import pytest

from bflnet.faults.availability import OnOff, Trace, merge_intervals, read_trace


def test_long_run_down_fraction_and_mean_durations():
    """Over 200 seeds, the down fraction of [0, 2000) is 0.2 within 4 standard errors,
    and the mean up and down times are the process's means within 3 %."""
    spec = OnOff.with_downtime(0.2, mean_down_s=5.0)
    assert spec.mean_up_s == pytest.approx(20.0) and spec.down_fraction == pytest.approx(0.2)
    fractions, ups, downs = [], [], []
    for seed in range(200):
        line = spec.timeline(np.random.default_rng(seed))
        fractions.append(line.down_time(0.0, 2000.0) / 2000.0)
        intervals = line.intervals(2000.0)
        downs += [e - s for s, e in intervals]
        ups += [b[0] - a[1] for a, b in itertools.pairwise(intervals)]
    sem = np.std(fractions, ddof=1) / math.sqrt(len(fractions))
    assert abs(np.mean(fractions) - 0.2) < 4 * sem
    assert np.mean(downs) == pytest.approx(5.0, rel=0.03)
    assert np.mean(ups) == pytest.approx(20.0, rel=0.03)


def test_stationary_start_is_down_with_the_down_fraction():
    spec = OnOff(mean_up_s=3.0, mean_down_s=1.0, stationary=True)
    down = [not spec.timeline(np.random.default_rng(s)).is_up(0.0) for s in range(4000)]
    p, n = 0.25, len(down)
    assert abs(np.mean(down) - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert OnOff(3.0, 1.0).timeline(np.random.default_rng(0)).is_up(0.0)


def test_lazy_extension_gives_the_same_intervals_as_one_request():
    spec = OnOff(1.0, 0.5)
    a = spec.timeline(np.random.default_rng(7))
    for t in np.linspace(0, 500, 2000):
        a.is_up(float(t))
    b = spec.timeline(np.random.default_rng(7))
    assert a.intervals(500.0) == b.intervals(500.0)
    assert len(b.intervals(500.0)) > 200  # several chunks were drawn


def test_queries_on_a_trace():
    line = Trace([(5.0, 6.5), (1.0, 2.0), (1.5, 3.0)]).timeline()
    assert line.intervals(100) == [(1.0, 3.0), (5.0, 6.5)]
    assert [line.is_up(t) for t in (0.0, 1.0, 2.9, 3.0, 6.5)] == [True, False, False, True,
                                                                  True]
    assert line.next_change(0.0) == 1.0 and line.next_change(1.0) == 3.0
    assert line.next_change(7.0) == math.inf
    assert line.down_time(2.0, 5.5) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="t1: must be >= t0"):
        line.down_time(2.0, 1.0)


@pytest.mark.parametrize("bad, message", [
    ([(2.0, 1.0)], r"intervals\[0\] end: must be a finite number in \(2, 1e\+15\]"),
    ([(-1.0, 1.0)], r"intervals\[0\] start: must be a finite number in \[0"),
    ([(0.0, float("inf"))], r"intervals\[0\] end"),
    ([(0.0, float("nan"))], r"intervals\[0\] end"),
    ([(0.0,)], r"intervals\[0\]: must be a \(start, end\) pair"),
])
def test_bad_intervals_name_the_field(bad, message):
    with pytest.raises(ValueError, match=message):
        merge_intervals(bad)


@pytest.mark.parametrize("field, value", [("mean_up_s", 0.0), ("mean_down_s", math.inf),
                                          ("mean_up_s", 1e308), ("mean_down_s", math.nan)])
def test_bad_on_off_means_name_the_field(field, value):
    args = {"mean_up_s": 1.0, "mean_down_s": 1.0, field: value}
    with pytest.raises(ValueError, match=field):
        OnOff(**args)
    with pytest.raises(ValueError, match="downtime fraction"):
        OnOff.with_downtime(1.0, 1.0)


def test_read_trace(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("component,start,end\n3,1,2\n0-1,0.5,4\n3,1.5,2.5\n")
    traces = read_trace(path, components=["0-1", "3", "4"])
    assert traces["3"].intervals == ((1.0, 2.5),)
    assert traces["0-1"].timeline().down_time(0, 10) == pytest.approx(3.5)


@pytest.mark.parametrize("text, message", [
    ("node,start,end\n1,0,1\n", "the header must start with component,start,end"),
    ("", "the header must start with"),
    ("component,start,end\n1,zero,1\n", "line 2: start must be a number of seconds"),
    ("component,start,end\n1,0,1\n9,0,1\n", "line 3: component '9' is not in the network"),
    ("component,start,end\n,0,1\n", "line 2: component is empty"),
    ("component,start,end\n1,2,1\n", "end: must be a finite number"),
    ("component,start,end\n1,0," + "9" * 400 + "\n", "end: must be a finite number"),
])
def test_bad_trace_files_give_one_line_errors(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        read_trace(path, components=["1", "2"])
    assert "\n" not in str(info.value)


def test_missing_trace_file(tmp_path):
    with pytest.raises(ValueError, match="trace: no such file"):
        read_trace(tmp_path / "none.csv")
