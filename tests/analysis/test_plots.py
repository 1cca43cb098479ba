"""Median-and-band plots of result tables, and reliability diagrams."""

import warnings

import numpy as np
import pandas as pd
import pytest

from bflnet.analysis.plots import (
    common_grid,
    mark_faults,
    plot_metric,
    reliability_diagram,
    save_figure,
)
from bflnet.cli.main import main

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
    assert ax.lines[0].get_color() != ax.lines[1].get_color()
    ring = ax.lines[1]
    np.testing.assert_array_equal(ring.get_xdata(), [1, 2, 3, 4])
    np.testing.assert_allclose(ring.get_ydata(), [2, 4, 6, 8])  # median of 1x, 2x, 3x
    assert len(ax.collections) == 2  # one band per line
    # the 50% band at x = 4 runs from the 25% to the 75% quantile of 4, 8, 12: 6 to 10
    band = ax.collections[1].get_paths()[0].vertices
    assert {6.0, 10.0} <= set(np.round(band[:, 1][band[:, 0] == 4], 9))
    path = save_figure(fig, tmp_path / "fig.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_runs_with_different_x_are_interpolated_over_their_own_ranges():
    curves = [(np.array([0.0, 2.0, 4.0]), np.array([0.0, 2.0, 4.0])),
              (np.array([1.0, 3.0]), np.array([10.0, 30.0]))]
    grid, values = common_grid(curves, points=3)
    # 3 points over the union 0..4, and every run's last x
    np.testing.assert_allclose(grid, [0, 2, 3, 4])
    np.testing.assert_allclose(values, [[0, 2, 3, 4], [np.nan, 20, 30, np.nan]])
    # in log x: the second run is linear in log x, so it is interpolated exactly:
    # y = 10 * log10(x) + 5 -> -5, 15, 25, 35 at 0.1, 10, 100, 1000
    curves = [(np.array([1.0, 100.0]), np.array([0.0, 1.0])),
              (np.array([0.1, 1000.0]), np.array([-5.0, 35.0]))]
    grid, values = common_grid(curves, logx=True, points=3)
    np.testing.assert_allclose(grid, [0.1, 10, 100, 1000])
    np.testing.assert_allclose(values, [[np.nan, 0.5, 1, np.nan], [-5, 15, 25, 35]])


def test_runs_that_do_not_overlap_give_a_thin_median_of_the_runs_present():
    frame = pd.DataFrame({"seed": [0, 0, 1, 1], "time_s": [0.0, 1.0, 2.0, 3.0],
                          "y": [1.0, 2.0, 3.0, 4.0]})
    with pytest.warns(UserWarning, match="runs cover different time_s ranges"):
        fig = plot_metric(frame, "time_s", "y")
    ax = fig.axes[0]
    thin, full, key = ax.lines  # no point where both runs have values: full is empty
    assert np.isnan(full.get_ydata()).all()
    assert np.nanmax(thin.get_ydata()) == 4.0 and np.nanmin(thin.get_ydata()) == 1.0
    assert key.get_label() == "thin: median of the runs present"
    assert ax.get_xlim() == (0.0, 3.0)  # ends where the curves end


def test_no_band_and_log_axes():
    fig = plot_metric(table().query("graph == 'ring'"), x="iteration", y="y", band=0, logx=True,
                      logy=True)
    ax = fig.axes[0]
    assert len(ax.lines) == 1 and not ax.collections
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_one_line_errors():
    for kwargs, text in [({"x": "nope", "y": "y"}, "--x: unknown column 'nope'; available: "),
                         ({"x": "iteration", "y": "graph"}, "--y: column 'graph' is not "
                          "numeric"),
                         ({"x": "iteration", "y": "y", "hue": "K"}, "--hue: unknown column "
                          "'K'"),
                         ({"x": "iteration", "y": "y", "band": 1.5}, "--band: must be a "
                          "number")]:
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


def test_runs_holding_several_curves_are_told_apart_and_their_setting_placed():
    # each seed holds two inner curves (column `part`) at the same iterations, one after
    # the other: each is a run (its iterations start again), and `part` a setting
    frame = pd.concat([table().assign(part=0), table().assign(part=1, y=lambda f: f.y * 100)])
    with pytest.raises(ValueError, match=r"part \(0, 1\) varies within a line: separate it "
                       r"\(--style part, --col part, --row part\).* \(--average part\)"):
        plot_metric(frame, x="iteration", y="y", hue="graph")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_metric(frame, x="iteration", y="y", hue="graph", average=["part"])
    # six curves for ring: 1x..3x and 100x..300x; the median at x = 4 is (12 + 400) / 2
    assert fig.axes[0].lines[1].get_ydata()[-1] == pytest.approx(206)
    assert fig.axes[0].lines[1].get_label() == "ring (averaged over part)"
    assert fig.texts[0].get_text() == "median over 6 runs (3 seeds), averaged over part, " \
        "75% band"
    fig = plot_metric(frame, x="iteration", y="y", hue="graph", curve_by=["seed", "part"])
    assert fig.axes[0].lines[1].get_ydata()[-1] == pytest.approx(206)
    # a multi-run scenario's `run` column is part of a curve's identity by default
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_metric(frame.rename(columns={"part": "run"}), x="iteration", y="y",
                          hue="graph")
    assert fig.axes[0].lines[1].get_ydata()[-1] == pytest.approx(206)
    # a curve that really has two rows at one x: the last is used, with a warning
    twice = pd.concat([table(), table().assign(y=lambda f: f.y * 100)]).sort_values(
        ["seed", "iteration"], kind="stable")
    with pytest.warns(UserWarning, match="several rows at one iteration"):
        plot_metric(twice, x="iteration", y="y", hue="graph", curve_by=["seed"])


def test_fault_ticks_go_in_a_strip_under_the_axes():
    frame = pd.DataFrame({
        "event": ["iteration", "fault", "iteration", "fault", "fault", "fault"],
        "time_s": [0.0, 0.5, 1.0, 1.2, 1.5, 7.0], "kl": [1.0, None, 0.5, None, None, None],
        "kind": [None, "node_down", None, "node_up", "node_down", "node_up"]})
    fig = plot_metric(frame, "time_s", "kl", faults=True)
    ax, strip = fig.axes
    assert [t.get_text() for t in strip.get_yticklabels()] == ["node_down", "node_up"]
    ticks = np.concatenate([line.get_xdata() for line in strip.lines])
    assert sorted(ticks) == [0.5, 1.2, 1.5, 7.0]
    assert ax.get_ylim()[0] > 0.4  # the main axes' y range holds the curve only
    assert ax.get_xlim() == (0.0, 1.0)  # the curve ends at 1 s; a later fault does not
    assert strip.get_xlabel() == "time (s)" and ax.get_ylabel().startswith("KL to the")
    fig = plot_metric(frame, "time_s", "kl", faults=True, xlim=(0.0, 8.0))
    assert fig.axes[0].get_xlim() == (0.0, 8.0)
    assert len(plot_metric(frame, "time_s", "kl").axes) == 1  # faults=False
    assert mark_faults(strip, frame[frame.event != "fault"], "time_s", ["node_down"]) == 0


def test_labels_legend_title_and_seed_count_in_the_title():
    fig = plot_metric(table(), x="iteration", y="y", hue="graph", units={"y": "nats"})
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("iteration", "y (nats)")
    (legend,) = fig.legends  # right of the axes, not over the curves
    assert ax.get_legend() is None and legend.get_title().get_text() == "graph"
    assert fig.texts[0].get_text() == "median over 3 seeds, 75% band"
    one = plot_metric(table().query("seed == 0 and graph == 'ring'"), x="iteration", y="y")
    assert not one.texts  # one run: no "median over 1 seed"


def test_facets_one_panel_per_value_with_shared_axes():
    fig = plot_metric(table(), x="iteration", y="y", col="graph")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["graph = complete", "graph = ring"]
    assert all(len(ax.lines) == 1 for ax in fig.axes)
    assert fig.axes[1].get_ylabel() == ""  # the y label on the left column only


def test_a_result_constant_within_a_run_is_not_a_setting():
    # `gap` is constant within each run but differs from seed to seed (a spectral gap of
    # a random graph): a result, pooled into the median; `K` recurs for every seed: a
    # setting, refused until placed
    rows = [{"run_id": f"{k}-{seed}", "seed": seed, "K": k, "gap": 0.1 * seed + 0.01 * k,
             "iteration": i, "y": float(k * i + seed)}
            for k in (4, 8) for seed in range(3) for i in range(4)]
    frame = pd.DataFrame(rows)
    with pytest.raises(ValueError, match=r"^K \(4, 8\) varies within a line"):
        plot_metric(frame, "iteration", "y")
    notes = []
    fig = plot_metric(frame, "iteration", "y", hue="K", report=notes.append)
    assert notes == ["6 runs; on the figure: K (colour); each line over seed (3 values)"]
    assert fig.texts[0].get_text() == "median over 3 seeds, 75% band"
