"""802.11b DCF on the shared medium against Bianchi's saturation model (basic access).

Bianchi, "Performance analysis of the IEEE 802.11 distributed coordination function",
IEEE JSAC 18(3), 2000: with ``W`` the smallest window and ``m`` the doublings,

    tau = 2 (1 - 2p) / ((1 - 2p)(W + 1) + p W (1 - (2p)^m)),   p = 1 - (1 - tau)^(n - 1),
    S = Ps Ptr E[P] / ((1 - Ptr) sigma + Ptr Ps Ts + Ptr (1 - Ps) Tc),

with the medium's timings: ``Ts`` = data frame + SIFS + ACK + DIFS, ``Tc`` = data frame
+ EIFS (colliding senders learn at the ACK timeout, SIFS + ACK, then wait DIFS; everyone
else waits EIFS after the errored frame: all resume at once).
"""

from __future__ import annotations

import itertools
import math
import runpy
import sys
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest

from bflnet.radio import Csma, SharedMediumSpec
from bflnet.radio.phy import phy_preset
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "tables" / "dcf_saturation.csv"
PHY = phy_preset("80211b")
BITS, RATE = 1023 * 8, 1e6
W, M = 32, 5  # CW 32 ... 1024


def bianchi(n: int, w: int = W, m: int = M) -> tuple[float, float]:
    """Bianchi's fixed point for ``n`` saturated stations: ``(p, S)``."""
    def tau_of(p: float) -> float:
        if abs(1 - 2 * p) < 1e-12:  # 0/0 at p = 1/2: a hair beside it
            p += 1e-9
        return 2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m))

    lo, hi = 0.0, 1.0  # p - (1 - (1 - tau(p))^(n-1)) rises in p: bisect
    for _ in range(100):
        p = (lo + hi) / 2
        if 1 - (1 - tau_of(p)) ** (n - 1) > p:
            lo = p
        else:
            hi = p
    tau = tau_of(p)
    ptr = 1 - (1 - tau) ** n
    ps = n * tau * (1 - tau) ** (n - 1) / ptr
    frame = PHY.frame_s(BITS, RATE)
    ts = frame + PHY.sifs_s + PHY.ack_s + PHY.difs_s
    tc = frame + PHY.eifs_s
    s = ps * ptr * (BITS / RATE) / ((1 - ptr) * PHY.slot_s + ptr * ps * ts
                                    + ptr * (1 - ps) * tc)
    return p, s


def harness() -> dict:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return runpy.run_path(str(ROOT / "scripts" / "dcf_saturation.py"), run_name="x")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_fixed_point_limits():
    # one station never collides; without doublings tau = 2 / (W + 1)
    assert bianchi(1)[0] == pytest.approx(0.0, abs=1e-12)
    p, _ = bianchi(10, w=32, m=0)
    tau = 2 / 33
    assert p == pytest.approx(1 - (1 - tau) ** 9, rel=1e-9)
    # the 802.11b timings of the model: a 1023-byte exchange
    assert PHY.frame_s(BITS, RATE) == pytest.approx(192e-6 + (BITS + 224) / RATE)
    assert PHY.eifs_s == pytest.approx(PHY.sifs_s + PHY.ack_s + PHY.difs_s)


#: Simulated seconds per n: about 1 % relative standard error on p (fewer stations
#: collide less: more attempts for the same relative error).
DURATION_S = {5: 500.0, 10: 300.0, 20: 200.0, 50: 150.0}


@pytest.mark.parametrize("n", [5, 10, 20, pytest.param(50, marks=pytest.mark.slow)])
def test_saturation_within_3_percent_of_bianchi(n):
    got = harness()["saturate"](n, DURATION_S[n], seed=2)
    p, s = bianchi(n)
    se = math.sqrt(p * (1 - p) / got["attempts"]) / p
    assert se < 0.011
    assert abs(got["p"] / p - 1) < 0.03, (got, p)
    assert abs(got["S"] / s - 1) < 0.03, (got, s)


def test_stored_table_agrees_with_bianchi_and_shows_hidden_terminals():
    table = pd.read_csv(TABLE)
    connected = table[table.case == "connected"].set_index("n")
    assert {5, 10, 20, 50} <= set(connected.index)
    for n, row in connected.iterrows():
        p, s = bianchi(int(n))
        assert row.attempts > 50_000
        # (two stations: the model's decoupling assumption is at its weakest, 5 %)
        assert abs(row.p / p - 1) < (0.03 if n >= 5 else 0.05), (n, row.p, p)
        assert abs(row.S / s - 1) < 0.03, (n, row.S, s)
        assert abs(row.successes * BITS / RATE / row.duration_s - row.S) < 1e-5
    hidden = table[table.case == "hidden"].iloc[0]
    # A and C cannot sense each other: most frames collide at B, throughput collapses
    assert hidden.p > 3 * connected.loc[2].p and hidden.S < 0.5 * connected.loc[2].S


