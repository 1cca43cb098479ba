"""Writing result tables: CSV or Parquet, chosen by the file's extension."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

FORMATS = (".csv", ".parquet")


def check_output_path(path: str | Path) -> Path:
    """The path as a ``Path``; a one-line error for an unsupported extension."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--out: must end in .csv or .parquet, got {str(path)!r}")
    return path


def write_frame(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` to ``path`` (.csv or .parquet), creating parent folders."""
    path = check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def read_frame(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`write_frame`."""
    path = check_output_path(path)
    if not path.exists():
        raise ValueError(f"file: {str(path)!r} does not exist")
    return pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)


#: Columns that name one run of a multi-run scenario, in order of preference.
RUN_KEYS = ("run_id", "run", "run_seed")


def summary(frame: pd.DataFrame, max_rows: int = 12) -> str:
    """A short text view. One run: evenly spaced iteration rows, always including the
    last. Several runs (a ``run_id``, ``run`` or ``run_seed`` column): the last row of each
    run, or, when the runs share text-valued settings (e.g. ``graph``), the mean of those
    last rows per setting with the number of runs."""
    rows = frame[frame["event"].isin(["init", "iteration", "round"])] if "event" in frame else frame
    if rows.empty:
        rows = frame
    key = next((c for c in RUN_KEYS if c in rows and rows[c].nunique() > 1), None)
    if key is not None:
        return _per_run_summary(rows, key, max_rows)
    if len(rows) > max_rows:
        step = max(1, (len(rows) - 1) // (max_rows - 1))
        picks = [*list(range(0, len(rows) - 1, step))[:max_rows - 1], len(rows) - 1]
        rows = rows.iloc[picks]
    return _table(rows)


def _per_run_summary(rows: pd.DataFrame, key: str, max_rows: int) -> str:
    if key == "run_id":  # names the whole run: its last row
        settings: list[str] = []
        last = rows.groupby(key, sort=False).tail(1)
    else:  # a repeat index: runs are (text-valued settings, index)
        settings = [c for c in rows.columns if c not in (key, "event", "node")
                    and not pd.api.types.is_numeric_dtype(rows[c])]
        last = rows.groupby([*settings, key], sort=False, dropna=False).tail(1)
    runs = len(last)
    if settings and last.groupby(settings, dropna=False).ngroups < runs:
        numeric = [c for c in last.select_dtypes("number").columns
                   if c not in (*RUN_KEYS, "node")]
        grouped = last.groupby(settings, sort=False, dropna=False)
        table = grouped[numeric].mean().assign(runs=grouped.size()).reset_index()
        head = f"{runs} runs; mean of each run's last row per {', '.join(settings)}"
    else:
        table = last
        head = f"{runs} runs; the last row of each"
    table = table.dropna(axis="columns", how="all")
    head += ":"
    more = f"\n({len(table) - max_rows} more)" if len(table) > max_rows else ""
    return f"{head}\n{_table(table.head(max_rows))}{more}"


def _table(rows: pd.DataFrame) -> str:
    with pd.option_context("display.width", 160, "display.max_columns", 12,
                           "display.float_format", "{:.6g}".format):
        return rows.to_string(index=False)
