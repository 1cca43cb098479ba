"""Plots of result tables: median curves over seeds with a quantile band, with fault ticks
in a strip under them; reliability diagrams. Per-run tables: :mod:`bflnet.analysis.run_plots`.

Figures are built on the Agg canvas without pyplot (no global figure state), so they work
headless and in worker processes; save them with :func:`save_figure` or ``fig.savefig``.
Axis labels carry units (:mod:`bflnet.analysis.labels`): pass ``units`` (a scenario
schema's ``{column: unit}``) for the columns whose name does not say it.

>>> fig = plot_metric(table, x="cum_bits", y="max_deviation", hue="graph",
...                   logy=True)  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.facets import (
    MAX_HUES,
    Panel,
    facet_panels,
    facet_values,
    finish_panels,
    new_figure,
)
from bflnet.analysis.labels import axis_label
from bflnet.analysis.table_filter import FIGURE_FORMATS, check_column, format_value
from bflnet.learners.calibration import BINNINGS, reliability_data

__all__ = ["FIGURE_FORMATS", "common_grid", "mark_faults", "plot_metric", "reliability_diagram",
           "save_figure"]

#: Columns that name one run (a curve), in order of preference; ``run`` (the run number
#: inside a multi-run scenario's table) is added to the first of them.
RUN_KEYS = ("run_id", "seed")
INNER_RUN = "run"
#: Legend entry of the thin lines (where only some runs have values).
THIN_LABEL = "thin: median of the runs present"
#: Points of the common grid when runs have different x values.
GRID_POINTS = 200


def _new_axes(figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Any]:
    fig = new_figure(figsize)
    return fig, fig.add_subplot()


def _run_curve(run: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(x, y, repeated)`` sorted by x; for repeated x values the last row wins."""
    rows = run[[x, y]].sort_values(x, kind="stable")
    unique = rows.drop_duplicates(x, keep="last")
    return unique[x].to_numpy(dtype=float), unique[y].to_numpy(dtype=float), \
        len(unique) < len(rows)


