"""The slot of TDMA and ALOHA (fitted to the run's packets with a PHY preset, a guard time
after the frame), the schedule's default, and the latency that no longer holds the radio
after a broadcast."""

from __future__ import annotations

import networkx as nx
import pytest

from bflnet.radio import Aloha, LogDistance, RadioSpec, SharedMediumSpec, Tdma
from bflnet.radio.mac import distance2_colouring
from bflnet.radio.phy import phy_preset
from bflnet.radio.scheduling import default_guard_s
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

MTU = 12_000


def radio(phy: str = "ideal", **kw) -> RadioSpec:
    return RadioSpec(tx_power_dbm=20.0, bandwidth_hz=1e6, noise_figure_db=7.0,
                     coding_rate=1.0, sinr_threshold_db=10.0,
                     pathloss=LogDistance(3.0, 1.0, 40.0), fading="none", phy=phy, **kw)


def network(mac, phy="ideal", n=2, spacing=5.0, **kw):
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": (spacing * k, 0.0)}) for k in range(n))
    g.add_edges_from((k, k + 1) for k in range(n - 1))
    sim = Simulation(3, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(radio(phy, **kw), mac=mac),
                            mtu_bits=MTU, max_attempts=1)
    return sim, net


def send(sim, net, src, dst, bits, out, at=0.0):
    def body():
        if at:
            yield sim.env.timeout(at)
        d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, bits),
                                                  deliver=False)
        out.append((sim.env.now, d.delivered))
    sim.env.process(body())


def tx_rows(sim):
    frame = sim.recorder.to_frame()
    if "frame" not in frame:
        return frame[frame.event == "tx"]
    return frame[(frame.event == "tx") & frame["frame"].ne("ack")]


@pytest.mark.parametrize("mac", [Tdma(), Aloha(1.0)])
def test_with_a_preset_the_default_slot_fits_the_run_s_first_message(mac):
    """64-bit messages with a 12000-bit MTU: the slot is the 64-bit frame's exchange and
    guard, not the MTU's (which would be about 20 times longer)."""
    sim, net = network(mac, phy="80211b")
    timing = phy_preset("80211b")
    guard = default_guard_s("80211b", net.air.medium.range_m)
    assert net.air.slot_s == pytest.approx(timing.frame_s(MTU, 1e6) + timing.sifs_s
                                           + timing.ack_s + guard)  # before any packet
    done: list = []
    for i in range(3):
        send(sim, net, 0, 1, 64, done, at=i * 1e-3)
    sim.env.run()
    slot = timing.frame_s(64, 1e6) + timing.sifs_s + timing.ack_s + guard
    assert net.air.slot_s == net.air.radios[1].slot_s == pytest.approx(slot)
    starts = tx_rows(sim).start_s / slot
    assert ((starts - starts.round()).abs() < 1e-6).all() and len(starts) == 3
    assert all(ok for _, ok in done)


def test_a_later_larger_packet_than_the_fitted_slot_is_a_one_line_error():
    sim, net = network(Tdma(), phy="80211b")
    done: list = []
    send(sim, net, 0, 1, 64, done)
    send(sim, net, 0, 1, 2000, done, at=0.1)
    with pytest.raises(ValueError, match=r"^mac_slot_s: the slot was fitted to the run's "
                                         r"first message \(64 bits") as info:
        sim.env.run()
    assert "\n" not in str(info.value) and "2000-bit" in str(info.value)


def test_without_a_preset_the_default_slot_is_still_the_mtu_s():
    """``phy=ideal`` keeps the medium as it was: the MTU's air time, no guard."""
    sim, net = network(Aloha(1.0))
    done: list = []
    send(sim, net, 0, 1, 64, done)
    sim.env.run()
    assert net.air.slot_s == MTU / 1e6 and net.air.guard_s == 0.0


@pytest.mark.parametrize("mac", [Tdma(guard_s=1e-3), Aloha(1.0, guard_s=1e-3)])
def test_a_guard_time_is_added_to_the_slot(mac):
    sim, net = network(mac)
    assert net.air.slot_s == pytest.approx(MTU / 1e6 + 1e-3)
    done: list = []
    for i in range(3):
        send(sim, net, 0, 1, MTU, done, at=i * 1e-4)
    sim.env.run()
    starts = tx_rows(sim).start_s.to_numpy()
    frame = net.air.slot_s * net.air.frame_slots
    assert starts[1] - starts[0] == pytest.approx(frame)  # the packet, then the guard


