"""How many threads NumPy's bundled OpenBLAS computes with, read through its own C API
(the library ``threadpoolctl`` reads; it is not a dependency here). A NumPy product
called from a one-thread torch run must not wake an OpenBLAS pool of several threads:
its idle threads spin between calls and take a core from the other workers."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

__all__ = ["openblas_threads"]

#: Names of OpenBLAS' thread-count getter in the builds NumPy ships or links.
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


@functools.cache
def _getter() -> Callable[[], int] | None:
    """The loaded OpenBLAS' ``get_num_threads``, or None (no OpenBLAS found)."""
    import numpy  # noqa: F401  (loads its BLAS)

    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line.lower() and line.split()[-1][:1] == "/"})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _GETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return fn
    return None


def openblas_threads() -> int | None:
    """The threads of NumPy's OpenBLAS now, or None where it cannot be told (another BLAS,
    another OS)."""
    fn = _getter()
    return None if fn is None else int(fn())
