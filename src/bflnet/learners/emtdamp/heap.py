"""Keep freed heap memory in the process, so that DAMP's temporaries do not page-fault.

A sweep over a 784-128-10 network allocates and frees a dozen ``128 × 785`` float64 arrays
(≈ 0.8 MB each, above glibc's initial mmap threshold). With glibc's defaults the first of
them are mmapped, and afterwards the heap top is returned to the kernel whenever more than
twice the largest freed block is free, so the same pages are unmapped and faulted in again
every sweep: ≈ 750-2000 minor page faults per TDAMP minibatch pass, about a quarter of its
time (docs/em-tdamp.md, Sec. 6.6, Benchmark). :func:`keep_freed_memory` sets glibc's
``M_MMAP_THRESHOLD`` to 32 MiB and ``M_TRIM_THRESHOLD`` to 64 MiB, once per process: blocks
below 32 MiB come from the heap and up to 64 MiB of free heap stays mapped for reuse. It is
a no-op on other C libraries and when the environment sets ``BFLNET_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
_TRIM_THRESHOLD = 64 << 20

_done = False


def keep_freed_memory() -> bool:
    """Tune glibc's ``malloc`` as described above (once); ``True`` if it was tuned."""
    global _done
    if _done:
        return True
    _done = True
    if os.environ.get("BFLNET_MALLOC_TUNING", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl, macOS: AttributeError)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )
