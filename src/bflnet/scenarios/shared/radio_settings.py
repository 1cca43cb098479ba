"""The shared radio medium's settings: radio, reception, node layout and MAC.

:class:`RadioSettings` is the medium layer of
:class:`bflnet.scenarios.shared.network_settings.NetworkSettings`; its fields other than
``medium`` are read only with ``medium=shared``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bflnet.runs.config import param
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.validation.limits import (
    MAX_CCA_DBM,
    MIN_CCA_DBM,
    MIN_COHERENCE_S,
    MIN_PROBABILITY,
    MIN_SLOT_S,
)

MEDIA = ("links", "shared")
MAC_NAMES = ("none", "tdma", "csma", "aloha")
LAYOUT_NAMES = ("random", "circle", "grid")
#: How the shared medium decides a packet from its SINR (``RadioSpec.reception``).
RECEPTION_NAMES = ("threshold", "per", "mcs")
#: The shared medium's 802.11 timing (``RadioSpec.phy``, :mod:`bflnet.radio.phy.timing`).
PHY_NAMES = ("ideal", "80211b", "80211a", "80211g")
#: TDMA schedules (``auto``: distance2 with ``phy=ideal``, sinr with a PHY preset).
SCHEDULE_NAMES = ("auto", "distance2", "sinr")
#: How a pair's fade evolves over the coherence time (``RadioSpec.fading_model``,
#: :mod:`bflnet.radio.phy.coherence`).
FADING_MODEL_NAMES = ("block", "gauss-markov")
#: The channels that fade (a coherence time is read only with them).
_FADING_CHANNELS = ("rayleigh", "rician")
#: CSMA fields that, left at their defaults, take the PHY preset's values.
_PRESET_CSMA = ("backoff_slot_s", "cw_min", "cw_max")
#: The fields of the shared medium (read only with ``medium=shared``).
SHARED_FIELDS = ("mac", "broadcast", "reception", "tx_power_dbm", "noise_figure_db",
                 "ref_loss_db", "shadowing_db", "sinr_threshold_db", "layout", "aloha_p",
                 "mac_slot_s", "tdma_frame_slots", "sense_range_m", "backoff_slot_s", "cw_min",
                 "cw_max", "retry_limit", "phy", "ed_threshold_dbm", "pd_threshold_dbm",
                 "tdma_schedule", "tdma_margin_db", "guard_s",
                 "coherence_time_s", "fading_model", "data_rate")


def is_shared(s: RadioSettings) -> bool:
    """Whether the run uses the shared medium (``medium=shared``)."""
    return s.medium == "shared"


def reception_rule(s: RadioSettings) -> str:
    """How a packet's SINR decides it: ``reception``, or by default ``mcs`` with a PHY
    preset and ``threshold`` with ``phy=ideal``."""
    if s.reception is not None:
        return s.reception
    return "threshold" if s.phy == "ideal" else "mcs"


def _threshold_read(s: RadioSettings) -> bool:
    """Whether the SINR threshold is read: it decides every packet (``reception=threshold``),
    or it sets the nominal range that is CSMA's default carrier-sense range (``ideal``)."""
    return is_shared(s) and (reception_rule(s) == "threshold"
                             or (s.mac == "csma" and s.sense_range_m is None
                                 and s.phy == "ideal"))


def _power_sensed(s: RadioSettings) -> bool:
    """Whether CSMA senses the carrier by received power: a PHY preset, no sense range."""
    return mac_is("csma")(s) and s.phy != "ideal" and s.sense_range_m is None


def _fades(s: RadioSettings) -> bool:
    """Whether the shared medium's signals fade (the channel, a layer above, says)."""
    return is_shared(s) and getattr(s, "channel", None) in _FADING_CHANNELS


def _coherent(s: RadioSettings) -> bool:
    """Whether the shared medium's fading is correlated in time (a coherence time > 0)."""
    return _fades(s) and bool(s.coherence_time_s)


def mac_is(*names: str) -> Callable[[RadioSettings], bool]:
    """Whether the shared medium's MAC is one of ``names``."""
    return lambda s: is_shared(s) and s.mac in names


