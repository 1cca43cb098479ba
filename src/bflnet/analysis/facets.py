"""Figures of one or more panels: one per value of a ``row`` and a ``col`` column, each
with an optional strip under it (fault ticks), and one legend for the figure, on its
right; the colours of the hue values and the line styles of the style values.

Rows without a value of the ``row`` or ``col`` column (NaN), and the rows ``everywhere``
marks (a reference setting), are drawn in every panel.

Figures are built on the Agg canvas without pyplot (no global figure state), so they work
headless and in worker processes.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bflnet.analysis.table_filter import check_column, format_value, sorted_values, value_list

#: Most panels of one figure (rows x columns).
MAX_PANELS = 36
#: Most lines (hue values) of one panel.
MAX_HUES = 24
#: Line styles of the values of a style column, in order.
LINE_STYLES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MAX_STYLES = len(LINE_STYLES)
#: Colour of a reference setting.
REFERENCE_COLOR = "black"
#: Size in inches of a figure of one panel, and of each panel of a grid.
SINGLE_SIZE = (6.4, 4.2)
PANEL_SIZE = (3.3, 2.6)


@dataclass
class Panel:
    """One panel: its rows of the table, its axes, the strip under it (or ``None``)."""

    rows: pd.DataFrame
    ax: Any
    strip: Any
    title: str
    bottom: bool
    left: bool


def facet_values(frame: pd.DataFrame, role: str, column: str | None,
                 limit: int) -> list[Any]:
    """The values of a facet or hue column (``[None]`` without one); a one-line error if
    it has more than ``limit``."""
    if column is None:
        return [None]
    check_column(frame, role, column)
    values = sorted_values(frame[column])
    if len(values) > limit:
        raise ValueError(f"{role}: column {column!r} has {len(values)} values "
                         f"({value_list(values, 6)}); at most {limit} here: filter with "
                         f"--where or pick another column")
    if not values:
        raise ValueError(f"{role}: column {column!r} has no values")
    return values


def hue_colors(values: Sequence[Any], reference: Any = None) -> dict[Any, Any]:
    """A distinct colour per value (tab10, tab20 beyond 10 values, a rainbow beyond 20),
    the same in every panel; ``reference`` (a value) in black."""
    from matplotlib import colormaps

    others = [v for v in values if reference is None or format_value(v) != reference]
    n = len(others)
    if n <= 10:
        palette = [f"C{i}" for i in range(n)]
    elif n <= 20:
        palette = [colormaps["tab20"](i) for i in range(n)]
    else:
        palette = [colormaps["gist_rainbow"](i / n) for i in range(n)]
    colors = dict(zip(others, palette, strict=True))
    return {v: colors.get(v, REFERENCE_COLOR) for v in values}


def reference_rows(rows: pd.DataFrame, references: Mapping[str, str],
                   lines: Sequence[str | None], panels: Sequence[str | None]
                   ) -> tuple[np.ndarray | None, str | None]:
    """The rows of a reference setting (``references``: ``{column: value}``, from a
    schema) whose column is drawn as lines (hue, style: ``lines``) while the panels split
    by other columns: they are drawn in every panel. ``(mask or None, its column)``."""
    if not any(panels):
        return None, None
    for column, value in references.items():
        if column in lines and column not in panels:
            mask = rows[column].map(format_value).to_numpy() == value
            if mask.any():
                return mask, column
    return None, None


def new_figure(figsize: tuple[float, float]) -> Figure:
    """An empty figure on the Agg canvas, laid out by matplotlib's constrained layout."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def facet_panels(frame: pd.DataFrame, row: str | None = None, col: str | None = None,
                 strip_rows: int = 0, figsize: tuple[float, float] | None = None,
                 sharey: bool = True, everywhere: np.ndarray | None = None
                 ) -> tuple[Figure, list[Panel]]:
    """A figure with one panel per (``row`` value, ``col`` value) of ``frame``; the rows
    without a value of ``row`` / ``col`` and those ``everywhere`` marks are in every
    panel. ``strip_rows`` > 0 adds a strip of that many tick rows under each panel,
    sharing its x axis. All panels share x (and y if ``sharey``)."""
    row_values = facet_values(frame, "--row", row, MAX_PANELS)
    col_values = facet_values(frame, "--col", col, MAX_PANELS)
    if len(row_values) * len(col_values) > MAX_PANELS:
        raise ValueError(f"--row/--col: {len(row_values)} x {len(col_values)} panels; at "
                         f"most {MAX_PANELS}: filter with --where")
    n_rows, n_cols = len(row_values), len(col_values)
    if figsize is None:
        strip_height = 0.9 if strip_rows else 0.0
        figsize = SINGLE_SIZE if n_rows * n_cols == 1 else (
            PANEL_SIZE[0] * n_cols + 1.8, (PANEL_SIZE[1] + strip_height) * n_rows + 0.4)
    fig = new_figure(figsize)
    strip_ratio = 0.1 + 0.05 * min(strip_rows, 6)
    ratios = [1.0, strip_ratio] * n_rows if strip_rows else [1.0] * n_rows
    grid = fig.add_gridspec(len(ratios), n_cols, height_ratios=ratios)
    step = 2 if strip_rows else 1
    first: Any = None
    panels = []
    for i, rv in enumerate(row_values):
        for j, cv in enumerate(col_values):
            mask = np.ones(len(frame), dtype=bool)
            for name, value in ((row, rv), (col, cv)):
                if name is not None:
                    mask &= ((frame[name] == value) | frame[name].isna()).to_numpy()
            if everywhere is not None:
                mask |= everywhere
            ax = fig.add_subplot(grid[i * step, j], sharex=first,
                                 sharey=first if sharey else None)
            first = first or ax
            strip = fig.add_subplot(grid[i * step + 1, j], sharex=ax) if strip_rows else None
            title = ", ".join(f"{name} = {format_value(v)}" for name, v in
                              ((row, rv), (col, cv)) if name is not None)
            panels.append(Panel(frame[mask], ax, strip, title, i == n_rows - 1, j == 0))
    return fig, panels


def finish_panels(fig: Figure, panels: Sequence[Panel], xlabel: str, ylabel: str,
                  legend_title: str | None = None, title: str = "") -> None:
    """Labels on the outer panels, panel titles, one legend (right of the panels, clear
    of the data) and the figure's title."""
    for p in panels:
        p.ax.grid(alpha=0.3)
        if p.title:
            p.ax.set_title(p.title, fontsize="medium")
        lowest = p.strip if p.strip is not None else p.ax
        if p.strip is not None:
            p.ax.tick_params(labelbottom=False)
            if not p.left:  # every strip has the same rows: named on the left only
                p.strip.tick_params(labelleft=False)
        if p.bottom:
            lowest.set_xlabel(xlabel)
        else:
            lowest.tick_params(labelbottom=False)
        if p.left:
            p.ax.set_ylabel(ylabel if len(panels) == 1 else textwrap.fill(ylabel, 26))
    handles: dict[str, Any] = {}
    for p in panels:
        for handle, label in zip(*p.ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    if handles and (legend_title is not None or len(handles) > 1):
        fig.legend(handles.values(), handles.keys(), title=legend_title,
                   loc="outside right center", fontsize="small")
    strips = [p for p in panels if p.strip is not None and p.left]
    if strips:  # the y labels clear of the strips' tick labels
        fig.align_ylabels([a for p in strips for a in (p.ax, p.strip)])
    if title:  # over the panels and the legend
        fig.suptitle(title, fontsize="medium")
