"""The parameter server's uplink as scenario settings (:mod:`bflnet.protocols.uplink`).

``uplink=links`` (the default) sends each update over its agent's link as before;
``uplink=aircomp`` superposes the scheduled agents' updates in one analog transmission
of d channel uses (truncated channel inversion, the server gets the noisy mean);
``uplink=digital`` is the fair digital baseline: on the same real channel uses and energy
budget, each device sends its update alone in a slot of d channel uses, quantised without
bias at the bits its channel supports that round (rate adaptation,
:mod:`bflnet.radio.digital_uplink`), at full energy (``uplink_digital_point=full``) or at
the energy-minimising point with at most ``uplink_digital_bits`` bits per coordinate
(``min-energy``). Every device's mean
power gain to the server is 1, so ``uplink_snr_db`` is the mean received SNR per channel
use; fading is Rayleigh, one draw per device per round. The ``uplink_*`` fields are read
only when ``uplink`` is not ``links``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from bflnet.runs.config import param
from bflnet.validation.limits import MIN_BANDWIDTH_HZ

UPLINKS = ("links", "aircomp", "digital")
TRUNCATIONS = ("authors", "consistent")
#: The fields read only when ``uplink`` is not ``links``.
AIR_FIELDS = ("uplink_snr_db", "uplink_gain_threshold", "uplink_truncation", "uplink_clip",
              "uplink_bandwidth_hz", "uplink_digital_point", "uplink_digital_bits")
DIGITAL_POINTS = ("full", "min-energy")


def uplink_columns() -> tuple[Any, ...]:
    """The columns an ``uplink`` other than links adds to the ``init`` and ``iteration``
    rows (:mod:`bflnet.protocols.uplink`)."""
    from bflnet.runs.schema import col

    when = "uplink=aircomp or digital"
    rows = ("init", "iteration")
    return (
        col("k_active", "count", "devices heard this round", *rows, when=when),
        col("silent", "count", "devices whose update was ready but not heard (truncated, "
            "or out of rate)", *rows, when=when),
        col("scale", "1", "aircomp: the power control's common scaling a", *rows, when=when),
        col("channel_var", "1", "variance per coordinate of the channel noise on the "
            "delivered mean", *rows, when=when),
        col("added_var", "1", "variance the learner added on top (FedAvg: 0)", *rows,
            when=when),
        col("clipped", "count", "aircomp: updates clipped to uplink_clip", *rows, when=when),
        col("round_energy_j", "1", "energy (J) the devices spent on this round's uplink", *rows,
            when=when),
        col("max_device_energy_j", "1", "the most energy (J) one device spent this round", *rows,
            when=when),
        col("cum_energy_j", "1", "uplink energy (J) of all devices so far", *rows, when=when),
        col("cum_channel_uses", "count", "aircomp: analog channel uses so far", *rows,
            when=when),
    )


@dataclass(frozen=True)
class UplinkSettings:
    """The ``uplink`` field and its ``uplink_*`` settings (module docstring)."""

    uplink: str = param("links", "how updates reach the server: links (each agent's own "
                        "link), aircomp (one analog over-the-air transmission of their "
                        "mean) or digital (quantised, one device after the other)",
                        choices=UPLINKS)
    uplink_snr_db: float = param(20.0, "uplink=aircomp/digital: mean received SNR per "
                                 "channel use in dB", ge=-50, le=100)
    uplink_gain_threshold: float | None = param(
        None, "uplink=aircomp: fixed amplitude threshold below which a device stays "
        "silent (none: picked per round by uplink_truncation)", ge=0, le=1e6)
    uplink_truncation: str = param("consistent", "uplink=aircomp: rule for the threshold "
                                   "when uplink_gain_threshold is none (consistent: the "
                                   "channel noise weighed against the bias over the whole "
                                   "vector; authors: the WFLMC paper's)", choices=TRUNCATIONS)
    uplink_clip: float = param(10.0, "uplink=aircomp: norm each update is clipped to "
                               "before power control", gt=0, le=1e12)
    uplink_bandwidth_hz: float = param(1e6, "uplink=aircomp/digital: channel uses per "
                                       "second", ge=MIN_BANDWIDTH_HZ, le=1e12)
    uplink_digital_point: str = param("full", "uplink=digital: operating point, full (the "
                                      "whole energy budget, bits from the channel's rate) "
                                      "or min-energy (the least energy for at most "
                                      "uplink_digital_bits bits per coordinate)",
                                      choices=DIGITAL_POINTS)
    uplink_digital_bits: int = param(4, "uplink=digital, min-energy: most quantiser bits per "
                                     "coordinate", ge=2, le=32)

    def check_uplink_fields(self) -> None:
        """Refuse ``uplink_*`` settings changed from their defaults with ``uplink=links``,
        in one line naming them."""
        if self.uplink != "links":
            return
        changed = [f.name for f in dataclasses.fields(UplinkSettings)
                   if f.name in AIR_FIELDS and getattr(self, f.name) != f.default]
        if changed:
            raise ValueError(f"{changed[0]}: read only with uplink=aircomp or digital, got "
                             f"uplink=links")

    def uplink_spec(self, K: int) -> Any:
        """The protocol's ``uplink`` for ``K`` agents: ``None`` for links."""
        if self.uplink == "links":
            return None
        import numpy as np

        from bflnet.protocols.uplink import AirCompUplink, DigitalUplink
        from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db
        from bflnet.radio.digital_uplink import DigitalLink

        spec = AirCompSpec(tx_power=tx_power_from_snr_db(self.uplink_snr_db),
                           bandwidth_hz=self.uplink_bandwidth_hz,
                           gain_threshold=self.uplink_gain_threshold,
                           truncation=self.uplink_truncation, power_rule="full")
        gains = np.ones(K)
        if self.uplink == "aircomp":
            return AirCompUplink(spec, gains, self.uplink_clip)
        link = DigitalLink(self.uplink_digital_point, self.uplink_digital_bits)
        return DigitalUplink(spec, gains, link=link)
