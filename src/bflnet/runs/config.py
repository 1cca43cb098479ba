"""Scenario configuration: frozen dataclasses whose fields carry help, choices and bounds.

Declare fields with :func:`param`; call :func:`validate` in ``__post_init__``. The same
metadata drives ``bflnet describe``, ``--set key=value`` parsing and sweep grids, and
every error is one line that names the field and what is allowed.

A :func:`~bflnet.validation.params.group` field holds settings whose class the config
chooses (a learner's hyper-parameters): each is a parameter named ``PREFIX.NAME``
(``--set learner.noise_var=0.1``, ``--grid learner.noise_var=0.1,1``, a TOML
``[learner]`` table), kept as given until the config's ``__post_init__`` types it against
the settings class (:func:`group_value`); a result file stores each under its dotted
name (:func:`bflnet.runs.provenance.canonical_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bflnet.validation.errors import PluginError
from bflnet.validation.params import (
    allowed_text,
    base_type,
    field_types,
    group,
    group_fields,
    param,
    shown,
    validate,
)
from bflnet.validation.renames import current_name, rename_keys
from bflnet.validation.suggest import did_you_mean

__all__ = ["ValidationBug", "as_dict", "describe_fields", "field_types", "group",
           "group_key", "group_value", "make_config", "param", "parse_overrides",
           "parse_value", "refused_fields", "validate"]

_MISSING = dataclasses.MISSING


class ValidationBug(Exception):
    """Something other than a ``ValueError`` escaped a config's parsing or validation: a bug
    in bflnet, never the user's (the CLI exits with code 3)."""


def _scenario_of(cls: type) -> str:
    return str(getattr(cls, "SCENARIO", cls.__name__))


