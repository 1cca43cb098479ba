"""Fixtures of the radio tests."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fingerprints() -> dict:
    """scripts/medium_fingerprints.py's names (``fingerprint``, ``cases``,
    ``saturated_fingerprint``, the benchmark module ``mc``), run without its ``main``."""
    saved = list(sys.path)  # (the script puts bench/ on the path)
    try:
        return runpy.run_path(str(ROOT / "scripts" / "medium_fingerprints.py"), run_name="x")
    finally:
        sys.path[:] = saved
