"""The 802.11 presets' rows, pinned: a change made for speed must leave them as they are.

The digests are scripts/medium_fingerprints.py's (sha256 of every row, in order, with
``record_messages`` on) for a few of its runs under ``phy=80211b`` and ``80211g``:
consensus on the K = 16 graph (CSMA unicast and broadcast, TDMA), a louder radio on the
K = 60 graph (more carrier sense by power and ED crossings), and five saturated stations.
A change that is meant to change these rows updates them from that script's output
(``--phy 80211b --only NAME``) and says why."""

from __future__ import annotations

import pytest

PINNED = {  # (phy, case name): (digest, rows, transmissions on the air)
    ("80211b", "K=16 csma {} bc=False"): ("3adba244f875de10", 13140, 5464),
    ("80211b", "K=16 csma {} bc=True"): ("a41beee735254074", 1503, 192),
    ("80211b", "K=16 tdma {} bc=False"): ("afe615a1e05af003", 3995, 2745),
    ("80211b", "K=60 csma loud bc=False"): ("e2b45a931d7e5758", 13150, 5889),
    ("80211g", "K=16 csma {} bc=False"): ("f187aa78a2fa843d", 11128, 4773),
}
SATURATED = {  # phy: digest, rows, transmissions of five saturated stations
    "80211b": ("cb86f58d5a4e0fec", 676, 1140),
    "80211g": ("407c2a5a395242af", 760, 1067),
}


@pytest.mark.parametrize(("phy", "name"), list(PINNED))
def test_consensus_rows_under_a_preset_are_pinned(fingerprints, phy, name):
    case = next(c for c in fingerprints["cases"](phy) if c[0] == name)
    _, graph, rounds, medium, broadcast, mtu = case
    assert fingerprints["fingerprint"](graph, rounds, medium, broadcast, mtu) == PINNED[(phy, name)]


@pytest.mark.parametrize("phy", list(SATURATED))
def test_saturated_stations_rows_are_pinned(fingerprints, phy):
    assert fingerprints["saturated_fingerprint"](5, phy, 1000) == SATURATED[phy]
