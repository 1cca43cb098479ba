"""MACs against their closed forms: slotted ALOHA, TDMA, CSMA; bad settings."""

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.protocols.graphs.topologies import make_graph
from bflnet.radio import Aloha, Csma, LogDistance, RadioSpec, SharedMediumSpec, Tdma
from bflnet.radio.mac import distance2_colouring
from bflnet.radio.medium import EPS_S
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

BITS = 1000


def placed(positions, edges):
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": p}) for k, p in enumerate(positions))
    g.add_edges_from(edges)
    return g


def quiet_radio(**kw):
    """No fading, 10 dB threshold: a lone packet nearby arrives, two at once collide."""
    base = dict(tx_power_dbm=20.0, bandwidth_hz=1e6, noise_figure_db=7.0, coding_rate=1.0,
                sinr_threshold_db=10.0, pathloss=LogDistance(3.0, 1.0, 40.0), fading="none")
    return RadioSpec(**{**base, **kw})


def saturate(sim, net, src, dst):
    """``src`` always has a packet for ``dst`` (one attempt each)."""
    def body():
        while True:
            yield from net.links[(src, dst)].send(Message(src, dst, "x", None, BITS),
                                                  deliver=False)
    sim.env.process(body())


@pytest.mark.parametrize("n, p", [(5, 0.3), (3, 0.5)])
def test_slotted_aloha_success_per_slot_is_n_p_1_minus_p_to_the_n_minus_1(n, p):
    angle = 2 * np.pi * np.arange(n) / n
    g = placed([(0.0, 0.0)] + [(5 * math.cos(a), 5 * math.sin(a)) for a in angle],
               [(0, k) for k in range(1, n + 1)])
    spec = quiet_radio()
    sim = Simulation(7, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec, mac=Aloha(p)), max_attempts=1,
                            mtu_bits=BITS)
    for k in range(1, n + 1):
        saturate(sim, net, k, 0)
    slots = 1500
    slot = net.air.slot_s
    assert slot == pytest.approx(spec.airtime_s(BITS))
    sim.env.run(until=(slots - 0.5) * slot)
    rows = sim.recorder.to_frame()
    tx = rows[rows.event == "tx"]
    success = (tx.received == 1).sum() / slots
    expected = n * p * (1 - p) ** (n - 1)
    assert abs(success - expected) < 4 * math.sqrt(expected * (1 - expected) / slots)
    # every transmission starts on a slot boundary; a node defers in the other slots: its
    # defer rows (one per attempt that deferred, written as it transmits) count them all
    assert np.allclose(tx.start_s / slot, np.round(tx.start_s / slot), atol=1e-6)
    defers = rows[(rows.event == "mac") & (rows.kind == "defer")]
    assert (defers.deferrals >= 1).all()
    for k in range(1, n + 1):
        sent = np.round(tx[tx.node == k].start_s.to_numpy() / slot).astype(int)
        skipped = defers[defers.node == k]
        assert np.allclose(skipped.time_s / slot, np.round(skipped.time_s / slot), atol=1e-6)
        # (a packet still on the air at the end has its defer row but no tx row yet)
        skipped = skipped[skipped.time_s < (sent[-1] + 0.5) * slot]
        # slots 0 .. last: one transmission or one skipped slot each
        assert skipped.deferrals.sum() + len(sent) == sent[-1] + 1


def test_tdma_round_is_colours_times_slot_and_nothing_in_range_overlaps():
    g = make_graph("random-geometric", 40, np.random.default_rng(2), radius_m=30.0,
                   area_m=150.0)
    # radio range 31 m (mean SNR 10 dB), interference counted up to 55 m
    spec = quiet_radio(tx_power_dbm=3.0, pathloss=LogDistance(4.0, 1.0, 40.0),
                       interference_margin_db=0.0)
    assert spec.range_m > 30.0
    sim = Simulation(1, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec, mac=Tdma()), max_attempts=1,
                            mtu_bits=BITS)
    air = net.air
    colours, frame, slot = air.colours, air.frame_slots, air.slot_s
    assert frame == len(set(colours.values())) > 1
    for k in g:
        saturate(sim, net, k, next(iter(g.neighbors(k))))
    rounds = 6
    sim.env.run(until=(rounds + 1) * frame * slot - EPS_S)
    tx = sim.recorder.to_frame().query("event == 'tx'")
    tx = tx[tx.start_s < rounds * frame * slot - EPS_S]
    for k, starts in tx.groupby("node").start_s:
        assert len(starts) == rounds
        assert np.allclose(np.diff(starts.to_numpy()), frame * slot, rtol=0, atol=1e-9)
        assert starts.iloc[0] == pytest.approx(colours[k] * slot)
    medium = air.medium
    start, end, node = tx.start_s.to_numpy(), tx.end_s.to_numpy(), tx.node.to_numpy()
    for i in range(len(tx)):  # every row against every other
        overlap = (start < end[i] - EPS_S) & (end > start[i] + EPS_S)
        overlap[i] = False
        for j in np.flatnonzero(overlap):
            assert medium.distance(node[i], node[j]) > medium.range_m
    # the colouring is one of distance 2 in the interference graph
    inter = nx.Graph()
    inter.add_nodes_from(g)
    inter.add_edges_from((a, b) for a in g for b in medium.near(a).tolist() if a != b)
    inter.add_edges_from(g.edges)
    square = nx.power(inter, 2)
    assert all(colours[a] != colours[b] for a, b in square.edges)
    assert (tx.received == 1).all()


