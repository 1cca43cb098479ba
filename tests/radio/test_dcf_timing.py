"""The time axis of an 802.11 frame exchange on the shared medium (PHY presets)."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from bflnet.radio import Aloha, Csma, LogDistance, NoMac, RadioSpec, SharedMediumSpec, Tdma
from bflnet.radio.phy import PHYS, phy_preset
from bflnet.radio.scheduling import default_guard_s
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

BITS = 8000


def radio(phy: str = "80211b", **kw) -> RadioSpec:
    return RadioSpec(tx_power_dbm=20.0, bandwidth_hz=1e6, noise_figure_db=7.0,
                     coding_rate=1.0, sinr_threshold_db=10.0,
                     pathloss=LogDistance(3.0, 1.0, 40.0), fading="none", phy=phy, **kw)


def network(positions, edges, mac, phy="80211b", seed=3, **kw):
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": p}) for k, p in enumerate(positions))
    g.add_edges_from(edges)
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(radio(phy, **kw), mac=mac),
                            mtu_bits=BITS)
    return sim, net


def rows(sim, kind):
    frame = sim.recorder.to_frame()
    return frame[frame.event == kind]


def send_one(sim, net, src, dst, out):
    def body():
        d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, BITS),
                                                  deliver=False)
        out.append((sim.env.now, d.delivered))
    sim.env.process(body())


@pytest.mark.parametrize("phy", ["80211b", "80211a", "80211g"])
def test_a_unicast_exchange_is_difs_backoff_frame_sifs_ack(phy):
    timing = phy_preset(phy)
    sim, net = network([(0.0, 0.0), (5.0, 0.0)], [(0, 1)], Csma(), phy=phy)
    done: list = []
    send_one(sim, net, 0, 1, done)
    sim.env.run()
    backoff = rows(sim, "mac").query("kind == 'backoff'").iloc[0]
    assert backoff.cw == timing.cw_min + 1  # CWmin + 1 values
    tx = rows(sim, "tx").sort_values("start_s")
    data, ack = tx.iloc[0], tx.iloc[1]
    assert data.node == 0 and ack.node == 1 and ack.frame == "ack"
    assert data.start_s == pytest.approx(timing.difs_s + backoff.counter * timing.slot_s)
    assert data.end_s - data.start_s == pytest.approx(timing.frame_s(BITS, radio(phy).rate_bps))
    assert ack.start_s - data.end_s == pytest.approx(timing.sifs_s)
    assert ack.end_s - ack.start_s == pytest.approx(timing.ack_s)
    # the sender learns the outcome when the ACK has ended, not when its frame did
    assert done == [(pytest.approx(ack.end_s), True)]


def test_a_broadcast_is_not_acknowledged():
    timing = phy_preset("80211b")
    sim, net = network([(0.0, 0.0), (5.0, 0.0), (0.0, 5.0)], [(0, 1), (0, 2)], NoMac())
    got: list = []

    def body():
        out = yield from net.air.radios[0].transmit([1, 2], BITS, acknowledged=False,
                                                    max_attempts=1)
        got.append((sim.env.now, out))
    sim.env.process(body())
    sim.env.run()
    tx = rows(sim, "tx")
    assert len(tx) == 1 and "frame" not in tx  # no ACK on the air
    end, (start, attempts, _, arrived) = got[0]
    assert start == 0.0 and attempts == 1 and arrived == {1: True, 2: True}
    assert end == pytest.approx(timing.frame_s(BITS, 1e6))


def test_a_lost_frame_is_retried_after_the_ack_timeout_up_to_the_retry_limit():
    timing = phy_preset("80211b")
    # the receiver is 2 km away: nothing arrives, no ACK ever comes back
    sim, net = network([(0.0, 0.0), (2000.0, 0.0)], [(0, 1)], Csma(retry_limit=2))
    done: list = []
    send_one(sim, net, 0, 1, done)
    sim.env.run()
    tx = rows(sim, "tx").sort_values("start_s")
    assert len(tx) == 3 and (tx.node == 0).all() and (tx.received == 0).all()
    backoffs = rows(sim, "mac").query("kind == 'backoff'")
    assert backoffs.cw.tolist() == [32, 64, 128]
    for i in (1, 2):  # each retry: ACK timeout, then DIFS and its back-off
        wait = tx.start_s.iloc[i] - tx.end_s.iloc[i - 1]
        assert wait == pytest.approx(timing.ack_timeout_s + timing.difs_s
                                     + backoffs.counter.iloc[i] * timing.slot_s)
    assert done == [(pytest.approx(tx.end_s.iloc[-1] + timing.ack_timeout_s), False)]


def test_backoff_is_frozen_while_busy_and_resumes_after_difs():
    """Node 1's back-off runs while 0's frame and ACK are on the air: it counts only the
    idle slots, DIFS after each busy period."""
    timing = phy_preset("80211b")
    sim, net = network([(0.0, 0.0), (5.0, 0.0), (0.0, 5.0), (5.0, 5.0)],
                       [(0, 2), (1, 3)], Csma(cw_min=1, cw_max=1))
    done: list = []
    send_one(sim, net, 0, 2, done)

    def later():
        yield sim.env.timeout(timing.difs_s + 1e-6)  # 0 is on the air by now
        d = yield from net.links[(1, 3)].send(Message(1, 3, "x", None, BITS), deliver=False)
        done.append((sim.env.now, d.delivered))
    sim.env.process(later())
    sim.env.run()
    tx = rows(sim, "tx").sort_values("start_s")
    first_ack = tx[(tx.node == 2)].iloc[0]
    second = tx[tx.node == 1].iloc[0]
    assert second.start_s == pytest.approx(first_ack.end_s + timing.difs_s)
    assert all(ok for _, ok in done)


@pytest.mark.parametrize("mac", [Tdma(), Aloha(0.5)])
def test_an_aloha_or_tdma_slot_holds_the_frame_sifs_and_its_ack(mac):
    timing = phy_preset("80211b")
    sim, net = network([(0.0, 0.0), (5.0, 0.0), (400.0, 0.0), (405.0, 0.0)],
                       [(0, 1), (2, 3)], mac)
    guard = default_guard_s("80211b", net.air.medium.range_m)  # propagation + turnaround
    assert net.air.guard_s == guard > 5e-6
    slot = timing.frame_s(BITS, 1e6) + timing.sifs_s + timing.ack_s + guard
    assert net.air.slot_s == pytest.approx(slot)
    done: list = []
    for _ in range(5):
        send_one(sim, net, 0, 1, done)
        send_one(sim, net, 2, 3, done)
    sim.env.run()
    tx = rows(sim, "tx")
    starts = tx[tx.frame.isna()].start_s / slot
    assert ((starts - starts.round()).abs() < 1e-6).all()  # data frames on slot boundaries
    acks = tx[tx.frame == "ack"]
    assert len(acks) == 10
    # every ACK ends inside the slot its frame began in
    first = (acks.start_s / slot + 1e-9).apply(math.floor)
    assert (acks.end_s <= (first + 1) * slot + 1e-9).all()
    assert len(done) == 10 and all(ok for _, ok in done)


def test_a_slot_shorter_than_the_exchange_is_refused_in_one_line():
    with pytest.raises(ValueError, match="mac_slot_s: .*SIFS and its ACK") as info:
        network([(0.0, 0.0), (5.0, 0.0)], [(0, 1)], Tdma(slot_s=0.008))
    assert "\n" not in str(info.value)


def test_an_unknown_phy_is_a_one_line_error():
    with pytest.raises(ValueError, match="phy: must be one of") as info:
        radio("80211n")
    assert "\n" not in str(info.value) and all(p in str(info.value) for p in PHYS)


def test_a_frame_due_while_the_nodes_own_ack_is_on_the_air_waits_for_it():
    timing = phy_preset("80211b")
    sim, net = network([(0.0, 0.0), (5.0, 0.0), (10.0, 0.0)], [(0, 1), (1, 2)], NoMac())
    done: list = []
    send_one(sim, net, 0, 1, done)
    ack_start = timing.frame_s(BITS, 1e6) + timing.sifs_s

    def later():  # node 1's own message, due while it acknowledges node 0's frame
        yield sim.env.timeout(ack_start + 1e-6)
        d = yield from net.links[(1, 2)].send(Message(1, 2, "x", None, BITS), deliver=False)
        done.append((sim.env.now, d.delivered, d.attempts))
    sim.env.process(later())
    sim.env.run()
    tx = rows(sim, "tx").sort_values("start_s")
    ack, second = tx.iloc[1], tx.iloc[2]
    assert ack.frame == "ack" and ack.node == 1 and second.node == 1
    assert second.start_s == pytest.approx(ack.end_s)  # at once after its ACK, not during
    assert second.attempt == 1 and done[1][1:] == (True, 1)
