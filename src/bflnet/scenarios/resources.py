"""Resource guards: a config whose run would not fit in this machine's memory is refused
before the run starts, with one line naming the parameters and the estimate."""

from __future__ import annotations

import os

#: Bytes of one float32 number.
FLOAT32 = 4


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine (``None`` where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def human_bytes(n: float) -> str:
    """``n`` bytes as a short text (``1.5 GB``).

    >>> human_bytes(1.5e9), human_bytes(2048)
    ('1.5 GB', '2 kB')
    """
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(fields: str, estimate_bytes: float, detail: str,
                 available: int | None = None) -> None:
    """``ValueError`` naming ``fields`` if ``estimate_bytes`` exceeds the machine's memory
    (``available``, default: :func:`machine_memory_bytes`)."""
    limit = machine_memory_bytes() if available is None else available
    if limit is not None and estimate_bytes > limit:
        raise ValueError(f"{fields}: the run needs about {human_bytes(estimate_bytes)} of "
                         f"memory ({detail}), more than this machine's {human_bytes(limit)}")
