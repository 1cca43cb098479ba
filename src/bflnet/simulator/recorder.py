"""The record of a run: flat rows appended during the run, one tidy DataFrame at the end."""

from __future__ import annotations

from typing import Any

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
        self.rows: list[dict[str, Any]] = []
        self.context: dict[str, Any] = {}

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
        self.rows.append(row)

    def record_fields(self, event: str, fields: dict[str, Any]) -> None:
        """``record(event, **fields)`` without the keyword packing (the radio's rows)."""
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
        self.rows.append(row)

    def record_iteration(self, event: str, node: Any, metrics: dict[str, Any],
                         now: float) -> None:
        """``record(event, node=node, **metrics)`` at the current time ``now`` (the
        clock's), without the keyword packing: one row per iteration of a random walk."""
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
        self.rows.append(row)

    def to_frame(self) -> pd.DataFrame:
        """All rows as one DataFrame; the base columns come first."""
        frame = pd.DataFrame.from_records(self.rows)
        if frame.empty:
            cols = list(BASE_COLUMNS) + (list(DIRECTION_COLUMNS) if self.has_server else [])
            return pd.DataFrame(columns=cols)
        first = [c for c in (*BASE_COLUMNS, *DIRECTION_COLUMNS) if c in frame.columns]
        rest = [c for c in frame.columns if c not in first]
        return frame[first + rest]
