"""The record of a run: flat rows appended during the run, one tidy DataFrame at the end."""

from __future__ import annotations

from operator import itemgetter
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
        #: The trailing block of iteration rows, one tuple each (``None``: no block):
        #: time, iteration, event, cum_bits, cum_bits_delivered, node, then the values
        #: of the block's metric keys (a row may stop early: it has none or the first few
        #: of them). Open only while there is no server and no context; a protocol may
        #: append a row without metrics to it directly (the random walk's plain loop).
        self.block: list[tuple[Any, ...]] | None = None
        self._metric_keys: tuple[str, ...] = ()
        self.context: dict[str, Any] = {}

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row so far as a dict, in order (the list the recorder appends to)."""
        self._flush()
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict[str, Any]]) -> None:
        self.block = None
        self._rows = rows

    def last_row(self) -> dict[str, Any]:
        """The last row as a dict (without turning a block of iteration rows into dicts)."""
        block = self.block
        if not block:
            return self._rows[-1]
        return dict(zip((*_BLOCK_BASE, *self._metric_keys), block[-1], strict=False))

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
        self._append(event, fields)

    def record_fields(self, event: str, fields: dict[str, Any]) -> None:
        """``record(event, **fields)`` without the keyword packing (the radio's rows): one
        dict row, time, iteration, event, the bit counters, the context, ``fields``."""
        if self.block is not None:
            self._flush()
        if self.has_server or self.context:
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
            if self.context:
                row.update(self.context)
            row.update(fields)
            self._rows.append(row)
            return
        # the common case, one dict display (the same keys in the same order)
        self._rows.append({"time_s": self.env.now, "iteration": self.iteration,
                           "event": event, "cum_bits": self.cum_bits,
                           "cum_bits_delivered": self.cum_bits_delivered, **fields})

    #: (``record`` appends through it; a subclass may override ``record_fields`` alone)
    _append = record_fields

    def record_iteration(self, event: str, node: Any, metrics: dict[str, Any],
                         now: float) -> None:
        """``record(event, node=node, **metrics)`` at the current time ``now`` (the
        clock's), without the keyword packing: one row per iteration of a random walk,
        appended to the trailing block of tuple rows."""
        block = self.block
        if block is None or self.has_server or self.context:
            self._start_block(event, node, metrics, now)
        elif not metrics:
            block.append((now, self.iteration, event, self.cum_bits, self.cum_bits_delivered,
                          node))
        elif tuple(metrics) == self._metric_keys:
            block.append((now, self.iteration, event, self.cum_bits, self.cum_bits_delivered,
                          node, *metrics.values()))
        else:
            self._start_block(event, node, metrics, now)

    def _start_block(self, event: str, node: Any, metrics: dict[str, Any],
                     now: float) -> None:
        """:meth:`record_iteration` for a row the block cannot take as it is: the block
        gets the row's new metric keys (earlier rows lack them), or a new block starts,
        or (a server, a context, a metric named like a base column) a dict row."""
        keys = tuple(metrics)
        if self.has_server or self.context or any(key in _BLOCK_BASE for key in keys):
            self._flush()
            row = {"time_s": now, "iteration": self.iteration, "event": event,
                   "cum_bits": self.cum_bits, "cum_bits_delivered": self.cum_bits_delivered}
            if self.has_server:
                row["cum_bits_up"] = self.cum_bits_up
                row["cum_bits_down"] = self.cum_bits_down
            if self.context:
                row.update(self.context)
            row["node"] = node
            if metrics:
                row.update(metrics)
            self._rows.append(row)
            return
        if self.block is None or keys[:len(self._metric_keys)] != self._metric_keys:
            self._flush()
            self.block, self._metric_keys = [], ()
        if len(keys) > len(self._metric_keys):
            self._metric_keys = keys
        self.block.append((now, self.iteration, event, self.cum_bits,
                            self.cum_bits_delivered, node, *metrics.values()))

    def _flush(self) -> None:
        """Turn the block of iteration rows into dict rows (another kind of row comes)."""
        block = self.block
        if block is None:
            return
        self.block = None
        names = (*_BLOCK_BASE, *self._metric_keys)
        append = self._rows.append
        for values in block:
            append(dict(zip(names, values, strict=False)))

    def to_frame(self) -> pd.DataFrame:
        """All rows as one DataFrame; the base columns come first."""
        if not self.block:
            self._flush()
            frame = pd.DataFrame.from_records(self._rows)
        else:
            frame = _frame_with_block(self._rows, self.block, self._metric_keys)
        if frame.empty:
            cols = list(BASE_COLUMNS) + (list(DIRECTION_COLUMNS) if self.has_server else [])
            return pd.DataFrame(columns=cols)
        first = [c for c in (*BASE_COLUMNS, *DIRECTION_COLUMNS) if c in frame.columns]
        rest = [c for c in frame.columns if c not in first]
        if list(frame.columns) == first + rest:  # (built in this order)
            return frame
        return frame[first + rest]


_BLOCK_BASE = ("time_s", "iteration", "event", "cum_bits", "cum_bits_delivered", "node")


def _frame_with_block(rows: list[dict[str, Any]], block: list[tuple[Any, ...]],
                      metric_keys: tuple[str, ...]) -> pd.DataFrame:
    """``DataFrame.from_records(rows + the block's rows as dicts)``, built column by
    column: the columns in order of first appearance, a missing value NaN. A column of
    only Python floats (or floats and a few ints of at most 2**53 in magnitude among the
    dict rows, such as the clock's initial 0) is float64, of only Python ints in
    int64's range int64, of only strings the string dtype, as pandas infers them; every
    other column is inferred by ``from_records`` itself."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    names = (*_BLOCK_BASE, *metric_keys)
    columns += [name for name in names if name not in columns]
    nan = np.nan
    data: dict[str, Any] = {}
    other: dict[str, list[Any]] = {}
    for name in columns:
        head = [row.get(name, nan) for row in rows]
        if name in names and names.index(name) < len(_BLOCK_BASE):
            quick = _base_column(head, block, names.index(name))
            if quick is not None:
                data[name] = quick
                continue
        if name not in names:
            tail = [nan] * len(block)
        else:
            j = names.index(name)
            if j < len(_BLOCK_BASE):
                tail = [row[j] for row in block]
            else:
                tail = [row[j] if len(row) > j else nan for row in block]
        tail_kinds = set(map(type, tail))
        head_kinds = set(map(type, head))
        kinds = head_kinds | tail_kinds
        array: Any = None
        if kinds == {float} or (kinds == {int, float} and tail_kinds == {float} and all(
                abs(v) <= 2**53 for v in head if v.__class__ is int)):
            array = _joined(head, tail, np.float64)
        elif kinds == {int}:
            try:
                array = _joined(head, tail, np.int64)
            except OverflowError:
                array = None
        elif kinds == {str} and _string_dtype() is not None:
            array = pd.array(head + tail, dtype=_string_dtype())
        if array is None:
            other[name] = head + tail
        else:
            data[name] = array
    if other:
        rest = list(other)
        inferred = pd.DataFrame.from_records(list(zip(*other.values(), strict=True)),
                                             columns=rest)
        for name in rest:
            data[name] = inferred[name]
    first = [c for c in (*BASE_COLUMNS, *DIRECTION_COLUMNS) if c in data]
    return pd.DataFrame({name: data[name] for name in
                         first + [c for c in columns if c not in first]})


def _base_column(head: list[Any], block: list[tuple[Any, ...]], j: int
                 ) -> np.ndarray | None:
    """Column ``j`` (a base column: every block row has it) as float64 or int64 in one
    pass over the block where its values (after ``head``'s) are all floats or all ints
    as :func:`_frame_with_block` says, else ``None``."""
    if not block:
        return None
    n, first = len(block), block[0][j].__class__
    head_kinds = set(map(type, head))
    out: np.ndarray | None = None
    try:
        if first is float and (head_kinds <= {float} or ((head_kinds == {int, float} or
                                                         head_kinds == {int}) and all(
                abs(v) <= 2**53 for v in head if v.__class__ is int))):
            # float.__float__ refuses anything but a float (a subclass is a float too,
            # for pandas as well)
            out = np.empty(len(head) + n)
            out[len(head):] = np.fromiter(map(float.__float__, map(itemgetter(j), block)),
                                          np.float64, n)
        elif first is int and head_kinds <= {int} and set(
                map(type, map(itemgetter(j), block))) == {int}:
            out = np.empty(len(head) + n, dtype=np.int64)
            out[len(head):] = np.fromiter(map(itemgetter(j), block), np.int64, n)
    except (TypeError, OverflowError):
        return None
    if out is not None:
        out[:len(head)] = head
    return out


def _joined(head: list[Any], tail: list[Any], dtype: Any) -> np.ndarray:
    """``np.array(head + tail, dtype=dtype)`` without joining the lists."""
    out = np.empty(len(head) + len(tail), dtype=dtype)
    out[:len(head)] = head
    out[len(head):] = tail
    return out


_STRING_DTYPE: list[Any] = []


def _string_dtype() -> Any:
    """The extension dtype ``from_records`` infers for a column of strings, or ``None``
    where it infers ``object`` (pandas' options)."""
    if not _STRING_DTYPE:
        dtype = pd.DataFrame.from_records([("x",)], columns=["x"])["x"].dtype
        _STRING_DTYPE.append(None if dtype == np.dtype(object) else dtype)
    return _STRING_DTYPE[0]
