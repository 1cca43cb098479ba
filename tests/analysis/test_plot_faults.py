"""`bflnet plot` on real tables (tiny runs of d2d-medium, a sweep of two seeds,
gfvl-beta-bernoulli, wflmc-gaussian), checked on the matplotlib artists it draws: no
setting that varies is pooled without a word, seeds and runs are counted apart, a
reference setting is in every panel, log axes keep every curve in its own colour with
the legend beside the axes, zeros on a log axis sit on a marked floor, intervals stay in
the support, labels, units and per-run statistics come from the schema; and the
d2d-medium scenario's own figure draws nothing at t = 0 on its log axes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

import bflnet.analysis.plots as plots
from bflnet.cli.main import main
from bflnet.scenarios import run_scenario

D2D = ["--set", "tasks=consensus", "--set", "K=6", "--set", "rounds=8", "--no-progress"]
MACS = ["aloha", "csma", "links", "none", "tdma"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The tables, written by the command line as a user would."""
    where = tmp_path_factory.mktemp("tables")
    paths = {"d2d": where / "d2d.csv", "sweep": where / "sweep.parquet",
             "bb": where / "bb.csv", "wflmc": where / "wflmc.csv"}
    assert main(["run", "d2d-medium", *D2D, "--out", str(paths["d2d"])]) == 0
    assert main(["sweep", "d2d-medium", *D2D, "--seeds", "2", "--workers", "1",
                 "--out", str(paths["sweep"])]) == 0
    assert main(["run", "gfvl-beta-bernoulli", "--set", "runs=3", "--no-progress",
                 "--out", str(paths["bb"])]) == 0
    assert main(["run", "wflmc-gaussian", "--set", "runs=2", "--set", "rounds=10",
                 "--set", "burn_in=5", "--set", "snr_db=5,20", "--no-progress",
                 "--out", str(paths["wflmc"])]) == 0
    return {name: str(path) for name, path in paths.items()}


@pytest.fixture
def plot(monkeypatch, capsys, tmp_path):
    """``plot(table, *options)``: ``(figure, stderr lines)`` of `bflnet plot` run in
    process (exit code 0)."""
    figures = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure",
                        lambda fig, path, dpi=150: figures.append(fig) or save(fig, path, dpi))

    def run(table: str, *options: str):
        capsys.readouterr()
        code = main(["plot", table, *options, "--out", str(tmp_path / "f.png"), "--dpi", "50",
                     "--size", "6,3.5"])
        err = capsys.readouterr().err
        assert code == 0, err
        # the placement line first (it is printed once the figure is written, after the
        # warning lines)
        return figures[-1], sorted(err.splitlines(), key=lambda s: s.startswith("bflnet: w"))
    return run


def drawn(ax) -> list:
    """The lines that carry data (not legend proxies, floors or thin partial medians)."""
    return [line for line in ax.lines if len(line.get_xdata()) and line.get_label()[:1] != "_"]


def title(fig) -> str:
    """The figure's title (over the panels and the legend)."""
    return fig.texts[0].get_text() if fig.texts else fig.axes[0].get_title()


def legend_texts(fig) -> list[str]:
    (legend,) = fig.legends
    return [t.get_text() for t in legend.get_texts()]


# --------------------------------------------- 1. a varying setting is never pooled silently