def common_grid(curves: Sequence[tuple[np.ndarray, np.ndarray]], logx: bool = False,
                points: int = GRID_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """``(grid, values (runs, len(grid)))``: the runs' own x values when they all share
    them, else ``points`` values (log-spaced if ``logx``) from the smallest x of any run to
    the largest, each run linearly interpolated (in log x if ``logx``) over its own x range
    and NaN outside it."""
    first = curves[0][0]
    if all(np.array_equal(cx, first) for cx, _ in curves):
        return first, np.vstack([cy for _, cy in curves])
    lo = min(cx[0] for cx, _ in curves)
    hi = max(cx[-1] for cx, _ in curves)
    grid = np.geomspace(lo, hi, points) if logx else np.linspace(lo, hi, points)
    grid = np.unique(np.concatenate([grid, [cx[-1] for cx, _ in curves]]))
    warp = np.log if logx else (lambda v: v)
    values = np.full((len(curves), len(grid)), np.nan)
    for i, (cx, cy) in enumerate(curves):
        inside = (grid >= cx[0]) & (grid <= cx[-1])
        values[i, inside] = np.interp(warp(grid[inside]), warp(cx), cy)
    return grid, values


def curve_key(frame: pd.DataFrame, curve_by: Sequence[str] | None) -> list[str]:
    """The columns whose values tell one curve (one run) from another: ``curve_by`` if
    given, else ``run_id`` (else ``seed``), with ``run`` where the table has it."""
    if curve_by is not None:
        for column in curve_by:
            check_column(frame, "--curve-by", column)
        return list(curve_by)
    key = [k for k in RUN_KEYS if k in frame.columns][:1]
    return key + ([INNER_RUN] if INNER_RUN in frame.columns else [])


def runs_word(key: Sequence[str]) -> str:
    """``seeds`` when a curve is one seed of a config, else ``runs``."""
    return "seeds" if list(key) in (["run_id"], ["seed"]) else "runs"


def _median(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the median over the rows present, and how many are present."""
    present = np.sum(~np.isnan(values), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return np.nanmedian(values, axis=0), present


def _draw_group(ax: Any, group: pd.DataFrame, x: str, y: str, key: list[str], band: float,
                logx: bool, logy: bool, label: str, notes: set[str], color: Any = None
                ) -> tuple[int, float, float]:
    """One line (median over the group's runs) and its band; ``(runs, x lo, x hi)`` with
    the x range where they can be seen (on a log y axis: where they are > 0)."""
    if "config_hash" in group.columns and group["config_hash"].nunique() > 1:
        notes.add(f"pooling {group['config_hash'].nunique()} configurations in one curve; "
                  "pass --hue (or --col/--row) or filter with --where")
    runs = [run for _, run in group.groupby(key, sort=False)] if key else [group]
    curves = [_run_curve(run, x, y) for run in runs]
    if any(repeated for _, _, repeated in curves):
        notes.add(f"some runs have several rows at one {x} value (the last is used); if a "
                  "run holds several curves, name the columns that tell them apart with "
                  "--curve-by")
    grid, values = common_grid([(cx, cy) for cx, cy, _ in curves], logx)
    median, present = _median(values)
    full = present == len(curves)
    if not full.all():
        notes.add(f"runs cover different {x} ranges: where some have ended (or not begun) "
                  "the thin line is the median of the runs present")
        (thin,) = ax.plot(grid, median, color=color, linewidth=0.8, alpha=0.6, label="_")
        color = thin.get_color()
    (line,) = ax.plot(grid, np.where(full, median, np.nan), label=label, color=color)
    shared = present >= 2
    if band > 0 and shared.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lower, upper = np.nanquantile(values, [(1 - band) / 2, (1 + band) / 2], axis=0)
        ax.fill_between(grid, lower, upper, where=shared, color=line.get_color(), alpha=0.25,
                        linewidth=0)
    visible = np.isfinite(median) & ((median > 0) if logy else True)
    if band > 0 and shared.any():
        visible |= shared & np.isfinite(upper) & ((upper > 0) if logy else True)
    seen = grid[visible] if visible.any() else grid
    return len(curves), float(seen[0]), float(seen[-1])


def _title(counts: list[int], key: list[str], band: float) -> str:
    """"median over N seeds, 75% band" when some line is a median of several runs."""
    if not counts or max(counts) <= 1:
        return ""
    lo, hi = min(counts), max(counts)
    n = f"{hi}" if lo == hi else f"{lo}-{hi}"
    text = f"median over {n} {runs_word(key)}"
    return f"{text}, {band:.0%} band" if band else text


def fault_rows(frame: pd.DataFrame, x: str) -> pd.DataFrame:
    """The ``fault`` rows of ``frame`` (``event == "fault"``) that have ``x``."""
    if "event" not in frame.columns or x not in frame.columns:
        return frame.iloc[:0]
    return frame[frame["event"] == "fault"].dropna(subset=[x])


def fault_kinds(faults: pd.DataFrame) -> list[str]:
    """The fault kinds of ``faults`` (``kind`` column; ``fault`` without one), sorted."""
    if faults.empty:
        return []
    if "kind" not in faults.columns:
        return ["fault"]
    return sorted(faults["kind"].fillna("fault").astype(str).unique())


def mark_faults(strip: Any, frame: pd.DataFrame, x: str = "time_s",
                kinds: Sequence[str] | None = None, hue: str | None = None,
                colors: Mapping[Any, Any] | None = None) -> int:
    """Tick the ``fault`` rows of ``frame`` at their ``x`` in ``strip`` (an axes under the
    curves, sharing their x axis): one row of ticks per ``kind`` (the y tick labels), each
    tick in its ``hue`` value's colour. Returns the number of ticks (0: none)."""
    faults = fault_rows(frame, x)
    kinds = list(kinds) if kinds is not None else fault_kinds(faults)
    strip.set_yticks(range(len(kinds)), kinds, fontsize="x-small")
    strip.set_ylim(-0.6, len(kinds) - 0.4)
    strip.invert_yaxis()
    strip.tick_params(axis="y", length=0)
    strip.grid(False)
    if faults.empty:
        return 0
    kind_of = (faults["kind"].fillna("fault").astype(str) if "kind" in faults.columns
               else pd.Series("fault", index=faults.index))
    groups = [(None, faults)] if hue is None else list(faults.groupby(hue, sort=True))
    for value, group in reversed(groups):  # the first hue values on top
        color = (colors or {}).get(value, "0.2")
        rows = kind_of.loc[group.index].map({k: i for i, k in enumerate(kinds)})
        strip.plot(group[x], rows, linestyle="none", marker="|", markersize=5,
                   markeredgewidth=0.6, color=color, alpha=0.6)
    return len(faults)


def plot_metric(frame: pd.DataFrame, x: str, y: str, hue: str | None = None,
                band: float = 0.75, logx: bool = False, logy: bool = False,
                curve_by: Sequence[str] | None = None, *, col: str | None = None,
                row: str | None = None, faults: bool = False,
                xlim: tuple[float, float] | None = None,
                ylim: tuple[float, float] | None = None,
                units: Mapping[str, str] | None = None,
                figsize: tuple[float, float] | None = None) -> Figure:
    """Median of ``y`` over runs against ``x``, one line per ``hue`` value, with the central
    ``band`` quantile range shaded (``band=0``: none); one panel per ``col`` / ``row``
    value; with ``faults``, the table's ``fault`` rows ticked in a strip under each panel
    (``bflnet plot`` does this by default).

    A run (one curve) is the rows sharing :func:`curve_key`. Rows without ``y`` (or ``x``)
    are dropped, and rows with ``x <= 0`` when ``logx``. Runs with different x values are
    interpolated onto a common grid (:func:`common_grid`); where only some runs have
    values, a thin line gives the median of those. The x axis ends where the curves end
    (``xlim`` to choose). Pooling several configs in one line, or several rows of one run
    at the same x, gives a warning.
    """
    check_column(frame, "--x", x, numeric=True)
    check_column(frame, "--y", y, numeric=True)
    check_column(frame, "--hue", hue)
    if isinstance(band, bool) or not isinstance(band, int | float) or not 0 <= band < 1:
        raise ValueError(f"--band: must be a number in [0, 1), got {band!r}")
    key = curve_key(frame, curve_by)
    rows = frame.dropna(subset=[x, y] + ([hue] if hue else []))
    if logx:
        rows = rows[rows[x] > 0]
    if rows.empty:
        raise ValueError(f"--y: no rows with both {x!r} and {y!r}")
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    marks = fault_rows(frame, x) if faults else frame.iloc[:0]
    if not marks.empty and logx:
        marks = marks[marks[x] > 0]
    kinds = fault_kinds(marks)
    fig, panels = facet_panels(rows, row, col, strip_rows=len(kinds), figsize=figsize)
    notes: set[str] = set()
    counts: list[int] = []
    span = [np.inf, -np.inf]
    colors: dict[Any, Any] = {}
    for panel in panels:
        for value in hues:
            group = panel.rows if hue is None else panel.rows[panel.rows[hue] == value]
            if group.empty:
                continue
            label = "median" if hue is None else format_value(value)
            n, lo, hi = _draw_group(panel.ax, group, x, y, key, band, logx, logy, label, notes,
                                    colors.get(value))
            colors.setdefault(value, panel.ax.lines[-1].get_color())
            counts.append(n)
            span = [min(span[0], lo), max(span[1], hi)]
        if panel.strip is not None:
            mark_faults(panel.strip, _panel_rows(marks, panel, row, col), x, kinds, hue,
                        colors if hue is not None else None)
            if len(panels) == 1:
                panel.strip.set_ylabel("faults", fontsize="x-small")
    for note in sorted(notes):
        warnings.warn(note, stacklevel=2)
    ax = panels[0].ax
    if any(note.startswith("runs cover different") for note in notes):
        ax.plot([], [], color="0.3", linewidth=0.8, alpha=0.6, label=THIN_LABEL)
    ax.set(xscale="log" if logx else "linear", yscale="log" if logy else "linear")
    if xlim is not None:
        ax.set_xlim(*xlim)
    elif span[0] < span[1]:
        ax.set_xlim(*span)
    if ylim is not None:
        ax.set_ylim(*ylim)
    finish_panels(fig, panels, axis_label(x, units), axis_label(y, units),
                  legend_title=None if hue is None else axis_label(hue, units),
                  title=_title(counts, key, band))
    return fig


def _panel_rows(marks: pd.DataFrame, panel: Panel, row: str | None,
                col: str | None) -> pd.DataFrame:
    """The rows of ``marks`` that belong to ``panel`` (same ``row`` and ``col`` values)."""
    if marks.empty or panel.rows.empty:
        return marks.iloc[:0]
    keep = pd.Series(True, index=marks.index)
    for name in (row, col):
        if name is not None and name in marks.columns:
            keep &= marks[name] == panel.rows[name].iloc[0]
    return marks[keep]


def reliability_diagram(probs: Any, labels: Any, n_bins: int = 10,
                        binning: str = "equal-width") -> Figure:
    """Accuracy per confidence bin (bars) against the diagonal of perfect calibration,
    with each bin's mean confidence marked and the ECE in the title."""
    if binning not in BINNINGS:
        raise ValueError(f"binning: must be one of {', '.join(BINNINGS)}, got {binning!r}")
    data = reliability_data(probs, labels, n_bins, binning)
    filled = data.count > 0
    lower, upper = data.edges[:-1][filled], data.edges[1:][filled]
    fig, ax = _new_axes((4.8, 4.8))
    ax.bar(lower, data.accuracy[filled], width=upper - lower, align="edge",
           edgecolor="black", alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    ax.plot(data.confidence[filled], data.accuracy[filled], "o", color="black",
            label="mean confidence")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence", ylabel="accuracy",
           title=f"ECE = {data.ece:.4f} ({int(data.count.sum())} examples)")
    ax.legend(loc="upper left")
    return fig


def save_figure(fig: Figure, path: str | Path, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` (.png, .pdf or .svg), creating parent folders; whole or
    not at all (:func:`bflnet.files.atomic.write_files`)."""
    from bflnet.files.atomic import WriteError, write_files

    path = Path(path)
    if path.suffix.lower() not in FIGURE_FORMATS:
        raise ValueError(f"--out: must end in {', '.join(FIGURE_FORMATS)}, got {str(path)!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"cannot write {str(path)!r}: cannot create its directory "
                         f"({exc.strerror or exc}); nothing was written") from exc
    fmt = path.suffix.lower().lstrip(".")
    write_files([(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))])
    return path
