"""One entry point for ``bflnet plot``: picks the figure a result table and the columns
asked for call for.

=====================================  ==========================================
asked for                              figure
=====================================  ==========================================
``y`` of a one-row-per-run table       distribution over runs (``hist``, ``box``)
``x`` and ``y``, one-row-per-run       ``y`` against the parameter ``x``
                                       (``points``: mean and 95 % CI, ``box``)
``x`` a parameter of the runs          each run's last ``y`` against ``x`` (same;
                                       ``stat``: its max, min or mean instead)
``x`` an axis (time, bits, iteration)  median curve over runs (``line``)
``y`` alone of a table of curves       median curve against ``iteration``
=====================================  ==========================================

In every figure, each setting that varies within a line, box or point is placed by
:mod:`bflnet.analysis.placement`: on the figure, averaged by request, or refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.labels import implied_unit
from bflnet.analysis.placement import REPLICATES, place
from bflnet.analysis.plots import curve_key, plot_metric
from bflnet.analysis.run_plots import (
    FLAGS,
    STATS,
    is_per_run,
    plot_against,
    plot_distribution,
    run_values,
    theory_columns,
)
from bflnet.analysis.table_filter import check_column

KINDS = ("line", "hist", "box", "points")
DEFAULT_X = "iteration"


#: Columns that are the x axis of a curve (the others are parameters of a run), beside
#: any column in seconds or bits.
AXIS_COLUMNS = ("iteration", "round", "since_request", "total_local_iterations", "step")
#: A column with more distinct values than this is an axis too.
MAX_PARAMETER_VALUES = 60


def is_axis(frame: pd.DataFrame, x: str, units: Mapping[str, str] | None = None) -> bool:
    """Whether ``x`` is a curve's axis (time, bits, iterations, ...: :data:`AXIS_COLUMNS`,
    a column in seconds or bits, or one of more than :data:`MAX_PARAMETER_VALUES`
    values) rather than a parameter of a run."""
    unit = (units or {}).get(x) or implied_unit(x)
    return x in AXIS_COLUMNS or unit in ("s", "bits") \
        or frame[x].nunique(dropna=True) > MAX_PARAMETER_VALUES


def plot_mode(frame: pd.DataFrame, x: str | None, units: Mapping[str, str] | None = None
              ) -> str:
    """``distribution``, ``against``, ``final-against``, ``final-distribution`` or
    ``curves`` (module docs)."""
    if x is None:
        if is_per_run(frame):
            return "distribution"
        return "curves" if DEFAULT_X in frame.columns else "final-distribution"
    check_column(frame, "--x", x)
    if is_per_run(frame):
        return "against"
    return "curves" if is_axis(frame, x, units) else "final-against"


def plot_table(frame: pd.DataFrame, y: str, x: str | None = None, *,
               hue: str | None = None, col: str | None = None, row: str | None = None,
               style: str | None = None, kind: str | None = None, band: float = 0.75,
               logx: bool = False, logy: bool = False, curve_by: Sequence[str] | None = None,
               average: Sequence[str] = (), stat: str | None = None, faults: bool = False,
               xlim: tuple[float, float] | None = None,
               ylim: tuple[float, float] | None = None,
               units: Mapping[str, str] | None = None, schema: object | None = None,
               figsize: tuple[float, float] | None = None,
               report: Callable[[str], None] | None = None) -> Figure:
    """The figure of ``y`` (and ``x``) in ``frame`` (module docs); ``kind`` picks among the
    figures of the mode (default: the first); a one-line error for a kind that does not
    fit. ``average`` names the settings pooled within a line, box or point; ``stat`` the
    statistic of each run's curve that makes a per-run value (default ``last``);
    ``report`` gets one line saying where the varying settings went."""
    check_column(frame, "--y", y, numeric=True)
    for role, column in (("--hue", hue), ("--style", style), ("--col", col), ("--row", row)):
        check_column(frame, role, column)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"--kind: must be one of {', '.join(KINDS)}, got {kind!r}")
    if stat is not None and stat not in STATS:
        raise ValueError(f"--stat: must be one of {', '.join(STATS)}, got {stat!r}")
    mode = plot_mode(frame, x, units)
    common: dict[str, Any] = dict(hue=hue, col=col, row=row, units=units, schema=schema,
                                  figsize=figsize)
    if mode == "curves":
        if kind not in (None, "line"):
            raise ValueError(f"--kind {kind}: {x or DEFAULT_X} is a curve's axis, so {y} is "
                             f"drawn as curves (--kind line); for a per-run value give --x "
                             f"a parameter of the runs")
        if stat is not None:
            raise ValueError(f"--stat: only for a value per run; {x or DEFAULT_X} is a "
                             f"curve's axis (give --x a parameter of the runs)")
        return plot_metric(frame, x or DEFAULT_X, y, band=band, logx=logx, logy=logy,
                           curve_by=curve_by, faults=faults, xlim=xlim, ylim=ylim,
                           style=style, average=average, report=report, **common)
    if style is not None:
        raise ValueError("--style: only for curves (--x an axis such as time_s); here "
                         "separate with --hue, --col or --row")
    if mode == "distribution" and stat is not None:
        raise ValueError("--stat: this table has one row per run already")
    if mode == "against" and stat is not None:
        raise ValueError("--stat: this table has one row per run already")
    if mode in ("distribution", "final-distribution"):
        if kind not in (None, "hist", "box"):
            raise ValueError(f"--kind {kind}: the distribution of {y} over runs is drawn as "
                             f"hist or box (--x draws it against a parameter)")
        if logx:
            raise ValueError("--logx: a distribution has no log x axis here")
        if mode == "distribution":
            return plot_distribution(frame, y, kind=kind or "hist", theory=None, xlim=xlim,
                                     logy=logy, average=average, report=report, **common)
        rows, placement, prefix = _per_run(frame, y, None, hue, col, row, curve_by,
                                           average, stat, "distribution")
        return plot_distribution(rows, y, kind=kind or "hist", theory=None, xlim=xlim,
                                 logy=logy, placement=placement, x_prefix=prefix,
                                 report=report, **common)
    if kind not in (None, "points", "box"):
        raise ValueError(f"--kind {kind}: {y} against {x} is drawn as points or box")
    assert x is not None
    if mode == "against":
        return plot_against(frame, x, y, kind=kind or "points", logx=logx, logy=logy,
                            xlim=xlim, ylim=ylim, average=average, report=report, **common)
    rows, placement, prefix = _per_run(frame, y, x, hue, col, row, curve_by, average, stat,
                                       "point")
    return plot_against(rows, x, y, kind=kind or "points", logx=logx, logy=logy,
                        y_prefix=prefix, xlim=xlim, ylim=ylim, placement=placement,
                        rows_are_runs=placement.word == "runs", report=report, **common)


def _per_run(frame: pd.DataFrame, y: str, x: str | None, hue: str | None, col: str | None,
             row: str | None, curve_by: Sequence[str] | None, average: Sequence[str],
             stat: str | None, element: str) -> tuple[pd.DataFrame, Any, str]:
    """One row per run of a table of curves: its ``stat`` of ``y`` (``last`` by default),
    its settings placed; and the label prefix naming the statistic (empty when every run
    has one value of ``y``)."""
    key = curve_key(frame, curve_by)
    rows = frame.dropna(subset=[y, *(c for c in (x, hue) if c is not None)])
    if rows.empty:
        raise ValueError(f"--y: no row has a value of {y!r}"
                         + (f" and of {x!r}" if x is not None else ""))
    rows, placement = place(rows, key, {"x": x, "hue": hue, "col": col, "row": row},
                            average, skip=(y,), split=curve_by is None and "run_id" not in key,
                            flags=FLAGS, element=element)
    keep = [*(c for c in (x, hue, col, row) if c is not None), *placement.averaged,
            *(c for c in REPLICATES if c in rows.columns), *theory_columns(frame, y)]
    values, several = run_values(rows, y, stat or "last", keep)
    return values, placement, f"{stat or 'last'} " if several else ""
