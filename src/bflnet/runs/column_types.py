"""One type per column in a table written as Parquet: a run's table, and a sweep's parts
and its table, put together from several runs' tables.

A scenario's table may hold values of several kinds in one column, and the runs of one
sweep may disagree about what a column holds: ``node`` is a number (the node a random
walk visits) in one run and the text ``"server"`` in another (a parameter server's
rows). Where a column's values are of more than one kind among numbers, flags (true /
false) and texts, the column becomes text in every row: numbers as they read (``3``,
``2.5``; an integral float as an integer), flags as ``True`` / ``False``, a missing value
stays missing. Every other column is left as it is, so a table whose columns are each of
one kind is written as before.

>>> import pandas as pd
>>> table = pd.concat([pd.DataFrame({"node": [3, 4]}), pd.DataFrame({"node": ["server"]})])
>>> list(one_type_per_column(table)["node"])
['3', '4', 'server']
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

#: The kinds of value a column may hold; more than one of them makes it text.
NUMBER, FLAG, TEXT, OTHER = "number", "flag", "text", "other"
#: ``pandas.api.types.infer_dtype`` answers that mean one kind of value (or none).
_ONE_KIND = frozenset({"string", "integer", "floating", "mixed-integer-float", "decimal",
                       "boolean", "empty", "bytes", "datetime", "datetime64", "date",
                       "timedelta", "timedelta64", "time", "period", "interval",
                       "complex", "categorical"})
#: Largest integral float written as an integer (larger ones are not exact).
_EXACT = 2**53


def _missing(value: Any) -> bool:
    return (value is None or value is pd.NA or value is pd.NaT
            or (isinstance(value, float | np.floating) and math.isnan(value)))


def kind(value: Any) -> str:
    """:data:`NUMBER`, :data:`FLAG`, :data:`TEXT` or :data:`OTHER` (lists, arrays, ...)."""
    if isinstance(value, bool | np.bool_):
        return FLAG
    if isinstance(value, numbers.Real):
        return NUMBER
    return TEXT if isinstance(value, str) else OTHER


def kinds(column: pd.Series) -> set[str]:
    """The kinds of the column's values, missing ones aside."""
    if column.dtype == object and pd.api.types.infer_dtype(column, skipna=True) \
            not in _ONE_KIND:
        return {kind(v) for v in column if not _missing(v)}
    first = next((v for v in column if not _missing(v)), None)
    return set() if first is None else {kind(first)}


def as_text(value: Any) -> Any:
    """``value`` as the text a mixed column holds (a missing value stays ``None``)."""
    if _missing(value):
        return None
    if kind(value) == FLAG:
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < _EXACT else repr(number)
    return str(value)


def one_type_per_column(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every column whose values are of more than one kind made text (see
    the module's rule); the other columns, and a table without such a column, as they
    are."""
    mixed = [name for name in table.columns
             if table[name].dtype == object and len(kinds(table[name])) > 1]
    if not mixed:
        return table
    table = table.copy()
    text = pd.Series(["x"]).dtype  # the default text dtype, as a run's own text columns
    for name in mixed:
        table[name] = pd.Series([as_text(v) for v in table[name]], index=table.index,
                                dtype=text)
    return table
