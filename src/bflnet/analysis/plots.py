"""Plots of result tables: median curves over seeds with a quantile band; reliability diagrams.

Figures are built on the Agg canvas without pyplot (no global figure state), so they work
headless and in worker processes; save them with :func:`save_figure` or ``fig.savefig``.

>>> fig = plot_metric(table, x="cum_bits", y="max_deviation", hue="graph",
...                   logy=True)  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bflnet.analysis.calibration import BINNINGS, reliability_data

FIGURE_FORMATS = (".png", ".pdf", ".svg")
RUN_KEYS = ("run_id", "seed")


def _new_axes(figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _check_column(frame: pd.DataFrame, role: str, column: str | None,
                  numeric: bool = True) -> None:
    if column is None:
        return
    if column not in frame.columns:
        raise ValueError(f"{role}: unknown column {column!r}; available: "
                         f"{', '.join(map(str, frame.columns))}")
    if numeric and not pd.api.types.is_numeric_dtype(frame[column]):
        raise ValueError(f"{role}: column {column!r} is not numeric")


def _run_curve(run: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(x, y, repeated)`` sorted by x; for repeated x values the last row wins."""
    rows = run[[x, y]].sort_values(x, kind="stable")
    unique = rows.drop_duplicates(x, keep="last")
    return unique[x].to_numpy(dtype=float), unique[y].to_numpy(dtype=float), \
        len(unique) < len(rows)


def common_grid(curves: Sequence[tuple[np.ndarray, np.ndarray]], logx: bool = False,
                points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``(grid, values (runs, len(grid)))``: the runs' own x values when they all share
    them, else ``points`` values (log-spaced if ``logx``) over the x range that every run
    covers, each run linearly interpolated (in log x if ``logx``)."""
    first = curves[0][0]
    if all(np.array_equal(cx, first) for cx, _ in curves):
        return first, np.vstack([cy for _, cy in curves])
    lo = max(cx[0] for cx, _ in curves)
    hi = min(cx[-1] for cx, _ in curves)
    if lo > hi:
        raise ValueError("x: the runs' x ranges do not overlap; split them with hue")
    grid = np.geomspace(lo, hi, points) if logx else np.linspace(lo, hi, points)
    warp = np.log if logx else (lambda v: v)
    return grid, np.vstack([np.interp(warp(grid), warp(cx), cy) for cx, cy in curves])


def _curve_key(frame: pd.DataFrame, curve_by: Sequence[str] | None) -> list[str]:
    if curve_by is not None:
        for column in curve_by:
            _check_column(frame, "curve_by", column, numeric=False)
        return list(curve_by)
    return [k for k in RUN_KEYS if k in frame.columns][:1]


def _draw_group(ax: Any, group: pd.DataFrame, x: str, y: str, key: list[str], band: float,
                logx: bool, label: str, notes: set[str]) -> None:
    if "config_hash" in group.columns and group["config_hash"].nunique() > 1:
        notes.add(f"pooling {group['config_hash'].nunique()} configurations in one curve; "
                  "pass hue= or filter the table first")
    runs = [run for _, run in group.groupby(key, sort=False)] if key else [group]
    curves = [_run_curve(run, x, y) for run in runs]
    if any(repeated for _, _, repeated in curves):
        notes.add(f"some runs have several rows at one {x} value (the last is used); if a "
                  "run holds several curves, name the columns that tell them apart in "
                  "curve_by")
    grid, values = common_grid([(cx, cy) for cx, cy, _ in curves], logx)
    (line,) = ax.plot(grid, np.median(values, axis=0), label=label)
    if band > 0 and len(values) > 1:
        lower, upper = np.quantile(values, [(1 - band) / 2, (1 + band) / 2], axis=0)
        ax.fill_between(grid, lower, upper, color=line.get_color(), alpha=0.25, linewidth=0)


def plot_metric(frame: pd.DataFrame, x: str, y: str, hue: str | None = None,
                band: float = 0.75, logx: bool = False, logy: bool = False,
                curve_by: Sequence[str] | None = None) -> Figure:
    """Median of ``y`` over runs against ``x``, one line per ``hue`` value, with the central
    ``band`` quantile range shaded (``band=0``: none).

    A run (one curve) is the rows sharing ``curve_by`` (default: ``run_id``, else ``seed``,
    else the whole table). Rows without ``y`` (or ``x``) are dropped, and rows with
    ``x <= 0`` when ``logx``. Runs with different x values are interpolated onto a common
    grid (see :func:`common_grid`). Pooling several configs in one line, or several rows
    of one run at the same x, gives a warning.
    """
    _check_column(frame, "x", x)
    _check_column(frame, "y", y)
    _check_column(frame, "hue", hue, numeric=False)
    if isinstance(band, bool) or not isinstance(band, int | float) or not 0 <= band < 1:
        raise ValueError(f"band: must be a number in [0, 1), got {band!r}")
    key = _curve_key(frame, curve_by)
    rows = frame.dropna(subset=[x, y] + ([hue] if hue else []))
    if logx:
        rows = rows[rows[x] > 0]
    if rows.empty:
        raise ValueError(f"y: no rows with both {x!r} and {y!r}")
    fig, ax = _new_axes()
    notes: set[str] = set()
    groups = [(y, rows)] if hue is None else list(rows.groupby(hue, sort=True))
    for value, group in groups:
        _draw_group(ax, group, x, y, key, band, logx, str(value), notes)
    for note in sorted(notes):
        warnings.warn(note, stacklevel=2)
    ax.set(xlabel=x, ylabel=y, xscale="log" if logx else "linear",
           yscale="log" if logy else "linear")
    ax.set_title(f"median over seeds, {band:.0%} band" if band else "median over seeds")
    if hue is not None:
        ax.legend(title=hue)
    ax.grid(alpha=0.3)
    return fig


def mark_faults(ax: Any, frame: pd.DataFrame, x: str = "time_s") -> int:
    """Mark the ``fault`` rows of ``frame`` (``event == "fault"``) at their ``x`` under the
    curves of ``ax``: one row of ticks per ``kind``, in the legend. Returns the number of
    marks (0: nothing drawn)."""
    from matplotlib.transforms import blended_transform_factory

    if "event" not in frame.columns or x not in frame.columns:
        return 0
    faults = frame[(frame["event"] == "fault")].dropna(subset=[x])
    if faults.empty:
        return 0
    kinds = faults["kind"].astype(str) if "kind" in faults else pd.Series("fault", faults.index)
    where = blended_transform_factory(ax.transData, ax.transAxes)
    for row, (kind, group) in enumerate(faults.groupby(kinds, sort=True)):
        ax.plot(group[x], [0.02 + 0.035 * row] * len(group), linestyle="none", marker="|",
                markersize=7, transform=where, label=f"fault: {kind}", alpha=0.8)
    ax.legend(fontsize="small")
    return len(faults)


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
    not at all (:func:`bflnet.atomic.write_files`)."""
    from bflnet.atomic import WriteError, write_files

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
