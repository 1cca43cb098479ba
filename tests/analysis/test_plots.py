"""Median-and-band plots of result tables, and reliability diagrams."""

import numpy as np
import pandas as pd
import pytest

from bflnet.analysis.plots import common_grid, plot_metric, reliability_diagram, save_figure
from bflnet.scenarios.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def table() -> pd.DataFrame:
    """Two values of `graph`, three seeds each; y = (seed + 1) * x, x = iteration 0..4,
    plus an init row without a metric (dropped)."""
    rows = []
    for graph, scale in (("ring", 1.0), ("complete", 10.0)):
        for seed in range(3):
            rows.append({"graph": graph, "seed": seed, "iteration": 0, "y": np.nan})
            rows += [{"graph": graph, "seed": seed, "iteration": i, "y": scale * (seed + 1) * i}
                     for i in range(1, 5)]
    return pd.DataFrame(rows)


def test_median_line_and_band_per_hue_value(tmp_path):
    fig = plot_metric(table(), x="iteration", y="y", hue="graph", band=0.5)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["complete", "ring"]
    ring = ax.lines[1]
    np.testing.assert_array_equal(ring.get_xdata(), [1, 2, 3, 4])
    np.testing.assert_allclose(ring.get_ydata(), [2, 4, 6, 8])  # median of 1x, 2x, 3x
    assert len(ax.collections) == 2  # one band per line
    # the 50% band at x = 4 runs from the 25% to the 75% quantile of 4, 8, 12: 6 to 10
    band = ax.collections[1].get_paths()[0].vertices
    assert {6.0, 10.0} <= set(np.round(band[:, 1][band[:, 0] == 4], 9))
    path = save_figure(fig, tmp_path / "fig.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_runs_with_different_x_are_interpolated_on_their_common_range():
    curves = [(np.array([0.0, 2.0, 4.0]), np.array([0.0, 2.0, 4.0])),
              (np.array([1.0, 3.0]), np.array([10.0, 30.0]))]
    grid, values = common_grid(curves, points=3)
    np.testing.assert_allclose(grid, [1, 2, 3])
    np.testing.assert_allclose(values, [[1, 2, 3], [10, 20, 30]])
    # in log x: grid 1, 10, 100; the second run is linear in log x, so it is interpolated
    # exactly: y = 10 * log10(x) + 5 -> 5, 15, 25
    curves = [(np.array([1.0, 100.0]), np.array([0.0, 1.0])),
              (np.array([0.1, 1000.0]), np.array([-5.0, 35.0]))]
    grid, values = common_grid(curves, logx=True, points=3)
    np.testing.assert_allclose(grid, [1, 10, 100])
    np.testing.assert_allclose(values, [[0, 0.5, 1], [5, 15, 25]])


def test_no_band_and_log_axes():
    fig = plot_metric(table().query("graph == 'ring'"), x="iteration", y="y", band=0, logx=True,
                      logy=True)
    ax = fig.axes[0]
    assert len(ax.lines) == 1 and not ax.collections
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_one_line_errors():
    for kwargs, text in [({"x": "nope", "y": "y"}, "x: unknown column 'nope'; available: "),
                         ({"x": "iteration", "y": "graph"}, "y: column 'graph' is not numeric"),
                         ({"x": "iteration", "y": "y", "hue": "K"}, "hue: unknown column 'K'"),
                         ({"x": "iteration", "y": "y", "band": 1.5}, "band: must be a number")]:
        with pytest.raises(ValueError, match=text):
            plot_metric(table(), **kwargs)


def test_reliability_diagram():
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    fig = reliability_diagram(probs, [0, 1, 1, 1], n_bins=4)
    ax = fig.axes[0]
    assert len(ax.patches) == 2  # two non-empty bins
    assert "ECE = 0.2500" in ax.get_title()


def test_plot_command_writes_a_png(tmp_path, capsys):
    table().to_parquet(tmp_path / "t.parquet")
    out = tmp_path / "figs" / "y.png"
    assert main(["plot", str(tmp_path / "t.parquet"), "--x", "iteration", "--y", "y",
                 "--hue", "graph", "--logy", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert main(["plot", str(tmp_path / "t.parquet"), "--y", "y", "--out",
                 str(tmp_path / "y.jpg")]) == 2
    assert "--out: must end in .png" in capsys.readouterr().err


def test_runs_holding_several_curves_warn_until_curve_by_names_them():
    # each seed holds two inner runs (column `run`) at the same iterations
    frame = pd.concat([table().assign(run=0), table().assign(run=1, y=lambda f: f.y * 100)])
    with pytest.warns(UserWarning, match="several rows at one iteration"):
        plot_metric(frame, x="iteration", y="y", hue="graph")
    fig = plot_metric(frame, x="iteration", y="y", hue="graph", curve_by=["seed", "run"])
    # six curves for ring: 1x..3x and 100x..300x; the median at x = 4 is (12 + 400) / 2
    assert fig.axes[0].lines[1].get_ydata()[-1] == pytest.approx(206)


def test_mark_faults_draws_one_tick_row_per_kind():
    import pandas as pd

    from bflnet.analysis.plots import mark_faults, plot_metric
    frame = pd.DataFrame({
        "event": ["iteration", "fault", "iteration", "fault", "fault"],
        "time_s": [0.0, 0.5, 1.0, 1.2, 1.5], "kl": [1.0, None, 0.5, None, None],
        "kind": [None, "node_down", None, "node_up", "node_down"]})
    fig = plot_metric(frame, "time_s", "kl")
    assert mark_faults(fig.axes[0], frame, "time_s") == 3
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels.count("fault: node_down") == 1 and "fault: node_up" in labels
    assert mark_faults(fig.axes[0], frame[frame.event != "fault"], "time_s") == 0
