"""The record of a run: flat rows appended during the run, one tidy DataFrame at the end."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import simpy

#: Columns every row carries, in this order.
BASE_COLUMNS = ("time_s", "iteration", "event", "cum_bits", "cum_bits_delivered")
DIRECTION_COLUMNS = ("cum_bits_up", "cum_bits_down")


class Recorder:
    """Appends rows stamped with the simulated time and the cumulative bit counters.

    ``cum_bits`` counts every bit put on the air (retransmissions included) and
    ``cum_bits_delivered`` the bits of messages that arrived. Where a server exists,
    ``cum_bits_up`` / ``cum_bits_down`` split the on-air bits by direction.

    The rows of :meth:`record_iteration` (one per iteration of a random walk, the bulk of
    a long record) are kept column by column until another kind of row comes (a run of
    them is one block of column lists); :attr:`rows` gives every row as a dict, and
    :meth:`to_frame` builds the same DataFrame as ``DataFrame.from_records(rows)`` (the
    same columns, order, dtypes and values), typing whole columns at once.

    >>> env = simpy.Environment()
    >>> rec = Recorder(env)
    >>> rec.count_bits(100, delivered=True)
    >>> rec.record("round", deviation=0.5)
    >>> rec.to_frame()[["time_s", "cum_bits", "deviation"]].values.tolist()
    [[0.0, 100.0, 0.5]]
    """

    def __init__(
        self, env: simpy.Environment, *, has_server: bool = False, record_messages: bool = False
    ) -> None:
        self.env = env
        self.has_server = has_server
        self.record_messages = record_messages
        self.iteration = 0
        self.cum_bits = 0
        self.cum_bits_delivered = 0
        self.cum_bits_up = 0
        self.cum_bits_down = 0
        self._rows: list[dict[str, Any]] = []
        #: The trailing block of iteration rows, column by column (``None``: no block).
        self._block: dict[str, list[Any]] | None = None
        self._block_len = 0
        self._metric_keys: tuple[str, ...] = ()
        self.context: dict[str, Any] = {}

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row so far as a dict, in order (the list the recorder appends to)."""
        self._flush()
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict[str, Any]]) -> None:
        self._block, self._block_len = None, 0
        self._rows = rows

    def last_row(self) -> dict[str, Any]:
        """The last row as a dict (without turning a block of iteration rows into dicts)."""
        block = self._block
        if block is None:
            return self._rows[-1]
        return {name: column[-1] for name, column in block.items()
                if column[-1] is not _MISSING}

    def count_bits(self, bits_on_air: int, *, delivered: bool, direction: str = "d2d",
                   bits_delivered: int | None = None) -> None:
        """Add one message's on-air bits (and its payload bits if it was delivered)."""
        self.cum_bits += bits_on_air
        if delivered:
            self.cum_bits_delivered += bits_on_air if bits_delivered is None else bits_delivered
        if direction == "up":
            self.cum_bits_up += bits_on_air
        elif direction == "down":
            self.cum_bits_down += bits_on_air

    def record(self, event: str, **fields: Any) -> None:
        """Append one row stamped with time, iteration and the bit counters."""
        if self._block is not None:
            self._flush()
        row = {
            "time_s": self.env.now,
            "iteration": self.iteration,
            "event": event,
            "cum_bits": self.cum_bits,
            "cum_bits_delivered": self.cum_bits_delivered,
        }
        if self.has_server:
            row["cum_bits_up"] = self.cum_bits_up
            row["cum_bits_down"] = self.cum_bits_down
        row.update(self.context)
        row.update(fields)
        self._rows.append(row)

    def record_iteration(self, event: str, node: Any, metrics: dict[str, Any],
                         now: float) -> None:
        """``record(event, node=node, **metrics)`` at the current time ``now`` (the
        clock's), without the keyword packing: one row per iteration of a random walk,
        appended to the trailing block of column lists."""
        if self.has_server or self.context:
            self._record_iteration_row(event, node, metrics, now)
            return
        block = self._block
        if block is None or (metrics and tuple(metrics) != self._metric_keys):
            if not self._extend_block(metrics):
                self._record_iteration_row(event, node, metrics, now)
                return
            block = self._block
            assert block is not None
        block["time_s"].append(now)
        block["iteration"].append(self.iteration)
        block["event"].append(event)
        block["cum_bits"].append(self.cum_bits)
        block["cum_bits_delivered"].append(self.cum_bits_delivered)
        block["node"].append(node)
        if metrics:
            for key, value in metrics.items():
                block[key].append(value)
        elif self._metric_keys:
            for key in self._metric_keys:
                block[key].append(_MISSING)
        self._block_len += 1

    def _extend_block(self, metrics: dict[str, Any]) -> bool:
        """Start the block, or add ``metrics``' new columns to it (earlier rows lack
        them); False where the block cannot hold the row (a metric named like a base
        column, or keys in another order)."""
        keys = tuple(metrics)
        if any(key in _BLOCK_BASE for key in keys):
            return False
        if self._block is None:
            self._block = {name: [] for name in _BLOCK_BASE}
            self._block_len, self._metric_keys = 0, ()
        old = self._metric_keys
        if keys[:len(old)] != old:
            self._flush()
            return self._extend_block(metrics)
        for key in keys[len(old):]:
            self._block[key] = [_MISSING] * self._block_len
        self._metric_keys = keys
        return True

    def _record_iteration_row(self, event: str, node: Any, metrics: dict[str, Any],
                              now: float) -> None:
        if self._block is not None:
            self._flush()
        row = {
            "time_s": now,
            "iteration": self.iteration,
            "event": event,
            "cum_bits": self.cum_bits,
            "cum_bits_delivered": self.cum_bits_delivered,
        }
        if self.has_server:
            row["cum_bits_up"] = self.cum_bits_up
            row["cum_bits_down"] = self.cum_bits_down
        if self.context:
            row.update(self.context)
        row["node"] = node
        if metrics:
            row.update(metrics)
        self._rows.append(row)

    def _flush(self) -> None:
        """Turn the block of iteration rows into dict rows (another kind of row comes)."""
        block = self._block
        if block is None:
            return
        self._block, self._block_len = None, 0
        names = list(block)
        append = self._rows.append
        for values in zip(*block.values(), strict=True):
            append({name: value for name, value in zip(names, values, strict=True)
                    if value is not _MISSING})

    def to_frame(self) -> pd.DataFrame:
        """All rows as one DataFrame; the base columns come first."""
        if self._block is None or not self._block_len:
            self._flush()
            frame = pd.DataFrame.from_records(self._rows)
        else:
            frame = _frame_with_block(self._rows, self._block)
        if frame.empty:
            cols = list(BASE_COLUMNS) + (list(DIRECTION_COLUMNS) if self.has_server else [])
            return pd.DataFrame(columns=cols)
        first = [c for c in (*BASE_COLUMNS, *DIRECTION_COLUMNS) if c in frame.columns]
        rest = [c for c in frame.columns if c not in first]
        return frame[first + rest]


