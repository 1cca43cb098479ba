"""Plots of per-run values: the distribution of one value over runs (histogram or box),
or one value against a parameter (mean with a 95 % confidence interval, or boxes), with
the table's theory column marked where it has one.

A per-run value is a column of a one-row-per-run table (``event == "run"``: e.g.
``unlearning-latency``'s ``unlearn_iterations``, ``cover-time``'s ``cover_iterations``),
or a statistic of each run's curve in any other table (:func:`run_values`: its last,
largest, smallest or mean value, named so on the axis).

The 95 % interval of a mean respects the quantity's support: for a quantity >= 0 (its
unit says so, or every value is >= 0) it is computed on the log scale, for a share in
[0, 1] on the logit scale (:func:`mean_interval`), so a KL's interval never goes below 0.

>>> fig = plot_distribution(table, "unlearn_iterations")  # doctest: +SKIP
>>> fig = plot_against(table, "K", "cover_iterations", kind="box")  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bflnet.analysis.facets import (
    MAX_HUES,
    facet_panels,
    facet_values,
    finish_panels,
    hue_colors,
    reference_rows,
)
from bflnet.analysis.labels import ColumnFacts
from bflnet.analysis.placement import RUN, Placement, place, runs_text, seeds_of
from bflnet.analysis.plots import curve_key, log_floor
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
#: Statistics of a run's curve that make a per-run value (:func:`run_values`).
STATS = ("last", "max", "min", "mean")
#: Options that can separate a setting in these figures.
FLAGS = ("--hue", "--col", "--row")


def is_per_run(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` has one row per run (every row's ``event`` is ``run``)."""
    return "event" in frame.columns and len(frame) > 0 and bool((frame["event"] == "run").all())


def theory_columns(frame: pd.DataFrame, y: str) -> list[str]:
    """The columns of ``frame`` holding a theory value of ``y`` (:data:`THEORY_PREFIXES`)
    that have a value somewhere."""
    return [f"{p}{y}" for p in THEORY_PREFIXES
            if f"{p}{y}" in frame.columns and frame[f"{p}{y}"].notna().any()]


def run_values(frame: pd.DataFrame, y: str, stat: str, keep: Sequence[str]
               ) -> tuple[pd.DataFrame, bool]:
    """One row per run (the :data:`bflnet.analysis.placement.RUN` numbers of ``frame``):
    the ``stat`` (:data:`STATS`; ``last`` in table order) of ``y`` over its rows that have
    it, with the first value of the ``keep`` columns; and whether some run had several
    such rows (else ``stat`` changed nothing)."""
    if stat not in STATS:
        raise ValueError(f"--stat: must be one of {', '.join(STATS)}, got {stat!r}")
    rows = frame.dropna(subset=[y])
    grouped = rows.groupby(RUN, sort=False)[y]
    several = bool((grouped.size() > 1).any())
    values = grouped.last() if stat == "last" else grouped.agg(stat)
    columns = [c for c in dict.fromkeys(keep) if c not in (y, RUN)]
    first = rows.drop_duplicates(RUN).set_index(RUN)[columns]
    return first.assign(**{y: values}).reset_index(), several


def mean_interval(values: np.ndarray, support: str | None) -> tuple[float, float, float, str]:
    """``(mean, lo, hi, scale)``: the mean of ``values`` and its 95 % interval, normal
    (mean ± 1.96 standard errors, ``scale`` ""), or for ``support`` ``"positive"`` (a
    quantity >= 0) on the log scale (``mean · exp(± 1.96 se / mean)``, ``"log"``), for
    ``"unit"`` (a share in [0, 1]) on the logit scale (``"logit"``); one value: no width."""
    n = values.size
    mean = float(values.mean())
    if n < 2:
        return mean, mean, mean, ""
    se = float(values.std(ddof=1)) / np.sqrt(n)
    if support == "unit" and 0 < mean < 1:
        half = Z95 * se / (mean * (1 - mean))
        logit = np.log(mean / (1 - mean))
        lo, hi = (1 / (1 + np.exp(-(logit + s))) for s in (-half, half))
        return mean, float(lo), float(hi), "logit"
    if support in ("unit", "positive"):
        if mean <= 0 or (support == "unit" and mean >= 1):
            return mean, mean, mean, ""  # every value on the boundary
        factor = np.exp(Z95 * se / mean)
        return mean, mean / factor, mean * factor, "log"
    return mean, mean - Z95 * se, mean + Z95 * se, ""


