"""The modulation and coding schemes (MCS) of the 802.11 PHY presets, and picking one.

Each preset's data rates (IEEE Std 802.11-2020, Clause 16 HR/DSSS for ``80211b``,
Table 17-4 for the OFDM rates of ``80211a`` and ``80211g``):

* ``80211b``: DBPSK 1 Mbit/s, DQPSK 2 Mbit/s (Barker spreading), CCK 5.5 and 11 Mbit/s;
* ``80211a`` / ``80211g``: BPSK 1/2 6, BPSK 3/4 9, QPSK 1/2 12, QPSK 3/4 18, 16-QAM 1/2
  24, 16-QAM 3/4 36, 64-QAM 2/3 48, 64-QAM 3/4 54 Mbit/s.

The first MCS of a table is its basic rate (the rate of ACKs and broadcasts, and of the
PLCP header). :func:`pick_mcs` reads the ``data_rate`` setting: ``None`` (the basic
rate), a data rate in Mbit/s of the table, or ``auto`` (chosen per link,
:meth:`bflnet.radio.phy.errors.ErrorModel.best`).

>>> [m.name for m in mcs_table("80211b")]
['DBPSK 1', 'DQPSK 2', 'CCK 5.5', 'CCK 11']
>>> m = pick_mcs("80211a", "54")
>>> m.modulation, m.coding_rate, m.rate_bps
('64-QAM', '3/4', 54000000.0)
>>> pick_mcs("80211b", 7)
Traceback (most recent call last):
...
ValueError: data_rate: must be auto or a rate of phy=80211b in Mbit/s (1, 2, 5.5, 11), got 7
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mcs:
    """One MCS: ``modulation`` (``DBPSK``, ``DQPSK``, ``CCK``, ``BPSK``, ``QPSK``,
    ``16-QAM``, ``64-QAM``), the convolutional ``coding_rate`` (``""``: DSSS, no
    convolutional code) and the data rate in bit/s."""

    name: str
    modulation: str
    coding_rate: str
    rate_bps: float

    @property
    def ofdm(self) -> bool:
        """Whether it is an OFDM MCS (coded), not DSSS / CCK."""
        return self.coding_rate != ""


def _ofdm(modulation: str, rate: str, mbps: float) -> Mcs:
    return Mcs(f"{modulation} {rate} {mbps:g}", modulation, rate, mbps * 1e6)


_DSSS = (Mcs("DBPSK 1", "DBPSK", "", 1e6), Mcs("DQPSK 2", "DQPSK", "", 2e6),
         Mcs("CCK 5.5", "CCK", "", 5.5e6), Mcs("CCK 11", "CCK", "", 11e6))
_OFDM = (_ofdm("BPSK", "1/2", 6), _ofdm("BPSK", "3/4", 9), _ofdm("QPSK", "1/2", 12),
         _ofdm("QPSK", "3/4", 18), _ofdm("16-QAM", "1/2", 24), _ofdm("16-QAM", "3/4", 36),
         _ofdm("64-QAM", "2/3", 48), _ofdm("64-QAM", "3/4", 54))
#: Each PHY preset's MCS table, slowest first (the first: the basic rate).
MCS_TABLES: dict[str, tuple[Mcs, ...]] = {"80211b": _DSSS, "80211a": _OFDM,
                                          "80211g": _OFDM}
#: The PLCP header's (DSSS: 48 bits at 1 Mbit/s) or SIGNAL field's (OFDM: one 4 µs
#: symbol) time at the end of each preset's PLCP preamble and header, in seconds.
HEADER_S: dict[str, float] = {"80211b": 48e-6, "80211a": 4e-6, "80211g": 4e-6}


def mcs_table(phy: str) -> tuple[Mcs, ...]:
    """The MCS table of the preset ``phy`` (one-line error for ``ideal`` or a typo)."""
    table = MCS_TABLES.get(phy)
    if table is None:
        raise ValueError(f"phy: an MCS table needs a PHY preset ({', '.join(MCS_TABLES)}), "
                         f"got {phy!r}")
    return table


def rate_text(phy: str) -> str:
    """The data rates of ``phy`` in Mbit/s, for messages (``"1, 2, 5.5, 11"``)."""
    return ", ".join(f"{m.rate_bps / 1e6:g}" for m in mcs_table(phy))


def pick_mcs(phy: str, rate: Any) -> Mcs | None:
    """The MCS of the ``data_rate`` setting on ``phy``: ``None`` -> the basic rate, ``"auto"``
    -> ``None`` (chosen per link), else the MCS whose data rate is ``rate`` Mbit/s."""
    table = mcs_table(phy)
    if rate is None:
        return table[0]
    if isinstance(rate, str) and rate.strip().lower() == "auto":
        return None
    try:
        mbps = float(rate)
    except (TypeError, ValueError):
        mbps = math.nan
    if isinstance(rate, bool):
        mbps = math.nan
    for m in table:
        if abs(m.rate_bps - mbps * 1e6) < 1.0:
            return m
    shown = repr(rate) if isinstance(rate, str) else f"{rate!s:.40}"
    raise ValueError(f"data_rate: must be auto or a rate of phy={phy} in Mbit/s "
                     f"({rate_text(phy)}), got {shown}")
