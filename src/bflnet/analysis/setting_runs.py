"""Which rows of a result table make one run, and which columns make one setting: what
:func:`bflnet.analysis.summary.summarize` averages over (the runs of a setting, its seeds)
and what it keeps apart (the settings).

**Runs.** The rows sharing the run key (``run_id``, else ``seed``; with ``run`` where the
table has it; or the columns given), cut again wherever ``iteration`` goes back (a table
of one call that holds several curves, e.g. one per method and SNR, one after the other).
A table with neither a run key nor ``iteration`` has one run per row.

**Settings.** Unless given, the columns that are constant within every run and vary
between runs, in table order, without the run keys, the table's base columns and the
measured ones; a column that takes values on one seed that no other seed has (a measured
number, e.g. a run's mean value) is not a setting, nor is one that the settings before it
already determine (``area_m`` beside ``K``).

**Replicates.** The runs of one setting are told apart by ``seed`` and ``run``: two runs of
one setting with the same seed (and run) mean that a varying column was left out of the
settings, and that is an error naming it, never a silent pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Columns that identify a run or its provenance, never a setting.
META = ("seed", "run_id", "config_hash", "run_run_id", "run", "run_seed")
#: Columns every table has that measure the run's progress, never a setting.
BASE = ("time_s", "iteration", "event", "cum_bits", "cum_bits_delivered")
#: Replicate columns: what tells the runs of one setting apart.
REPLICATES = ("seed", "run")


@dataclass(frozen=True)
class Runs:
    """The runs of a table: ``codes`` (one integer per row), the ``by`` columns of the
    settings, the ``replicates`` columns, ``per_run`` (one row per run, in order of
    first appearance: the ``by`` and ``replicates`` values), and whether some runs were
    told apart where ``iteration`` starts again (``restarted``)."""

    codes: np.ndarray
    key: list[str]
    by: list[str]
    replicates: list[str]
    per_run: pd.DataFrame
    restarted: bool = False


def run_key(frame: pd.DataFrame, run_by: Sequence[str] | None) -> list[str]:
    """``run_by`` (checked), else ``run_id`` (else ``seed``), with ``run`` if present."""
    if run_by is not None:
        for column in run_by:
            if column not in frame.columns:
                raise ValueError(f"--run-by: unknown column {column!r}; available: "
                                 f"{', '.join(map(str, frame.columns))}")
        return list(dict.fromkeys(run_by))
    key = [c for c in ("run_id", "seed") if c in frame.columns][:1]
    return key + (["run"] if "run" in frame.columns else [])


def run_codes(frame: pd.DataFrame, key: Sequence[str]) -> np.ndarray:
    """One integer per row naming its run (module docs), numbered by first appearance."""
    n = len(frame)
    if key:
        codes = frame.groupby(list(key), sort=False, dropna=False).ngroup().to_numpy()
    elif "iteration" in frame.columns:
        codes = np.zeros(n, dtype=int)
    else:
        return np.arange(n)
    if "iteration" not in frame.columns:
        return codes
    iteration = pd.to_numeric(frame["iteration"], errors="coerce").to_numpy(dtype=float)
    back = pd.Series(iteration).groupby(codes).diff().to_numpy() < 0
    restarts = pd.Series(back.astype(int)).groupby(codes).cumsum().to_numpy()
    return pd.DataFrame({"c": codes, "r": restarts}).groupby(
        ["c", "r"], sort=False).ngroup().to_numpy()


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The row number of each run's first row, in run-code order."""
    return pd.Series(np.arange(len(codes))).groupby(codes).first().to_numpy()


def _constant_in_runs(frame: pd.DataFrame, codes: np.ndarray, column: str) -> bool:
    return bool(frame[column].groupby(codes).nunique(dropna=False).max() <= 1)


def _seed_bound(per_run: pd.DataFrame, column: str) -> bool:
    """Whether ``column`` takes, on some seed, only values no other seed has (a measured
    number, not a setting)."""
    if "seed" not in per_run.columns or per_run["seed"].nunique() < 2:
        return False
    sets = [set(v.dropna()) for _, v in per_run.groupby("seed", sort=False)[column]]
    sets = [s for s in sets if s]
    return any(not (s & t) for i, s in enumerate(sets) for t in sets[i + 1:])