def test_a_pooled_setting_is_refused_in_one_line_naming_it_and_the_options(tables, tmp_path):
    out = tmp_path / "f.png"
    result = subprocess.run([sys.executable, "-m", "bflnet.cli", "plot", tables["d2d"],
                             "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                             "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line == ("bflnet: error: broadcast (False, True) varies within a line: separate it "
                    "(--style broadcast, --col broadcast, --row broadcast), keep one value "
                    "(--where broadcast=False) or pool it into the line (--average broadcast)")
    assert not out.exists()


def test_an_averaged_setting_is_said_in_the_title_legend_and_stderr(tables, plot):
    fig, err = plot(tables["d2d"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                    "--average", "broadcast")
    assert err[0].startswith("bflnet: 9 runs; on the figure: mac (colour); averaged within "
                             "each line: broadcast")
    # one run per setting, no seed column: runs, not seeds; links alone is not averaged
    assert title(fig) == "median over 1-2 runs, averaged over broadcast, 75% band"
    assert legend_texts(fig)[:5] == [
        "aloha (averaged over broadcast)", "csma (averaged over broadcast)", "links",
        "none (averaged over broadcast)", "tdma (averaged over broadcast)"]


def test_each_varying_setting_on_the_figure_and_stderr_says_where(tables, plot):
    fig, err = plot(tables["d2d"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                    "--style", "broadcast")
    assert err[0] == "bflnet: 9 runs; on the figure: mac (colour), broadcast (line style)"
    lines = drawn(fig.axes[0])
    assert len(lines) == 9 and title(fig) == ""  # one run per line: no median to speak of
    styles = {(line.get_color(), line.get_linestyle()) for line in lines}
    assert len(styles) == 9
    assert "csma, broadcast = True" in legend_texts(fig)


# ----------------------------------------------------- 2. seeds and runs counted apart

def test_seeds_and_runs_are_counted_apart(tables, plot):
    fig, err = plot(tables["sweep"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                    "--style", "broadcast")
    assert title(fig) == "median over 2 seeds, 75% band"
    assert "each line over seed (2 values)" in err[0]
    fig, _ = plot(tables["sweep"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                  "--average", "broadcast")
    assert title(fig) == "median over 2-4 runs (2 seeds), averaged over broadcast, 75% band"


def test_a_table_of_rows_per_setting_counts_rows_not_runs(tables, plot):
    fig, _ = plot(tables["wflmc"], "--x", "snr_db", "--y", "w2", "--hue", "method")
    assert title(fig) == "one row per point"  # each row sums up 2 runs: not "one run"


# ------------------------------------------------- 3. a reference setting in every panel

def test_the_reference_setting_is_in_every_panel(tables, plot):
    fig, err = plot(tables["d2d"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                    "--col", "broadcast")
    assert err[0] == ("bflnet: 9 runs; on the figure: mac (colour), broadcast (panel "
                      "columns); mac = links (the reference) in every panel")
    assert [ax.get_title() for ax in fig.axes] == ["broadcast = False", "broadcast = True"]
    reference = "links (reference, in every panel)"
    panels = [{line.get_label(): line for line in drawn(ax)} for ax in fig.axes]
    assert all(reference in lines for lines in panels)
    np.testing.assert_array_equal(panels[0][reference].get_xdata(),
                                  panels[1][reference].get_xdata())
    assert to_rgba(panels[1][reference].get_color()) == to_rgba("black")
    assert set(panels[1]) == {reference, "aloha", "csma", "none", "tdma"}


# ------------------------------------------------------------ 4. log axes, colours, legend

def test_log_x_keeps_every_curve_in_its_own_colour_with_the_legend_beside(tables, plot):
    fig, err = plot(tables["d2d"], "--x", "time_s", "--y", "max_deviation", "--hue", "mac",
                    "--where", "broadcast=false", "--logx")
    assert "bflnet: warning: --logx: 5 rows at time_s <= 0 are not on the log axis; each " \
           "curve starts at its first time_s > 0" in err
    ax = fig.axes[0]
    lines = drawn(ax)
    assert sorted(line.get_label() for line in lines) == MACS
    for line in lines:
        x = np.asarray(line.get_xdata(), float)
        y = np.asarray(line.get_ydata(), float)
        assert (x > 0).all() and np.isfinite(y).sum() >= 4, line.get_label()
    assert len({to_rgba(line.get_color()) for line in lines}) == 5
    assert ax.get_legend() is None and legend_texts(fig)[:5] == MACS
    fig.canvas.draw()  # the legend right of the axes, clear of the curves
    renderer = fig.canvas.get_renderer()
    assert fig.legends[0].get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_hues_keep_distinct_colours_across_panels(tables, plot):
    # the first panel (links) has unicast only; in the next both: two colours
    fig, _ = plot(tables["d2d"], "--x", "time_s", "--y", "max_deviation", "--hue",
                  "broadcast", "--col", "mac", "--where", "mac=links", "--where", "mac=tdma")
    links, tdma = ({line.get_label(): to_rgba(line.get_color()) for line in drawn(ax)}
                   for ax in fig.axes)
    assert set(tdma) == {"False", "True"} and tdma["False"] != tdma["True"]
    assert links["False"] == tdma["False"]


def test_zeros_on_a_log_y_axis_sit_on_a_marked_floor(tables, plot):
    fig, err = plot(tables["bb"], "--x", "iteration", "--y", "kl", "--hue", "graph", "--logy")
    assert any(line.startswith("bflnet: warning: --logy: ") and "values of kl are <= 0: drawn "
               "at 1e-04 (the dotted line)" in line for line in err)
    ax = fig.axes[0]
    floor = 1e-4  # a decade under the smallest positive KL's decade
    medians = {line.get_label(): np.asarray(line.get_ydata(), float) for line in drawn(ax)}
    assert set(medians) >= {"complete", "ring", "star"}
    for y in medians.values():
        assert (y[np.isfinite(y)] >= floor).all()
    # the complete graph's KL reaches exactly 0: its median ends on the floor, not off it
    assert medians["complete"][-1] == floor and np.isfinite(medians["complete"]).all()
    floors = [line for line in ax.lines if line.get_linestyle() == ":"
              and np.allclose(np.asarray(line.get_ydata(), float), floor)]
    assert floors and "<= 0, drawn at 1e-04" in legend_texts(fig)
    for band in ax.collections:  # the quantile bands too
        assert band.get_paths()[0].vertices[:, 1].min() >= floor


# ------------------------------------------------------- 5. intervals respect the support

def test_intervals_of_a_kl_stay_above_zero(tables, plot):
    fig, _ = plot(tables["bb"], "--where", "iteration=10", "--x", "graph", "--y", "kl")
    ax = fig.axes[0]
    bars = np.concatenate([c.get_segments() for c in ax.collections])
    assert len(bars) == 3 and bars[:, :, 1].min() > 0
    ring = bars[1][:, 1]  # the ring's KLs at iteration 10: a normal interval went below 0
    values = pd.read_csv(tables["bb"]).query("iteration == 10 and graph == 'ring'")["kl"]
    assert values.mean() - 1.96 * values.std() / np.sqrt(3) < 0 < ring.min()
    assert title(fig) == "3 runs per point, mean and 95% CI (on the log scale)"


# ------------------------------------ 6. labels, units and statistics from the schema

def test_labels_units_and_per_run_statistics_come_from_the_schema(tables, plot):
    fig, _ = plot(tables["wflmc"], "--x", "snr_db", "--y", "w2", "--hue", "method")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "SNR (dB)"
    # w2 is the largest over the kept rounds, one row per setting: no statistic taken
    assert ax.get_ylabel() == "squared W2 to the posterior, max over the kept rounds"
    fig, _ = plot(tables["bb"], "--x", "graph", "--y", "kl")
    assert fig.axes[0].get_ylabel() == "last KL to the exact posterior (nats)"
    fig, _ = plot(tables["bb"], "--x", "graph", "--y", "kl", "--stat", "max")
    assert fig.axes[0].get_ylabel() == "max KL to the exact posterior (nats)"
    frame = pd.read_csv(tables["bb"])
    most = frame.groupby(["graph", "run"])["kl"].max().groupby("graph").mean()
    np.testing.assert_allclose(np.asarray(fig.axes[0].lines[0].get_ydata(), float),
                               most.to_numpy())


# ------------------------------------------------- 7. the d2d-medium scenario's own figure

def test_the_d2d_medium_figure_draws_nothing_at_zero_on_its_log_axes():
    from bflnet.scenarios.cdbfl.d2d_medium import default_plot

    frame = run_scenario("d2d-medium", {"tasks": "consensus", "K": 6, "rounds": 8}, seed=0)
    fig = default_plot(frame)
    seconds, bits = fig.axes
    assert seconds.get_xscale() == bits.get_xscale() == "log"
    first = frame[frame["time_s"] > 0].groupby("run_id", sort=False)["time_s"].min()
    lines = seconds.get_lines()
    assert len(lines) == frame["run_id"].nunique() == 9
    for line, start in zip(lines, first, strict=True):
        x = np.asarray(line.get_xdata(), float)
        assert (x > 0).all() and x[0] == start
    for line in bits.get_lines():
        assert (np.asarray(line.get_xdata(), float) > 0).all()
    assert "the initial state (0 s, 0 bits) is off the log axes" in fig.texts[0].get_text()
    assert seconds.get_ylabel() == "max deviation from the mean"


@pytest.mark.parametrize(("options", "text"), [
    (["--hue", "mac", "--average", "nope"], "--average: unknown column 'nope'; available: "),
    (["--hue", "mac", "--average", "mac"], "--average mac: mac is on the figure (colour)"),
    (["--x", "mac", "--stat", "median"], "--stat: must be one of last, max, min, mean"),
    (["--x", "mac", "--style", "broadcast"], "--style: only for curves"),
    (["--x", "time_s", "--stat", "max"], "--stat: only for a value per run"),
])
def test_bad_placement_options_are_one_line_and_exit_code_2(tables, capsys, tmp_path,
                                                           options, text):
    out = tmp_path / "f.png"
    assert main(["plot", tables["d2d"], "--y", "max_deviation", *options,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"bflnet: error: {text}"), err
    assert not out.exists()
