"""How many threads NumPy's bundled OpenBLAS computes with, read through ``threadpoolctl``.
A NumPy product called from a one-thread torch run must not wake an OpenBLAS pool of
several threads: its idle threads spin between calls and take a core from the other
workers."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["openblas_threads"]


@functools.cache
def _numpy_openblas() -> Any | None:
    """threadpoolctl's controller of the OpenBLAS NumPy loaded, or None (another BLAS)."""
    import numpy  # noqa: F401  (loads its BLAS)
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(internal_api="openblas").lib_controllers
    ours = [lib for lib in found if "numpy" in lib.filepath] or found
    return ours[0] if ours else None


def openblas_threads() -> int | None:
    """The threads of NumPy's OpenBLAS now, or None where it cannot be told (another BLAS)."""
    lib = _numpy_openblas()
    return None if lib is None else int(lib.get_num_threads())
