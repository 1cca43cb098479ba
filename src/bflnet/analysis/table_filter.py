"""``--where column=value`` filters of result tables, and the checks of the columns and
ranges a plot names (no matplotlib here: these errors come before it is loaded).

Filters on different columns must all hold; several filters on one column keep the rows
that match any of them (``--where graph=ring --where graph=torus``).

>>> import pandas as pd
>>> t = pd.DataFrame({"graph": ["ring", "torus", "star"], "K": [8, 16, 8]})
>>> where(t, ["K=8", "graph=ring", "graph=star"])["graph"].tolist()
['ring', 'star']
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Values listed in an error (the rest are counted).
SHOWN_VALUES = 12
#: Figure files that can be written.
FIGURE_FORMATS = (".png", ".pdf", ".svg")


def check_column(frame: pd.DataFrame, role: str, column: str | None,
                 numeric: bool = False) -> None:
    """A one-line ``ValueError`` naming ``role`` (an option) if ``column`` is not in
    ``frame`` (or not numeric when ``numeric``)."""
    if column is None:
        return
    if column not in frame.columns:
        raise ValueError(f"{role}: unknown column {column!r}; available: "
                         f"{', '.join(map(str, frame.columns))}")
    if numeric and (not pd.api.types.is_numeric_dtype(frame[column])
                    or pd.api.types.is_bool_dtype(frame[column])):
        raise ValueError(f"{role}: column {column!r} is not numeric")


def value_list(values: Sequence[object], shown: int = SHOWN_VALUES) -> str:
    """``values`` as a short comma list (the first ``shown``, then how many more)."""
    text = [format_value(v) for v in values[:shown]]
    more = len(values) - shown
    return ", ".join(text) + (f" and {more} more" if more > 0 else "")


def format_value(value: object) -> str:
    """A table value as the user would type it (``0.2``, ``8``, ``ring``)."""
    if isinstance(value, float | np.floating) and math.isfinite(value) \
            and float(value).is_integer():
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def parse_where(text: str) -> tuple[str, str]:
    """``"column=value"`` -> ``(column, value)``; a one-line error otherwise."""
    column, sep, value = text.partition("=")
    if not sep or not column.strip():
        raise ValueError(f"--where: expected column=value, got {text[:200]!r}")
    return column.strip(), value.strip()


def _matches(series: pd.Series, column: str, value: str) -> pd.Series:
    if pd.api.types.is_bool_dtype(series):
        if value.lower() not in ("true", "false"):
            raise ValueError(f"--where {column}={value[:200]}: {column} is true or false")
        return series == (value.lower() == "true")
    if pd.api.types.is_numeric_dtype(series):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--where {column}={value[:200]}: {column} is numeric; give a "
                             f"number") from None
        if math.isnan(number):
            return series.isna()
        return pd.Series(np.isclose(series.to_numpy(dtype=float), number, rtol=1e-9,
                                    atol=0.0), index=series.index)
    return series.astype(str) == value


def sorted_values(series: pd.Series) -> list[object]:
    """The distinct non-missing values of ``series``, sorted where they can be."""
    values = list(pd.unique(series.dropna()))
    try:
        return sorted(values)
    except TypeError:
        return values


def where(frame: pd.DataFrame, filters: Sequence[str]) -> pd.DataFrame:
    """The rows of ``frame`` that match every ``column=value`` filter (module docs); a
    one-line error for a malformed filter, an unknown column, or a value no row has."""
    by_column: dict[str, list[str]] = {}
    for text in filters:
        column, value = parse_where(text)
        check_column(frame, "--where", column)
        by_column.setdefault(column, []).append(value)
    keep = pd.Series(True, index=frame.index)
    for column, values in by_column.items():
        series = frame[column]
        for value in values:
            hit = _matches(series, column, value)
            if not hit.any():
                present = sorted_values(series)
                raise ValueError(f"--where {column}={value[:200]}: no row has this value; "
                                 f"{column} takes {value_list(present)}")
        keep &= np.logical_or.reduce([_matches(series, column, v) for v in values])
    rows = frame[keep]
    if rows.empty:
        raise ValueError(f"--where: no row matches {' and '.join(filters)} together")
    return rows


def parse_limits(role: str, text: str | None, log: bool = False
                 ) -> tuple[float, float] | None:
    """``"lo,hi"`` -> ``(lo, hi)`` (finite, lo < hi, lo > 0 on a log axis); ``None``
    passes through."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"{role}: expected two numbers lo,hi, got {text[:200]!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise ValueError(f"{role}: expected finite lo < hi, got {text[:200]!r}")
    if log and lo <= 0:
        raise ValueError(f"{role}: a log axis needs lo > 0, got {text[:200]!r}")
    return lo, hi
