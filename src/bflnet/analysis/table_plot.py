"""One entry point for ``bflnet plot``: picks the figure a result table and the columns
asked for call for.

=====================================  ==========================================
asked for                              figure
=====================================  ==========================================
``y`` of a one-row-per-run table       distribution over runs (``hist``, ``box``)
``x`` and ``y``, one-row-per-run       ``y`` against the parameter ``x``
                                       (``points``: mean and 95 % CI, ``box``)
``x`` a parameter of the runs          each run's last ``y`` against ``x`` (same)
``x`` an axis (time, bits, iteration)  median curve over runs (``line``)
``y`` alone of a table of curves       median curve against ``iteration``
=====================================  ==========================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.labels import implied_unit
from bflnet.analysis.plots import curve_key, plot_metric
from bflnet.analysis.run_plots import final_values, is_per_run, plot_against, plot_distribution
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
               kind: str | None = None, band: float = 0.75, logx: bool = False,
               logy: bool = False, curve_by: Sequence[str] | None = None,
               faults: bool = False, xlim: tuple[float, float] | None = None,
               ylim: tuple[float, float] | None = None,
               units: Mapping[str, str] | None = None,
               figsize: tuple[float, float] | None = None) -> Figure:
    """The figure of ``y`` (and ``x``) in ``frame`` (module docs); ``kind`` picks among the
    figures of the mode (default: the first); a one-line error for a kind that does not fit."""
    check_column(frame, "--y", y, numeric=True)
    for role, column in (("--hue", hue), ("--col", col), ("--row", row)):
        check_column(frame, role, column)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"--kind: must be one of {', '.join(KINDS)}, got {kind!r}")
    extra = [c for c in (hue, col, row) if c is not None]
    mode = plot_mode(frame, x, units)
    common: dict[str, Any] = dict(hue=hue, col=col, row=row, units=units, figsize=figsize)
    if mode == "curves":
        if kind not in (None, "line"):
            raise ValueError(f"--kind {kind}: {x or DEFAULT_X} is a curve's axis, so {y} is "
                             f"drawn as curves (--kind line); for a per-run value give --x "
                             f"a parameter of the runs")
        return plot_metric(frame, x or DEFAULT_X, y, band=band, logx=logx, logy=logy,
                           curve_by=curve_by, faults=faults, xlim=xlim, ylim=ylim, **common)
    if mode in ("distribution", "final-distribution"):
        if kind not in (None, "hist", "box"):
            raise ValueError(f"--kind {kind}: the distribution of {y} over runs is drawn as "
                             f"hist or box (--x draws it against a parameter)")
        rows = frame if mode == "distribution" else final_values(
            frame, y, [*curve_key(frame, curve_by), *extra], [])
        if logx:
            raise ValueError("--logx: a distribution has no log x axis here")
        return plot_distribution(rows, y, kind=kind or "hist", theory=None, xlim=xlim,
                                 logy=logy, **common)
    if kind not in (None, "points", "box"):
        raise ValueError(f"--kind {kind}: {y} against {x} is drawn as points or box")
    assert x is not None
    rows = frame
    prefix = ""
    if mode == "final-against":
        rows = final_values(frame, y, [*curve_key(frame, curve_by), x, *extra], [])
        prefix = "final "
    return plot_against(rows, x, y, kind=kind or "points", logx=logx, logy=logy,
                        y_prefix=prefix, xlim=xlim, ylim=ylim, **common)
