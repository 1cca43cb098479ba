"""Comma-list parameters (``graphs="star,ring"``, ``particles="2,5,10"``) with one-line errors."""

from __future__ import annotations

import math
from collections.abc import Sequence

from bflnet.validation.params import shown
from bflnet.validation.suggest import did_you_mean


def comma_list(field: str, text: str, allowed: Sequence[str] | None = None) -> list[str]:
    """``"a,b"`` → ``["a", "b"]``; a one-line error naming ``field`` if empty, repeated or
    (with ``allowed``) unknown."""
    items = [t.strip() for t in str(text).split(",")]
    if not str(text).strip() or any(not t for t in items):
        raise ValueError(f"{field}: must be a non-empty comma list, got {shown(text)}")
    if len(set(items)) != len(items):
        raise ValueError(f"{field}: values must not repeat, got {shown(text)}")
    if allowed is not None:
        bad = [t for t in items if t not in allowed]
        if bad:
            hint = did_you_mean(bad[0], allowed).strip()
            raise ValueError(f"{field}: each value must be one of {', '.join(allowed)}, "
                             f"got {shown(bad[0])}" + (f"; {hint}" if hint else ""))
    return items


def int_list(field: str, text: str, minimum: int, maximum: int | None = None) -> list[int]:
    """Distinct integers in ``[minimum, maximum]`` from a comma list; one-line errors."""
    out = []
    for item in comma_list(field, text):
        try:
            value: int | None = int(item)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
            raise ValueError(f"{field}: each value must be an integer {bound}, got {shown(item)}")
        out.append(value)
    return out


def float_list(field: str, text: str, maximum: float = 1e6,
               allow_zero: bool = False) -> list[float]:
    """Distinct finite numbers in ``(0, maximum]`` (``[0, maximum]`` with ``allow_zero``)
    from a comma list; one-line errors."""
    out = []
    for item in comma_list(field, text):
        try:
            value = float(item)
        except ValueError:
            value = math.nan
        low_ok = value >= 0 if allow_zero else value > 0
        if not (math.isfinite(value) and low_ok and value <= maximum):
            raise ValueError(f"{field}: each value must be a number "
                             f"{'>=' if allow_zero else '>'} 0 and <= {maximum:g}, "
                             f"got {shown(item)}")
        out.append(value)
    if len(set(out)) != len(out):
        raise ValueError(f"{field}: values must not repeat, got {shown(text)}")
    return out