def test_impossible_tdma_frame_is_a_one_line_error():
    star = placed([(0.0, 0.0)] + [(float(k), 1.0) for k in range(1, 5)],
                  [(0, k) for k in range(1, 5)])
    with pytest.raises(ValueError, match="needs at least 5 colours") as info:
        Simulation(0).build_network(star, medium=SharedMediumSpec(
            quiet_radio(), mac=Tdma(frame_slots=2)))
    assert "\n" not in str(info.value)
    colours, frame = distance2_colouring(range(5), [(0, k) for k in range(1, 5)], 7)
    assert frame == 7 and len(set(colours.values())) == 5


@pytest.mark.parametrize("cw", [4, 8])
def test_csma_two_nodes_collide_iff_their_backoffs_end_in_the_same_slot(cw):
    # senders 0 and 1 hear each other; 0 -> 2 and 1 -> 3 collide if on the air together
    g = placed([(0.0, 0.0), (5.0, 0.0), (0.0, 5.0), (5.0, 5.0)], [(0, 2), (1, 3)])
    spec = quiet_radio()
    mac = Csma(cw_min=cw, cw_max=8 * cw, retry_limit=10, slot_s=20e-6)
    sim = Simulation(11, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec, mac=mac), mtu_bits=BITS)
    assert net.air.medium.sense_range_m > 5.0
    rounds, period = 1200, 0.05

    def sender(src, dst):
        for i in range(rounds):
            yield sim.env.timeout(i * period - sim.env.now)
            d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, BITS),
                                                      deliver=False)
            assert d.delivered
    sim.env.process(sender(0, 2))
    sim.env.process(sender(1, 3))
    sim.env.run()
    rows = sim.recorder.to_frame()
    mac_rows = rows[rows.event == "mac"].assign(
        round=lambda f: np.floor(f.time_s / period + 1e-9).astype(int))
    backoffs = mac_rows[mac_rows.kind == "backoff"]
    first = backoffs[backoffs.attempt == 1]
    counters = first.pivot(index="round", columns="node", values="counter")
    assert len(counters) == rounds
    assert (first.cw == cw).all() and ((first.counter >= 0) & (first.counter < cw)).all()
    collided = set(mac_rows[(mac_rows.kind == "collision") & (mac_rows.attempt == 1)]["round"])
    same = set(counters.index[counters[0] == counters[1]])
    assert collided == same
    rate = len(collided) / rounds
    assert abs(rate - 1 / cw) < 4 * math.sqrt((1 / cw) * (1 - 1 / cw) / rounds)
    # a node whose first back-off did not end first deferred (froze on the other's packet)
    deferred = first.pivot(index="round", columns="node", values="deferrals")
    later = counters[0] != counters[1]
    loser = np.where(counters[0] > counters[1], 0, 1)[later.to_numpy()]  # ends later
    assert (deferred.to_numpy()[later.to_numpy()][np.arange(len(loser)), loser] >= 1).all()
    winner_first = deferred.to_numpy()[later.to_numpy()][np.arange(len(loser)), 1 - loser]
    assert (winner_first == 0).all()
    # every back-off row is written when its node transmits
    tx = rows[rows.event == "tx"]
    assert len(backoffs) == len(tx)
    assert np.allclose(np.sort(backoffs.time_s.to_numpy()), np.sort(tx.start_s.to_numpy()))


@pytest.mark.parametrize("make, match", [
    (lambda: Aloha(p=1.5), "aloha_p"),
    (lambda: Aloha(p=float("nan")), "aloha_p"),
    (lambda: Csma(cw_min=16, cw_max=8), "cw_max"),
    (lambda: Csma(retry_limit=-1), "retry_limit"),
    (lambda: Csma(sense_range_m=-2.0), "sense_range_m"),
    (lambda: Tdma(frame_slots=0), "tdma_frame_slots"),
    (lambda: Aloha(slot_s=float("inf")), "slot_s"),
])
def test_mac_parameters_out_of_range_are_one_line_errors(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_aloha_slot_shorter_than_a_packet_is_refused():
    g = placed([(0.0, 0.0), (1.0, 0.0)], [(0, 1)])
    with pytest.raises(ValueError, match="slot_s: must be at least"):
        Simulation(0).build_network(g, mtu_bits=BITS, medium=SharedMediumSpec(
            quiet_radio(), mac=Aloha(0.5, slot_s=1e-6)))