class _Missing:
    """A block's mark for a row without that column (a dict row would lack the key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
_BLOCK_BASE = ("time_s", "iteration", "event", "cum_bits", "cum_bits_delivered", "node")


def _frame_with_block(rows: list[dict[str, Any]], block: dict[str, list[Any]]
                      ) -> pd.DataFrame:
    """``DataFrame.from_records(rows + the block's rows as dicts)``, built column by
    column: the columns in order of first appearance, a missing value NaN. A column of
    only Python floats (or floats and a few ints of at most 2**53 in magnitude among the
    dict rows, such as the clock's initial 0) is float64, of only Python ints in
    int64's range int64, of only strings the string dtype, as pandas infers them; every
    other column is inferred by ``from_records`` itself."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    columns += [name for name in block if name not in columns]
    n_block = len(block["time_s"])
    nan = np.nan
    data: dict[str, Any] = {}
    other: dict[str, list[Any]] = {}
    for name in columns:
        head = [row.get(name, nan) for row in rows]
        tail = block.get(name)
        if tail is None:
            tail = [nan] * n_block
        tail_kinds = set(map(type, tail))
        if _Missing in tail_kinds:
            tail = [nan if v is _MISSING else v for v in tail]
            tail_kinds = set(map(type, tail))
        head_kinds = set(map(type, head))
        kinds = head_kinds | tail_kinds
        values = head + tail
        array: Any = None
        if kinds == {float}:
            array = np.array(values, dtype=np.float64)
        elif kinds == {int}:
            try:
                array = np.array(values, dtype=np.int64)
            except OverflowError:
                array = None
        elif (kinds == {int, float} and tail_kinds == {float}
              and all(abs(v) <= 2**53 for v in head if v.__class__ is int)):
            array = np.array(values, dtype=np.float64)
        elif kinds == {str} and _string_dtype() is not None:
            array = pd.array(values, dtype=_string_dtype())
        if array is None:
            other[name] = values
        else:
            data[name] = array
    if other:
        names = list(other)
        inferred = pd.DataFrame.from_records(list(zip(*other.values(), strict=True)),
                                             columns=names)
        for name in names:
            data[name] = inferred[name]
    return pd.DataFrame({name: data[name] for name in columns})


_STRING_DTYPE: list[Any] = []


def _string_dtype() -> Any:
    """The extension dtype ``from_records`` infers for a column of strings, or ``None``
    where it infers ``object`` (pandas' options)."""
    if not _STRING_DTYPE:
        dtype = pd.DataFrame.from_records([("x",)], columns=["x"])["x"].dtype
        _STRING_DTYPE.append(None if dtype == np.dtype(object) else dtype)
    return _STRING_DTYPE[0]