def _determined(per_run: pd.DataFrame, chosen: list[str], column: str) -> bool:
    if not chosen:
        return per_run[column].nunique(dropna=False) <= 1
    return bool(per_run.groupby(chosen, sort=False, dropna=False)[column]
                .nunique(dropna=False).max() <= 1)


def find_settings(frame: pd.DataFrame, codes: np.ndarray, exclude: Sequence[str]) -> list[str]:
    """The setting columns of ``frame`` (module docs); ``exclude``: measured columns."""
    skip = {*META, *BASE, *exclude}
    candidates = [c for c in frame.columns if c not in skip
                  and _constant_in_runs(frame, codes, c)]
    per_run = frame.iloc[first_rows(codes)]
    chosen: list[str] = []
    for column in candidates:
        if _determined(per_run, chosen, column) or _seed_bound(per_run, column):
            continue
        chosen.append(column)
    return chosen


def _check_by(frame: pd.DataFrame, codes: np.ndarray, by: Sequence[str]) -> None:
    for column in by:
        if column not in frame.columns:
            raise ValueError(f"--by: unknown column {column!r}; available: "
                             f"{', '.join(map(str, frame.columns))}")
        if not _constant_in_runs(frame, codes, column):
            raise ValueError(f"--by {column}: not constant within a run, so not a setting "
                             f"(it changes along a run; --run-by names the columns that "
                             f"tell runs apart)")


def _check_replicates(frame: pd.DataFrame, codes: np.ndarray, per_run: pd.DataFrame,
                      by: list[str], replicates: list[str], key: list[str]) -> None:
    """One run per setting and replicate, else the columns that were pooled."""
    group = [*by, *replicates]
    if not group:
        if len(per_run) > 1:
            raise ValueError(f"the table holds {len(per_run)} runs and nothing tells them "
                             f"apart: give the setting columns with --by")
        return
    counts = per_run.groupby(group, sort=False, dropna=False).size()
    if counts.max() <= 1:
        return
    clash = counts[counts > 1].index[0]
    clash = clash if isinstance(clash, tuple) else (clash,)
    mask = np.logical_and.reduce([
        (per_run[c].isna() if pd.isna(v) else per_run[c] == v).to_numpy()
        for c, v in zip(group, clash, strict=True)])
    pooled = per_run[mask]
    rows = frame.iloc[first_rows(codes)[mask]]
    varying = [c for c in frame.columns if c not in {*group, *key, *META, *BASE}
               and _constant_in_runs(frame, codes, c) and rows[c].nunique(dropna=False) > 1]
    what = " ".join(f"{c}={v}" for c, v in zip(group, clash, strict=True))
    hint = (f"columns that differ between them: {', '.join(varying[:12])}; add the settings "
            f"among them with --by" if varying else
            "no constant column tells them apart; name the runs with --run-by")
    raise ValueError(f"--by: {len(pooled)} runs share the setting and replicate {what} "
                     f"(they would be pooled); {hint}")


def runs_of(frame: pd.DataFrame, by: Sequence[str] | None, run_by: Sequence[str] | None,
            measured: Sequence[str]) -> Runs:
    """The runs and settings of ``frame`` (module docs); ``measured``: the columns the
    summary reads, never settings."""
    key = run_key(frame, run_by)
    codes = run_codes(frame, key)
    if by is None:
        chosen = find_settings(frame, codes, [*measured, *key])
    else:
        chosen = list(dict.fromkeys(by))
        _check_by(frame, codes, chosen)
    replicates = [c for c in REPLICATES if c in frame.columns and c not in chosen]
    per_run = frame.iloc[first_rows(codes)][[*chosen, *replicates]].reset_index(drop=True)
    _check_replicates(frame, codes, per_run, chosen, replicates, key)
    groups = frame.groupby(key, sort=False, dropna=False).ngroups if key else 1
    restarted = "iteration" in frame.columns and len(per_run) > groups
    return Runs(codes, key, chosen, replicates, per_run, restarted)
