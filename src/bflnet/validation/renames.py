"""Renamed parameters: old names stay accepted, with a one-line deprecation note.

A config class declares ``RENAMED: ClassVar[dict[str, str]] = {"old": "new"}`` (merged
over its base classes). Every way a parameter comes in (``--set``, ``--grid``, a TOML
file, :func:`bflnet.run` keywords, the record of a result file made by an older bflnet)
passes through :func:`rename_keys`, which maps the old names to the new ones and prints
one line on stderr per old name and process.

The convention: ``rounds`` (rounds or iterations of the protocol), ``local_steps`` (an
integer: local steps per round or visit), ``points_per_agent`` (data points per agent); a
comma list that runs several values in one call has a plural name
(``local_steps_values``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

_NOTED: set[tuple[str, str]] = set()


def renamed_fields(cls: type) -> dict[str, str]:
    """``{old: new}`` of a config class, its base classes' included."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update(klass.__dict__.get("RENAMED", {}))
    return out


def current_name(cls: type, name: str) -> str:
    """The field's current name (``name`` itself unless it is an old one); silent."""
    return renamed_fields(cls).get(name, name)


def _note(cls: type, old: str, new: str) -> None:
    scenario = str(getattr(cls, "SCENARIO", cls.__name__))
    if (scenario, old) in _NOTED:
        return
    _NOTED.add((scenario, old))
    print(f"note: {scenario}: parameter {old!r} is now called {new!r} (the old name is "
          f"deprecated)", file=sys.stderr)


def rename_keys(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every old parameter name replaced by its new one (a one-line note on
    stderr for each); a one-line error if both names are given."""
    renamed = renamed_fields(cls)
    if not any(key in renamed for key in values):
        return dict(values)
    out: dict[str, Any] = {}
    for key, value in values.items():
        new = renamed.get(key)
        if new is None:
            if key in out:
                raise ValueError(f"{key}: given twice (also under an old name)")
            out[key] = value
            continue
        if new in values or new in out:
            raise ValueError(f"{new}: given twice ({key!r} is its old name)")
        _note(cls, key, new)
        out[new] = value
    return out


def old_names(cls: type, name: str) -> list[str]:
    """The old names of field ``name`` (for ``bflnet describe``)."""
    return [old for old, new in renamed_fields(cls).items() if new == name]