def _support(facts: ColumnFacts, rows: pd.DataFrame, y: str) -> str | None:
    """The support of ``y``: by its unit, else ``positive`` when every value is >= 0."""
    support = facts.support(y)
    if support is None and bool((rows[y] >= 0).all()):
        return "positive"
    return support


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


def _placed(frame: pd.DataFrame, y: str, mapped: Mapping[str, str | None],
            average: Sequence[str], placement: Placement | None, element: str
            ) -> tuple[pd.DataFrame, Placement]:
    """The rows (one per run) with their :data:`RUN` numbers, and where their settings
    go (:func:`bflnet.analysis.placement.place`), unless ``placement`` is given."""
    if placement is not None and RUN in frame.columns:
        return frame, placement
    return place(frame, curve_key(frame, None), mapped, average, skip=(y,), per_run=True,
                 flags=FLAGS, element=element)


def _pooled_label(label: str, placement: Placement, groups: Sequence[pd.DataFrame]) -> str:
    """``label`` naming the averaged settings that vary within one of ``groups``."""
    pooled = sorted({c for g in groups for c in placement.pooled_in(g)})
    return f"{label} (averaged over {', '.join(pooled)})" if pooled else label


def _averaged(placement: Placement) -> str:
    return f", averaged over {', '.join(placement.averaged)}" if placement.averaged else ""


