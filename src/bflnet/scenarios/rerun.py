"""``bflnet rerun``: make a result file again from the record stored in it.

A run's file (``bflnet run --out``, or a sweep's part) is run again with its scenario,
config and seed; a sweep's table is swept again with its grid, fixed parameters and seeds.
The new file is written to ``out`` (or a temporary folder) and compared with the original,
byte for byte and, if the bytes differ, row for row.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bflnet.scenarios.output import (
    check_output_path,
    read_frame,
    read_metadata,
    sidecar_path,
    write_frame,
)
from bflnet.scenarios.provenance import RUN, SWEEP, run_record, version
from bflnet.scenarios.registry import get_scenario

IDENTICAL, SAME_ROWS, DIFFERENT = "identical", "same rows", "different"


@dataclass(frozen=True)
class RerunResult:
    """The table made again, where it was written (``None``: a temporary file, removed),
    how it compares with the original (:data:`IDENTICAL`, :data:`SAME_ROWS`,
    :data:`DIFFERENT`, or ``None`` when written in another format) and any warning (a
    version mismatch)."""

    frame: pd.DataFrame
    record: Mapping[str, Any]
    written: Path | None
    comparison: str | None
    warning: str | None


def _require(record: Mapping[str, Any], path: Path, keys: tuple[str, ...]) -> None:
    missing = [key for key in keys if key not in record]
    if missing:
        raise ValueError(f"file: the bflnet metadata of {str(path)!r} lacks {missing[0]!r}")


def check_version(record: Mapping[str, Any], path: Path, strict: bool) -> str | None:
    """A one-line warning if the file was made by another bflnet version (an error if
    ``strict``); ``None`` if the versions match."""
    made_by = record.get("bflnet")
    if made_by == version():
        return None
    message = (f"{path} was made by bflnet {made_by}, this is bflnet {version()}; "
               f"the rerun may differ")
    if strict:
        raise ValueError(f"version: {message}")
    return message


def _file_bytes(path: Path) -> tuple[bytes, bytes | None]:
    """The table's bytes and, for CSV, its sidecar's."""
    sidecar = sidecar_path(path) if path.suffix.lower() == ".csv" else None
    return path.read_bytes(), (sidecar.read_bytes() if sidecar and sidecar.exists() else None)


def _rerun_run(record: Mapping[str, Any], target: Path, progress: bool) -> pd.DataFrame:
    scenario = get_scenario(record["scenario"])
    config = scenario.config(record["config"])
    frame = scenario.run(config, seed=record["seed"], progress=progress)
    write_frame(frame, target, run_record(scenario.name, config, record["seed"]))
    return frame


def _rerun_sweep(record: Mapping[str, Any], target: Path, workers: int | None,
                 progress: bool) -> pd.DataFrame:
    from bflnet.scenarios.sweep import sweep, sweep_paths

    if target.suffix.lower() != ".parquet":
        raise ValueError(f"--out: a sweep table is rerun into FILE.parquet, got {str(target)!r}")
    parts = sweep_paths(target).root
    if parts.exists():  # its finished runs would be reused, not run again
        raise ValueError(f"--out: {str(parts)!r} already holds a sweep's runs; choose a new "
                         f"file")
    return sweep(record["scenario"], record["grid"], record["seeds"], target,
                 fixed=record["fixed"], workers=workers, progress=progress)


def rerun(path: str | Path, out: str | Path | None = None, *, strict_version: bool = False,
          workers: int | None = None, progress: bool = False,
          warn: Callable[[str], None] | None = None) -> RerunResult:
    """Make the result file at ``path`` again into ``out`` (default: a temporary file of
    the same format, removed afterwards) and compare it with the original. A version
    warning is also passed to ``warn`` at once, before the (maybe long) run."""
    path = Path(path)
    record = read_metadata(path)
    _require(record, path, ("bflnet", "kind", "scenario"))
    kind = record["kind"]
    if kind not in (RUN, SWEEP):
        raise ValueError(f"file: unknown kind {kind!r} in the bflnet metadata of "
                         f"{str(path)!r}; known: {RUN}, {SWEEP}")
    _require(record, path, ("config", "seed") if kind == RUN else ("grid", "fixed", "seeds"))
    warning = check_version(record, path, strict_version)
    if warning is not None and warn is not None:
        warn(warning)
    if out is not None:
        check_output_path(out)
    original, original_frame = _file_bytes(path), read_frame(path)
    with tempfile.TemporaryDirectory(prefix="bflnet-rerun-") as tmp:
        target = Path(out) if out is not None else Path(tmp) / f"rerun{path.suffix.lower()}"
        if kind == RUN:
            frame = _rerun_run(record, target, progress)
        else:
            frame = _rerun_sweep(record, target, workers, progress)
        if target.suffix.lower() != path.suffix.lower():
            comparison = None  # another format: nothing to compare byte for byte
        elif _file_bytes(target) == original:
            comparison = IDENTICAL
        elif _same_rows(read_frame(target), original_frame):
            comparison = SAME_ROWS
        else:
            comparison = DIFFERENT
    return RerunResult(frame, record, Path(out) if out is not None else None, comparison,
                       warning)


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.shape == b.shape and bool(a.equals(b))
