"""Checks of a Python function's own arguments (not a scenario's parameters): a flag, a
path, a name. Each raises a one-line ``TypeError`` (wrong type) or ``ValueError`` (a value
not allowed) that names the argument and what it allows, before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

NUL = "\x00"


def _got(value: object) -> str:
    """``value`` as the errors show it: its type and (cut) repr, or ``None``."""
    return "None" if value is None else f"{type(value).__name__} {_shown(value)}"


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_flag(name: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False``.

    >>> check_flag("force", 1)
    Traceback (most recent call last):
    ...
    TypeError: force: must be True or False, got int 1
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name}: must be True or False, got {_got(value)}")
    return value


def check_path(name: str, value: object, *, optional: bool = False) -> Path | None:
    """``value`` as a :class:`~pathlib.Path`: a non-empty ``str`` or ``os.PathLike`` of a
    ``str`` (``None`` too if ``optional``).

    >>> check_path("out", b"x")
    Traceback (most recent call last):
    ...
    TypeError: out: must be a path (a str or os.PathLike such as pathlib.Path), got bytes b'x'
    >>> check_path("out", "")
    Traceback (most recent call last):
    ...
    ValueError: out: must be a non-empty path without NUL characters, got ''
    """
    if value is None and optional:
        return None
    text = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(text, str):
        allowed = "a path (a str or os.PathLike such as pathlib.Path)" + (
            " or None" if optional else "")
        raise TypeError(f"{name}: must be {allowed}, got {_got(value)}")
    if not text.strip() or NUL in text:
        raise ValueError(f"{name}: must be a non-empty path without NUL characters, got "
                         f"{_shown(text)}")
    return Path(text)


def check_name(name: str, value: object, what: str) -> str:
    """``value`` if it is a non-empty ``str`` (``what`` says what it names).

    >>> check_name("name", ["consensus-averaging"], "a scenario name")
    Traceback (most recent call last):
    ...
    TypeError: name: must be a scenario name (a str), got list ['consensus-averaging']
    """
    if not isinstance(value, str):
        raise TypeError(f"{name}: must be {what} (a str), got {_got(value)}")
    if not value.strip():
        raise ValueError(f"{name}: must be {what}, got {_shown(value)}")
    return value
