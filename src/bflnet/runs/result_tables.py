"""Result tables to plot: a file written by bflnet (``.csv`` with its sidecar,
``.parquet``) or a sweep directory, with the record of how it was made; several tables
(or glob patterns) as one, a column ``file`` telling their rows apart."""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

#: The column that names the table a row comes from when several are read as one.
FILE_COLUMN = "file"
#: The characters that make an argument a glob pattern (when no path has that name).
GLOB_CHARACTERS = "*?["


def _record(path: str) -> dict[str, Any] | None:
    """The bflnet record of a result file or sweep (``None``: none)."""
    from bflnet.runs.output import read_metadata
    from bflnet.runs.sweep import sweep_paths

    p = Path(path)
    try:
        if p.is_dir():
            paths = sweep_paths(p)
            if paths.table.exists():
                return read_metadata(paths.table)
            return json.loads(paths.spec.read_text()) if paths.spec.exists() else None
        return read_metadata(p)
    except ValueError:
        return None


def read_table(path: str) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """A result table (file or sweep directory) and its record (``None``: none)."""
    from bflnet.runs.output import read_frame
    from bflnet.runs.sweep import load_sweep

    frame = load_sweep(path) if Path(path).is_dir() else read_frame(path)
    return frame, _record(path)


def table_paths(arguments: Sequence[str]) -> list[str]:
    """The tables ``arguments`` name: each a path, or a glob pattern (``runs/*.csv``;
    ``**`` crosses folders) that no path is named, expanded in sorted order; a one-line
    ``ValueError`` for a pattern that matches nothing or a table named twice."""
    paths: list[str] = []
    for argument in arguments:
        if any(c in argument for c in GLOB_CHARACTERS) and not Path(argument).exists():
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                raise ValueError(f"FILE: no file or directory matches {argument!r}")
            paths.extend(matches)
        else:
            paths.append(argument)
    seen: dict[Path, str] = {}
    for path in paths:
        key = Path(path).resolve()
        if key in seen:
            also = "" if seen[key] == path else f" (also as {seen[key]!r})"
            raise ValueError(f"FILE: {path!r} is named twice{also}")
        seen[key] = path
    return paths


def _names(paths: Sequence[str]) -> list[str]:
    """Each table's name in the ``file`` column: its file's stem (a sweep directory's
    name), or, where two stems are the same, the paths as given."""
    stems = [Path(p).stem if Path(p).suffix.lower() in (".csv", ".parquet")
             else Path(p).name for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def read_tables(arguments: Sequence[str]) -> tuple[pd.DataFrame, list[dict[str, Any] | None]]:
    """The tables ``arguments`` name (:func:`table_paths`) and their records. One table
    as it is; several as one, their rows in order, with a first column ``file`` (each
    file's stem) saying which table a row comes from: a table with a column of that name
    is a one-line ``ValueError``."""
    paths = table_paths(arguments)
    if len(paths) == 1:
        frame, record = read_table(paths[0])
        return frame, [record]
    frames, records = [], []
    for path, name in zip(paths, _names(paths), strict=True):
        frame, record = read_table(path)
        if FILE_COLUMN in frame.columns:
            raise ValueError(f"FILE: {path!r} has a column {FILE_COLUMN!r}; several tables "
                             f"are read as one with a column of that name naming the file")
        frames.append(frame.assign(**{FILE_COLUMN: name}))
        records.append(record)
    frame = pd.concat(frames, ignore_index=True)
    return frame[[FILE_COLUMN, *(c for c in frame.columns if c != FILE_COLUMN)]], records
