"""Per-run plots: distributions with the theory marked, values against a parameter, the
figure bflnet plot picks, --where filters and axis labels with units."""

import numpy as np
import pandas as pd
import pytest

from bflnet.analysis.labels import axis_label
from bflnet.analysis.run_plots import plot_against, plot_distribution, theory_columns
from bflnet.analysis.table_filter import parse_limits, where
from bflnet.analysis.table_plot import plot_mode, plot_table


def runs() -> pd.DataFrame:
    """One row per run: K in {4, 8}, 5 runs each, latency = K + run - 2 (mean K),
    theory = K."""
    rows = [{"event": "run", "K": k, "run": r, "latency": float(k + r - 2),
             "theory_latency": float(k), "graph": "ring" if r % 2 else "star"}
            for k in (4, 8) for r in range(5)]
    return pd.DataFrame(rows)


def test_axis_labels_carry_units():
    assert axis_label("time_s") == "time (s)"
    assert axis_label("cum_bits") == "cumulative bits"
    assert axis_label("kl") == "KL to the exact posterior (nats)"
    assert axis_label("unlearn_time_s") == "unlearn time (s)"
    assert axis_label("unlearn_bits") == "unlearn bits"
    assert axis_label("cover_iterations", {"cover_iterations": "count"}) == "cover iterations"
    assert axis_label("speed", {"speed": "m/s"}) == "speed (m/s)"


def test_histogram_with_mean_and_theory_marked():
    frame = runs().query("K == 4").drop(columns="graph")
    assert theory_columns(frame, "latency") == ["theory_latency"]
    fig = plot_distribution(frame, "latency")
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("latency", "runs")
    # integer values 2..6, once each, in unit bins centred on them: one filled outline
    # from 1.5 to 6.5, one run high
    (outline,) = ax.patches
    xy = outline.get_xy()
    assert (xy[:, 0].min(), xy[:, 0].max(), xy[:, 1].max()) == (1.5, 6.5, 1.0)
    marks = {line.get_label(): line.get_xdata()[0] for line in ax.lines}
    assert marks["theory_latency: 4"] == 4.0
    assert marks["mean over the runs: 4"] == pytest.approx(4.0)
    assert fig.texts[0].get_text() == "5 runs"


def test_boxes_per_hue_value_with_the_theory():
    fig = plot_distribution(runs(), "latency", hue="K", kind="box")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8"]
    theory = [line for line in ax.lines if line.get_label() == "theory_latency"]
    assert [line.get_ydata()[0] for line in theory] == [4.0, 8.0]


def test_points_against_a_parameter_are_the_mean_with_a_95_percent_interval():
    fig = plot_against(runs(), "K", "latency")
    ax = fig.axes[0]
    points = ax.lines[0]
    np.testing.assert_allclose(points.get_xdata(), [4, 8])
    np.testing.assert_allclose(np.asarray(points.get_ydata(), float), [4, 8])  # K-2..K+2
    # latency >= 0: the interval of the mean on the log scale, mean * exp(+-1.96 se / mean)
    # with se = std(ddof=1) / sqrt(5) of 5 consecutive integers
    se = np.std([0, 1, 2, 3, 4], ddof=1) / np.sqrt(5)
    segments = ax.collections[0].get_segments()
    for (lo, hi), mean in zip([(s[0, 1], s[1, 1]) for s in segments], [4, 8], strict=True):
        factor = np.exp(1.959963984540054 * se / mean)
        assert (lo, hi) == pytest.approx((mean / factor, mean * factor))
    assert ax.get_xlabel() == "agents K"
    assert fig.texts[0].get_text() == "5 runs per point, mean and 95% CI (on the log scale)"
    theory = next(line for line in ax.lines if line.get_label() == "theory_latency")
    np.testing.assert_allclose(theory.get_ydata(), [4, 8])


def test_plot_table_picks_the_figure():
    per_run = runs()
    assert plot_mode(per_run, None) == "distribution"
    assert plot_mode(per_run, "K") == "against"
    curves = pd.DataFrame({"event": "iteration", "seed": np.repeat([0, 1], 3),
                           "K": np.repeat([4, 8], 3), "iteration": [0, 1, 2] * 2,
                           "time_s": [0.0, 0.5, 1.0] * 2, "acc": [0.1, 0.5, 0.7, 0.2, 0.6, 0.9]})
    assert plot_mode(curves, "time_s") == "curves"
    assert plot_mode(curves, None) == "curves"
    assert plot_mode(curves, "K") == "final-against"
    fig = plot_table(curves, "acc", "K")  # each run's last accuracy against K
    np.testing.assert_allclose(np.asarray(fig.axes[0].lines[0].get_ydata(), float), [0.7, 0.9])
    assert fig.axes[0].get_ylabel() == "last acc"  # each run's last value, named so
    with pytest.raises(ValueError, match="--kind hist: time_s is a curve's axis"):
        plot_table(curves, "acc", "time_s", kind="hist")
    with pytest.raises(ValueError, match="--kind line: the distribution"):
        plot_table(per_run, "latency", kind="line")
    with pytest.raises(ValueError, match="--kind: must be one of line, hist, box, points"):
        plot_table(per_run, "latency", kind="violin")


def test_facets_of_a_distribution():
    fig = plot_table(runs(), "latency", col="graph", row="K")
    assert [ax.get_title() for ax in fig.axes] == [
        "K = 4, graph = ring", "K = 4, graph = star", "K = 8, graph = ring",
        "K = 8, graph = star"]
    assert fig.axes[2].get_xlabel() == "latency" and fig.axes[0].get_xlabel() == ""


def test_where_filters_and_its_errors():
    frame = runs()
    assert len(where(frame, ["K=8"])) == 5
    assert len(where(frame, ["K=8", "graph=ring"])) == 2
    assert len(where(frame, ["graph=ring", "graph=star"])) == 10  # one column twice: either
    for filters, text in [(["nope=1"], "--where: unknown column 'nope'; available: event"),
                          (["K=5"], "--where K=5: no row has this value; K takes 4, 8"),
                          (["K=abc"], "--where K=abc: K is numeric"),
                          (["graph"], "--where: expected column=value, got 'graph'"),
                          (["K=4", "latency=9"], "no row matches K=4 and latency=9 together")]:
        with pytest.raises(ValueError, match=text):
            where(frame, filters)


def test_limits():
    assert parse_limits("--xlim", "0,2.5") == (0.0, 2.5)
    for text, message in [("1", "two numbers"), ("2,1", "lo < hi"), ("0,nan", "lo < hi"),
                          ("a,b", "two numbers")]:
        with pytest.raises(ValueError, match=message):
            parse_limits("--xlim", text)
    with pytest.raises(ValueError, match="log axis needs lo > 0"):
        parse_limits("--xlim", "0,1", log=True)
