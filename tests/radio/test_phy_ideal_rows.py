"""``phy="ideal"`` is the shared medium as it was before the 802.11 presets, row for row.

The digests are scripts/medium_fingerprints.py's (sha256 of every row of a K = 16
consensus run) computed with the code before the presets existed. A change that is meant
to change the ideal medium's rows updates them from that script's output."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bflnet.radio import SharedMediumSpec, make_mac

BEFORE = {  # case: (digest, rows, packets on the air)
    ("csma", False): ("9bdcbd976723f855", 4356, 1463),
    ("csma", True): ("1b27d2fc8dd23e4d", 871, 192),
    ("aloha", False): ("46055089546349b0", 4712, 1643),
    ("none", True): ("041fceb8f4696533", 1501, 192),
    ("tdma", False): ("3fb19bc8eeaf38b3", 2261, 1144),
}


@pytest.mark.parametrize(("mac", "broadcast"), list(BEFORE))
def test_ideal_rows_are_those_from_before_the_presets(fingerprints, mac, broadcast):
    mc = fingerprints["mc"]
    radio = replace(mc.RADIO, phy="ideal")
    assert radio == mc.RADIO  # ideal is the default
    got = fingerprints["fingerprint"](mc.geometric_graph(16), 12,
                                      SharedMediumSpec(radio, make_mac(mac)), broadcast,
                                      12_000)
    assert got == BEFORE[(mac, broadcast)]
