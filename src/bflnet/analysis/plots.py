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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.facets import (
    LINE_STYLES,
    MAX_HUES,
    MAX_STYLES,
    Panel,
    facet_panels,
    facet_values,
    finish_panels,
    hue_colors,
    new_figure,
    reference_rows,
)
from bflnet.analysis.labels import ColumnFacts
from bflnet.analysis.placement import RUN, Placement, place, runs_text, seeds_of
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


def _median(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the median over the rows present, and how many are present."""
    present = np.sum(~np.isnan(values), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return np.nanmedian(values, axis=0), present


def log_floor(values: np.ndarray) -> float:
    """Where values <= 0 are drawn on a log axis: a decade under the decade of the
    smallest positive value (1 if there is none)."""
    positive = values[np.isfinite(values) & (values > 0)]
    if not positive.size:
        return 1.0
    return float(10.0 ** (np.floor(np.log10(positive.min())) - 1))


def _draw_group(ax: Any, group: pd.DataFrame, x: str, y: str, band: float, logx: bool,
                floor: float | None, label: str, notes: set[str], color: Any,
                linestyle: Any = "-") -> tuple[int, float, float]:
    """One line (median over the group's runs: its :data:`RUN` numbers) and its band;
    ``(runs, x lo, x hi)`` with the x range where they can be seen. With ``floor`` (a
    log y axis), values <= 0 are drawn at the floor."""
    runs = [run for _, run in group.groupby(RUN, sort=False)]
    curves = [_run_curve(run, x, y) for run in runs]
    if any(repeated for _, _, repeated in curves):
        notes.add(f"some runs have several rows at one {x} value (the last is used); if a "
                  "run holds several curves, name the columns that tell them apart with "
                  "--curve-by")
    grid, values = common_grid([(cx, cy) for cx, cy, _ in curves], logx)
    median, present = _median(values)
    full = present == len(curves)
    shared = present >= 2
    lower = upper = None
    if band > 0 and shared.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lower, upper = np.nanquantile(values, [(1 - band) / 2, (1 + band) / 2], axis=0)

    def shown(v: np.ndarray) -> np.ndarray:
        return v if floor is None else np.where(v <= floor, floor, v)

    if not full.all():
        notes.add(f"runs cover different {x} ranges: where some have ended (or not begun) "
                  "the thin line is the median of the runs present")
        ax.plot(grid, shown(median), color=color, linestyle=linestyle, linewidth=0.8,
                alpha=0.6, label="_")
    ax.plot(grid, shown(np.where(full, median, np.nan)), label=label, color=color,
            linestyle=linestyle)
    if lower is not None and upper is not None:
        ax.fill_between(grid, shown(lower), shown(upper), where=shared, color=color,
                        alpha=0.25 if linestyle == "-" else 0.15, linewidth=0)
    visible = np.isfinite(median)
    seen = grid[visible] if visible.any() else grid
    return len(curves), float(seen[0]), float(seen[-1])


def _title(runs: list[int], seeds: list[int] | None, placement: Placement,
           band: float) -> str:
    """"median over 2 seeds, 75% band" when some line is a median of several runs; the
    averaged settings named."""
    if not runs or max(runs) <= 1:
        return ""
    text = f"median over {runs_text(runs, seeds)}"
    if placement.averaged:
        text += f", averaged over {', '.join(placement.averaged)}"
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


def _line_labels(rows: pd.DataFrame, placement: Placement, hue: str | None,
                 style: str | None, panels: Sequence[str | None], hues: Sequence[Any],
                 styles: Sequence[Any], facts: ColumnFacts, reference: str | None
                 ) -> dict[tuple[Any, Any], str]:
    """The legend label of each (hue value, style value) line: the values, the averaged
    settings it pools, and whether it is a reference drawn in every panel."""
    mapped = [c for c in (hue, style, *panels) if c is not None]
    pooled: dict[Any, list[str]] = {}
    for value in hues:
        lines = rows if hue is None else rows[rows[hue] == value]
        parts = [g for _, g in lines.groupby(mapped, dropna=False)] if mapped else [lines]
        pooled[value] = sorted({c for g in parts for c in placement.pooled_in(g)})
    labels = {}
    for value in hues:
        for kind in styles:
            words = [format_value(value)] if hue is not None else []
            if style is not None:
                words.append(f"{facts.label(style)} = {format_value(kind)}")
            label = ", ".join(words) or "median"
            if pooled[value]:
                label += f" (averaged over {', '.join(pooled[value])})"
            if reference is not None and reference in (hue, style) and format_value(
                    value if reference == hue else kind) == facts.references[reference]:
                label += " (reference, in every panel)"
            labels[value, kind] = label
    return labels


def plot_metric(frame: pd.DataFrame, x: str, y: str, hue: str | None = None,
                band: float = 0.75, logx: bool = False, logy: bool = False,
                curve_by: Sequence[str] | None = None, *, col: str | None = None,
                row: str | None = None, style: str | None = None,
                average: Sequence[str] = (), faults: bool = False,
                xlim: tuple[float, float] | None = None,
                ylim: tuple[float, float] | None = None,
                units: Mapping[str, str] | None = None, schema: object | None = None,
                figsize: tuple[float, float] | None = None,
                report: Callable[[str], None] | None = None) -> Figure:
    """Median of ``y`` over runs against ``x``, one line per ``hue`` value (colour) and
    ``style`` value (line style), with the central ``band`` quantile range shaded
    (``band=0``: none); one panel per ``col`` / ``row`` value; with ``faults``, the
    table's ``fault`` rows ticked in a strip under each panel (``bflnet plot`` does this
    by default).

    A run (one curve) is the rows sharing :func:`curve_key` and the mapped columns
    (:mod:`bflnet.analysis.placement`). A setting that varies within a line must be in
    ``average`` (the title and legend then say so), else a one-line ``ValueError`` names
    it; ``report`` gets one line saying where the varying settings went. Rows without
    ``y`` (or ``x``) are dropped; with ``logx``, rows with ``x <= 0`` too (a warning
    counts them); with ``logy``, values <= 0 are drawn on a dotted floor a decade under
    the smallest positive value (a warning says so). Runs with different x values are
    interpolated onto a common grid (:func:`common_grid`); where only some runs have
    values, a thin line gives the median of those. The x axis ends where the curves end
    (``xlim`` to choose). Labels and units come from ``schema`` (a scenario's
    :class:`bflnet.runs.schema.Schema`) and ``units``; a reference setting the schema
    names (``mac = links``) on the hue or style is drawn in every panel.
    """
    check_column(frame, "--x", x, numeric=True)
    check_column(frame, "--y", y, numeric=True)
    for role, column in (("--hue", hue), ("--style", style), ("--col", col), ("--row", row)):
        check_column(frame, role, column)
    if isinstance(band, bool) or not isinstance(band, int | float) or not 0 <= band < 1:
        raise ValueError(f"--band: must be a number in [0, 1), got {band!r}")
    facts = ColumnFacts.of(schema, units)
    key = curve_key(frame, curve_by)
    lines = [c for c in (hue, style) if c is not None]
    rows = frame.dropna(subset=[x, y])
    notes: set[str] = set()
    for column in lines:
        missing = int(rows[column].isna().sum())
        if missing:
            notes.add(f"{column}: {missing} rows without a value are left out")
    rows = rows.dropna(subset=lines)
    if logx:
        off = rows[x] <= 0
        if off.any():
            notes.add(f"--logx: {int(off.sum())} rows at {x} <= 0 are not on the log axis; "
                      f"each curve starts at its first {x} > 0")
            rows = rows[~off]
    if rows.empty:
        raise ValueError(f"--y: no rows with both {x!r} and {y!r}"
                         + (f" and {x} > 0 (--logx)" if logx else ""))
    rows, placement = place(rows, key, {"hue": hue, "style": style, "col": col, "row": row},
                            average, skip=(x, y),
                            split=curve_by is None and "run_id" not in key, clock=x)
    everywhere, reference = reference_rows(rows, facts.references, lines, [col, row])
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    styles = facet_values(rows, "--style", style, MAX_STYLES)
    colors = hue_colors(hues, facts.references.get(hue) if hue else None)
    floor = None
    if logy:
        zeros = int((rows[y] <= 0).sum())
        if zeros:
            floor = log_floor(rows[y].to_numpy(dtype=float))
            notes.add(f"--logy: {zeros} values of {y} are <= 0: drawn at {floor:.0e} (the "
                      f"dotted line)")
    marks = fault_rows(frame, x) if faults else frame.iloc[:0]
    if not marks.empty and logx:
        marks = marks[marks[x] > 0]
    kinds = fault_kinds(marks)
    fig, panels = facet_panels(rows, row, col, strip_rows=len(kinds), figsize=figsize,
                               everywhere=everywhere)
    labels = _line_labels(rows, placement, hue, style, [col, row], hues, styles, facts,
                          reference)
    runs: list[int] = []
    seeds: list[int] = []
    span = [np.inf, -np.inf]
    for panel in panels:
        for value in hues:
            for i, kind in enumerate(styles):
                group = panel.rows
                if hue is not None:
                    group = group[group[hue] == value]
                if style is not None:
                    group = group[group[style] == kind]
                if group.empty:
                    continue
                n, lo, hi = _draw_group(panel.ax, group, x, y, band, logx, floor,
                                        labels[value, kind], notes, colors[value],
                                        LINE_STYLES[i])
                runs.append(n)
                seeds.append(seeds_of(group, placement) or 0)
                span = [min(span[0], lo), max(span[1], hi)]
        if floor is not None:
            panel.ax.axhline(floor, color="0.4", linestyle=":", linewidth=1, label="_")
        if panel.strip is not None:
            mark_faults(panel.strip, _panel_rows(marks, panel, row, col), x, kinds, hue,
                        colors if hue is not None else None)
            if len(panels) == 1:
                panel.strip.set_ylabel("faults", fontsize="x-small")
    ax = panels[0].ax
    if floor is not None:
        ax.plot([], [], color="0.4", linestyle=":", linewidth=1,
                label=f"<= 0, drawn at {floor:.0e}")
    for note in sorted(notes):
        warnings.warn(note, stacklevel=2)
    if any(note.startswith("runs cover different") for note in notes):
        ax.plot([], [], color="0.3", linewidth=0.8, alpha=0.6, label=THIN_LABEL)
    ax.set(xscale="log" if logx else "linear", yscale="log" if logy else "linear")
    if xlim is not None:
        ax.set_xlim(*xlim)
    elif span[0] < span[1]:
        ax.set_xlim(*span)
    if ylim is not None:
        ax.set_ylim(*ylim)
    with_seeds = seeds_of(rows, placement) is not None
    finish_panels(fig, panels, facts.label(x), facts.label(y),  # a legend if averaged
                  legend_title=facts.label(hue) if hue else ("" if placement.averaged
                                                             else None),
                  title=_title(runs, seeds if with_seeds else None, placement, band))
    if report is not None:  # once the figure is made: no note before an error
        report(placement.line() + ("" if reference is None else
                                   f"; {reference} = {facts.references[reference]} (the "
                                   f"reference) in every panel"))
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
