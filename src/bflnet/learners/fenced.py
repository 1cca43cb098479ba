"""A plugin's learner behind the fence (:mod:`bflnet.runtime.fence`).

:class:`FencedLearner` wraps a :class:`GlobalStateLearner` that a plugin made: every hook
the protocols call (``init``, ``init_agent``, ``local_update``, ``merge``,
``merge_weighted``, ``evaluate``, ``forget``) runs behind the fence, and what the
protocols and the recorder rely on is checked where it is returned:

- ``local_update`` returns an :class:`Update` whose ``work`` is a :class:`Work` of
  non-negative finite amounts, whose ``event`` is ``None`` or a string and whose
  ``metrics`` are ``None`` or metrics as below;
- ``evaluate`` returns metrics: a mapping of non-empty strings, none of them a column the
  run writes itself (``reserved``), to finite real numbers (they become a plain ``dict``
  of ``float``, and ``int`` where the value is an integer).

- ``merges_mean`` (read once) is ``True``, ``False`` or a one-line reason, and
  ``merge_mean`` returns a pair ``(state, variance added >= 0)``;
- ``combines`` (read once, when the learner is wrapped) is a
  :class:`~bflnet.learners.base.Combines`, its string value, or ``None`` (nothing
  declared: the protocols that need a declaration refuse the learner in one line).

Anything else is one :class:`~bflnet.validation.errors.PluginError` naming the plugin,
the hook and what it returned. The protocols see a learner like any other (their own
error reports name the node and iteration; the run then reports the plugin's error,
:func:`bflnet.runtime.fence.surfaced`). The states (``init``, ``merge``) are the plugin's
to define and are not checked.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bflnet.learners.base import (
    Combines,
    GlobalStateLearner,
    Update,
    Work,
    supports_weighted_merge,
)
from bflnet.runtime.fence import a_kind, call, refusal, shown
from bflnet.validation.errors import PluginError

#: What ``evaluate`` must return, as its errors say.
METRICS = "a mapping of str to finite real numbers"
#: The range of an integer metric (a table column of int64).
INT64 = (-(2**63), 2**63 - 1)


def _metric(value: Any) -> tuple[float | int | None, str]:
    """``(value as float or int, "")``, or ``(None, what is wrong)``."""
    if isinstance(value, bool) or type(value).__name__ == "bool_" or \
            not isinstance(value, numbers.Real):
        return None, a_kind(value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        if not INT64[0] <= number <= INT64[1]:
            return None, "an integer outside the int64 range"
        return number, ""
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None, "not convertible to a float"
    if not math.isfinite(number):
        return None, repr(number)
    return number, ""


def checked_metrics(value: Any, reserved: frozenset[str]) -> tuple[dict[str, Any] | None, str]:
    """``(metrics as a plain dict, "")``, or ``(None, what is wrong)``."""
    if not isinstance(value, Mapping):
        return None, ""
    out: dict[str, Any] = {}
    for key, raw in value.items():
        if not isinstance(key, str) or not key:
            return None, f"key {key!r} is not a non-empty string"
        if key in reserved:
            return None, f"{key!r} is a column the run writes itself"
        number, problem = _metric(raw)
        if number is None:
            return None, f"{key!r} is {problem}"
        out[key] = number
    return out, ""


def _work_problem(work: Any) -> str:
    if not isinstance(work, Work):
        return f"its work is {a_kind(work)}, not a Work"
    steps, flops = work.steps, work.flops
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        return f"its work's steps are {steps!r}, not a non-negative integer"
    if isinstance(flops, bool) or not isinstance(flops, numbers.Real) or \
            not (math.isfinite(flops) and flops >= 0):
        return f"its work's flops are {flops!r}, not a finite number >= 0"
    return ""


def _declared(who: str, value: Any) -> Combines | None:
    """The plugin's ``combines`` as a :class:`Combines` (``None``: declares nothing); a
    :class:`PluginError` for a value that is neither."""
    if value is None or isinstance(value, Combines):
        return value
    if isinstance(value, str) and value in {c.value for c in Combines}:
        return Combines(value)
    raise PluginError(f"{who}: combines is {shown(value)}; it must be one of "
                      f"{', '.join(f'Combines.{c.name}' for c in Combines)} "
                      f"(bflnet.learners.base.Combines) or None")


def _merges_mean(who: str, value: Any) -> bool | str:
    """The plugin's ``merges_mean``: ``True``, ``False`` or a one-line reason why not."""
    if isinstance(value, bool) or (isinstance(value, str) and value.strip()
                                   and "\n" not in value):
        return value
    raise PluginError(f"{who}: merges_mean is {shown(value)}; it must be True, False or a "
                      f"one-line reason why its merge takes no mean of the updates")


