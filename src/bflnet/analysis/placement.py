"""Where each setting of a table goes on a figure: ``bflnet plot`` never pools a setting
that varies without saying so.

A *run* is one curve: the rows that share the curve key (``run_id``, else ``seed``, with
``run``; or ``--curve-by``) and the mapped columns (hue, style, panels, a parameter on
x). A table without ``run_id`` may not tell its runs apart by its key (one run per
setting, numbered ``run`` within each): there a run also ends where its clock
(``iteration``, else the curve's x axis) goes back, and without a clock each row is a
run.

A *setting* is a column that is constant within each run, is not the run's identity,
and whose values recur for every seed (or run index): a result that differs from seed
to seed (a spectral gap of a random graph) is not a setting. In a table of one row per
run, where every column is constant within its run, the settings are the columns that
recur for every seed or run index, and its text and flag columns.

A setting that varies within one line is *pooled*. It must be named in ``average``
(the line is then the median over its values too, and the title and legend say so), or
:func:`place` refuses in one line naming it and the options that would separate it. A
pooled setting that follows the others (it is determined by the mapped columns and the
other pooled settings, as ``area_m`` by ``K``) is pooled with them and need not be named.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bflnet.analysis.table_filter import check_column, format_value, sorted_values, value_list

#: The column of run numbers :func:`place` adds to the rows it is given.
RUN = "\x00run"
#: Columns that number the replicates of a setting: their runs make each line's median.
REPLICATES = ("seed", "run")
#: Columns that identify a run or a configuration (never a replicate; settings of the
#: lowest priority when naming what is pooled).
IDENTITIES = ("config_hash", "run_id", "run_run_id", "run_seed")
#: The column whose restart marks a new run (else the x axis of a curve).
CLOCK = "iteration"
#: What each role is called in the note on stderr.
ROLE_WORDS = {"x": "x axis", "hue": "colour", "style": "line style", "col": "panel columns",
              "row": "panel rows"}
#: The option of each role.
ROLE_FLAGS = {"hue": "--hue", "style": "--style", "col": "--col", "row": "--row"}


@dataclass(frozen=True)
class Placement:
    """Where the settings of a selection went: ``mapped`` ``(column, role)`` pairs,
    the ``averaged`` settings (named by the caller), those that ``follow`` the others,
    the ``replicates`` ``(column, values)`` each line (``element``) pools, and the
    number of ``runs`` (``word``: ``runs``, or ``rows`` when the rows are not known to be
    runs)."""

    mapped: tuple[tuple[str, str], ...]
    averaged: tuple[str, ...]
    follows: tuple[str, ...]
    replicates: tuple[tuple[str, int], ...]
    runs: int
    word: str = "runs"
    element: str = "line"

    def line(self) -> str:
        """One line for stderr: which varying columns went where."""
        shown = ", ".join(f"{c} ({ROLE_WORDS[r]})" for c, r in self.mapped)
        parts = [f"on the figure: {shown or 'no setting'}"]
        if self.averaged:
            parts.append(f"averaged within each {self.element}: {', '.join(self.averaged)}")
        if self.replicates:
            parts.append(f"each {self.element} over " + ", ".join(
                f"{c} ({n} values)" for c, n in self.replicates))
        if self.follows:
            parts.append(f"following the others: {', '.join(self.follows)}")
        return f"{self.runs} {self.word}; " + "; ".join(parts)

    def pooled_in(self, group: pd.DataFrame) -> list[str]:
        """The averaged settings that take several values in ``group`` (one line)."""
        return [c for c in self.averaged if group[c].nunique(dropna=False) > 1]


def _is_float(series: pd.Series) -> bool:
    return pd.api.types.is_float_dtype(series)


def _is_text(series: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)


def number_runs(rows: pd.DataFrame, key: Sequence[str], mapped: Sequence[str],
                split: bool, clock: str | None = None) -> np.ndarray:
    """The run number of each row: one per value of ``key`` and ``mapped``, and with
    ``split``, a new one where the clock (:data:`CLOCK`, else ``clock``) goes back, or
    one per row without a clock (module docs)."""
    columns = list(dict.fromkeys([*key, *mapped]))
    n = len(rows)
    ident = (rows.groupby(columns, sort=False, dropna=False).ngroup().to_numpy()
             if columns else np.zeros(n, dtype=np.int64))
    if CLOCK in rows.columns and pd.api.types.is_numeric_dtype(rows[CLOCK]):
        clock = CLOCK
    if not split or n == 0:
        return ident
    if clock is None:
        return np.arange(n)
    order = np.lexsort((np.arange(n), ident))
    group, value = ident[order], rows[clock].to_numpy(dtype=float)[order]
    same = np.r_[False, group[1:] == group[:-1]]
    restart = same & np.r_[False, value[1:] < value[:-1]]
    counted = np.cumsum(restart)
    segment = counted - np.maximum.accumulate(np.where(~same, counted, 0))
    _, codes = np.unique(np.stack([group, segment], axis=1), axis=0, return_inverse=True)
    out = np.empty(n, dtype=np.int64)
    out[order] = codes.ravel()
    return out


def _hashable(value: Any) -> Any:
    return "<NA>" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else value


def _recurs(runs: pd.DataFrame, column: str, replicates: list[str]) -> bool:
    """Whether ``column`` takes the same values (two or more) for most replicates (more
    than half of them)."""
    sets = runs.groupby(replicates, sort=False, dropna=False)[column].agg(
        lambda s: frozenset(_hashable(v) for v in s))
    common = sets.value_counts()
    return len(common.index[0]) >= 2 and common.iloc[0] * 2 > len(sets)


def _determined(runs: pd.DataFrame, column: str, by: Sequence[str]) -> bool:
    """Whether ``column`` is constant within each group of ``by`` (of the runs)."""
    if not by:
        return runs[column].nunique(dropna=False) <= 1
    return bool(runs.groupby(list(by), sort=False, dropna=False)[column]
                .nunique(dropna=False).max() <= 1)


def _settings(frame: pd.DataFrame, runs: pd.DataFrame, candidates: list[str],
              replicates: list[str], per_run: bool) -> list[str]:
    """The candidates that are settings (module docs)."""
    if not per_run:
        spread = frame.groupby(RUN, sort=False)[candidates].nunique(dropna=False).max()
        candidates = [c for c in candidates if spread[c] <= 1]
    useful = bool(replicates) and runs.groupby(replicates, dropna=False).size().max() >= 2
    if useful:
        return [c for c in candidates if _recurs(runs, c, replicates)]
    if per_run:
        return [c for c in candidates if _is_text(runs[c]) or c == "config_hash"]
    return candidates


def _refusal(kept: list[str], runs: pd.DataFrame, free: Sequence[str], element: str) -> str:
    """The one-line error naming the unnamed pooled settings and the options."""
    named = [f"{c} ({value_list(sorted_values(runs[c]), 4)})" for c in kept]
    first = sorted_values(runs[kept[0]])
    where = f"--where {kept[0]}={format_value(first[0]) if first else '...'}"
    if len(kept) == 1:
        c = kept[0]
        separate = ", ".join(f"{flag} {c}" for flag in free)
        return (f"{named[0]} varies within a {element}: separate it ({separate}), keep one "
                f"value ({where}) or pool it into the {element} (--average {c})")
    average = " ".join(f"--average {c}" for c in kept)
    return (f"{' and '.join(named)} vary within a {element}: separate each "
            f"({', '.join(free)}), keep one value ({where}, ...) or pool them ({average})")


def place(rows: pd.DataFrame, key: Sequence[str], mapped: Mapping[str, str | None],
          average: Sequence[str] = (), *, skip: Sequence[str] = (), per_run: bool = False,
          split: bool = True, clock: str | None = None,
          flags: Sequence[str] = ("--hue", "--style", "--col", "--row"), element: str = "line"
          ) -> tuple[pd.DataFrame, Placement]:
    """``(rows with their run number in RUN, placement)``: ``mapped`` is ``{role:
    column}`` (roles of :data:`ROLE_WORDS`), ``skip`` the plotted columns, ``per_run``
    whether each row is a run, ``split`` whether the key may not tell the runs apart
    (then a run ends where its clock, ``iteration`` or ``clock``, goes back), ``flags``
    the options that could separate a pooled setting, ``element`` what one drawn item
    is (line, point, box). A one-line ``ValueError`` if a pooled setting is not in
    ``average`` (module docs)."""
    roles = {column: role for role, column in mapped.items() if column is not None}
    for column in average:
        check_column(rows, "--average", column)
        if column in roles:
            raise ValueError(f"--average {column}: {column} is on the figure "
                             f"({ROLE_WORDS[roles[column]]}); average another column")
    run = (np.arange(len(rows)) if per_run
           else number_runs(rows, key, list(roles), split, clock))
    frame = rows.assign(**{RUN: run})
    runs = frame.drop_duplicates(RUN)
    replicates = [c for c in dict.fromkeys([*key, *REPLICATES])
                  if c in runs.columns and c not in roles and c not in IDENTITIES]
    out_of_play = {*skip, *key, *roles, *replicates, RUN}
    candidates = [c for c in rows.columns if c not in out_of_play and c not in ("run_seed",)
                  and runs[c].nunique(dropna=False) > 1]
    settings = _settings(frame, runs, candidates, replicates, per_run) if candidates else []
    groups = list(roles)
    pooled = [c for c in settings if not _determined(runs, c, groups)]
    position = {c: i for i, c in enumerate(rows.columns)}
    order = sorted(pooled, key=lambda c: (c not in average, c in IDENTITIES,
                                          _is_float(runs[c]), runs[c].nunique(dropna=False),
                                          position[c]))
    kept: list[str] = []
    follows: list[str] = []
    for c in order:
        (follows if _determined(runs, c, [*groups, *kept]) else kept).append(c)
    unnamed = [c for c in kept if c not in average]
    if unnamed:
        free = [f for f in flags if f not in {ROLE_FLAGS.get(r) for r in roles.values()}]
        raise ValueError(_refusal(unnamed, runs, free or list(flags), element))
    placement = Placement(
        mapped=tuple((c, r) for c, r in roles.items()),
        averaged=tuple(c for c in average if c in kept or c in follows),
        follows=tuple(c for c in follows if c not in average),
        replicates=tuple((c, int(runs[c].nunique())) for c in replicates
                         if 1 < runs[c].nunique() < len(runs)),  # not a run's own number
        runs=len(runs), element=element,
        word="runs" if per_run or replicates or set(IDENTITIES) & set(rows.columns)
        or len(runs) < len(frame) else "rows")
    pooled_already = [c for c in average if c in key or c in replicates]
    if pooled_already:
        warnings.warn(f"--average {', '.join(pooled_already)}: each {element} pools the runs "
                      f"of every value already", stacklevel=3)
    idle = [c for c in average if c not in placement.averaged and c not in pooled_already]
    if idle:
        warnings.warn(f"--average {', '.join(idle)}: does not vary within a {element}; "
                      f"nothing averaged", stacklevel=3)
    return frame, placement


def count_range(values: Sequence[int]) -> str:
    """``"3"`` or ``"1-2"``."""
    lo, hi = min(values), max(values)
    return f"{hi}" if lo == hi else f"{lo}-{hi}"


def runs_text(runs: Sequence[int], seeds: Sequence[int] | None, word: str = "runs") -> str:
    """``"2 seeds"`` when each run is a seed, else ``"4 runs (2 seeds)"`` (``seeds``:
    the seeds per line, ``None`` without a seed column); ``word`` names a run."""
    if seeds is not None and list(runs) == list(seeds):
        n = count_range(seeds)
        return f"{n} seed" + ("" if n == "1" else "s")
    n = count_range(runs)
    text = f"{n} {word[:-1] if n == '1' else word}"
    if seeds is not None:
        s = count_range(seeds)
        text += f" ({s} seed{'' if s == '1' else 's'})"
    return text


def seeds_of(group: pd.DataFrame, placement: Placement) -> int | None:
    """The number of seeds in ``group`` (``None``: no seed column, or seed mapped)."""
    if "seed" not in group.columns or any(c == "seed" for c, _ in placement.mapped):
        return None
    return int(group["seed"].nunique())
