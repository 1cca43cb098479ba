"""Targets of a column (``accuracy>=0.8``, ``max_deviation<=5%``) and where each run first
meets one.

A target is ``COLUMN<=VALUE`` or ``COLUMN>=VALUE``; a ``VALUE`` ending in ``%`` is that
share of the run's first value of the column (``max_deviation<=5%``: down to 5 % of where
the run started). A run reaches the target at its first row (table order) whose value of
the column meets it; rows without a value (NaN) are skipped.

>>> t = Target.parse("accuracy >= 0.8")
>>> t.label, t.column, t.op, t.value, t.relative
('accuracy>=0.8', 'accuracy', '>=', 0.8, False)
>>> Target.parse("max_deviation<=5%").value
0.05
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: The comparisons a target can make.
OPERATORS = ("<=", ">=")
_FORM = re.compile(r"^\s*(?P<column>[^<>=]+?)\s*(?P<op><=|>=)\s*(?P<value>\S.*?)\s*$")


@dataclass(frozen=True)
class Target:
    """``column op value``; ``relative``: ``value`` is a share of the run's first value."""

    column: str
    op: str
    value: float
    relative: bool = False

    @classmethod
    def parse(cls, text: str) -> Target:
        """``"COLUMN<=VALUE"``, ``"COLUMN>=VALUE"`` or ``VALUE%``; a one-line error
        naming ``--target`` otherwise."""
        if not isinstance(text, str):
            raise ValueError(f"--target: expected a text COLUMN<=VALUE or COLUMN>=VALUE, got "
                             f"{type(text).__name__}")
        found = _FORM.match(text)
        if found is None:
            raise ValueError(f"--target: expected COLUMN<=VALUE or COLUMN>=VALUE (VALUE a "
                             f"number, or N% of the run's first value), got {text[:200]!r}")
        raw = found["value"]
        relative = raw.endswith("%")
        try:
            value = float(raw[:-1] if relative else raw)
        except ValueError:
            raise ValueError(f"--target {found['column']}: the value must be a number or N%, "
                             f"got {raw[:200]!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"--target {found['column']}: the value must be finite, got "
                             f"{raw[:200]!r}")
        return cls(found["column"], found["op"], value / 100 if relative else value, relative)

    @property
    def label(self) -> str:
        """The target as it is typed (``max_deviation<=5%``)."""
        value = f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"
        return f"{self.column}{self.op}{value}"


def first_crossing(values: pd.Series, runs: np.ndarray, target: Target) -> pd.Series:
    """Per run code in ``runs`` (one per row of ``values``): the position (row number) of
    its first row meeting ``target``, ``-1`` if none; the index holds every run code that
    has at least one value of the column (runs without any are left out)."""
    numbers = values.to_numpy(dtype=float)
    present = ~np.isnan(numbers)
    codes = pd.Series(runs[present])
    with_values = np.unique(codes.to_numpy())
    threshold = np.full(len(numbers), target.value)
    if target.relative:
        start = pd.Series(numbers[present]).groupby(codes.to_numpy(), sort=False).first()
        threshold = target.value * start.reindex(runs).to_numpy()
    with np.errstate(invalid="ignore"):
        ok = numbers <= threshold if target.op == "<=" else numbers >= threshold
    ok &= present
    rows = np.flatnonzero(ok)
    first = pd.Series(rows).groupby(runs[rows], sort=False).min()
    return first.reindex(with_values, fill_value=-1).astype(int)
