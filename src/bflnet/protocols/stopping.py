"""Stopping rules: iterations, simulated time, bit budget or a metric callback."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StopRule:
    """Stop after whichever limit is reached first (checked after every iteration).

    ``until`` receives the metrics of the latest evaluation (plus ``forget_pending`` once a
    forget was requested) and returns True to stop. ``cover`` stops once every agent has
    been scheduled at least once (random walk); ``forgotten`` once every forget request has
    happened and completed. Time and bit limits are checked between iterations, so the
    last iteration may overshoot.

    >>> StopRule(max_iterations=3).reason(iteration=3, time_s=0.0, cum_bits=0, metrics={})
    'max_iterations'
    """

    max_iterations: int | None = None
    max_time_s: float | None = None
    max_bits: int | None = None
    until: Callable[[Mapping[str, Any]], bool] | None = None
    cover: bool = False
    forgotten: bool = False

    def __post_init__(self) -> None:
        if all(v is None for v in (self.max_iterations, self.max_time_s, self.max_bits,
                                   self.until)) and not (self.cover or self.forgotten):
            raise ValueError("stop: set at least one of max_iterations, max_time_s, max_bits, "
                             "until, cover, forgotten")
        if self.max_iterations is not None and self.max_iterations < 0:
            raise ValueError(f"max_iterations: must be >= 0, got {self.max_iterations}")
        if self.max_time_s is not None and not self.max_time_s > 0:
            raise ValueError(f"max_time_s: must be > 0, got {self.max_time_s}")
        if self.max_bits is not None and self.max_bits < 0:
            raise ValueError(f"max_bits: must be >= 0, got {self.max_bits}")

    def reason(self, *, iteration: int, time_s: float, cum_bits: int,
               metrics: Mapping[str, Any], covered: bool = False,
               forgotten: bool = False) -> str | None:
        """Why the run should stop now, or ``None`` to go on."""
        if self.max_iterations is not None and iteration >= self.max_iterations:
            return "max_iterations"
        if self.max_time_s is not None and time_s >= self.max_time_s:
            return "max_time_s"
        if self.max_bits is not None and cum_bits >= self.max_bits:
            return "max_bits"
        if self.cover and covered:
            return "cover"
        if self.forgotten and forgotten:
            return "forgotten"
        if self.until is not None and metrics and self.until(metrics):
            return "until"
        return None
