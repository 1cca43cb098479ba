"""802.11 PHY presets: the timing of the distributed coordination function (DCF).

A :class:`Phy` gives the shared medium the time axis of an 802.11 frame exchange:

* a data frame of ``b`` payload bits takes ``preamble_s`` (PLCP preamble and header)
  plus its payload and ``mac_bits`` of MAC header and FCS at the data rate (OFDM: in
  whole symbols of ``symbol_s``, with the 16 SERVICE and 6 tail bits; ERP: plus the
  ``extension_s`` signal extension);
* a unicast frame is acknowledged: its receiver, if it decoded the frame, sends an ACK
  of ``ack_bits`` at ``basic_rate_bps`` after SIFS; the sender learns the outcome when
  that ACK ends, or, without one, after the ACK timeout :attr:`Phy.ack_timeout_s` (the
  same instant, SIFS plus the ACK's air time). Broadcasts are not acknowledged;
* back-off counts ``slot_s`` slots, frozen while the medium is busy and resumed after
  the medium has been idle for DIFS = SIFS + 2 slots, or for EIFS = SIFS + ACK time +
  DIFS after an errored frame (a busy period in which two sensed transmissions overlapped);
* the contention window runs from ``cw_min + 1`` to ``cw_max + 1`` values.

The presets (IEEE Std 802.11-2020: 10.3.2.3 interframe spaces, 10.3.3 random back-off
time, Clause 15 DSSS PHY, Clause 17 OFDM PHY, Clause 18 ERP):

* ``80211b``: DSSS at 1 Mbit/s (Clause 15): slot 20 µs, SIFS 10 µs, long PLCP preamble
  144 µs + PLCP header 48 µs, basic rate 1 Mbit/s, CWmin 31, CWmax 1023.
* ``80211a``: OFDM in 20 MHz (Clause 17): slot 9 µs, SIFS 16 µs, preamble 16 µs +
  SIGNAL 4 µs, 4 µs symbols, basic rate 6 Mbit/s, CWmin 15, CWmax 1023.
* ``80211g``: ERP-OFDM (Clause 18) with the short slot: slot 9 µs, SIFS 10 µs, the OFDM
  frame plus a 6 µs signal extension, basic rate 6 Mbit/s, CWmin 15, CWmax 1023.
* ``ideal``: no preset (:func:`phy_preset` gives ``None``): a packet's air time is its
  bits over the rate, nothing else; the medium as it was before the presets.

The data rate is the radio's (``bandwidth_hz * coding_rate``); the MAC header is 24
bytes and the FCS 4 (28 bytes, 224 bits), an ACK 14 bytes (112 bits).

>>> b = phy_preset("80211b")
>>> round(b.difs_s * 1e6), round(b.ack_s * 1e6), round(b.eifs_s * 1e6)
(50, 304, 364)
>>> round(b.frame_s(1023 * 8, 1e6) * 1e6)  # 192 + (8184 + 224) µs
8600
>>> a = phy_preset("80211a")
>>> round(a.ack_s * 1e6), round(a.frame_s(1500 * 8, 54e6) * 1e6)
(44, 248)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The PHY presets (``ideal``: none).
PHYS = ("ideal", "80211b", "80211a", "80211g")
#: OFDM SERVICE (16) and tail (6) bits around every PSDU (Clause 17).
_OFDM_SERVICE_TAIL = 22


@dataclass(frozen=True)
class Phy:
    """One 802.11 PHY's DCF timing (module docstring); times in seconds."""

    name: str
    slot_s: float
    sifs_s: float
    preamble_s: float
    basic_rate_bps: float
    cw_min: int
    cw_max: int
    symbol_s: float = 0.0
    extension_s: float = 0.0
    mac_bits: int = 224
    ack_bits: int = 112

    @property
    def difs_s(self) -> float:
        """DIFS = SIFS + 2 slots."""
        return self.sifs_s + 2.0 * self.slot_s

    @property
    def ack_s(self) -> float:
        """The air time of an ACK at the basic rate."""
        return self.psdu_s(self.ack_bits, self.basic_rate_bps)

    @property
    def eifs_s(self) -> float:
        """EIFS = SIFS + the ACK's air time at the basic rate + DIFS."""
        return self.sifs_s + self.ack_s + self.difs_s

    @property
    def ack_timeout_s(self) -> float:
        """After a unicast frame ends, when its sender knows the outcome: SIFS + the
        ACK's air time (the ACK has ended, or would have)."""
        return self.sifs_s + self.ack_s

    def psdu_s(self, bits: int, rate_bps: float) -> float:
        """The air time of a PSDU of ``bits`` (MAC header and FCS included) at
        ``rate_bps``."""
        if self.symbol_s > 0:  # OFDM: whole symbols of rate * symbol bits
            per_symbol = rate_bps * self.symbol_s
            symbols = math.ceil((_OFDM_SERVICE_TAIL + bits) / per_symbol - 1e-9)
            return self.preamble_s + symbols * self.symbol_s + self.extension_s
        return self.preamble_s + bits / rate_bps

    def frame_s(self, bits: int, rate_bps: float) -> float:
        """The air time of a data frame of ``bits`` payload bits at ``rate_bps``."""
        return self.psdu_s(bits + self.mac_bits, rate_bps)


_PRESETS = {
    "80211b": Phy("80211b", slot_s=20e-6, sifs_s=10e-6, preamble_s=192e-6,
                  basic_rate_bps=1e6, cw_min=31, cw_max=1023),
    "80211a": Phy("80211a", slot_s=9e-6, sifs_s=16e-6, preamble_s=20e-6,
                  basic_rate_bps=6e6, cw_min=15, cw_max=1023, symbol_s=4e-6),
    "80211g": Phy("80211g", slot_s=9e-6, sifs_s=10e-6, preamble_s=20e-6,
                  basic_rate_bps=6e6, cw_min=15, cw_max=1023, symbol_s=4e-6,
                  extension_s=6e-6),
}


def phy_preset(name: str) -> Phy | None:
    """The preset called ``name`` (:data:`PHYS`; ``ideal``: ``None``)."""
    if name not in PHYS:
        raise ValueError(f"phy: must be one of {', '.join(PHYS)}, got {name!r}")
    return _PRESETS.get(name)
