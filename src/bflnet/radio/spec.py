"""The radio every node of a shared medium has: power, bandwidth, rate, threshold, fading.

A packet of ``b`` bits takes ``b / (bandwidth_hz * coding_rate)`` seconds on the air and
is received iff its SINR stays at or above ``sinr_threshold_db`` over the whole packet;
without a threshold the one of the rate is used, ``2^R - 1`` (Shannon: the rate
``coding_rate`` is decodable iff ``log2(1 + SINR) >= R``, the outage rule of the
independent fading links). With ``reception="per"`` the threshold is not used: a packet
is lost with the probability :func:`packet_error_rate` of its lowest SINR over the packet
(uncoded BPSK; ``coding_rate`` then only sets the air time). Signals undergo the path
loss, the pair's shadowing and, per packet and receiver, a block-fading power gain of
mean 1 (``rayleigh``: exponential; ``rician``: with K factor ``rician_k``; ``none``: 1),
drawn afresh for every packet; with ``coherence_time_s`` the fade of a pair of nodes is
correlated over that time instead (``fading_model`` ``block`` or ``gauss-markov``,
:mod:`bflnet.radio.phy.coherence`), so a retry soon after a loss meets the same fade.

With ``phy`` an 802.11 preset (``80211b``, ``80211a``, ``80211g``; :mod:`bflnet.radio.phy.timing`)
a packet is a data frame: :meth:`RadioSpec.airtime_s` adds the PLCP preamble and header
and the MAC header and FCS, and the medium adds SIFS, the ACK, DIFS and EIFS; ``ideal``
(the default) is bits over the rate alone. Under a preset, CSMA without a sense range
senses the carrier by received power (:mod:`bflnet.radio.phy.sensing`):
``ed_threshold_dbm`` and ``pd_threshold_dbm`` (``None``: the preset's).
With a preset the default ``reception`` is
``mcs``: a data frame goes at the MCS of ``data_rate`` (Mbit/s, of the preset's table,
:mod:`bflnet.radio.phy.mcs`; ``None``: the basic rate; ``auto``: per link) and is decided
by the error model of :mod:`bflnet.radio.phy.errors` (the SNR is over ``bandwidth_hz``:
set it to the channel's width, 20 MHz OFDM or 22 MHz DSSS, for 802.11's noise floor).

Interference from transmitters whose mean power at a receiver is more than
``interference_margin_db`` below the noise (plus three shadowing standard deviations) is
left out: the medium only sums over transmitters within :attr:`RadioSpec.interference_range_m`
(found with a k-d tree), which keeps the cost per packet flat in the number of nodes.

>>> spec = RadioSpec(tx_power_dbm=20.0, bandwidth_hz=1e6, noise_figure_db=7.0,
...                  coding_rate=1.0, pathloss=LogDistance(3.0, 1.0, 40.0))
>>> round(spec.noise_dbm, 3), round(spec.threshold_db, 3), spec.rate_bps
(-107.0, 0.0, 1000000.0)
>>> round(spec.mean_snr_db(10.0), 3)  # 20 - (40 + 30) + 107
57.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bflnet.radio.pathloss import LogDistance, dbm_to_mw, noise_dbm
from bflnet.radio.phy import Phy, phy_preset
from bflnet.radio.phy.coherence import FADING_MODELS
from bflnet.radio.phy.mcs import Mcs, mcs_table, pick_mcs
from bflnet.validation.checks import check_real
from bflnet.validation.limits import (
    MAX_CCA_DBM,
    MIN_BANDWIDTH_HZ,
    MIN_CCA_DBM,
    MIN_CODING_RATE,
    MIN_COHERENCE_S,
)

FADINGS = ("none", "rayleigh", "rician")
#: The longest coherence time accepted, in seconds.
MAX_COHERENCE_S = 1e6
#: How a packet's SINR decides it: a hard ``threshold``, the packet error rate ``per`` of
#: uncoded BPSK, or ``mcs``, the error model of the MCS (a PHY preset,
#: :mod:`bflnet.radio.phy.errors`).
RECEPTIONS = ("threshold", "per", "mcs")


def packet_error_rate(sinr: float, bits: int) -> float:
    """The probability that a ``bits``-bit packet at SINR ``sinr`` (linear) is lost:
    ``1 - (1 - BER)^bits`` with the bit error rate of uncoded BPSK in Gaussian noise,
    ``BER = Q(sqrt(2 SINR)) = erfc(sqrt(SINR)) / 2``, bit errors independent
    (interference treated as Gaussian noise).

    >>> round(packet_error_rate(10 ** 0.7, 1000), 4)  # 7 dB
    0.5384
    >>> packet_error_rate(1e3, 1000), packet_error_rate(0.0, 8) == 1 - 0.5 ** 8
    (0.0, True)
    """
    ber = 0.5 * math.erfc(math.sqrt(max(sinr, 0.0)))
    if ber >= 1.0:
        return 1.0
    return -math.expm1(bits * math.log1p(-ber))


@dataclass(frozen=True)
class RadioSpec:
    """Every node's radio on a shared medium (module docstring)."""

    tx_power_dbm: float = 20.0
    bandwidth_hz: float = 1e6
    noise_figure_db: float = 7.0
    coding_rate: float = 1.0
    sinr_threshold_db: float | None = None
    pathloss: LogDistance = field(default_factory=LogDistance)
    fading: str = "rayleigh"
    rician_k: float = 0.0
    coherence_time_s: float | None = None
    fading_model: str = "block"
    latency_s: float = 0.0
    interference_margin_db: float = 10.0
    interference_range_m: float | None = None
    reception: str | None = None
    phy: str = "ideal"
    ed_threshold_dbm: float | None = None
    pd_threshold_dbm: float | None = None
    data_rate: str | float | None = None

    def __post_init__(self) -> None:
        check_real("tx_power_dbm", self.tx_power_dbm, ge=-100, le=100)
        check_real("bandwidth_hz", self.bandwidth_hz, ge=MIN_BANDWIDTH_HZ, le=1e12)
        check_real("noise_figure_db", self.noise_figure_db, ge=0, le=100)
        check_real("coding_rate", self.coding_rate, ge=MIN_CODING_RATE, le=100)
        if self.sinr_threshold_db is not None:
            check_real("sinr_threshold_db", self.sinr_threshold_db, ge=-100, le=100)
        if not isinstance(self.pathloss, LogDistance):
            raise ValueError(f"pathloss: must be a LogDistance, got "
                             f"{type(self.pathloss).__name__}")
        if self.fading not in FADINGS:
            raise ValueError(f"fading: must be one of {', '.join(FADINGS)}, got "
                             f"{self.fading!r}")
        check_real("rician_k", self.rician_k, ge=0, le=1e6)
        if self.coherence_time_s is not None:
            check_real("coherence_time_s", self.coherence_time_s, ge=0, le=MAX_COHERENCE_S)
            if 0 < self.coherence_time_s < MIN_COHERENCE_S:
                raise ValueError(f"coherence_time_s: must be 0 (off) or a finite number in "
                                 f"[{MIN_COHERENCE_S:g}, {MAX_COHERENCE_S:g}], got "
                                 f"{self.coherence_time_s!r}")
            if self.coherence_time_s and self.fading == "none":
                raise ValueError("coherence_time_s: needs fading rayleigh or rician (without "
                                 "fading there is no fade to keep), got fading='none'")
        if self.fading_model not in FADING_MODELS:
            raise ValueError(f"fading_model: must be one of {', '.join(FADING_MODELS)}, got "
                             f"{self.fading_model!r}")
        check_real("latency_s", self.latency_s, ge=0, le=1e6)
        check_real("interference_margin_db", self.interference_margin_db, ge=0, le=100)
        if self.interference_range_m is not None:
            check_real("interference_range_m", self.interference_range_m, gt=0, le=1e9)
        if self.reception is not None and self.reception not in RECEPTIONS:
            raise ValueError(f"reception: must be one of {', '.join(RECEPTIONS)}, got "
                             f"{self.reception!r}")
        phy_preset(self.phy)
        for name in ("ed_threshold_dbm", "pd_threshold_dbm"):
            value = getattr(self, name)
            if value is not None:
                check_real(name, value, ge=MIN_CCA_DBM, le=MAX_CCA_DBM)
                if self.phy == "ideal":
                    raise ValueError(f"{name}: carrier sense by received power needs a PHY "
                                     f"preset (phy=80211b, 80211a or 80211g), got phy=ideal")
        if self.reception_rule == "mcs":
            if self.phy == "ideal":
                raise ValueError("reception: mcs needs a PHY preset (phy=80211b, 80211a or "
                                 "80211g), got phy=ideal")
            pick_mcs(self.phy, self.data_rate)
        elif self.data_rate is not None:
            raise ValueError(f"data_rate: used only with reception=mcs (a PHY preset), got "
                             f"reception={self.reception_rule}")

    @property
    def ed_dbm(self) -> float:
        """The energy-detection threshold (given, or the preset's for this transmit power;
        ``ideal``: none, ``inf``)."""
        if self.ed_threshold_dbm is not None:
            return self.ed_threshold_dbm
        timing = self.timing
        return math.inf if timing is None else timing.ed_threshold_dbm(self.tx_power_dbm)

    @property
    def pd_dbm(self) -> float:
        """The preamble-detection threshold (given, or the preset's; ``ideal``: ``inf``)."""
        if self.pd_threshold_dbm is not None:
            return self.pd_threshold_dbm
        timing = self.timing
        return math.inf if timing is None else timing.pd_dbm

    @property
    def reception_rule(self) -> str:
        """How a packet's SINR decides it: :attr:`reception`, or by default ``mcs`` with a
        PHY preset and ``threshold`` with ``phy="ideal"``."""
        if self.reception is not None:
            return self.reception
        return "threshold" if self.phy == "ideal" else "mcs"

    @property
    def mcs(self) -> Mcs | None:
        """With ``reception="mcs"``: the MCS of every data frame (:attr:`data_rate`; ``None``
        with ``data_rate="auto"``, or without ``reception="mcs"``)."""
        if self.reception_rule != "mcs":
            return None
        return pick_mcs(self.phy, self.data_rate)

    @property
    def timing(self) -> Phy | None:
        """The 802.11 DCF timing of :attr:`phy` (:mod:`bflnet.radio.phy.timing`; ``None``:
        ``ideal``, a packet's air time is its bits over the rate)."""
        return phy_preset(self.phy)

    @classmethod
    def from_channel(cls, channel: Any, **fields: Any) -> RadioSpec:
        """The radio of a block-fading channel (:class:`~bflnet.channels.RayleighChannel`,
        :class:`~bflnet.channels.RicianChannel`): its bandwidth, coding rate, path-loss
        exponent, reference distance, latency and fading law, with ``fields`` for the rest
        (``tx_power_dbm``, ``noise_figure_db``, ``ref_loss_db``, ``shadowing_db``, ...)."""
        from bflnet.channels.fading import RayleighChannel, RicianChannel

        if not isinstance(channel, (RayleighChannel, RicianChannel)):
            raise ValueError(f"channel: a shared medium needs a fading channel (rayleigh or "
                             f"rician), got {type(channel).__name__}")
        loss = LogDistance(channel.path_loss_exponent, channel.ref_distance_m,
                           fields.pop("ref_loss_db", 40.0), fields.pop("shadowing_db", 0.0))
        rician = isinstance(channel, RicianChannel)
        return cls(bandwidth_hz=channel.bandwidth_hz, coding_rate=channel.coding_rate,
                   pathloss=loss, latency_s=channel.latency_s,
                   fading="rician" if rician else "rayleigh",
                   rician_k=channel.k_factor if rician else 0.0, **fields)

    @property
    def rate_bps(self) -> float:
        """Bits per second on the air, ``bandwidth_hz * coding_rate``; with
        ``reception="mcs"`` the data rate of :attr:`mcs` (``data_rate="auto"``: the
        basic rate, the slowest)."""
        if self.reception_rule == "mcs":
            return (self.mcs or mcs_table(self.phy)[0]).rate_bps
        return self.bandwidth_hz * self.coding_rate

    @property
    def noise_dbm(self) -> float:
        """Noise power, ``-174 dBm/Hz + 10 log10(bandwidth_hz) + noise_figure_db``."""
        return noise_dbm(self.bandwidth_hz, self.noise_figure_db)

    @property
    def noise_mw(self) -> float:
        return dbm_to_mw(self.noise_dbm)

    @property
    def tx_mw(self) -> float:
        return dbm_to_mw(self.tx_power_dbm)

    @property
    def threshold_db(self) -> float:
        """The SINR threshold in dB (given, or ``10 log10(2^R - 1)``)."""
        if self.sinr_threshold_db is not None:
            return self.sinr_threshold_db
        x = self.coding_rate * math.log(2.0)
        return 10.0 * math.log10(math.expm1(x)) if x < 700 else 10.0 * x / math.log(10.0)

    @property
    def threshold(self) -> float:
        """The SINR threshold, linear."""
        return 10.0 ** (self.threshold_db / 10.0)

    def airtime_s(self, bits: int) -> float:
        """Seconds a packet of ``bits`` takes on the air (with a PHY preset: the data
        frame, its PLCP preamble and header, MAC header and FCS)."""
        timing = self.timing
        if timing is not None:
            return timing.frame_s(bits, self.rate_bps)
        return bits / self.rate_bps

    def mean_snr_db(self, distance_m: float) -> float:
        """Mean SNR (no fading, no shadowing) at ``distance_m``."""
        return self.tx_power_dbm - self.pathloss.loss_db(distance_m) - self.noise_dbm

    @property
    def range_m(self) -> float:
        """Where the mean SNR falls to the threshold (the nominal radio range)."""
        return self.pathloss.range_m(self.tx_power_dbm - self.noise_dbm - self.threshold_db)

    def effective_interference_range_m(self) -> float:
        """Beyond this distance a transmitter is not counted as interference (given, or
        where its mean power is ``interference_margin_db`` + 3 shadowing deviations
        below the noise)."""
        if self.interference_range_m is not None:
            return self.interference_range_m
        budget = (self.tx_power_dbm - self.noise_dbm + self.interference_margin_db
                  + 3.0 * self.pathloss.shadowing_db)
        return self.pathloss.range_m(budget)
