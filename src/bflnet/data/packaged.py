"""Files that an installed package ships (found without importing the package)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

__all__ = ["package_file"]


def package_file(package: str, parts: Sequence[str]) -> Path | None:
    """``<package's directory>/<parts...>`` if ``package`` is installed and ships that
    file, else ``None``. The package is located, never imported (an import can be slow or
    fail)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        path = Path(base).joinpath(*parts)
        try:
            if path.is_file():
                return path
        except OSError:  # an unreadable installation ships nothing usable
            continue
    return None
