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

from bflnet.runs.config import field_types
from bflnet.runs.config_file import toml_value
from bflnet.runs.output import (
    check_output_target,
    read_frame,
    read_metadata,
    sidecar_path,
    write_frame,
)
from bflnet.runs.provenance import RUN, SWEEP, run_record, unrecorded_fields, version
from bflnet.runs.registry import get_scenario
from bflnet.validation.renames import rename_keys

IDENTICAL, SAME_ROWS, DIFFERENT = "identical", "same rows", "different"


@dataclass(frozen=True)
class RerunResult:
    """The table made again, where it was written (``None``: a temporary file, removed),
    how it compares with the original (:data:`IDENTICAL`, :data:`SAME_ROWS`,
    :data:`DIFFERENT`, or ``None`` when written in another format), any warning (a
    version mismatch) and any note (the stored record holds fields this bflnet no longer
    records: :func:`unrecorded_note`)."""

    frame: pd.DataFrame
    record: Mapping[str, Any]
    written: Path | None
    comparison: str | None
    warning: str | None
    note: str | None = None


#: The keys of each kind of record (see :mod:`bflnet.runs.provenance`).
#: A record's optional key: the state directory its runs started from (``--load-state``).
LOAD_STATE = "load_state"
RECORD_KEYS = {RUN: ("bflnet", "kind", "scenario", "seed", "config"),
               SWEEP: ("bflnet", "kind", "scenario", "grid", "fixed", "seeds")}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _typed_value(cls: type, name: str, value: Any) -> Any:
    """A stored config value typed like a TOML one (``null``: an optional field unset)."""
    if value is None:
        from bflnet.validation.params import base_type

        types_ = field_types(cls)
        if name in types_ and base_type(types_[name])[1]:
            return None
    return toml_value(cls, name, value)


