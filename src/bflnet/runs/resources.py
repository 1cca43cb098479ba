"""Resource guards: a config whose run would not fit in this process's memory, or whose
set-up would take an unreasonable amount of work, is refused before the run starts, with
one line naming the parameters and the estimate.

Every scenario config has a ``footprint()`` (:class:`Footprint`): the memory its largest
structures need (graph, links, dense matrices, data, result rows, ...) and the elementary
set-up operations (graph elements built, matrix entries, seeds spawned, ...), each part
with the user-facing fields that drive it. :func:`check_footprint` refuses it, naming the
fields of the largest parts, when it exceeds :func:`memory_limit_bytes` or
:data:`WORK_LIMIT`. The estimates are rough upper bounds (a run may use less), never the
run itself: nothing is allocated to make them.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass

#: Bytes of one float32 number.
FLOAT32 = 4
#: Bytes of one float64 number.
FLOAT64 = 8
#: Bytes of one recorded row (a dict of a dozen entries) while a run goes on, counting
#: the DataFrame built from the rows at its end.
ROW_BYTES = 2_000
#: Bytes per node of a NetworkX graph plus the simulator's node (queue, process, state).
NODE_BYTES = 1_500
#: Bytes per undirected edge: the graph's two adjacency entries and two simulated links.
EDGE_BYTES = 2_000
#: Bytes a compute thread reserves (its stack; an address-space limit counts it).
THREAD_BYTES = 8 * 2**20
#: Most elementary set-up operations (graph elements built, matrix entries filled, seeds
#: spawned, ...) one run may ask for: about half an hour on one core at ~10 µs each.
WORK_LIMIT = 2e8
#: Most floating-point operations of a run's dense linear algebra (theory columns).
FLOP_LIMIT = 2e12


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine (``None`` where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _vm_size_bytes() -> int:
    """Virtual memory this process already maps (0 where ``/proc`` does not say)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        return 0


def _cgroup_room_bytes() -> int | None:
    """Room left under this process's cgroup (v2) memory limit, if it has one."""
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            return max(0, int(text) - int(f.read().strip()))
    except (OSError, ValueError):
        return None


def memory_limit_bytes() -> int | None:
    """Memory a run in this process may use: the machine's physical memory, less where an
    address-space limit (``ulimit -v``) or a cgroup limit leaves less room."""
    limits = [machine_memory_bytes()]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        limits.append(max(0, soft - _vm_size_bytes()))
    limits.append(_cgroup_room_bytes())
    known = [x for x in limits if x is not None]
    return min(known) if known else None


def human_bytes(n: float) -> str:
    """``n`` bytes as a short text (``1.5 GB``).

    >>> human_bytes(1.5e9), human_bytes(2000), human_bytes(3e20)
    ('1.5 GB', '2 kB', '3e+08 TB')
    """
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def count(n: float) -> str:
    """A count as short text: ``12``, ``3.4e+06``."""
    return f"{n:.0f}" if n < 1e5 else f"{n:.2g}"


@dataclass(frozen=True)
class Part:
    """One structure of a run: what it is, its bytes and set-up operations, and the
    user-facing fields that make it large."""

    what: str
    fields: tuple[str, ...]
    bytes: float = 0.0
    work: float = 0.0
    flops: float = 0.0


@dataclass(frozen=True)
class Footprint:
    """The parts of a run that grow with its config (see the module docstring).

    >>> fp = Footprint().add("a 1000 x 1000 matrix", ("K",), bytes=8e6, work=1e6)
    >>> fp.memory_bytes, fp.work
    (8000000.0, 1000000.0)
    """

    parts: tuple[Part, ...] = ()

    def add(self, what: str, fields: tuple[str, ...] | list[str], *, bytes: float = 0.0,
            work: float = 0.0, flops: float = 0.0) -> Footprint:
        """This footprint with one more part (sizes as floats: never an overflow)."""
        part = Part(what, tuple(fields), float(bytes), float(work), float(flops))
        return Footprint((*self.parts, part))

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint((*self.parts, *other.parts))

    @property
    def memory_bytes(self) -> float:
        return math.fsum(p.bytes for p in self.parts)

    @property
    def work(self) -> float:
        return math.fsum(p.work for p in self.parts)

    @property
    def flops(self) -> float:
        return math.fsum(p.flops for p in self.parts)

    def summary(self) -> str:
        """One line: the memory and set-up estimate (for a progress bar's description)."""
        return f"~{human_bytes(self.memory_bytes)}, {count(self.work)} set-up operations"


def _largest(parts: tuple[Part, ...], key: str, show: int = 3) -> tuple[str, str]:
    """The fields and the description of the largest parts by ``key``."""
    ranked = sorted((p for p in parts if getattr(p, key) > 0),
                    key=lambda p: getattr(p, key), reverse=True)[:show]
    top = getattr(ranked[0], key) if ranked else 0.0
    named = [p for p in ranked if getattr(p, key) >= 0.1 * top]  # the parts that matter
    fields = ", ".join(dict.fromkeys(f for p in named for f in p.fields)) or "the config"
    unit = human_bytes if key == "bytes" else count
    detail = "; ".join(f"{p.what}: {unit(getattr(p, key))}" for p in ranked)
    return fields, detail


def check_footprint(footprint: Footprint, limit: int | None = None) -> None:
    """One-line ``ValueError`` naming the fields of the largest parts when the footprint's
    memory exceeds ``limit`` (default :func:`memory_limit_bytes`), its set-up operations
    :data:`WORK_LIMIT`, or its dense linear algebra :data:`FLOP_LIMIT`."""
    limit = memory_limit_bytes() if limit is None else limit
    if limit is not None and footprint.memory_bytes > limit:
        fields, detail = _largest(footprint.parts, "bytes")
        raise ValueError(f"{fields}: the run needs about {human_bytes(footprint.memory_bytes)}"
                         f" of memory ({detail}), more than the {human_bytes(limit)} this "
                         f"process may use")
    if footprint.work > WORK_LIMIT:
        fields, detail = _largest(footprint.parts, "work")
        raise ValueError(f"{fields}: the set-up needs about {count(footprint.work)} "
                         f"operations ({detail}), more than the {WORK_LIMIT:.0e} one run may "
                         f"ask for")
    if footprint.flops > FLOP_LIMIT:
        fields, detail = _largest(footprint.parts, "flops")
        raise ValueError(f"{fields}: the run's dense linear algebra needs about "
                         f"{count(footprint.flops)} floating-point operations ({detail}), "
                         f"more than the {FLOP_LIMIT:.0e} one run may ask for")


def check_memory(fields: str, estimate_bytes: float, detail: str,
                 available: int | None = None) -> None:
    """``ValueError`` naming ``fields`` if ``estimate_bytes`` exceeds the memory this process
    may use (``available``, default: :func:`memory_limit_bytes`)."""
    limit = memory_limit_bytes() if available is None else available
    if limit is not None and estimate_bytes > limit:
        raise ValueError(f"{fields}: the run needs about {human_bytes(estimate_bytes)} of "
                         f"memory ({detail}), more than the {human_bytes(limit)} this process may "
                         f"use")
