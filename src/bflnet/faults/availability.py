"""When devices and links are down: alternating on/off processes and traces.

An *availability* says, for one component (a node or a link), over which intervals of
simulated time it is down. Two kinds:

* :class:`OnOff`: an alternating renewal process with exponential up and down times
  (means ``mean_up_s`` and ``mean_down_s``); the component starts up, or in its
  stationary state with ``stationary=True`` (down with probability
  ``mean_down_s / (mean_up_s + mean_down_s)``). Its long-run down fraction is that ratio.
* :class:`Trace`: fixed down intervals, e.g. read from a CSV by :func:`read_trace`.

:meth:`Availability.timeline` turns either into a :class:`Timeline` for one run, drawing
from the component's own stream (so adding a component never moves another's draws and the
same seed gives the same faults). A timeline extends itself lazily as a run asks about
later times, and answers ``is_up(t)``, ``next_change(t)`` and ``down_time(t0, t1)``.

>>> import numpy as np
>>> line = Trace([(1.0, 2.0), (5.0, 6.5)]).timeline(np.random.default_rng(0))
>>> line.is_up(0.5), line.is_up(1.0), line.is_up(2.0), line.next_change(2.5)
(True, False, True, 5.0)
>>> line.down_time(0.0, 6.0)
2.0
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from bflnet.files.input_files import csv_rows, exists
from bflnet.validation.checks import check_real

#: Intervals an on/off timeline draws at a time when a run asks about a later time.
CHUNK = 64


class Availability(Protocol):
    """A recipe for one component's down intervals in a run."""

    def timeline(self, rng: np.random.Generator) -> Timeline:
        """The component's down intervals for one run, drawn from ``rng``."""
        ...


class Timeline:
    """Sorted, disjoint down intervals ``[start, end)`` of one component, extended on
    demand by ``more`` (a function giving the next intervals after the last one)."""

    def __init__(self, intervals: Sequence[tuple[float, float]],
                 more: OnOffDraws | None = None) -> None:
        self.starts = [s for s, _ in intervals]
        self.ends = [e for _, e in intervals]
        self._more = more

    def _cover(self, t: float) -> None:
        """Draw intervals until the known ones reach past ``t``."""
        while self._more is not None and (not self.ends or self.ends[-1] <= t):
            for s, e in self._more.next_intervals(CHUNK):
                self.starts.append(s)
                self.ends.append(e)

    def is_up(self, t: float) -> bool:
        """Whether the component is up at time ``t`` (down on ``[start, end)``)."""
        self._cover(t)
        i = bisect.bisect_right(self.starts, t) - 1
        return i < 0 or t >= self.ends[i]

    def next_change(self, t: float) -> float:
        """The first time after ``t`` at which the component changes state (``inf``
        when it never does)."""
        self._cover(t)
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and t < self.ends[i]:
            return self.ends[i]
        return self.starts[i + 1] if i + 1 < len(self.starts) else math.inf

    def down_time(self, t0: float, t1: float) -> float:
        """Seconds of ``[t0, t1)`` the component is down."""
        if not t1 >= t0:
            raise ValueError(f"t1: must be >= t0 = {t0}, got {t1}")
        self._cover(t1)
        lo = max(0, bisect.bisect_right(self.ends, t0))
        hi = bisect.bisect_left(self.starts, t1)
        return float(sum(max(0.0, min(e, t1) - max(s, t0))
                         for s, e in zip(self.starts[lo:hi], self.ends[lo:hi], strict=True)))

    def intervals(self, until: float) -> list[tuple[float, float]]:
        """The down intervals that start before ``until``."""
        self._cover(until)
        hi = bisect.bisect_left(self.starts, until)
        return list(zip(self.starts[:hi], self.ends[:hi], strict=True))


class UnionTimeline:
    """Down whenever any of ``lines`` is down (e.g. a link and the two nodes at its ends):
    the same queries as :class:`Timeline`."""

    def __init__(self, lines: Sequence[Timeline]) -> None:
        self.lines = list(lines)

    def is_up(self, t: float) -> bool:
        return all(line.is_up(t) for line in self.lines)

    def next_change(self, t: float) -> float:
        """The first time after ``t`` at which the union changes state."""
        if self.is_up(t):
            return min(line.next_change(t) for line in self.lines)
        while not self.is_up(t):  # the end of the union's down interval
            t = max(line.next_change(t) for line in self.lines if not line.is_up(t))
            if t == math.inf:
                break
        return t