def check_record(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """Check the record of a result file like a config: its keys, their types, the
    scenario and every stored parameter (typed as in a config file); a one-line
    ``ValueError`` naming the first bad key. A record of this bflnet version must hold the
    scenario's full config (less the fields its scenario does not record, which it may
    still hold, at their defaults, from an older file) and no other key; one of another
    version may lack fields (their defaults) or have more. The record is returned
    unchanged."""
    for key in ("bflnet", "kind", "scenario"):
        if key not in record:
            raise ValueError(f"lacks {key!r}")
    if not isinstance(record["bflnet"], str):
        raise ValueError(f"bflnet: must be a version string, got {_short(record['bflnet'])}")
    kind = record["kind"]
    if not isinstance(kind, str) or kind not in RECORD_KEYS:
        raise ValueError(f"kind: must be {RUN!r} or {SWEEP!r}, got {_short(kind)}")
    same_version = record["bflnet"] == version()
    for key in RECORD_KEYS[kind]:
        if key not in record:
            raise ValueError(f"lacks {key!r}")
    unknown = [key for key in record if key not in RECORD_KEYS[kind] and key != LOAD_STATE]
    if unknown and same_version:
        raise ValueError(f"unknown key {_short(unknown[0])}; a {kind} record has "
                         f"{', '.join(RECORD_KEYS[kind])}")
    if not isinstance(record["scenario"], str):
        raise ValueError(f"scenario: must be a scenario name, got {_short(record['scenario'])}")
    try:
        cls = get_scenario(record["scenario"]).config_cls
    except ValueError as exc:
        raise ValueError(f"scenario: {exc}") from None
    if not isinstance(record.get(LOAD_STATE, ""), str):
        raise ValueError(f"{LOAD_STATE}: must be a directory name, got "
                         f"{_short(record[LOAD_STATE])}")
    if kind == RUN:
        if not _is_count(record["seed"]):
            raise ValueError(f"seed: must be a non-negative integer, got "
                             f"{_short(record['seed'])}")
        typed = _check_params(cls, "config", record["config"], full=same_version)
        try:
            get_scenario(record["scenario"]).config(typed)  # the config's own checks
        except ValueError as exc:
            raise ValueError(f"config: {exc}") from None
        return record
    _check_params(cls, "fixed", record["fixed"], full=False)
    grid = record["grid"]
    if not isinstance(grid, dict):
        raise ValueError(f"grid: must be an object of lists, got {_short(grid)}")
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid: {_short(name)} must be a non-empty list, got "
                             f"{_short(values)}")
        for value in values:
            _check_value(cls, "grid", name, value)
    seeds = record["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(map(_is_count, seeds)):
        raise ValueError(f"seeds: must be a non-empty list of non-negative integers, got "
                         f"{_short(seeds)}")
    return record


def _check_value(cls: type, where: str, name: str, value: Any) -> Any:
    try:
        return _typed_value(cls, name, value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _check_params(cls: type, key: str, params: Any, *, full: bool) -> dict[str, Any]:
    """The stored parameters typed; a one-line error naming ``key`` and the field."""
    if not isinstance(params, dict):
        raise ValueError(f"{key}: must be an object of parameters, got {_short(params)}")
    try:
        params = rename_keys(cls, params)  # a record of an older bflnet: old names
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None
    typed = {name: _check_value(cls, key, name, value) for name, value in params.items()}
    if full:
        omitted = unrecorded_fields(cls)
        missing = [name for name in field_types(cls)
                   if name not in params and name not in omitted]
        if missing:
            raise ValueError(f"{key}: lacks the parameter {missing[0]!r}")
    return typed


def _short(value: Any, keep: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= keep else f"{text[:keep - 3]}..."


def unrecorded_note(record: Mapping[str, Any], path: Path) -> str | None:
    """One line if a run's record holds fields its scenario no longer records (a file
    written before they were left out: :func:`bflnet.runs.provenance.unrecorded_fields`);
    the rerun's record leaves them out, so its bytes differ. ``None`` otherwise."""
    if record.get("kind") != RUN:
        return None
    omitted = unrecorded_fields(get_scenario(record["scenario"]).config_cls)
    held = [name for name in record["config"] if name in omitted]
    if not held:
        return None
    return (f"{path} records {', '.join(held)}, which {record['scenario']} no longer "
            f"records (it does not read them; they are at their defaults): the new record "
            f"leaves them out, so the bytes differ")


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
    load_state = record.get(LOAD_STATE)  # the run started from saved states
    frame = scenario.run(config, seed=record["seed"], progress=progress,
                         load_state=load_state)
    write_frame(frame, target, run_record(scenario.name, config, record["seed"],
                                          load_state))
    return frame


def _rerun_sweep(record: Mapping[str, Any], target: Path, workers: int | None,
                 progress: bool) -> pd.DataFrame:
    from bflnet.runs.sweep import sweep, sweep_paths

    if target.suffix.lower() != ".parquet":
        raise ValueError(f"--out: a sweep table is rerun into FILE.parquet, got {str(target)!r}")
    parts = sweep_paths(target).root
    if parts.exists():  # its finished runs would be reused, not run again
        raise ValueError(f"--out: {str(parts)!r} already holds a sweep's runs; choose a new "
                         f"file")
    return sweep(record["scenario"], record["grid"], record["seeds"], target,
                 fixed=record["fixed"], workers=workers, progress=progress,
                 load_state=record.get(LOAD_STATE))


def rerun(path: str | Path, out: str | Path | None = None, *, strict_version: bool = False,
          force: bool = False, workers: int | None = None, progress: bool = False,
          warn: Callable[[str], None] | None = None) -> RerunResult:
    """Make the result file at ``path`` again into ``out`` (default: a temporary file of
    the same format, removed afterwards) and compare it with the original. An existing
    ``out`` is refused unless ``force``. The stored record is checked first
    (:func:`check_record`). A version warning (and a note on fields no longer recorded)
    is also passed to ``warn`` at once, before the (maybe long) run. ``workers`` (a sweep
    table's local worker processes) is checked first, whatever the file holds."""
    if workers is not None:
        from bflnet.runs.sweep import check_workers

        check_workers(workers)
    path = Path(path)
    try:
        record = check_record(read_metadata(path))
    except ValueError as exc:
        message = str(exc)
        if not message.startswith("file:"):
            message = f"file: the bflnet metadata of {str(path)!r}: {message}"
        raise ValueError(message) from None
    kind = record["kind"]
    warning = check_version(record, path, strict_version)
    note = unrecorded_note(record, path)
    for text in (warning, note):
        if text is not None and warn is not None:
            warn(text)
    if out is not None:
        check_output_target(out, force=force)
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
                       warning, note)


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.shape == b.shape and bool(a.equals(b))