def test_hidden_terminals_collide_far_more_than_connected_ones():
    run = harness()["saturate"]
    hidden, connected = run(2, 60.0, hidden=True), run(2, 60.0)
    p, s = bianchi(2)
    assert abs(connected["p"] / p - 1) < 0.1 and abs(connected["S"] / s - 1) < 0.03
    assert hidden["p"] > 3 * connected["p"]
    assert hidden["S"] < 0.5 * connected["S"]


def test_every_frame_waits_difs_or_eifs_after_the_medium_turns_idle():
    """In the saturated run: each data frame starts DIFS + k slots after the last busy
    period ended (an ACK), or EIFS + k slots after a collision (no ACK)."""
    h = harness()
    n = 6
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": (5 * math.cos(k), 5 * math.sin(k)) if k else (0.0, 0.0)})
                     for k in range(n + 1))
    g.add_edges_from((0, k) for k in range(1, n + 1))
    sim = Simulation(4, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(h["radio"](), mac=Csma(
        sense_range_m=1000.0, retry_limit=1000)), mtu_bits=BITS)

    def station(src):
        while True:
            yield from net.links[(src, 0)].send(Message(src, 0, "x", None, BITS),
                                                deliver=False)
    for k in range(1, n + 1):
        sim.env.process(station(k))
    sim.env.run(until=3.0)
    tx = sim.recorder.to_frame().query("event == 'tx'").sort_values("start_s")
    acks = tx["frame"].eq("ack")
    data = tx[~acks]
    # busy periods: overlapping frames merged
    periods = []
    for start, end, is_ack in zip(tx.start_s, tx.end_s, acks, strict=True):
        if periods and start < periods[-1][1] - 1e-12:
            periods[-1][1] = max(periods[-1][1], end)
            periods[-1][2] += 1
        else:
            periods.append([start, end, 1, is_ack])
    kinds = {"difs": 0, "eifs": 0}
    for prev, nxt in itertools.pairwise(periods):
        gap = nxt[0] - prev[1]
        if nxt[3]:  # an ACK: SIFS after its data frame
            assert gap == pytest.approx(PHY.sifs_s, abs=1e-9)
            continue
        ifs = PHY.eifs_s if prev[2] > 1 else PHY.difs_s
        slots = (gap - ifs) / PHY.slot_s
        assert slots > -1e-6 and abs(slots - round(slots)) < 1e-6, (prev, nxt, gap)
        kinds["eifs" if prev[2] > 1 else "difs"] += 1
    assert kinds["difs"] > 50 and kinds["eifs"] > 5
    # data frames last their PLCP preamble and header, payload, MAC header and FCS
    assert ((data.end_s - data.start_s) - PHY.frame_s(BITS, RATE)).abs().max() < 1e-9
    assert ((tx[acks].end_s - tx[acks].start_s) - PHY.ack_s).abs().max() < 1e-9


def test_the_documentation_table_is_the_stored_csv_and_both_fixed_points_agree():
    h, table = harness(), pd.read_csv(TABLE)
    for n in sorted(set(table.n)):
        assert h["bianchi"](int(n)) == pytest.approx(bianchi(int(n)), rel=1e-6)
    doc = (ROOT / "docs" / "wireless-medium.md").read_text()
    assert h["markdown"](table) in doc


def test_every_station_senses_every_other_by_energy_in_the_connected_case():
    """The connected runs sense by received power: with 50 stations on the 5 m circle
    (and the access point at its centre) every node's power at every other is far above
    the energy-detection threshold, so all are in one collision domain."""
    h = harness()
    n = 50
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": (5 * math.cos(2 * math.pi * k / n),
                                  5 * math.sin(2 * math.pi * k / n)) if k else (0.0, 0.0)})
                     for k in range(n + 1))
    g.add_edges_from((0, k) for k in range(1, n + 1))
    net = Simulation(1).build_network(g, medium=SharedMediumSpec(h["radio"](), mac=Csma(
        retry_limit=1000)), mtu_bits=BITS)
    medium = net.air.medium
    assert medium.power_sense is not None and medium.sense_range_m is None
    ed_mw = 10 ** (medium.power_sense.ed_dbm / 10)
    for a in range(n + 1):
        powers = medium.mean_powers(a)
        assert len(powers) == n and min(powers.values()) > 100 * ed_mw  # 20 dB above
