"""A plugin's scenario behind the fence (:mod:`bflnet.runtime.fence`).

What a plugin's module registered is checked once it is imported (:func:`checked`): its
config class must be a frozen dataclass whose fields are ``int``, ``float``, ``str`` or
``bool`` (or ``X | None``) with defaults, that builds with its defaults and has a
``footprint()`` method; the run function, description, plot, data sets, output columns
and state fields must be of their kinds. The scenario it becomes (its ``plugin`` set)
calls the plugin's code behind the fence: its config class (a ``ValueError`` there is the
user's value refused, as for any scenario), ``footprint()`` (must return a
:class:`Footprint`) and ``run`` (must return a pandas DataFrame with distinct string
column names). Anything else is one :class:`~bflnet.validation.errors.PluginError` naming
the plugin and the hook.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bflnet.runs.config import ValidationBug, make_config
from bflnet.runs.resources import Footprint
from bflnet.runs.schema import Schema
from bflnet.runtime.fence import a_kind, call, failure, fenced, raised, refusal
from bflnet.validation.errors import PluginError
from bflnet.validation.params import base_type, field_types

if TYPE_CHECKING:
    import pandas as pd

#: The types a config field may have (or ``X | None``): what ``--set`` can parse.
FIELD_TYPES = (int, float, str, bool)
#: What a config class must be, as its errors say.
CONFIG_CONTRACT = ("a frozen dataclass with a footprint() method, its fields declared with "
                   "bflnet.runs.config.param")


def fenced_config(scenario: Any, overrides: Mapping[str, Any] | None = None) -> Any:
    """A plugin ``scenario``'s validated config: its config class called behind the fence
    (a ``ValueError`` passes: the user's value refused)."""
    cls, who = scenario.config_cls, scenario.plugin
    hook = f"config {cls.__name__}"
    with fenced(who, hook, passing=(ValueError,)):
        try:
            return make_config(cls, overrides)
        except ValidationBug as exc:  # the plugin's exception, not a bug of bflnet's
            cause = exc.__cause__ or exc
    raise failure(who, hook, cause) from cause


def fenced_footprint(scenario: Any, config: Any) -> Footprint:
    """``config.footprint()`` of a plugin ``scenario``, behind the fence and checked (the
    caller checks its size)."""
    who = scenario.plugin
    footprint = call(who, "footprint()", lambda: config.footprint())
    if not isinstance(footprint, Footprint):
        raise refusal(who, "footprint()", footprint, "a bflnet.runs.resources.Footprint")
    try:
        footprint.summary()
        _ = footprint.memory_bytes + footprint.work + footprint.flops
    except Exception as exc:
        raise refusal(who, "footprint()", footprint,
                      "a Footprint built with Footprint().add(...)",
                      f"its parts: {raised(exc)}") from exc
    return footprint


def _fenced_run(who: str, fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """``fn`` behind the fence; its result checked."""

    def run(config: Any, **kwargs: Any) -> pd.DataFrame:
        import pandas as pd

        frame = call(who, "run", fn, config, **kwargs)
        if not isinstance(frame, pd.DataFrame):
            raise refusal(who, "run", frame, "a pandas DataFrame")
        bad = [c for c in frame.columns if not isinstance(c, str)]
        if bad or not frame.columns.is_unique:
            why = (f"column name {bad[0]!r} is not a string" if bad else
                   "its column names repeat")
            raise refusal(who, "run", frame, "a DataFrame with distinct string column names",
                          why)
        return frame

    return run


def _config_class_errors(cls: Any) -> str | None:
    """What is wrong with ``cls`` as a config class, or ``None``."""
    name = getattr(cls, "__name__", type(cls).__name__)
    if not isinstance(cls, type):
        return f"its config is {a_kind(cls)}, not a class"
    if not dataclasses.is_dataclass(cls):
        return f"its config class {name} is not a dataclass"
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return f"its config class {name} is not frozen"
    if not callable(getattr(cls, "footprint", None)):
        return f"its config class {name} has no footprint() method"
    try:
        types = field_types(cls)
    except Exception as exc:
        return f"the field types of its config class {name} do not resolve: {raised(exc)}"
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            return f"field {f.name!r} of its config class {name} has no default"
        base = base_type(types[f.name])[0]
        if base not in FIELD_TYPES:
            return (f"field {f.name!r} of its config class {name} is of type "
                    f"{getattr(base, '__name__', base)!s}; allowed: int, float, str, bool "
                    f"(or X | None)")
    return None


def _registration_errors(scenario: Any) -> str | None:
    """What is wrong with what the plugin registered besides its config class, or
    ``None``."""
    from bflnet.data.ensure import known

    if not callable(scenario.run_fn):
        return f"its run function is {a_kind(scenario.run_fn)}"
    if not isinstance(scenario.description, str):
        return f"its description is {a_kind(scenario.description)}, not a string"
    if scenario.plot is not None and not callable(scenario.plot):
        return f"its plot is {a_kind(scenario.plot)}, not a function"
    unknown = [d for d in scenario.datasets if d not in known()]
    if unknown:
        return f"data set {unknown[0]!r} is unknown; known: {', '.join(known())}"
    if scenario.columns is not None and not isinstance(scenario.columns, Schema):
        return f"its columns are {a_kind(scenario.columns)}, not a Schema"
    if scenario.state_free is not None:
        fields = {f.name for f in dataclasses.fields(scenario.config_cls)}
        if not isinstance(scenario.state_free, tuple) or \
                not all(isinstance(s, str) and s in fields for s in scenario.state_free):
            return "its state_free must be a tuple of its config's field names"
    if scenario.server_schedule is not None and not isinstance(scenario.server_schedule, str):
        return "its server_schedule must be a string"
    return None


def checked(who: str, scenario: Any) -> Any:
    """``scenario`` (a :class:`~bflnet.runs.registry.Scenario`), registered by the plugin
    ``who``, checked and behind the fence; a :class:`PluginError` naming the plugin and
    what is wrong otherwise."""
    problem = _config_class_errors(scenario.config_cls)
    if problem is not None:
        raise PluginError(f"{who}: {problem}; it must be {CONFIG_CONTRACT}")
    problem = _registration_errors(scenario)
    if problem is not None:
        raise PluginError(f"{who}: {problem}")
    fenced_scenario = dataclasses.replace(scenario, run_fn=_fenced_run(who, scenario.run_fn),
                                          datasets=tuple(scenario.datasets), plugin=who)
    with fenced(who, f"config {scenario.config_cls.__name__}() with its defaults"):
        fenced_scenario.config()  # a ValueError here is the plugin's: its defaults
    return fenced_scenario
