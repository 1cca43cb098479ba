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
* the contention window runs from ``cw_min + 1`` to ``cw_max + 1`` values;
* clear channel assessment (carrier sense by received power,
  :mod:`bflnet.radio.phy.sensing`): preamble detection at ``pd_dbm``, energy detection
  at :meth:`Phy.ed_threshold_dbm`; a node declares the channel busy ``cca_s`` (aCCATime)
  after a transmission's power reaches it, and a station whose back-off ends commits to
  transmit ``turnaround_s`` (aRxTxTurnaroundTime) before its frame is on the air.

The presets (IEEE Std 802.11-2020: 10.3.2.3 interframe spaces, 10.3.3 random back-off
time, Clause 15 DSSS PHY, Clause 17 OFDM PHY, Clause 18 ERP):

* ``80211b``: DSSS at 1 Mbit/s (Clause 15): slot 20 µs, SIFS 10 µs, long PLCP preamble
  144 µs + PLCP header 48 µs, basic rate 1 Mbit/s, CWmin 31, CWmax 1023; aCCATime
  15 µs, aRxTxTurnaroundTime 5 µs (the DSSS PHY characteristics: "at most"); CCA
  (15.4.8.5, mode 3, energy and carrier): a DSSS signal detected at the receiver's
  minimum input sensitivity, -80 dBm (the 8 % frame error level of 15.4.8.3), and
  energy detection at -80 dBm for a transmitter above 100 mW, -76 dBm above 50 mW,
  -70 dBm at 50 mW or less.
* ``80211a``: OFDM in 20 MHz (Clause 17): slot 9 µs, SIFS 16 µs, preamble 16 µs +
  SIGNAL 4 µs, 4 µs symbols, basic rate 6 Mbit/s, CWmin 15, CWmax 1023; aCCATime 4 µs,
  aRxTxTurnaroundTime 2 µs; CCA (17.3.10.6): the start of a valid OFDM frame at
  -82 dBm (the 6 Mbit/s sensitivity) or more, any signal at -62 dBm (20 dB above it).
* ``80211g``: ERP-OFDM (Clause 18) with the short slot: slot 9 µs, SIFS 10 µs, the OFDM
  frame plus a 6 µs signal extension, basic rate 6 Mbit/s, CWmin 15, CWmax 1023; CCA
  and its times as ``80211a`` (ERP-OFDM frames, 18.4.6 refers to Clause 17).
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
#: DSSS energy detection (15.4.8.5): ``(transmit power above, in dBm; threshold, dBm)``,
#: the first that applies (above 100 mW: -80 dBm; above 50 mW: -76; else -70).
_DSSS_ED = ((10.0 * math.log10(100.0), -80.0), (10.0 * math.log10(50.0), -76.0),
            (-math.inf, -70.0))


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
    pd_dbm: float = -82.0
    ed_dbm: float = -62.0
    cca_s: float = 4e-6
    turnaround_s: float = 2e-6

    def ed_threshold_dbm(self, tx_power_dbm: float) -> float:
        """The energy-detection threshold for a transmitter of ``tx_power_dbm`` (DSSS: by
        transmit power; OFDM: :attr:`ed_dbm`).

        >>> phy_preset("80211b").ed_threshold_dbm(20.0), phy_preset("80211a").ed_dbm
        (-76.0, -62.0)
        """
        if self.symbol_s > 0:
            return self.ed_dbm
        return next(ed for above, ed in _DSSS_ED if tx_power_dbm > above)

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
                  basic_rate_bps=1e6, cw_min=31, cw_max=1023, pd_dbm=-80.0, ed_dbm=-80.0,
                  cca_s=15e-6, turnaround_s=5e-6),
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