#: The medium's fields read only with some medium and MAC: field -> (is it read under these
#: settings?, the settings that read it). ``layout`` depends on the graph too
#: (:data:`bflnet.scenarios.shared.network_settings.USED_ONLY_WITH`).
RADIO_USED_ONLY_WITH: dict[str, tuple[Callable[[RadioSettings], bool], str]] = {
    "mac": (is_shared, "medium=shared"),
    "broadcast": (is_shared, "medium=shared"),
    "reception": (is_shared, "medium=shared"),
    "tx_power_dbm": (is_shared, "medium=shared"),
    "noise_figure_db": (is_shared, "medium=shared"),
    "ref_loss_db": (is_shared, "medium=shared"),
    "shadowing_db": (is_shared, "medium=shared"),
    "sinr_threshold_db": (_threshold_read, "medium=shared and reception=threshold, or "
                          "mac=csma and phy=ideal without sense_range_m (the threshold's "
                          "nominal range is the carrier-sense range)"),
    "aloha_p": (mac_is("aloha"), "medium=shared and mac=aloha"),
    "mac_slot_s": (mac_is("aloha", "tdma"), "medium=shared and mac=aloha or tdma"),
    "tdma_frame_slots": (mac_is("tdma"), "medium=shared and mac=tdma"),
    "sense_range_m": (mac_is("csma"), "medium=shared and mac=csma"),
    "backoff_slot_s": (mac_is("csma"), "medium=shared and mac=csma"),
    "cw_min": (mac_is("csma"), "medium=shared and mac=csma"),
    "cw_max": (mac_is("csma"), "medium=shared and mac=csma"),
    "retry_limit": (mac_is("csma"), "medium=shared and mac=csma"),
    "phy": (is_shared, "medium=shared"),
    "ed_threshold_dbm": (_power_sensed, "medium=shared, mac=csma and a PHY preset without "
                         "sense_range_m (carrier sense by received power)"),
    "pd_threshold_dbm": (_power_sensed, "medium=shared, mac=csma and a PHY preset without "
                         "sense_range_m (carrier sense by received power)"),
    "tdma_schedule": (mac_is("tdma"), "medium=shared and mac=tdma"),
    "tdma_margin_db": (lambda s: mac_is("tdma")(s) and (
        s.tdma_schedule == "sinr" or (s.tdma_schedule == "auto" and s.phy != "ideal")),
        "medium=shared, mac=tdma and the sinr schedule (tdma_schedule=sinr, or auto with a "
        "PHY preset)"),
    "guard_s": (mac_is("aloha", "tdma"), "medium=shared and mac=aloha or tdma"),
    "coherence_time_s": (_fades, "medium=shared and channel=rayleigh or rician"),
    "fading_model": (_coherent, "medium=shared, channel=rayleigh or rician and "
                     "coherence_time_s > 0"),
    "data_rate": (lambda s: is_shared(s) and reception_rule(s) == "mcs",
                  "medium=shared and reception=mcs (the default with a phy preset)"),
}