def _shorten(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_value(cls: type, name: str, text: str) -> Any:
    """Convert the command-line string ``text`` to the type of field ``name``."""
    try:
        return _parse_value(cls, name, text)
    except ValueError:
        raise
    except Exception as exc:
        raise ValidationBug(f"bug in bflnet: parsing {name}={_shorten(text)} of "
                            f"{_scenario_of(cls)} raised {type(exc).__name__}: {exc}") from exc


def group_key(cls: type, name: str) -> tuple[str, str] | None:
    """``(prefix, setting)`` if ``name`` is ``PREFIX.SETTING`` of one of ``cls``'s groups,
    else ``None``."""
    prefix, dot, setting = name.partition(".")
    if not dot or prefix not in group_fields(cls):
        return None
    if not setting:
        raise ValueError(f"{name}: name a setting after the dot ({prefix}.NAME)")
    return prefix, setting


def _allowed_names(cls: type) -> str:
    return ", ".join([*field_types(cls), *(f"{p}.NAME" for p in group_fields(cls))])


def _parse_value(cls: type, name: str, text: str) -> Any:
    types_ = field_types(cls)
    name = current_name(cls, name)
    if group_key(cls, name) is not None:
        return text  # typed by the config, against the settings class it chooses
    if name not in types_:
        raise ValueError(f"unknown parameter {shown(name)}; {did_you_mean(name, types_)}"
                         f"allowed: {_allowed_names(cls)}")
    base, optional = base_type(types_[name])
    raw = text.strip()
    if optional and raw.lower() in ("none", "null", ""):
        return None
    try:
        if base is bool:
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return lowered in ("true", "1", "yes")
        if base is int:
            try:  # exact: a 19-digit seed must not be rounded through a float
                return int(raw)
            except ValueError:
                pass
            number = float(raw)  # "1e3", "3.0"
            if not number.is_integer():
                raise ValueError
            return int(number)
        if base is float:
            return float(raw)
        return raw
    except ValueError:
        f = next(x for x in dataclasses.fields(cls) if x.name == name)
        raise ValueError(f"{name}: must be {allowed_text(f, types_[name])}, got {shown(raw)}") \
            from None


def parse_overrides(cls: type, pairs: Iterable[str]) -> dict[str, Any]:
    """``["K=20", "graph=ring"]`` → ``{"K": 20, "graph": "ring"}`` with typed values."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--set: expected key=value, got {shown(pair)}")
        given, text = pair.split("=", 1)
        key = rename_keys(cls, {given.strip(): None}).popitem()[0]
        if spelled.setdefault(key, given.strip()) != given.strip():
            old = given.strip() if key != given.strip() else spelled[key]
            raise ValueError(f"{key}: given twice ({old!r} is its old name)")
        out[key] = parse_value(cls, key, text)
    return out


def _grouped(cls: type, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` with every ``PREFIX.NAME`` moved into a mapping under its group's
    field (over a mapping given for the field itself)."""
    fields = group_fields(cls)
    out: dict[str, Any] = {}
    settings: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        split = group_key(cls, key)
        if split is None:
            out[key] = value
        else:
            settings.setdefault(fields[split[0]], {})[split[1]] = value
    for name, values in settings.items():
        given = out.get(name)
        if given is None:
            out[name] = values
        elif isinstance(given, Mapping):
            out[name] = {**given, **values}
        else:  # a settings object: its fields, then the dotted ones
            out[name] = {**{f.name: getattr(given, f.name)
                            for f in dataclasses.fields(given)}, **values}
    return out


def make_config(cls: type, overrides: Mapping[str, Any] | None = None) -> Any:
    """An instance of ``cls`` with ``overrides`` (unknown keys give a one-line error)."""
    overrides = _grouped(cls, rename_keys(cls, overrides or {}))
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise ValueError(f"unknown parameter {shown(unknown[0])}; "
                         f"{did_you_mean(unknown[0], names)}allowed: {_allowed_names(cls)}")
    try:
        return cls(**overrides)
    except (ValueError, PluginError):  # the user's value; a plugin it loads (a learner's)
        raise
    except Exception as exc:
        given = ", ".join(f"{k}={_shorten(v)}" for k, v in overrides.items()) or "defaults"
        raise ValidationBug(f"bug in bflnet: validating {_scenario_of(cls)} ({given}) raised "
                            f"{type(exc).__name__}: {' '.join(str(exc).split())}") from exc


def _class_mapping(cls: type, method: str) -> Mapping[str, str]:
    """``cls.method()`` if the config class has that class method, else ``{}``."""
    found = getattr(cls, method, None)
    return dict(found()) if callable(found) else {}


def refused_fields(cls: type) -> dict[str, str]:
    """``{field: what decides instead}`` of the fields no settings of the config class
    read (``cls.refused_fields()``, the scenario configs' declaration): ``--set`` refuses
    any value but the default, and ``bflnet describe`` lists them apart."""
    return dict(_class_mapping(cls, "refused_fields"))


def describe_fields(cls: type) -> list[dict[str, Any]]:
    """One dict per field: name, default, allowed values, help; ``decided``: what decides
    instead of a field no settings read (:func:`refused_fields`; ``None`` for a
    parameter); ``note``: why its default differs from the shared one (the config's
    ``default_notes()``), or ``None``."""
    refused = refused_fields(cls)
    notes = _class_mapping(cls, "default_notes")
    rows = []
    for name, tp in field_types(cls).items():
        f = next(x for x in dataclasses.fields(cls) if x.name == name)
        default = f.default if f.default is not _MISSING else None
        rows.append({"name": name, "default": default, "allowed": allowed_text(f, tp),
                     "help": f.metadata.get("help", ""), "decided": refused.get(name),
                     "note": notes.get(name)})
    return rows


def group_value(prefix: str, owner: str, settings_cls: type | None, given: Any,
                build: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """The settings of group ``prefix`` for ``owner`` (how errors name what chose
    ``settings_cls``, e.g. ``learner 'gaussian-mean'``): an instance of ``settings_cls``
    from ``given`` (``None``: its defaults; a mapping of setting → value, a string parsed
    as ``--set`` parses it; an instance), or ``None`` if there is no settings class and
    nothing was given. ``build(values)`` makes the instance (default
    ``settings_cls(**values)``). Every error is one line naming ``PREFIX.NAME``."""
    if settings_cls is None:
        if given is None or (isinstance(given, Mapping) and not given):
            return None
        first = next(iter(given)) if isinstance(given, Mapping) else "NAME"
        raise ValueError(f"{prefix}.{first}: {owner} has no settings")
    if isinstance(given, settings_cls):
        return given
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ValueError(f"{prefix}: must be a mapping of setting to value or a "
                         f"{settings_cls.__name__}, got {shown(given)}")
    types_ = field_types(settings_cls)
    values: dict[str, Any] = {}
    for key, value in rename_keys(settings_cls, given).items():
        if key not in types_:
            allowed = ", ".join(f"{prefix}.{n}" for n in types_) or "none"
            raise ValueError(f"{prefix}.{key}: unknown setting of {owner}; allowed: "
                             f"{allowed}")
        base, _ = base_type(types_[key])
        try:
            if isinstance(value, str) and (base is not str or value.lower() in ("none", "null")):
                value = parse_value(settings_cls, key, value)
            if base is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
        except ValueError as exc:
            raise ValueError(f"{prefix}.{exc}") from None
        values[key] = value
    try:
        return build(values) if build is not None else settings_cls(**values)
    except ValueError as exc:
        text = str(exc)
        named = text.split(":", 1)[0] in types_
        raise ValueError(f"{prefix}.{text}" if named else
                         f"{prefix}: {owner}: {text}") from None


def describe_group(prefix: str, settings_cls: type) -> list[dict[str, Any]]:
    """:func:`describe_fields` of a group's settings class, named ``PREFIX.NAME``."""
    return [{**row, "name": f"{prefix}.{row['name']}"} for row in describe_fields(settings_cls)]


def describe_groups(cls: type) -> list[tuple[str, str, list[dict[str, Any]] | str]]:
    """``(prefix, choice, rows)`` for every settings class a config class's groups may
    hold: the class's ``group_choices(prefix)`` gives ``{choice: settings class}``
    (``None``: no settings; a string: why it cannot be loaded, shown in place of the
    rows)."""
    out: list[tuple[str, str, list[dict[str, Any]] | str]] = []
    choices = getattr(cls, "group_choices", None)
    for prefix in group_fields(cls):
        found = choices(prefix) if callable(choices) else {}
        for choice, settings_cls in found.items():
            rows: list[dict[str, Any]] | str = (
                settings_cls if isinstance(settings_cls, str) else
                [] if settings_cls is None else describe_group(prefix, settings_cls))
            out.append((prefix, choice, rows))
    return out


def as_dict(config: Any) -> dict[str, Any]:
    """The config's fields as a flat dict."""
    return dataclasses.asdict(config)
