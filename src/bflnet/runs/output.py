"""Result files: CSV or Parquet, chosen by the file's extension, each carrying how it was made.

A file written with ``metadata`` (a JSON-able dict: the scenario, its full config, the seed
and the bflnet version; see :mod:`bflnet.runs.provenance`) keeps it

- in Parquet, as schema key-value metadata under the key ``b"bflnet"``;
- in CSV, in a sidecar ``FILE.csv.json`` next to the table.

The JSON has sorted keys and no timestamps, so the same run gives the same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bflnet.files.atomic import WriteError, check_can_create, path_kind, write_files
from bflnet.files.input_files import describe_os_error

if TYPE_CHECKING:  # pandas is imported where a table is read or printed
    import pandas as pd

FORMATS = (".csv", ".parquet")
#: The Parquet schema-metadata key that holds a result's provenance.
METADATA_KEY = b"bflnet"


#: The longest file name (bytes) and path accepted, as on Linux file systems.
NAME_MAX, PATH_MAX = 255, 4096


def check_output_path(path: str | Path) -> Path:
    """The path as a ``Path``; a one-line error for an unsupported extension."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--out: must end in .csv or .parquet, got {str(path)!r}")
    return path


def check_output_target(path: str | Path, *, force: bool = False,
                        what: str = "--out") -> Path:
    """Check, before a run, that its results can be written to ``path``: a supported
    extension; names within the file system's limits (the CSV sidecar's too); not a
    directory nor another non-regular file; not an existing file unless ``force``; its
    nearest existing parent a directory this process can create files in. A one-line
    ``ValueError`` naming ``what`` and the reason otherwise."""
    path = check_output_path(path)
    text = str(path)
    names = [*path.parts, *([sidecar_path(path).name] if path.suffix.lower() == ".csv"
                            else [])]
    for name in names:
        if len(os.fsencode(name)) > NAME_MAX:
            raise ValueError(f"{what}: the name {_cut(name)!r} is {len(os.fsencode(name))} "
                             f"bytes long; a file name may have at most {NAME_MAX}")
    if len(os.fsencode(text)) >= PATH_MAX:
        raise ValueError(f"{what}: the path is {len(os.fsencode(text))} bytes long; at most "
                         f"{PATH_MAX - 1} allowed")
    kind = path_kind(path, what)
    if kind == "directory":
        raise ValueError(f"{what}: {text!r} is a directory; give a file name ending in "
                         f".csv or .parquet")
    if kind not in (None, "file"):
        raise ValueError(f"{what}: {text!r} exists and is not a regular file")
    if kind == "file" and not force:
        raise ValueError(f"{what}: {text!r} already exists; pass --force to overwrite it")
    if path.suffix.lower() == ".csv" and path_kind(sidecar_path(path), what) not in (None, "file"):
        raise ValueError(f"{what}: {str(sidecar_path(path))!r}, where the table's record "
                         f"goes, exists and is not a regular file")
    check_can_create(path, what)
    return path


def _cut(text: str, keep: int = 60) -> str:
    return text if len(text) <= keep else f"{text[:keep]}..."


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """The canonical JSON text of ``metadata``: sorted keys, exact floats, one line."""
    return json.dumps(dict(metadata), sort_keys=True, separators=(",", ":"), allow_nan=True)


def sidecar_path(path: str | Path) -> Path:
    """Where the metadata of a CSV table lives: ``FILE.csv`` → ``FILE.csv.json``."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def write_parquet(frame: pd.DataFrame, path: str | Path,
                  metadata: Mapping[str, Any] | None = None) -> None:
    """``frame`` as Parquet at ``path`` (any name), ``metadata`` under :data:`METADATA_KEY`.
    A column whose values are of several kinds (numbers and texts, say) is written as text
    (:func:`~bflnet.runs.column_types.one_type_per_column`): a Parquet column has one type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bflnet.runs.column_types import one_type_per_column

    table = pa.Table.from_pandas(one_type_per_column(frame), preserve_index=False)
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"cannot write {str(path)!r}: cannot create its directory "
                         f"({describe_os_error(exc)}); nothing was written") from exc
    if path.suffix.lower() == ".csv":
        sidecar = sidecar_path(path)
        files: list[tuple[Path, Any]] = [(path, lambda tmp: frame.to_csv(tmp, index=False))]
        if metadata is not None:
            text = json.dumps(dict(metadata), sort_keys=True, indent=1) + "\n"
            files.append((sidecar, lambda tmp: tmp.write_text(text)))
        write_files(files)
        if metadata is None:  # a stale sidecar would describe another table
            sidecar.unlink(missing_ok=True)
    else:
        write_files([(path, lambda tmp: write_parquet(frame, tmp, metadata))])
    return path


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"file: must end in .csv or .parquet, got {str(path)!r}")
    if not path.exists():
        raise ValueError(f"file: {str(path)!r} does not exist")
    return path