class FencedLearner(GlobalStateLearner):
    """``learner``'s hooks behind the fence, named ``who`` in errors (module docs)."""

    def __init__(self, learner: GlobalStateLearner, who: str,
                 reserved: frozenset[str] = frozenset()) -> None:
        self.learner = learner
        self.who = who
        self.reserved = frozenset(reserved)
        #: How errors name it (:func:`bflnet.learners.base.learner_label`).
        self.label = who
        self.uses_agent_streams = bool(call(who, "uses_agent_streams", getattr, learner,
                                            "uses_agent_streams", True))
        #: Its declaration (:class:`~bflnet.learners.base.Combines`), read once: the
        #: protocols that need one refuse ``None`` in one line naming the plugin.
        self.combines = _declared(who, call(who, "combines", getattr, learner, "combines",
                                            None))
        #: Whether it takes a noisy mean of the updates (``merges_mean``), read once.
        self.merges_mean = _merges_mean(who, call(who, "merges_mean", getattr, learner,
                                                  "merges_mean", False))

    def _call(self, hook: str, fn: Callable[..., Any], *args: Any) -> Any:
        return call(self.who, hook, fn, *args)

    def init(self, rng: Any) -> Any:
        return self._call("init", self.learner.init, rng)

    def init_agent(self, agent: Any, rng: Any) -> Any:
        return self._call("init_agent", self.learner.init_agent, agent, rng)

    def local_update(self, agent: Any, state: Any, agent_state: Any, rng: Any) -> Update:
        update = self._call("local_update", self.learner.local_update, agent, state,
                            agent_state, rng)
        if not isinstance(update, Update):
            raise refusal(self.who, "local_update", update, "a bflnet.learners.base.Update")
        problem = _work_problem(update.work)
        if not problem and update.event is not None and not isinstance(update.event, str):
            problem = f"its event is {a_kind(update.event)}, not a string"
        if not problem and update.metrics is not None:
            metrics, why = checked_metrics(update.metrics, self.reserved)
            problem = "" if metrics is not None else f"its metrics are not {METRICS}" + (
                f": {why}" if why else "")
            update.metrics = metrics
        if problem:
            raise refusal(self.who, "local_update", update, "an Update of the documented "
                          "types", problem)
        return update

    def merge(self, state: Any, updates: Sequence[Update]) -> Any:
        return self._call("merge", self.learner.merge, state, updates)

    def merge_mean(self, state: Any, mean: Any, channel_var: float,
                   rng: Any) -> tuple[Any, float]:
        value = self._call("merge_mean", self.learner.merge_mean, state, mean, channel_var,
                           rng)
        if not (isinstance(value, tuple) and len(value) == 2
                and isinstance(value[1], numbers.Real) and not isinstance(value[1], bool)
                and math.isfinite(value[1]) and value[1] >= 0):
            raise refusal(self.who, "merge_mean", value, "a pair (state, variance added "
                          ">= 0)")
        return value[0], float(value[1])

    def evaluate(self, state: Any) -> dict[str, float]:
        value = self._call("evaluate", self.learner.evaluate, state)
        metrics, why = checked_metrics(value, self.reserved)
        if metrics is None:
            raise refusal(self.who, "evaluate", value, METRICS, why)
        return metrics

    def forget(self, agent: Any, agent_state: Any) -> Any:
        return self._call("forget", self.learner.forget, agent, agent_state)


class _FencedWeightedLearner(FencedLearner):
    """A fenced learner whose plugin has a weighted merge."""

    def merge_weighted(self, state: Any, updates: Sequence[Update],
                       weights: Sequence[float]) -> Any:
        return self._call("merge_weighted", self.learner.merge_weighted, state, updates,
                          weights)


def fenced_learner(learner: GlobalStateLearner, who: str,
                   reserved: frozenset[str] = frozenset()) -> FencedLearner:
    """``learner`` (a plugin's, named ``who``) behind the fence; metric names in
    ``reserved`` (the run's own columns) are refused."""
    cls = _FencedWeightedLearner if supports_weighted_merge(learner) else FencedLearner
    return cls(learner, who, reserved)
