"""Axis labels of result-table columns, with their units.

A scenario's ``SCHEMA`` gives each output column a unit (``bflnet describe NAME
--columns``); a label is a short name for the column and that unit: ``time_s`` ->
"time (s)", ``cum_bits`` -> "cumulative bits", ``kl`` -> "KL to the exact posterior
(nats)". Columns without a declared unit (a sweep's parameters, a table written by
other code) take the unit their name implies (``_s``: seconds, ``bits``: bits).

>>> axis_label("time_s")
'time (s)'
>>> axis_label("unlearn_time_s", {"unlearn_time_s": "s"})
'unlearn time (s)'
>>> axis_label("speed", {"speed": "m/s"})
'speed (m/s)'
"""

from __future__ import annotations

from collections.abc import Mapping

#: Short labels of the columns many scenarios share (their units included).
SHORT_LABELS: Mapping[str, str] = {
    "time_s": "time (s)",
    "cum_bits": "cumulative bits",
    "cum_bits_delivered": "cumulative bits delivered",
    "cum_bits_up": "cumulative uplink bits",
    "cum_bits_down": "cumulative downlink bits",
    "kl": "KL to the exact posterior (nats)",
    "kl_retrained": "KL to the retrained posterior (nats)",
    "iteration": "iteration",
    "accuracy": "test accuracy",
    "ece": "expected calibration error",
    "nll": "test NLL (nats)",
    "brier": "Brier score",
    "max_deviation": "max deviation from the mean",
    "theta_mean": "posterior mean of the parameter",
    "K": "agents K",
}

#: Units written after the name in a label (the others are plain numbers, counts, ...).
SHOWN_UNITS = ("s", "nats", "m/s", "bits")


def implied_unit(column: str) -> str | None:
    """The unit a column's name implies by the table convention (``_s``: seconds, a name
    with ``bits``: bits), else ``None``."""
    if column.endswith("_s"):
        return "s"
    if "bits" in column.split("_"):
        return "bits"
    return None


def axis_label(column: str, units: Mapping[str, str] | None = None) -> str:
    """The label of ``column``: its short name with its unit from ``units`` (a schema's
    ``{name: unit}``) or its name (see the module docs)."""
    if column in SHORT_LABELS:
        return SHORT_LABELS[column]
    unit = (units or {}).get(column) or implied_unit(column)
    words = column
    if unit == "s" and words.endswith("_s"):
        words = words[:-2]
    words = words.replace("_", " ").strip() or column
    if unit == "bits" and "bits" in words.split():
        return words  # the unit is in the name already
    return f"{words} ({unit})" if unit in SHOWN_UNITS else words


def schema_units(schema: object | None) -> dict[str, str]:
    """``{column: unit}`` of a scenario's schema (:class:`bflnet.runs.schema.Schema`;
    ``None``: empty)."""
    columns = getattr(schema, "columns", None) or ()
    return {c.name: c.unit for c in columns}
