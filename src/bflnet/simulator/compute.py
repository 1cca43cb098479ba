"""Compute-time models: how long a node's local computation takes in simulated seconds."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from bflnet.learners.base import NO_WORK, Work

__all__ = ["NO_WORK", "ComputeModel", "FixedStepTime", "FlopsTime", "Work"]


class ComputeModel(ABC):
    """Maps reported :class:`Work` to simulated seconds.

    >>> FixedStepTime(0.01).duration(Work(steps=5))
    0.05
    """

    @abstractmethod
    def duration(self, work: Work) -> float:
        """Simulated seconds that ``work`` takes on this device."""


@dataclass(frozen=True, slots=True)
class FixedStepTime(ComputeModel):
    """A fixed number of seconds per local step."""

    seconds_per_step: float = 0.0

    def __post_init__(self) -> None:
        if not self.seconds_per_step >= 0:
            raise ValueError(f"seconds_per_step: must be >= 0, got {self.seconds_per_step}")

    def duration(self, work: Work) -> float:
        return work.steps * self.seconds_per_step


@dataclass(frozen=True, slots=True)
class FlopsTime(ComputeModel):
    """FLOPs divided by the device's sustained FLOP/s."""

    flops_per_s: float

    def __post_init__(self) -> None:
        if not self.flops_per_s > 0:
            raise ValueError(f"flops_per_s: must be > 0, got {self.flops_per_s}")

    def duration(self, work: Work) -> float:
        return work.flops / self.flops_per_s
