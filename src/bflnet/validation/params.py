"""Declared, validated parameters: frozen dataclasses whose fields carry help, choices and
bounds. Learners declare their hyper-parameters with them and scenario configs embed those
(by inheritance), so one declaration drives validation, ``bflnet describe``, ``--set``
parsing and sweeps.

Declare fields with :func:`param`; call :func:`validate` in ``__post_init__``; every error
is one line that names the field and what is allowed.

A config may also hold a *group* of settings whose class depends on another of its
fields (``custom-learner``'s learner settings depend on ``learner``): a :func:`group`
field, set one setting at a time as ``PREFIX.NAME`` (``--set learner.noise_var=0.1``).
It is not among :func:`field_types` (the plain parameters); :mod:`bflnet.runs.config`
routes the dotted names to it.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class NoiseSettings:  # a learner's hyper-parameters
...     noise_var: float = param(1.0, "variance of the noise", gt=0)
...     def __post_init__(self): validate(self)
>>> NoiseSettings(noise_var=-1.0)
Traceback (most recent call last):
...
ValueError: noise_var: must be a finite number > 0, got -1.0
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import types
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

from bflnet.validation.renames import rename_keys
from bflnet.validation.suggest import did_you_mean

T = TypeVar("T")


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters with the full
    length (a 5000-character value must not make a 5 kB line).

    >>> shown("ring"), shown("x" * 100, limit=10)
    ("'ring'", "'xxxxxxxx... (102 characters)")
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 1]}... ({len(text)} characters)"


def param(default: Any, help: str, *, choices: Iterable[Any] | None = None,
          ge: float | None = None, gt: float | None = None, le: float | None = None,
          lt: float | None = None) -> Any:
    """A config field with its documentation and the values it allows."""
    meta = {"help": help, "choices": tuple(choices) if choices is not None else None,
            "ge": ge, "gt": gt, "le": le, "lt": lt}
    return dataclasses.field(default=default, metadata=meta)


#: The metadata key that marks a :func:`group` field (its value: the group's prefix).
GROUP = "group"


def group(prefix: str, help: str) -> Any:
    """A config field holding a group of settings, each set as ``PREFIX.NAME=VALUE``; the
    config's ``__post_init__`` turns what was given (``None``: the defaults, or a mapping
    of name → value) into an instance of the settings class that applies
    (:func:`bflnet.runs.config.group_value`)."""
    return dataclasses.field(default=None, metadata={GROUP: prefix, "help": help})


def group_fields(cls: type) -> dict[str, str]:
    """``{prefix: field name}`` of a config class's :func:`group` fields."""
    return {f.metadata[GROUP]: f.name for f in dataclasses.fields(cls)
            if f.metadata.get(GROUP)}


def field_names(cls: type) -> tuple[str, ...]:
    """The names of a config class's fields (its plain parameters and its groups)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def field_types(cls: type) -> dict[str, Any]:
    """Resolved type hints of a config class's plain parameters (not its groups)."""
    return dict(_resolved_field_types(cls))


@functools.cache
def _resolved_field_types(cls: type) -> tuple[tuple[str, Any], ...]:
    # get_type_hints compiles every string annotation (a few ms a class): once per class
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls)
                 if not f.metadata.get(GROUP))


#: The field types a settings class may use (and ``X | None`` of them).
SETTING_TYPES = (int, float, str, bool)


def settings_class_problem(cls: Any) -> str | None:
    """What is wrong with ``cls`` as a class of settings (a frozen dataclass of
    :func:`param` fields of the types in :data:`SETTING_TYPES`, each with a default), or
    ``None``."""
    name = getattr(cls, "__name__", type(cls).__name__)
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return f"{name} is not a dataclass"
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return f"{name} is not frozen (@dataclass(frozen=True))"
    try:
        types_ = field_types(cls)
    except Exception as exc:  # a plugin's annotations
        return f"the field types of {name} do not resolve ({type(exc).__name__}: {exc})"
    for f in dataclasses.fields(cls):
        if f.metadata.get(GROUP):
            return f"field {f.name!r} of {name} is a group; settings are plain values"
        if f.default is dataclasses.MISSING:
            return f"field {f.name!r} of {name} has no default"
        base = base_type(types_[f.name])[0]
        if base not in SETTING_TYPES:
            return (f"field {f.name!r} of {name} is of type "
                    f"{getattr(base, '__name__', base)!s}; allowed: int, float, str, bool "
                    f"(or X | None)")
    return None


def base_type(tp: Any) -> tuple[type, bool]:
    """``(type, optional)`` for ``int``, ``float``, ``str``, ``bool`` or ``X | None``."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def _bound(value: float, base: type) -> str:
    """A bound as text: an integer field's in full (``1000000``), a float's short."""
    return str(int(value)) if base is int and float(value).is_integer() else f"{value:g}"


def allowed_text(f: dataclasses.Field, tp: Any) -> str:
    base, optional = base_type(tp)
    m = f.metadata
    if m.get("choices"):
        text = "one of " + ", ".join(str(c) for c in m["choices"])
    else:
        kind = {int: "an integer", float: "a finite number", bool: "true or false",
                str: "a string"}.get(base, base.__name__)
        bounds = [f"{op} {_bound(m[key], base)}" for key, op in
                  (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")) if m.get(key) is not None]
        text = kind + (" " + " and ".join(bounds) if bounds else "")
    return text + (" or none" if optional else "")


def validate(config: Any) -> None:
    """Check every field's type, choices and bounds; one-line ``ValueError`` otherwise."""
    for name, tp in field_types(type(config)).items():
        f = next(x for x in dataclasses.fields(config) if x.name == name)
        value = getattr(config, name)
        base, optional = base_type(tp)
        if value is None and optional:
            continue
        ok = isinstance(value, base) and not (base in (int, float) and isinstance(value, bool))
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        m = f.metadata
        if ok and m.get("choices") and value not in m["choices"]:
            ok = False
        if ok and base in (int, float):
            checks = (("ge", operator.ge), ("gt", operator.gt), ("le", operator.le),
                      ("lt", operator.lt))
            ok = all(m.get(key) is None or test(value, m[key]) for key, test in checks)
            ok = ok and (base is int or math.isfinite(value))  # nan, inf
        if not ok:
            hint = did_you_mean(value, m["choices"]) if m.get("choices") and isinstance(
                value, str) else ""
            raise ValueError(f"{name}: must be {allowed_text(f, tp)}, got {shown(value)}"
                             + (f"; {hint.strip()}" if hint else ""))


def subset(cls: type[T], obj: Any) -> T:
    """An instance of the dataclass ``cls`` from the same-named fields of ``obj`` (e.g. a
    learner's hyper-parameters from a scenario config that embeds them)."""
    return cls(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)})


def with_overrides(params: T, overrides: dict[str, Any]) -> T:
    """``params`` with the fields in ``overrides`` replaced (validated again); a one-line
    error for a name that is not a field."""
    overrides = rename_keys(type(params), overrides)  # old names: a deprecation line
    names = [f.name for f in dataclasses.fields(params)]  # type: ignore[arg-type]
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise ValueError(f"unknown hyper-parameter {unknown[0]!r}; "
                         f"{did_you_mean(unknown[0], names)}allowed: {', '.join(names)}")
    return dataclasses.replace(params, **overrides) if overrides else params  # type: ignore
