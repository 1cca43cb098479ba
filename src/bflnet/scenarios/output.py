"""Result files: CSV or Parquet, chosen by the file's extension, each carrying how it was made.

A file written with ``metadata`` (a JSON-able dict: the scenario, its full config, the seed
and the bflnet version; see :mod:`bflnet.scenarios.provenance`) keeps it

- in Parquet, as schema key-value metadata under the key ``b"bflnet"``;
- in CSV, in a sidecar ``FILE.csv.json`` next to the table.

The JSON has sorted keys and no timestamps, so the same run gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

FORMATS = (".csv", ".parquet")
#: The Parquet schema-metadata key that holds a result's provenance.
METADATA_KEY = b"bflnet"


def check_output_path(path: str | Path) -> Path:
    """The path as a ``Path``; a one-line error for an unsupported extension."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--out: must end in .csv or .parquet, got {str(path)!r}")
    return path


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """The canonical JSON text of ``metadata``: sorted keys, exact floats, one line."""
    return json.dumps(dict(metadata), sort_keys=True, separators=(",", ":"), allow_nan=True)


def sidecar_path(path: str | Path) -> Path:
    """Where the metadata of a CSV table lives: ``FILE.csv`` → ``FILE.csv.json``."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def write_parquet(frame: pd.DataFrame, path: str | Path,
                  metadata: Mapping[str, Any] | None = None) -> None:
    """``frame`` as Parquet at ``path`` (any name), ``metadata`` under :data:`METADATA_KEY`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata is not None:
        merged = {**(table.schema.metadata or {}),
                  METADATA_KEY: metadata_json(metadata).encode()}
        table = table.replace_schema_metadata(merged)
    pq.write_table(table, path)


def write_frame(frame: pd.DataFrame, path: str | Path,
                metadata: Mapping[str, Any] | None = None) -> Path:
    """Write ``frame`` to ``path`` (.csv or .parquet), creating parent folders; with
    ``metadata``, also how the table was made (Parquet metadata or a CSV sidecar)."""
    path = check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        frame.to_csv(path, index=False)
        sidecar = sidecar_path(path)
        if metadata is not None:
            sidecar.write_text(json.dumps(dict(metadata), sort_keys=True, indent=1) + "\n")
        else:  # a stale sidecar would describe another table
            sidecar.unlink(missing_ok=True)
    else:
        write_parquet(frame, path, metadata)
    return path


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"file: must end in .csv or .parquet, got {str(path)!r}")
    if not path.exists():
        raise ValueError(f"file: {str(path)!r} does not exist")
    return path


def read_frame(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`write_frame`."""
    path = _existing(path)
    return pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata stored with a result file; a one-line error if it has none."""
    path = _existing(path)
    if path.suffix.lower() == ".csv":
        sidecar = sidecar_path(path)
        if not sidecar.exists():
            raise ValueError(f"file: {str(path)!r} has no bflnet metadata "
                             f"({sidecar.name} is missing)")
        text = sidecar.read_text()
    else:
        import pyarrow.parquet as pq

        raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
        if raw is None:
            raise ValueError(f"file: {str(path)!r} has no bflnet metadata")
        text = raw.decode()
    try:
        metadata = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} is not JSON "
                         f"({exc})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} is not a JSON object")
    return metadata


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