def plot_distribution(frame: pd.DataFrame, y: str, hue: str | None = None,
                      kind: str = "hist", *, col: str | None = None, row: str | None = None,
                      theory: Sequence[str] | None = None,
                      units: Mapping[str, str] | None = None, schema: object | None = None,
                      xlim: tuple[float, float] | None = None, logy: bool = False,
                      average: Sequence[str] = (), placement: Placement | None = None,
                      report: Callable[[str], None] | None = None, x_prefix: str = "",
                      figsize: tuple[float, float] | None = None) -> Figure:
    """The distribution of the per-run value ``y`` over the rows of ``frame`` (one row per
    run): a histogram (one outline per ``hue`` value) or boxes (one per ``hue`` value),
    with each run-set's mean and its ``theory`` columns (default: :func:`theory_columns`)
    marked; one panel per ``col`` / ``row`` value. Runs without ``y`` (NaN: e.g. not
    within the run's limit) are left out and counted in the title. A setting that varies
    within one histogram or box must be in ``average``
    (:mod:`bflnet.analysis.placement`; ``placement``: already placed by the caller);
    ``report`` gets one line saying where the varying settings went; ``x_prefix`` goes
    before the value's label (``"last "``)."""
    check_column(frame, "--y", y, numeric=True)
    check_column(frame, "--hue", hue)
    _check_kind(kind, DISTRIBUTION_KINDS)
    facts = ColumnFacts.of(schema, units)
    theory = list(theory) if theory is not None else theory_columns(frame, y)
    missing = int(frame[y].isna().sum())
    rows = frame.dropna(subset=[y] + ([hue] if hue else []))
    if rows.empty:
        raise ValueError(f"--y: no row has a value of {y!r}")
    rows, placement = _placed(rows, y, {"hue": hue, "col": col, "row": row}, average,
                              placement, "distribution")
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    everywhere, _ = reference_rows(rows, facts.references, [hue], [col, row])
    fig, panels = facet_panels(rows, row, col, figsize=figsize, sharey=kind == "box",
                               everywhere=everywhere)
    bins = _bins(rows[y].to_numpy(dtype=float)) if kind == "hist" else None
    colors = hue_colors(hues, facts.references.get(hue) if hue else None)
    for panel in panels:
        ax = panel.ax
        boxes, positions, box_colors = [], [], []
        for i, value in enumerate(hues):
            group = panel.rows if hue is None else panel.rows[panel.rows[hue] == value]
            if group.empty:
                continue
            values = group[y].to_numpy(dtype=float)
            name = format_value(value) if hue is not None else "runs"
            color = colors[value]
            if kind == "hist":
                label = _pooled_label(f"{name} ({len(values)} runs)" if hue else "runs",
                                      placement, [group])
                ax.hist(values, bins=bins, histtype="step" if hue else "stepfilled",
                        alpha=1.0 if hue else 0.6, color=color, linewidth=1.5, label=label)
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
    value_label = x_prefix + facts.label(y)
    if kind == "hist":
        xlabel, ylabel = value_label, "runs"
    else:
        xlabel, ylabel = (facts.label(hue) if hue else ""), value_label
    if logy:
        panels[0].ax.set_yscale("log")
    if xlim is not None:
        panels[0].ax.set_xlim(*xlim)
    seeds = seeds_of(rows, placement)
    title = runs_text([len(rows)], None if seeds is None else [seeds])
    if missing:
        title += f" ({missing} without a value of {y} left out)"
    finish_panels(fig, panels, xlabel, ylabel,
                  legend_title=facts.label(hue) if hue and kind == "hist" else (
                      "" if placement.averaged and kind == "hist" else None),
                  title=title + _averaged(placement))
    if report is not None:
        report(placement.line())
    return fig


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def plot_against(frame: pd.DataFrame, x: str, y: str, hue: str | None = None,
                 kind: str = "points", *, col: str | None = None, row: str | None = None,
                 theory: Sequence[str] | None = None, units: Mapping[str, str] | None = None,
                 schema: object | None = None, logx: bool = False, logy: bool = False,
                 y_prefix: str = "", xlim: tuple[float, float] | None = None,
                 ylim: tuple[float, float] | None = None, average: Sequence[str] = (),
                 placement: Placement | None = None, rows_are_runs: bool = True,
                 report: Callable[[str], None] | None = None,
                 figsize: tuple[float, float] | None = None) -> Figure:
    """The per-run value ``y`` against the parameter ``x`` (one row per run in
    ``frame``): per ``x`` and ``hue`` value the mean over runs with its 95 % confidence
    interval (:func:`mean_interval`, on the log or logit scale where ``y`` is >= 0 or a
    share; ``kind="points"``) or a box (``kind="box"``), and the mean of each ``theory``
    column (default: :func:`theory_columns`) as a dashed line; one panel per ``col`` /
    ``row`` value. A setting that varies within one point must be in ``average``
    (:mod:`bflnet.analysis.placement`). ``y_prefix`` goes before the y label (``"last
    "``); ``rows_are_runs=False`` counts table rows, not runs, in the title (a table of one
    row per setting, each summarising several runs); ``report`` gets one line saying where
    the varying settings went."""
    check_column(frame, "--x", x)
    check_column(frame, "--y", y, numeric=True)
    check_column(frame, "--hue", hue)
    _check_kind(kind, AGAINST_KINDS)
    facts = ColumnFacts.of(schema, units)
    theory = list(theory) if theory is not None else theory_columns(frame, y)
    rows = frame.dropna(subset=[x, y] + ([hue] if hue else []))
    if rows.empty:
        raise ValueError(f"--y: no row has values of both {x!r} and {y!r}")
    rows, placement = _placed(rows, y, {"x": x, "hue": hue, "col": col, "row": row},
                              average, placement, "point")
    xs = facet_values(rows, "--x", x, MAX_X_VALUES)
    hues = facet_values(rows, "--hue", hue, MAX_HUES)
    numeric_x = _numeric(rows[x]) and kind == "points"
    if logx and not numeric_x:
        raise ValueError("--logx: needs a numeric --x drawn as points (not --kind box)")
    if logx and min(xs) <= 0:
        raise ValueError(f"--logx: {x} has values <= 0")
    support = _support(facts, rows, y)
    floor = None
    if logy and bool((rows[y] <= 0).any()):
        floor = log_floor(rows[y].to_numpy(dtype=float))
        warnings.warn(f"--logy: {int((rows[y] <= 0).sum())} values of {y} are <= 0: means "
                      f"and intervals <= 0 are drawn at {floor:.0e} (the dotted line)",
                      stacklevel=2)
    everywhere, _ = reference_rows(rows, facts.references, [hue], [col, row])
    fig, panels = facet_panels(rows, row, col, figsize=figsize, everywhere=everywhere)
    colors = hue_colors(hues, facts.references.get(hue) if hue else None)
    width = 0.8 / len(hues)
    counts: list[int] = []
    seeds: list[int] = []
    scales: set[str] = set()
    for panel in panels:
        ax = panel.ax
        for i, value in enumerate(hues):
            group = panel.rows if hue is None else panel.rows[panel.rows[hue] == value]
            if group.empty:
                continue
            color = colors[value]
            points = [g for _, g in group.groupby(x, sort=True)]
            label = _pooled_label(format_value(value) if hue is not None else "mean, 95% CI",
                                  placement, points)
            at = [p[x].iloc[0] for p in points]
            counts += [len(p) for p in points]
            seeds += [seeds_of(p, placement) or 0 for p in points]
            where = (np.asarray(at, dtype=float) if numeric_x else
                     np.array([xs.index(v) for v in at]) + (i - (len(hues) - 1) / 2) * width)
            if kind == "points":
                stats = [mean_interval(p[y].to_numpy(dtype=float), support) for p in points]
                mean, lo, hi = (np.array([s[k] for s in stats]) for k in range(3))
                scales |= {s[3] for s in stats if s[3]}
                if floor is not None:
                    mean, lo, hi = (np.maximum(v, floor) for v in (mean, lo, hi))
                ax.errorbar(where, mean, yerr=np.vstack([mean - lo, hi - mean]), marker="o",
                            capsize=3, color=color, linestyle="-" if numeric_x else "none",
                            linewidth=1, label=label)
            else:
                values = [p[y].to_numpy(dtype=float) for p in points]
                art = ax.boxplot(values, positions=where, widths=width * 0.85,
                                 patch_artist=True, manage_ticks=False)
                for patch in art["boxes"]:
                    patch.set(facecolor=color, alpha=0.45)
                if hue is not None:
                    ax.plot([], [], color=color, linewidth=6, alpha=0.45, label=label)
            for j, column in enumerate(theory):
                expected = np.array([p[column].mean() for p in points])
                if np.isfinite(expected).any():
                    ax.plot(where, expected, color=color if hue else "black",
                            linestyle=THEORY_STYLES[j % len(THEORY_STYLES)] if numeric_x
                            else "none", marker=None if numeric_x else "x",
                            markersize=9, markeredgewidth=2, linewidth=1.2,
                            label=column if i == 0 or hue is None else "_")
        if floor is not None:
            ax.axhline(floor, color="0.4", linestyle=":", linewidth=1,
                       label=f"<= 0, drawn at {floor:.0e}")
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
    finish_panels(fig, panels, facts.label(x), y_prefix + facts.label(y),
                  legend_title=facts.label(hue) if hue else ("" if placement.averaged
                                                             else None),
                  title=_against_title(counts, seeds if seeds_of(rows, placement) is not None
                                       else None, kind, scales, rows_are_runs)
                  + _averaged(placement))
    if report is not None:
        report(placement.line())
    return fig


def _against_title(counts: list[int], seeds: list[int] | None, kind: str, scales: set[str],
                   rows_are_runs: bool) -> str:
    """"3 runs per point, mean and 95% CI" (the runs and seeds counted; "rows" when the
    rows are not runs), naming the scale of the intervals."""
    word = "runs" if rows_are_runs else "rows"
    if not counts or max(counts) <= 1:
        return f"one {word[:-1]} per point"
    text = f"{runs_text(counts, seeds, word)} per point"
    if kind == "points":
        text += ", mean and 95% CI"
        if scales:
            text += f" (on the {' and '.join(sorted(scales))} scale)"
    return text