def test_an_explicit_slot_too_short_for_the_frame_and_guard_is_refused():
    with pytest.raises(ValueError, match=r"^mac_slot_s: .*plus the guard time") as info:
        network(Tdma(slot_s=MTU / 1e6, guard_s=1e-3))
    assert "\n" not in str(info.value)


def test_the_default_schedule_is_distance2_without_a_preset_and_sinr_with_one():
    """Six nodes 100 m apart on a line: the distance-2 colouring of the interference graph
    (everyone within range of everyone) needs six slots; the SINR schedule reuses."""
    _, ideal = network(Tdma(), n=6, spacing=100.0)
    medium = ideal.air.medium
    pairs = [(a, b) for a in range(6) for b in range(a + 1, 6)
             if medium.distance(a, b) <= medium.range_m]
    expected = distance2_colouring(range(6), pairs + [(k, k + 1) for k in range(5)])
    assert (ideal.air.colours, ideal.air.frame_slots) == expected
    _, preset = network(Tdma(), phy="80211b", n=6, spacing=100.0)
    _, sinr = network(Tdma(schedule="sinr"), n=6, spacing=100.0)
    assert preset.air.frame_slots == sinr.air.frame_slots < ideal.air.frame_slots == 6
    _, kept = network(Tdma(schedule="distance2"), phy="80211b", n=6, spacing=100.0)
    assert kept.air.frame_slots == 6


def test_a_too_short_sinr_frame_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^tdma_frame_slots: the SINR schedule of this "
                                         r"network needs \d+ slots, got 1") as info:
        network(Tdma(frame_slots=1, schedule="sinr"), n=6, spacing=100.0)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: Tdma(schedule="greedy"), r"^tdma_schedule: must be one of distance2, sinr"),
    (lambda: Tdma(margin_db=-1.0), r"^tdma_margin_db: "),
    (lambda: Tdma(guard_s=-1e-6), r"^guard_s: "),
    (lambda: Aloha(guard_s=float("nan")), r"^guard_s: "),
])
def test_bad_tdma_and_guard_settings_are_one_line_errors(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_latency_does_not_hold_the_radio_after_a_broadcast():
    """Two broadcasts queued for one radio under TDMA: the second goes on the air in the
    sender's next slot after the first ends, not after ``latency_s`` more (which would
    miss that slot); each arrives ``latency_s`` after its packet ended."""
    latency = 0.05
    sim, net = network(Tdma(), n=3, latency_s=latency)
    ends: list = []

    def one():
        got = yield from net.air.broadcast(1, Message(1, "*", "x", None, MTU), [0, 2],
                                           links=net.links)
        ends.append((sim.env.now, got))
    sim.env.process(one())
    sim.env.process(one())
    sim.env.run()
    tx = tx_rows(sim).sort_values("start_s")
    frame = net.air.slot_s * net.air.frame_slots
    assert frame < net.air.slot_s + latency  # holding the radio would miss the next slot
    first, second = tx.iloc[0], tx.iloc[1]
    assert second.start_s == pytest.approx(first.start_s + frame)
    assert [t for t, _ in ends] == pytest.approx([first.end_s + latency,
                                                  second.end_s + latency])
    assert all(all(got.values()) for _, got in ends)


def test_latency_does_not_hold_the_radio_between_two_broadcasts_without_a_mac():
    latency = 0.05
    from bflnet.radio import NoMac

    sim, net = network(NoMac(), n=3, latency_s=latency)

    def one():
        yield from net.air.broadcast(1, Message(1, "*", "x", None, MTU), [0, 2],
                                     links=net.links)
    sim.env.process(one())
    sim.env.process(one())
    sim.env.run()
    tx = tx_rows(sim).sort_values("start_s")
    assert tx.start_s.iloc[1] == pytest.approx(tx.end_s.iloc[0])  # back to back