class OnOffDraws:
    """The draws of one :class:`OnOff` timeline: exponential up and down times."""

    def __init__(self, spec: OnOff, rng: np.random.Generator) -> None:
        self.spec, self.rng = spec, rng
        self.t = 0.0
        if spec.stationary:
            p_down = spec.mean_down_s / (spec.mean_up_s + spec.mean_down_s)
            if rng.random() < p_down:  # memoryless: the residual down time is exponential
                self.first_down = rng.exponential(spec.mean_down_s)
                return
        self.first_down = 0.0

    def next_intervals(self, n: int) -> list[tuple[float, float]]:
        """The next ``n`` down intervals."""
        out = []
        if self.first_down:
            out.append((0.0, self.first_down))
            self.t, self.first_down = self.first_down, 0.0
            n -= 1
        up = self.rng.exponential(self.spec.mean_up_s, n)
        down = self.rng.exponential(self.spec.mean_down_s, n)
        for u, d in zip(up.tolist(), down.tolist(), strict=True):
            start = self.t + u
            end = start + d
            if end > start:  # a zero-length outage (underflow) is no outage
                out.append((start, end))
            self.t = end
        return out


@dataclass(frozen=True)
class OnOff:
    """Exponential up times (mean ``mean_up_s``) alternating with exponential down times
    (mean ``mean_down_s``); starts up, or stationary with ``stationary=True``."""

    mean_up_s: float
    mean_down_s: float
    stationary: bool = False

    def __post_init__(self) -> None:
        check_real("mean_up_s", self.mean_up_s, gt=0, le=1e12)
        check_real("mean_down_s", self.mean_down_s, gt=0, le=1e12)

    @classmethod
    def with_downtime(cls, fraction: float, mean_down_s: float,
                      stationary: bool = False) -> OnOff:
        """The process whose long-run down fraction is ``fraction`` (``0 < f < 1``)."""
        f = check_real("downtime fraction", fraction, gt=0, lt=1)
        return cls(mean_down_s * (1 - f) / f, mean_down_s, stationary)

    @property
    def down_fraction(self) -> float:
        """Long-run fraction of time down."""
        return self.mean_down_s / (self.mean_up_s + self.mean_down_s)

    def timeline(self, rng: np.random.Generator) -> Timeline:
        return Timeline([], OnOffDraws(self, rng))


@dataclass(frozen=True)
class Trace:
    """Fixed down intervals ``(start, end)`` in seconds (checked, sorted, merged)."""

    intervals: Sequence[tuple[float, float]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "intervals", tuple(merge_intervals(self.intervals)))

    def timeline(self, rng: np.random.Generator | None = None) -> Timeline:
        return Timeline(self.intervals)


def merge_intervals(intervals: Iterable[tuple[float, float]],
                    what: str = "intervals") -> list[tuple[float, float]]:
    """Sorted, disjoint intervals from ``(start, end)`` pairs with ``0 <= start < end``
    (finite), overlapping or touching ones merged."""
    pairs = []
    for i, pair in enumerate(intervals):
        try:
            start, end = pair
        except (TypeError, ValueError):
            raise ValueError(f"{what}[{i}]: must be a (start, end) pair, got {pair!r}") from None
        start = check_real(f"{what}[{i}] start", start, ge=0, le=1e15)
        end = check_real(f"{what}[{i}] end", end, gt=start, le=1e15)
        pairs.append((start, end))
    merged: list[tuple[float, float]] = []
    for start, end in sorted(pairs):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


#: The columns of a trace CSV.
TRACE_COLUMNS = ("component", "start", "end")


def read_trace(path: str | Path, components: Iterable[str] | None = None
               ) -> dict[str, Trace]:
    """Down intervals per component from a CSV with a header ``component,start,end`` (one
    row per outage; a component is a node name, or ``u-v`` for a link). With
    ``components``, a name not among them is an error. One-line ``ValueError`` naming the
    file, row and field for anything malformed."""
    path = Path(path)
    if not exists(path, "trace"):
        raise ValueError(f"trace: no such file {str(path)!r}")
    known = None if components is None else {str(c) for c in components}
    rows: dict[str, list[tuple[float, float]]] = {}
    with csv_rows(path, "trace") as reader:
        header = tuple(h.strip() for h in (reader.fieldnames or ()))
        if header[:3] != TRACE_COLUMNS:
            raise ValueError(f"trace {path.name}: the header must start with "
                             f"{','.join(TRACE_COLUMNS)}, got {','.join(header) or 'nothing'}")
        for line, row in enumerate(reader, start=2):
            name = (row.get("component") or "").strip()
            if not name:
                raise ValueError(f"trace {path.name}, line {line}: component is empty")
            if known is not None and name not in known:
                raise ValueError(f"trace {path.name}, line {line}: component {name!r} is not "
                                 f"in the network")
            values = []
            for field in ("start", "end"):
                text = (row.get(field) or "").strip()
                try:
                    values.append(float(text))
                except ValueError:
                    raise ValueError(f"trace {path.name}, line {line}: {field} must be a "
                                     f"number of seconds, got {text!r}") from None
            rows.setdefault(name, []).append((values[0], values[1]))
    return {name: Trace(merge_intervals(pairs, f"trace {path.name} {name}"))
            for name, pairs in rows.items()}