@dataclass(frozen=True)
class RadioSettings:
    """The medium (independent links, or one shared radio medium) and the shared medium's
    radio, reception, layout and MAC; builds its MAC and ``SharedMediumSpec``."""

    medium: str = param("links", "links: every link an independent pipe; shared: one radio "
                        "medium (positions, SINR, half-duplex, MAC; the channel gives the "
                        "fading: rayleigh, rician, or none for ideal / fixed)", choices=MEDIA)
    mac: str = param("csma", "medium access on the shared medium", choices=MAC_NAMES)
    broadcast: bool = param(False, "one transmission reaches every neighbour, or a "
                            "server's scheduled agents (shared medium; no ARQ: a lost "
                            "reception follows the protocol's rule for a lost message)")
    reception: str | None = param(None, "how a packet's SINR decides it (shared medium): "
                                  "threshold (received iff its lowest SINR over the packet "
                                  "is >= sinr_threshold_db), per (lost with the packet "
                                  "error rate of uncoded BPSK at that SINR) or mcs (needs a "
                                  "phy preset: the error model of its MCS from the SINR of "
                                  "each interval of the packet, preamble detection and "
                                  "capture); none: mcs with a phy preset, else threshold",
                                  choices=RECEPTION_NAMES)
    tx_power_dbm: float = param(radio_default("tx_power_dbm"), "transmit power in dBm "
                                "(shared medium)", ge=-100, le=100)
    noise_figure_db: float = param(radio_default("noise_figure_db"), "receiver noise figure "
                                   "in dB; noise = -174 dBm/Hz + 10 log10(bandwidth_hz) + NF "
                                   "(shared medium)", ge=0, le=100)
    ref_loss_db: float = param(radio_default("ref_loss_db"), "path loss in dB at 1 m (shared "
                               "medium)", ge=-100, le=300)
    shadowing_db: float = param(radio_default("shadowing_db"), "log-normal shadowing std in "
                                "dB, one draw per pair and run (shared medium)", ge=0, le=50)
    coherence_time_s: float | None = param(None, "coherence time of the fading in seconds "
                                           "(shared medium, channel rayleigh or rician): a "
                                           "pair of nodes keeps its fade for about this long, "
                                           "so a retry soon after a loss meets the same fade "
                                           "(none or 0: a fresh fade for every packet; else "
                                           ">= 1e-9)", ge=0, le=1e6)
    fading_model: str = param("block", "how a pair's fade evolves over coherence_time_s: "
                              "block (constant within blocks of coherence_time_s aligned on "
                              "its multiples, independent across) or gauss-markov "
                              "(correlation exp(-dt / coherence_time_s) after dt)",
                              choices=FADING_MODEL_NAMES)
    sinr_threshold_db: float | None = param(radio_default("sinr_threshold_db"), "SINR "
                                            "threshold in dB (none: 2^R - 1 of coding_rate) "
                                            "(shared medium; reception=per: only its nominal "
                                            "range, CSMA's default sense range)", ge=-100,
                                            le=100)
    layout: str = param("random", "node layout in the area_m square for graphs without "
                        "positions (shared medium)", choices=LAYOUT_NAMES)
    aloha_p: float = param(0.1, "slotted ALOHA transmit probability per slot",
                           ge=MIN_PROBABILITY, le=1)
    mac_slot_s: float | None = param(None, "ALOHA / TDMA slot in seconds (none: the air time "
                                     "of the largest packet, mtu_bits, plus guard_s; with a "
                                     "PHY preset that of the run's first message, whose "
                                     "packets no later packet may exceed)", ge=MIN_SLOT_S,
                                     le=1e6)
    tdma_frame_slots: int | None = param(None, "TDMA slots per frame (none: the number of "
                                         "colours)", ge=1, le=10_000_000)
    sense_range_m: float | None = param(None, "CSMA carrier-sense range in metres (none: by "
                                        "received power under a PHY preset, "
                                        "ed_threshold_dbm and pd_threshold_dbm; the radio "
                                        "range with phy=ideal)", ge=0, le=1e9)
    backoff_slot_s: float = param(20e-6, "CSMA back-off slot in seconds", ge=MIN_SLOT_S,
                                  le=1e3)
    cw_min: int = param(16, "CSMA smallest contention window", ge=1, le=2**20)
    cw_max: int = param(1024, "CSMA largest contention window", ge=1, le=2**20)
    retry_limit: int = param(7, "CSMA retries of a unicast packet", ge=0, le=1000)
    phy: str = param("80211b", "802.11 timing of the shared medium: ideal (a packet takes "
                     "its bits over the rate, nothing else) or a PHY preset, 80211b (DSSS, "
                     "the default), "
                     "80211a (OFDM), 80211g (ERP-OFDM): DIFS, SIFS, EIFS, PLCP preamble and "
                     "header, MAC header and FCS, an ACK at the basic rate; backoff_slot_s, "
                     "cw_min and cw_max at their defaults take the preset's; an ALOHA / "
                     "TDMA slot holds a frame, SIFS and its ACK", choices=PHY_NAMES)
    ed_threshold_dbm: float | None = param(None, "CSMA energy detection in dBm: the carrier "
                                           "is busy while the summed power on the air is at "
                                           "or above it (none: the PHY preset's, -62 OFDM, "
                                           "-76 DSSS at 20 dBm)", ge=MIN_CCA_DBM,
                                           le=MAX_CCA_DBM)
    pd_threshold_dbm: float | None = param(None, "CSMA preamble detection in dBm: a frame "
                                           "received at or above it keeps the carrier busy "
                                           "to its end (none: the PHY preset's, -82 OFDM, "
                                           "-80 DSSS)", ge=MIN_CCA_DBM, le=MAX_CCA_DBM)
    tdma_schedule: str = param("auto", "TDMA schedule: distance2 (no two nodes within "
                               "interference range share a slot), sinr (spatial reuse: nodes "
                               "share a slot while every receiver of each still decodes at "
                               "its mean SINR, path loss and shadowing), auto (distance2 with "
                               "phy=ideal, sinr with a PHY preset)", choices=SCHEDULE_NAMES)
    tdma_margin_db: float = param(0.0, "TDMA sinr schedule: margin on the interference in dB "
                                  "(0: the mean SINR just meets the threshold; more guards "
                                  "against fading)", ge=0, le=100)
    guard_s: float | None = param(None, "guard time after the frame in an ALOHA / TDMA slot "
                                  "in seconds (none: 0 with phy=ideal; with a PHY preset the "
                                  "propagation delay over the interference range plus the "
                                  "Rx/Tx turnaround)", ge=0, le=1e3)
    data_rate: str | None = param(None, "data rate in Mbit/s with reception=mcs: 80211b 1, 2, "
                             "5.5, 11; 80211a / 80211g 6, 9, 12, 18, 24, 36, 48, 54; auto: "
                             "per link, the fastest with a packet error rate <= 10 % at its "
                             "mean SNR (broadcasts: the basic rate); none: the basic rate "
                             "(1 or 6); ACKs go at the basic rate")

    def check_mac(self) -> None:
        """One-line ``ValueError`` for MAC settings that cannot go together."""
        if self.cw_max < self.cw_min:
            raise ValueError(f"cw_max: must be >= cw_min ({self.cw_min}), got {self.cw_max}")
        if self.reception == "mcs" and self.phy == "ideal":
            raise ValueError("reception: mcs needs a phy preset (80211b, 80211a or 80211g), "
                             "got phy=ideal")
        if reception_rule(self) == "mcs":
            from bflnet.radio.phy.mcs import pick_mcs
            pick_mcs(self.phy, self.data_rate)

    def check_radio(self) -> None:
        """One-line ``ValueError`` for radio settings outside what their bounds say."""
        tc = self.coherence_time_s
        if tc is not None and 0 < tc < MIN_COHERENCE_S:
            raise ValueError(f"coherence_time_s: must be 0 (off) or a finite number in "
                             f"[{MIN_COHERENCE_S:g}, 1e+06], got {tc!r}")

    def _csma_value(self, name: str) -> Any:
        """A CSMA field's value, ``None`` (the preset's) at its default under a preset."""
        value = getattr(self, name)
        default = next(f.default for f in dataclasses.fields(RadioSettings) if f.name == name)
        return None if self.phy != "ideal" and value == default else value

    def build_mac(self) -> Any:
        """The shared medium's MAC (a :mod:`bflnet.radio` MAC object)."""
        from bflnet.radio import Aloha, Csma, NoMac, Tdma
        mac: Any = {
            "none": NoMac,
            "aloha": lambda: Aloha(self.aloha_p, self.mac_slot_s, self.guard_s),
            "tdma": lambda: Tdma(self.tdma_frame_slots, self.mac_slot_s,
                                 None if self.tdma_schedule == "auto" else self.tdma_schedule,
                                 self.tdma_margin_db, self.guard_s),
            "csma": lambda: Csma(self.sense_range_m, *map(self._csma_value, _PRESET_CSMA),
                                 self.retry_limit),
        }[self.mac]()
        return mac

    def shared_medium_spec(self, *, bandwidth_hz: float, coding_rate: float,
                           path_loss_exponent: float, fading: str, rician_k: float,
                           latency_s: float, area_m: float) -> Any:
        """The :class:`bflnet.radio.SharedMediumSpec` of these settings, with what the
        links and the graph decide (bandwidth, coding rate, path-loss exponent, fading,
        latency; the area the nodes are laid out in)."""
        from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec
        radio = RadioSpec(
            tx_power_dbm=self.tx_power_dbm, bandwidth_hz=bandwidth_hz,
            noise_figure_db=self.noise_figure_db, coding_rate=coding_rate,
            sinr_threshold_db=self.sinr_threshold_db, reception=self.reception,
            pathloss=LogDistance(path_loss_exponent, 1.0, self.ref_loss_db,
                                 self.shadowing_db),
            fading=fading, rician_k=rician_k, latency_s=latency_s, phy=self.phy,
            ed_threshold_dbm=self.ed_threshold_dbm if _power_sensed(self) else None,
            pd_threshold_dbm=self.pd_threshold_dbm if _power_sensed(self) else None,
            coherence_time_s=self.coherence_time_s if fading != "none" else None,
            fading_model=self.fading_model,
            data_rate=self.data_rate if reception_rule(self) == "mcs" else None)
        return SharedMediumSpec(radio, self.build_mac(), layout=self.layout, area_m=area_m)
