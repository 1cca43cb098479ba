"""Plots of per-run values: the distribution of one value over runs (histogram or box),
or one value against a parameter (mean with a 95 % confidence interval, or boxes), with
the table's theory column marked where it has one.

A per-run value is a column of a one-row-per-run table (``event == "run"``: e.g.
``unlearning-latency``'s ``unlearn_iterations``, ``cover-time``'s ``cover_iterations``),
or the last value of a curve in each run of any other table ("final accuracy").

>>> fig = plot_distribution(table, "unlearn_iterations")  # doctest: +SKIP
>>> fig = plot_against(table, "K", "cover_iterations", kind="box")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.facets import MAX_HUES, facet_panels, facet_values, finish_panels
from bflnet.analysis.labels import axis_label
from bflnet.analysis.table_filter import check_column, format_value

#: Prefixes of a column that holds the theory (an expectation) of another:
#: ``theory_unlearn_iterations`` for ``unlearn_iterations``.
THEORY_PREFIXES = ("theory_", "exact_", "closed_form_", "paper_")
#: Line styles of the theory columns, in order.
THEORY_STYLES = ("--", "-.", (0, (1, 2)), (0, (6, 3)))
DISTRIBUTION_KINDS = ("hist", "box")
AGAINST_KINDS = ("points", "box")
#: Most distinct x values of a plot against a parameter.
MAX_X_VALUES = 60
#: z of the two-sided 95 % normal interval.
Z95 = 1.959963984540054


def is_per_run(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` has one row per run (every row's ``event`` is ``run``)."""
    return "event" in frame.columns and len(frame) > 0 and bool((frame["event"] == "run").all())


def theory_columns(frame: pd.DataFrame, y: str) -> list[str]:
    """The columns of ``frame`` holding a theory value of ``y`` (:data:`THEORY_PREFIXES`)
    that have a value somewhere."""
    return [f"{p}{y}" for p in THEORY_PREFIXES
            if f"{p}{y}" in frame.columns and frame[f"{p}{y}"].notna().any()]


def final_values(frame: pd.DataFrame, y: str, key: Sequence[str],
                 keep: Sequence[str]) -> pd.DataFrame:
    """One row per run (the rows sharing ``key``): its last row (table order) that has
    ``y``, with the columns ``keep``."""
    rows = frame.dropna(subset=[y])
    columns = list(dict.fromkeys([*key, *keep, y]))
    if not key:
        return rows[columns].tail(1)
    return rows[columns].groupby(list(key), sort=False, dropna=False).tail(1)


def _check_kind(kind: str, allowed: Sequence[str]) -> None:
    if kind not in allowed:
        raise ValueError(f"--kind: must be one of {', '.join(allowed)} here, got {kind!r}")


def _bins(values: np.ndarray) -> Any:
    """Unit-wide bins centred on the integers for small integer values, else ``auto``."""
    finite = values[np.isfinite(values)]
    if finite.size and np.all(finite == np.round(finite)) and np.ptp(finite) <= 120:
        return np.arange(finite.min() - 0.5, finite.max() + 1.5)
    return "auto"


def _theory_value(group: pd.DataFrame, column: str) -> float | None:
    values = group[column].dropna().to_numpy(dtype=float)
    return float(values.mean()) if values.size else None


