"""Compute-time models: how long a node's local computation takes in simulated seconds.

Deterministic models (:class:`FixedStepTime`, :class:`FlopsTime`) map the reported
:class:`Work` to seconds. Stragglers: :class:`LogNormalTime` draws a log-normal factor per
local computation from the node's own stream ``compute.<node>`` (the network hands it
over; a model that never draws gets none and costs nothing), and :class:`TraceTime` plays
back each node's recorded durations (:func:`read_compute_trace`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.files.input_files import csv_rows, exists
from bflnet.learners.base import NO_WORK, Work
from bflnet.validation.checks import check_real

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NO_WORK", "ComputeModel", "FixedStepTime", "FlopsTime", "LogNormalTime",
           "NodeTrace", "TraceTime", "Work", "read_compute_trace"]

#: Largest median or traced duration accepted, in seconds (about 30 000 years).
MAX_SECONDS = 1e12
#: Largest log-normal sigma accepted (exp(10 z) already spans 40 orders of magnitude).
MAX_SIGMA = 10.0
#: What a log-normal median is per: a local step, a FLOP, or one whole local update.
PER = ("step", "flop", "update")


class ComputeModel(ABC):
    """Maps reported :class:`Work` to simulated seconds.

    A model with ``draws = True`` is handed the node's own stream as ``rng``; others get
    ``None``. :meth:`for_node` gives the model one node uses in one run (a model with
    per-run state, e.g. a trace's position, returns a fresh copy).

    >>> FixedStepTime(0.01).duration(Work(steps=5))
    0.05
    """

    #: Whether :meth:`duration` draws from the node's stream.
    draws: ClassVar[bool] = False

    @abstractmethod
    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        """Simulated seconds that ``work`` takes on this device."""

    def for_node(self, node: Any) -> ComputeModel:
        """The model node ``node`` uses for one run (``self`` unless it keeps state)."""
        return self


@dataclass(frozen=True, slots=True)
class FixedStepTime(ComputeModel):
    """A fixed number of seconds per local step."""

    seconds_per_step: float = 0.0

    def __post_init__(self) -> None:
        if not self.seconds_per_step >= 0:
            raise ValueError(f"seconds_per_step: must be >= 0, got {self.seconds_per_step}")

    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        return work.steps * self.seconds_per_step


@dataclass(frozen=True, slots=True)
class FlopsTime(ComputeModel):
    """FLOPs divided by the device's sustained FLOP/s."""

    flops_per_s: float

    def __post_init__(self) -> None:
        if not self.flops_per_s > 0:
            raise ValueError(f"flops_per_s: must be > 0, got {self.flops_per_s}")

    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        return work.flops / self.flops_per_s


@dataclass(frozen=True, slots=True)
class LogNormalTime(ComputeModel):
    """Stragglers: each local computation takes ``units · median_s · exp(sigma · Z)``
    seconds, ``Z ~ N(0, 1)`` drawn from the node's own stream, one draw per computation;
    ``units`` is ``work.steps`` (``per="step"``), ``work.flops`` (``"flop"``) or 1
    (``"update"``). The median is ``units · median_s``, the mean
    ``units · median_s · exp(sigma²/2)``; ``sigma = 0`` is a fixed time.

    >>> import numpy as np
    >>> LogNormalTime(0.1, sigma=0.0).duration(Work(steps=3), np.random.default_rng(0))
    0.30000000000000004
    """

    median_s: float
    sigma: float = 0.5
    per: str = "step"
    draws: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_real("median_s", self.median_s, gt=0, le=MAX_SECONDS)
        check_real("sigma", self.sigma, ge=0, le=MAX_SIGMA)
        if self.per not in PER:
            raise ValueError(f"per: must be one of {', '.join(PER)}, got {self.per!r}")

    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        if rng is None:
            raise ValueError("LogNormalTime: needs the node's stream (rng), got None")
        units = (work.steps if self.per == "step" else work.flops if self.per == "flop"
                 else 1.0)
        return units * self.median_s * math.exp(self.sigma * float(rng.standard_normal()))


@dataclass(eq=False)
class NodeTrace(ComputeModel):
    """One node's traced durations, played back one per local computation (the work is
    ignored); after the last it starts again (``cycle=True``) or raises a one-line
    ``ValueError`` (``cycle=False``). Holds its position: :meth:`for_node` starts afresh."""

    node: Any
    durations: tuple[float, ...]
    cycle: bool = True
    _next: int = field(default=0, repr=False)

    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        n = len(self.durations)
        if self._next >= n:
            if n == 0:
                raise ValueError(f"compute trace: no durations for node {self.node!r}")
            if not self.cycle:
                raise ValueError(f"compute trace: node {self.node!r} has used all its {n} "
                                 f"durations (cycle=False)")
            self._next = 0
        self._next += 1
        return self.durations[self._next - 1]

    def for_node(self, node: Any) -> NodeTrace:
        return NodeTrace(self.node, self.durations, self.cycle)


@dataclass(frozen=True)
class TraceTime(ComputeModel):
    """Trace-driven compute times: ``durations[str(node)]`` are node ``node``'s successive
    local computations' seconds (see :class:`NodeTrace` for what happens after the last;
    a node without durations fails when it first computes). Give it to a network as its
    ``compute``: each node gets its own :class:`NodeTrace` for each run.

    >>> trace = TraceTime({"0": (1.0, 2.0)})
    >>> node0 = trace.for_node(0)
    >>> [node0.duration(NO_WORK) for _ in range(3)]
    [1.0, 2.0, 1.0]
    """

    durations: Mapping[str, Sequence[float]]
    cycle: bool = True

    def __post_init__(self) -> None:
        clean = {}
        for name, values in self.durations.items():
            clean[str(name)] = tuple(
                check_real(f"durations[{name!r}][{i}]", v, ge=0, le=MAX_SECONDS)
                for i, v in enumerate(values))
        object.__setattr__(self, "durations", clean)

    def duration(self, work: Work, rng: np.random.Generator | None = None) -> float:
        raise ValueError("TraceTime: durations are per node; use for_node(node)")

    def for_node(self, node: Any) -> NodeTrace:
        return NodeTrace(node, tuple(self.durations.get(str(node), ())), self.cycle)


#: The columns of a compute-time trace CSV.
COMPUTE_TRACE_COLUMNS = ("node", "duration")


def read_compute_trace(path: str | Path, *, cycle: bool = True) -> TraceTime:
    """A :class:`TraceTime` from a CSV with the header ``node,duration`` (seconds; one row
    per local computation, in order per node). One-line ``ValueError`` naming the file,
    line and field for anything malformed (a duration must be finite, >= 0 and <= 1e12)."""
    path = Path(path)
    if not exists(path, "compute trace"):
        raise ValueError(f"compute trace: no such file {str(path)!r}")
    rows: dict[str, list[float]] = {}
    with csv_rows(path, "compute trace") as reader:
        header = tuple(h.strip() for h in (reader.fieldnames or ()))
        if header[:2] != COMPUTE_TRACE_COLUMNS:
            raise ValueError(f"compute trace {path.name}: the header must start with "
                             f"{','.join(COMPUTE_TRACE_COLUMNS)}, got "
                             f"{','.join(header) or 'nothing'}")
        for line, row in enumerate(reader, start=2):
            name = (row.get("node") or "").strip()
            if not name:
                raise ValueError(f"compute trace {path.name}, line {line}: node is empty")
            text = (row.get("duration") or "").strip()
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"compute trace {path.name}, line {line}: duration must be "
                                 f"a number of seconds, got {text!r}") from None
            rows.setdefault(name, []).append(check_real(
                f"compute trace {path.name}, line {line}: duration", value, ge=0,
                le=MAX_SECONDS))
    if not rows:
        raise ValueError(f"compute trace {path.name}: no rows")
    return TraceTime(rows, cycle)
