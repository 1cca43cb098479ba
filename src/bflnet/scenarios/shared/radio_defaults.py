"""The one set of radio defaults: what a transmit power, a path loss, a noise figure, a
radius or an area is when a scenario does not say otherwise.

Every scenario's config takes these defaults from here (through
:class:`~bflnet.scenarios.shared.graph_settings.GraphSettings`,
:class:`~bflnet.scenarios.shared.link_settings.LinkSettings`,
:class:`~bflnet.scenarios.shared.radio_settings.RadioSettings`, and the over-the-air
scenarios' placement). A scenario that keeps another default for one of them names it,
with the reason, in its config's ``RADIO_EXCEPTIONS`` (``bflnet describe`` shows the
reason beside the parameter); the table in docs/scenarios.md is checked against both by
the tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class RadioDefault:
    """One shared default: its value (``None``: derived, see ``meaning``), unit and
    meaning."""

    value: float | None
    unit: str
    meaning: str


#: Parameter name -> its shared default, in the order of the docs' table.
RADIO_DEFAULTS: Mapping[str, RadioDefault] = MappingProxyType({
    "tx_power_dbm": RadioDefault(20.0, "dBm", "transmit power of every node (shared "
                                 "medium)"),
    "noise_figure_db": RadioDefault(7.0, "dB", "receiver noise figure: noise = -174 dBm/Hz "
                                    "+ 10 log10(bandwidth_hz) + NF (-107 dBm at 1 MHz)"),
    "ref_loss_db": RadioDefault(40.0, "dB", "log-distance path loss at 1 m"),
    "path_loss_exponent": RadioDefault(3.0, "1", "log-distance path-loss exponent (shared "
                                       "medium, fading links, placed over-the-air devices)"),
    "shadowing_db": RadioDefault(0.0, "dB", "log-normal shadowing std, one draw per pair "
                                 "and run (shared medium)"),
    "sinr_threshold_db": RadioDefault(None, "dB", "reception threshold; none: 2^R - 1 of "
                                      "coding_rate (4.8 dB at rate 2)"),
    "bandwidth_hz": RadioDefault(1e6, "Hz", "bandwidth (channel uses per second)"),
    "coding_rate": RadioDefault(2.0, "bit/s/Hz", "coding rate: 2 Mbit/s at 1 MHz"),
    "mean_snr_db": RadioDefault(60.0, "dB", "mean SNR at 1 m of a fading link "
                                "(medium=links); on the shared medium the SNR at 1 m is "
                                "tx_power_dbm - ref_loss_db - noise, 87 dB with these "
                                "defaults"),
    "distance_m": RadioDefault(10.0, "m", "distance of a fading link when the nodes have "
                               "no positions; an over-the-air device's distance to the "
                               "server"),
    "radius_m": RadioDefault(40.0, "m", "edge radius of a random geometric graph"),
    "area_m": RadioDefault(100.0, "m", "side of the square the nodes are placed in"),
    "latency_s": RadioDefault(0.005, "s", "latency of every packet"),
})


def radio_default(name: str) -> float | None:
    """The shared default of the radio parameter ``name``."""
    return RADIO_DEFAULTS[name].value


def own_defaults(cls: type) -> dict[str, object]:
    """``{name: default}`` of the radio parameters the config class ``cls`` declares
    (whatever it reads)."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.name in RADIO_DEFAULTS}


def differing_defaults(cls: type) -> dict[str, tuple[object, object]]:
    """``{name: (shared default, cls's default)}`` of the radio parameters ``cls`` may
    read (not among its refused fields) whose default is not the shared one."""
    refused = getattr(cls, "refused_fields", dict)()
    return {name: (radio_default(name), value) for name, value in own_defaults(cls).items()
            if name not in refused and value != radio_default(name)}