def plot_distribution(frame: pd.DataFrame, y: str, hue: str | None = None,
                      kind: str = "hist", *, col: str | None = None, row: str | None = None,
                      theory: Sequence[str] | None = None,
                      units: Mapping[str, str] | None = None,
                      xlim: tuple[float, float] | None = None, logy: bool = False,
                      figsize: tuple[float, float] | None = None) -> Figure:
    """The distribution of the per-run value ``y`` over the rows of ``frame`` (one row per
    run): a histogram (one outline per ``hue`` value) or boxes (one per ``hue`` value),
    with each run-set's mean and its ``theory`` columns (default: :func:`theory_columns`)
    marked; one panel per ``col`` / ``row`` value. Runs without ``y`` (NaN: e.g. not
    within the run's limit) are left out and counted in the title."""
    check_column(frame, "--y", y, numeric=True)
    check_column(frame, "--hue", hue)
    _check_kind(kind, DISTRIBUTION_KINDS)
    theory = list(theory) if theory is not None else theory_columns(frame, y)
    missing = int(frame[y].isna().sum())
    rows = frame.dropna(subset=[y] + ([hue] if hue else []))
    if rows.empty:
        raise ValueError(f"--y: no row has a value of {y!r}")
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    fig, panels = facet_panels(rows, row, col, figsize=figsize, sharey=kind == "box")
    bins = _bins(rows[y].to_numpy(dtype=float)) if kind == "hist" else None
    colors = [f"C{i % 10}" for i in range(len(hues))]
    for panel in panels:
        ax = panel.ax
        boxes, positions, box_colors = [], [], []
        for i, value in enumerate(hues):
            group = panel.rows if hue is None else panel.rows[panel.rows[hue] == value]
            if group.empty:
                continue
            values = group[y].to_numpy(dtype=float)
            name = format_value(value) if hue is not None else "runs"
            color = colors[i]
            if kind == "hist":
                ax.hist(values, bins=bins, histtype="step" if hue else "stepfilled",
                        alpha=1.0 if hue else 0.6, color=color, linewidth=1.5,
                        label=f"{name} ({len(values)} runs)" if hue else "runs")
                ax.axvline(values.mean(), color="tab:red" if hue is None else color,
                           linewidth=2.2, linestyle=":",
                           label=f"mean over the runs: {values.mean():.4g}" if hue is None
                           else "_")
                for j, column in enumerate(theory):
                    expected = _theory_value(group, column)
                    if expected is not None:
                        ax.axvline(expected, color="black" if hue is None else color,
                                   linestyle=THEORY_STYLES[j % len(THEORY_STYLES)],
                                   linewidth=1.2,
                                   label=f"{column}: {expected:.4g}" if hue is None
                                   else f"{column} ({name}): {expected:.4g}")
            else:
                boxes.append(values)
                positions.append(i)
                box_colors.append(color)
                for j, column in enumerate(theory):
                    expected = _theory_value(group, column)
                    if expected is not None:
                        ax.plot([i - 0.35, i + 0.35], [expected] * 2, color="black",
                                linestyle=THEORY_STYLES[j % len(THEORY_STYLES)],
                                linewidth=1.5, label=column)
                ax.plot([i], [values.mean()], marker="D", color="white",
                        markeredgecolor="black", linestyle="none", label="mean over the runs")
        if kind == "box" and boxes:
            art = ax.boxplot(boxes, positions=positions, widths=0.55, patch_artist=True,
                             showfliers=True)
            for patch, color in zip(art["boxes"], box_colors, strict=True):
                patch.set(facecolor=color, alpha=0.45)
            ax.set_xticks(range(len(hues)),
                          [format_value(v) if hue else "" for v in hues])
    if kind == "hist":
        xlabel, ylabel = axis_label(y, units), "runs"
        if logy:
            panels[0].ax.set_yscale("log")
    else:
        xlabel, ylabel = (axis_label(hue, units) if hue else ""), axis_label(y, units)
        if logy:
            panels[0].ax.set_yscale("log")
    if xlim is not None:
        panels[0].ax.set_xlim(*xlim)
    title = f"{len(rows)} runs"
    if missing:
        title += f" ({missing} without a value of {y} left out)"
    finish_panels(fig, panels, xlabel, ylabel,
                  legend_title=axis_label(hue, units) if hue and kind == "hist" else None,
                  title=title)
    return fig


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def plot_against(frame: pd.DataFrame, x: str, y: str, hue: str | None = None,
                 kind: str = "points", *, col: str | None = None, row: str | None = None,
                 theory: Sequence[str] | None = None, units: Mapping[str, str] | None = None,
                 logx: bool = False, logy: bool = False, y_prefix: str = "",
                 xlim: tuple[float, float] | None = None,
                 ylim: tuple[float, float] | None = None,
                 figsize: tuple[float, float] | None = None) -> Figure:
    """The per-run value ``y`` against the parameter ``x`` (one row per run in
    ``frame``): per ``x`` and ``hue`` value the mean over runs with its 95 % confidence
    interval (mean ± 1.96 standard errors; ``kind="points"``) or a box
    (``kind="box"``), and the mean of each ``theory`` column (default:
    :func:`theory_columns`) as a dashed line; one panel per ``col`` / ``row`` value.
    ``y_prefix`` goes before the y label (``"final "``)."""
    check_column(frame, "--x", x)
    check_column(frame, "--y", y, numeric=True)
    check_column(frame, "--hue", hue)
    _check_kind(kind, AGAINST_KINDS)
    theory = list(theory) if theory is not None else theory_columns(frame, y)
    rows = frame.dropna(subset=[x, y] + ([hue] if hue else []))
    if rows.empty:
        raise ValueError(f"--y: no row has values of both {x!r} and {y!r}")
    xs = facet_values(rows, "--x", x, MAX_X_VALUES)
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    numeric_x = _numeric(rows[x]) and kind == "points"
    if logx and not numeric_x:
        raise ValueError("--logx: needs a numeric --x drawn as points (not --kind box)")
    if logx and min(xs) <= 0:
        raise ValueError(f"--logx: {x} has values <= 0")
    fig, panels = facet_panels(rows, row, col, figsize=figsize)
    width = 0.8 / len(hues)
    counts: list[int] = []
    for panel in panels:
        ax = panel.ax
        for i, value in enumerate(hues):
            group = panel.rows if hue is None else panel.rows[panel.rows[hue] == value]
            if group.empty:
                continue
            color = f"C{i % 10}"
            label = format_value(value) if hue is not None else "mean, 95% CI"
            stats = group.groupby(x, sort=True)[y].agg(["mean", "std", "count"])
            counts += stats["count"].astype(int).tolist()
            where = (stats.index.to_numpy(dtype=float) if numeric_x else
                     np.array([xs.index(v) for v in stats.index]) + (i - (len(hues) - 1) / 2)
                     * width)
            if kind == "points":
                half = Z95 * stats["std"].fillna(0.0) / np.sqrt(stats["count"])
                ax.errorbar(where, stats["mean"], yerr=half, marker="o", capsize=3,
                            color=color, linestyle="-" if numeric_x else "none",
                            linewidth=1, label=label)
            else:
                values = [group.loc[group[x] == v, y].to_numpy(dtype=float)
                          for v in stats.index]
                art = ax.boxplot(values, positions=where, widths=width * 0.85,
                                 patch_artist=True, manage_ticks=False)
                for patch in art["boxes"]:
                    patch.set(facecolor=color, alpha=0.45)
                if hue is not None:
                    ax.plot([], [], color=color, linewidth=6, alpha=0.45, label=label)
            for j, column in enumerate(theory):
                expected = group.groupby(x, sort=True)[column].mean().reindex(stats.index)
                if expected.notna().any():
                    ax.plot(where, expected, color=color if hue else "black",
                            linestyle=THEORY_STYLES[j % len(THEORY_STYLES)] if numeric_x
                            else "none", marker=None if numeric_x else "x",
                            markersize=9, markeredgewidth=2, linewidth=1.2,
                            label=column if i == 0 or hue is None else "_")
        if not numeric_x:
            ax.set_xticks(range(len(xs)), [format_value(v) for v in xs])
    ax0 = panels[0].ax
    if logx:
        ax0.set_xscale("log")
    if logy:
        ax0.set_yscale("log")
    if xlim is not None:
        ax0.set_xlim(*xlim)
    if ylim is not None:
        ax0.set_ylim(*ylim)
    lo, hi = (min(counts), max(counts)) if counts else (0, 0)
    n = f"{hi}" if lo == hi else f"{lo}-{hi}"
    title = (f"{n} runs per point" + (", mean and 95% CI" if kind == "points" else "")
             if hi > 1 else "one run per point")
    finish_panels(fig, panels, axis_label(x, units), y_prefix + axis_label(y, units),
                  legend_title=axis_label(hue, units) if hue else None, title=title)
    return fig