def _unreadable(path: Path, exc: BaseException) -> ValueError:
    reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
    fmt = "CSV" if path.suffix.lower() == ".csv" else "Parquet"
    return ValueError(f"file: cannot read {str(path)!r} as {fmt} "
                      f"({_cut(' '.join(reason.split()), 200)})")


def read_frame(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`write_frame`; a one-line error naming the file if
    it cannot be read."""
    import pandas as pd

    path = _existing(path)
    try:
        return pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
    except (ValueError, OSError, pd.errors.EmptyDataError) as exc:
        raise _unreadable(path, exc) from None


#: Largest provenance record read (a run's is a few kB).
MAX_METADATA_BYTES = 2**20


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata stored with a result file; a one-line error if it has none or it is
    not a JSON object of at most :data:`MAX_METADATA_BYTES`."""
    from bflnet.files.input_files import decode_text, read_bytes

    path = _existing(path)
    if path.suffix.lower() == ".csv":
        sidecar = sidecar_path(path)
        if not sidecar.exists():
            raise ValueError(f"file: {str(path)!r} has no bflnet metadata "
                             f"({sidecar.name} is missing)")
        raw = read_bytes(sidecar, "file", MAX_METADATA_BYTES)
        source = sidecar
    else:
        import pyarrow.parquet as pq

        try:
            raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
        except (ValueError, OSError) as exc:
            raise _unreadable(path, exc) from None
        if raw is None:
            raise ValueError(f"file: {str(path)!r} has no bflnet metadata")
        if len(raw) > MAX_METADATA_BYTES:
            raise ValueError(f"file: the bflnet metadata of {str(path)!r} is larger than "
                             f"{MAX_METADATA_BYTES} bytes")
        source = path
    text = decode_text(raw, source, "file")
    try:
        metadata = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} is not JSON "
                         f"({exc})") from None
    except RecursionError:
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} is nested too "
                         f"deeply") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} is not a JSON object")
    return metadata


#: Columns that name one run of a multi-run scenario, in order of preference.
RUN_KEYS = ("run_id", "run", "run_seed")


def summary(frame: pd.DataFrame, max_rows: int = 12) -> str:
    """A short text view. One run: evenly spaced iteration rows, always including the
    last. Several runs (a ``run_id``, ``run`` or ``run_seed`` column): the last row of each
    run, or, when the runs share settings (text-valued, e.g. ``graph``, or the columns
    before the run index, e.g. ``L``), the mean of those last rows per setting with the
    number of runs: every setting of a list parameter shows."""
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
    else:  # a repeat index: runs are (settings, index)
        settings = _settings(rows, key)
        last = rows.groupby([*settings, key], sort=False, dropna=False).tail(1)
    runs = len(last)
    if settings and last.groupby(settings, dropna=False).ngroups < runs:
        numeric = [c for c in last.select_dtypes("number").columns
                   if c not in (*RUN_KEYS, "node", *settings)]
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


def _settings(rows: pd.DataFrame, key: str) -> list[str]:
    import pandas as pd

    """The columns that tell runs with one repeat index ``key`` apart: the text-valued ones
    (e.g. ``graph``, ``method``) and those a scenario puts before ``key`` (the setting of
    a list parameter, e.g. ``L`` of ``local_steps_values=1,50``)."""
    first = list(rows.columns[:list(rows.columns).index(key)])
    return [c for c in rows.columns if c not in (*RUN_KEYS, "event", "node")
            and (c in first or not pd.api.types.is_numeric_dtype(rows[c]))]


def _table(rows: pd.DataFrame) -> str:
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 12,
                           "display.float_format", "{:.6g}".format):
        return rows.to_string(index=False)
