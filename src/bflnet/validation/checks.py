"""Eager argument checks shared by every layer: one-line ``ValueError``s that name the
argument and what it allows."""

from __future__ import annotations

import math
import numbers


def check_real(
    name: str,
    value: object,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> float:
    """``value`` as a float if it is a finite real number within the given bounds.

    >>> check_real("rate_bps", 5, gt=0)
    5.0
    >>> check_real("loss_prob", 1.0, ge=0, lt=1)
    Traceback (most recent call last):
    ...
    ValueError: loss_prob: must be a finite number in [0, 1), got 1.0
    """
    low, high = (gt, ge)[gt is None], (lt, le)[lt is None]
    if low is not None and high is not None:
        allowed = (
            f"in {'(' if gt is not None else '['}{low:g}, {high:g}{')' if lt is not None else ']'}"
        )
    elif low is not None:
        allowed = f"{'>' if gt is not None else '>='} {low:g}"
    elif high is not None:
        allowed = f"{'<' if lt is not None else '<='} {high:g}"
    else:
        allowed = ""
    ok = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and _finite(value)
        and (gt is None or value > gt)
        and (ge is None or value >= ge)
        and (lt is None or value < lt)
        and (le is None or value <= le)
    )
    if not ok:
        raise ValueError(f"{name}: must be a finite number {allowed}".rstrip()
                         + f", got {_short(value)}")
    return float(value)


def _finite(value: numbers.Real) -> bool:
    """Whether ``value`` is finite as a float (a 400-digit integer is not: it overflows)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _short(value: object, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_int(name: str, value: object, *, ge: int | None = None,
              le: int | None = None) -> int:
    """``value`` as an int if it is an integer (not a bool) within the given bounds.

    >>> check_int("K", 3, ge=1)
    3
    >>> check_int("K", 2.0, ge=1)
    Traceback (most recent call last):
    ...
    ValueError: K: must be an integer >= 1, got 2.0
    """
    ok = (isinstance(value, numbers.Integral) and not isinstance(value, bool)
          and (ge is None or value >= ge) and (le is None or value <= le))
    if not ok:
        bounds = " and ".join(b for b in (f">= {ge}" if ge is not None else "",
                                          f"<= {le}" if le is not None else "") if b)
        raise ValueError(f"{name}: must be an integer {bounds}".rstrip() + f", got {_short(value)}")
    return int(value)  # type: ignore[call-overload]


def is_number(token: str) -> bool:
    """Whether ``token`` parses as a float (e.g. a header cell does not)."""
    try:
        float(token)
    except ValueError:
        return False
    return True
