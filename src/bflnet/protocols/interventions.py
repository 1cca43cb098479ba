"""Interventions: things that happen to a run at a simulated time or iteration, on the same
timeline as the learning (so time and bits keep running through them)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: Marks a :class:`Phase` setting that stays as it was.
KEEP: Any = "keep"


@dataclass(frozen=True)
class Phase:
    """Parameter-server settings that change when an intervention happens: the agents
    scheduled from then on (``agents``), the ``uplink_codec`` and ``eval_every``; ``KEEP``
    leaves a setting as it was."""

    agents: Sequence[Any] | Any = KEEP
    uplink_codec: Any = KEEP
    eval_every: int | Any = KEEP

    def __post_init__(self) -> None:
        if self.agents is not KEEP:
            object.__setattr__(self, "agents", tuple(self.agents))
            if not self.agents:
                raise ValueError("phase.agents: must name at least one agent")
        if self.eval_every is not KEEP and (
                isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int)
                or self.eval_every < 1):
            raise ValueError(f"phase.eval_every: must be an integer >= 1, got {self.eval_every!r}")


@dataclass(frozen=True)
class ForgetRequest:
    """``agents`` ask for their data to be forgotten, right after iteration
    ``after_iteration`` (0: before the first) or at the first iteration boundary at or after
    simulated time ``at_time_s``; exactly one of the two is set.

    The protocol hands each agent's private state to ``learner.forget`` and keeps the
    result; it records a ``forget_request`` row per agent, a ``forgotten`` row when an
    update that completes an agent's forget is merged, and from the request on a
    ``forget_pending`` column (agents whose forget is not complete). ``then`` changes the
    parameter server's settings from the request on (e.g. schedule only the forgetting
    agents, as Forget-SVGD does).

    ``hold_token`` (random walk): once the token reaches a forgetting agent, that agent
    keeps it (is scheduled again, no hand-over) until its forget is complete, i.e. until an
    update of it with ``event="forgotten"`` is merged (the original G-FVL code's iterative
    unlearning); the walk then goes on. Learners never see the token.
    """

    agents: Sequence[Any]
    after_iteration: int | None = None
    at_time_s: float | None = None
    then: Phase | None = None
    hold_token: bool = False

    def __post_init__(self) -> None:
        agents = tuple(self.agents) if isinstance(self.agents, Iterable) and not isinstance(
            self.agents, str | bytes) else (self.agents,)
        if not agents:
            raise ValueError("forget.agents: must name at least one agent")
        object.__setattr__(self, "agents", agents)
        if (self.after_iteration is None) == (self.at_time_s is None):
            raise ValueError("forget: set exactly one of after_iteration and at_time_s")
        if self.after_iteration is not None and (
                isinstance(self.after_iteration, bool) or not isinstance(self.after_iteration, int)
                or self.after_iteration < 0):
            raise ValueError(f"forget.after_iteration: must be an integer >= 0, "
                             f"got {self.after_iteration!r}")
        if self.at_time_s is not None and not (
                isinstance(self.at_time_s, int | float) and math.isfinite(self.at_time_s)
                and self.at_time_s >= 0):
            raise ValueError(f"forget.at_time_s: must be a finite number >= 0, "
                             f"got {self.at_time_s!r}")
        if not isinstance(self.hold_token, bool):
            raise ValueError(f"forget.hold_token: must be true or false, got {self.hold_token!r}")

    def due(self, iteration: int, time_s: float) -> bool:
        """Whether the request happens at the boundary after ``iteration`` (time ``time_s``)."""
        if self.after_iteration is not None:
            return iteration >= self.after_iteration
        return time_s >= self.at_time_s  # type: ignore[operator]
