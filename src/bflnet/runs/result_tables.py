"""Result tables to plot: a file written by bflnet (``.csv`` with its sidecar,
``.parquet``) or a sweep directory, with the record of how it was made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd


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
