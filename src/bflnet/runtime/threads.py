"""How many threads a run computes with: torch's intra-op threads and the BLAS libraries'
(NumPy's and SciPy's, through ``threadpoolctl``; the ``*_NUM_THREADS`` variables are set too,
for a BLAS loaded later)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

#: The environment variables that BLAS / OpenMP libraries read when they load.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: The most threads a run may ask for.
MAX_THREADS = 1024


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_threads(value: Any, field: str = "threads") -> int:
    """``value`` as a thread count in 1..:data:`MAX_THREADS`, else a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise ValueError(f"{field}: must be an integer in 1..{MAX_THREADS}, got {value!r}")
    return value


def set_threads(n: int) -> None:
    """Compute with ``n`` threads from now on: torch's intra-op pool and the BLAS pools."""
    check_threads(n)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)
    import torch  # lazily

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


@contextlib.contextmanager
def groups_on_threads(setting: int) -> Iterator[int]:
    """For a run whose work is split into groups that run on threads of their own (one
    torch thread each): yields how many run at once, ``setting``, or with ``0`` ("auto")
    torch's thread count as the run starts (the CPUs this machine has, unless
    ``OMP_NUM_THREADS``, ``--threads`` or a sweep's ``torch_threads`` set fewer); inside,
    torch computes on one thread; afterwards its thread count is as it was."""
    import torch  # lazily

    before = torch.get_num_threads()
    groups = setting or before
    torch.set_num_threads(1)
    try:
        yield groups
    finally:
        torch.set_num_threads(before)


__all__ = ["MAX_THREADS", "THREAD_VARIABLES", "available_cpus", "check_threads",
           "groups_on_threads", "set_threads"]
