"""Axis labels of result-table columns, with their units, and what else a scenario's
schema says about its columns for a figure.

A scenario's ``SCHEMA`` gives each output column a unit (``bflnet describe NAME
--columns``), and may give a short ``label`` and a ``reference`` value. A label is a
short name for the column and that unit: ``time_s`` -> "time (s)", ``cum_bits`` ->
"cumulative bits", ``kl`` -> "KL to the exact posterior (nats)", ``snr_db`` with the
label "SNR" -> "SNR (dB)". Columns without a declared unit (a sweep's parameters, a table
written by other code) take the unit their name implies (``_s``: seconds, ``bits``: bits,
``_db``: decibels).

>>> axis_label("time_s")
'time (s)'
>>> axis_label("unlearn_time_s", {"unlearn_time_s": "s"})
'unlearn time (s)'
>>> axis_label("speed", {"speed": "m/s"})
'speed (m/s)'
>>> axis_label("snr_db")
'snr (dB)'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: Short labels of the columns many scenarios share (their units included); a schema's
#: own label comes first.
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
SHOWN_UNITS = ("s", "nats", "m/s", "bits", "dB")
#: Name endings that say a unit (dropped from the label, which gives the unit).
UNIT_SUFFIXES = {"s": "_s", "dB": "_db"}
#: Units of quantities that are never negative, and of those in [0, 1].
NON_NEGATIVE_UNITS = ("s", "bits", "nats", "count", "fraction")
UNIT_INTERVAL_UNITS = ("fraction",)


def implied_unit(column: str) -> str | None:
    """The unit a column's name implies by the table convention (``_s``: seconds, a name
    with ``bits``: bits, ``_db``: decibels), else ``None``."""
    if column.endswith("_s"):
        return "s"
    if "bits" in column.split("_"):
        return "bits"
    if column.endswith("_db"):
        return "dB"
    return None


def axis_label(column: str, units: Mapping[str, str] | None = None,
               names: Mapping[str, str] | None = None) -> str:
    """The label of ``column``: its short name (``names``: a schema's labels, else
    :data:`SHORT_LABELS`, else its name) with its unit from ``units`` (a schema's
    ``{name: unit}``) or its name (see the module docs)."""
    unit = (units or {}).get(column) or implied_unit(column)
    name = (names or {}).get(column)
    if not name and column in SHORT_LABELS:
        return SHORT_LABELS[column]
    words = name or column
    if not name:
        suffix = UNIT_SUFFIXES.get(unit or "")
        if suffix and words.endswith(suffix) and len(words) > len(suffix):
            words = words[: -len(suffix)]
        words = words.replace("_", " ").strip() or column
    if unit == "bits" and "bits" in words.split():
        return words  # the unit is in the name already
    return f"{words} ({unit})" if unit in SHOWN_UNITS else words


def schema_units(schema: object | None) -> dict[str, str]:
    """``{column: unit}`` of a scenario's schema (:class:`bflnet.runs.schema.Schema`;
    ``None``: empty)."""
    columns = getattr(schema, "columns", None) or ()
    return {c.name: c.unit for c in columns}


@dataclass(frozen=True)
class ColumnFacts:
    """What a figure needs to know of a table's columns: their ``units``, short
    ``names`` and ``references`` (``{column: value}``: the reference setting, drawn in
    every panel), from a scenario's schema (:meth:`of`)."""

    units: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    references: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, schema: object | None = None,
           units: Mapping[str, str] | None = None) -> ColumnFacts:
        """The facts a schema declares (duck-typed: ``schema.columns``, each with
        ``name``, ``unit``, and optionally ``label`` and ``reference``), with ``units``
        (``{column: unit}``) over them."""
        columns = getattr(schema, "columns", None) or ()
        return cls({**{c.name: c.unit for c in columns}, **(units or {})},
                   {c.name: c.label for c in columns if getattr(c, "label", "")},
                   {c.name: c.reference for c in columns if getattr(c, "reference", "")})

    def label(self, column: str) -> str:
        """The axis label of ``column`` (:func:`axis_label`)."""
        return axis_label(column, self.units, self.names)

    def support(self, column: str) -> str | None:
        """``"unit"`` for a share in [0, 1], ``"positive"`` for a quantity >= 0 (by its
        unit), else ``None``."""
        unit = self.units.get(column) or implied_unit(column)
        if unit in UNIT_INTERVAL_UNITS:
            return "unit"
        return "positive" if unit in NON_NEGATIVE_UNITS else None
