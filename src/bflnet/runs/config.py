"""Scenario configuration: frozen dataclasses whose fields carry help, choices and bounds.

Declare fields with :func:`param`; call :func:`validate` in ``__post_init__``. The same
metadata drives ``bflnet describe``, ``--set key=value`` parsing and sweep grids, and
every error is one line that names the field and what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from bflnet.validation.params import allowed_text, base_type, field_types, param, shown, validate
from bflnet.validation.renames import current_name, rename_keys
from bflnet.validation.suggest import did_you_mean

__all__ = ["ValidationBug", "as_dict", "describe_fields", "field_types", "make_config",
           "param", "parse_overrides", "parse_value", "validate"]

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


def _parse_value(cls: type, name: str, text: str) -> Any:
    types_ = field_types(cls)
    name = current_name(cls, name)
    if name not in types_:
        raise ValueError(f"unknown parameter {shown(name)}; {did_you_mean(name, types_)}"
                         f"allowed: {', '.join(types_)}")
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


def make_config(cls: type, overrides: Mapping[str, Any] | None = None) -> Any:
    """An instance of ``cls`` with ``overrides`` (unknown keys give a one-line error)."""
    overrides = rename_keys(cls, overrides or {})
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise ValueError(f"unknown parameter {shown(unknown[0])}; "
                         f"{did_you_mean(unknown[0], names)}allowed: {', '.join(names)}")
    try:
        return cls(**overrides)
    except ValueError:
        raise
    except Exception as exc:
        given = ", ".join(f"{k}={_shorten(v)}" for k, v in overrides.items()) or "defaults"
        raise ValidationBug(f"bug in bflnet: validating {_scenario_of(cls)} ({given}) raised "
                            f"{type(exc).__name__}: {' '.join(str(exc).split())}") from exc


def describe_fields(cls: type) -> list[dict[str, Any]]:
    """One dict per field: name, type, default, allowed values, help."""
    rows = []
    for name, tp in field_types(cls).items():
        f = next(x for x in dataclasses.fields(cls) if x.name == name)
        default = f.default if f.default is not _MISSING else None
        rows.append({"name": name, "default": default, "allowed": allowed_text(f, tp),
                     "help": f.metadata.get("help", "")})
    return rows


def as_dict(config: Any) -> dict[str, Any]:
    """The config's fields as a flat dict."""
    return dataclasses.asdict(config)
