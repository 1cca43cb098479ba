"""TDMA with spatial reuse: the SINR schedule checks the slot's summed interference, every
transmission of every slot decodes (the medium's own SINR, fading off), a run has no
collision rows, and the schedule is an option with its default and one-line errors."""

from __future__ import annotations

import runpy
from dataclasses import replace
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.radio import Tdma
from bflnet.radio.scheduling import sinr_schedule
from bflnet.simulator import Simulation

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "tdma_reuse.py"), run_name="x")


def test_the_check_is_cumulative_not_pairwise():
    """Receiver 0 of sender 1 tolerates one of the far senders 2, 3, 4 but not two: any
    pair of transmissions would decode, the schedule never puts 1 with two of them."""
    noise, threshold = 1.0, 10.0
    signal = 100.0  # SNR 20 dB: tolerates interference up to signal / threshold - noise = 9
    far = 5.0  # one interferer: 5 <= 9; two: 10 > 9
    k = 5
    around = []
    for t in range(k):
        others = np.array([n for n in range(k) if n != t])
        power = np.array([signal if (t, n) == (1, 0) else (far if n == 0 else 1e-9)
                          for n in others])
        around.append((others, power))
    receivers = [np.array([], dtype=np.int64), np.array([0]), *[np.array([], np.int64)] * 3]
    colours, slots = sinr_schedule(around, receivers, noise_mw=noise, threshold=threshold)
    with_one = [n for n in (2, 3, 4) if colours[n] == colours[1]]
    assert len(with_one) == 1  # one fits (greedy, first slot), the second does not
    assert colours[0] != colours[1] and slots == 2
    # with a 3 dB margin even one interferer (5 x 2 > 9) is too many
    colours, _ = sinr_schedule(around, receivers, noise_mw=noise, threshold=threshold,
                               margin_db=3.0)
    assert all(colours[n] != colours[1] for n in (2, 3, 4))


def test_with_acks_a_sender_must_decode_its_receiver_s_ack():
    """A -> a and B -> b: both data frames decode together, but b's ACK drowns a's at A
    (a weak link beside a strong one): only the ACK check splits them."""
    A, a, B, b = range(4)
    power = np.full((4, 4), 1e-6)
    for (x, y), p in {(A, a): 20.0, (B, b): 100.0, (A, b): 5.0, (B, a): 0.1}.items():
        power[x, y] = power[y, x] = p  # mean powers are reciprocal
    around = [(np.array([n for n in range(4) if n != t]),
               np.array([power[t, n] for n in range(4) if n != t])) for t in range(4)]
    receivers = [np.array([a]), np.array([], np.int64), np.array([b]),
                 np.array([], np.int64)]
    plain, _ = sinr_schedule(around, receivers, noise_mw=0.01, threshold=10.0)
    acked, _ = sinr_schedule(around, receivers, noise_mw=0.01, threshold=10.0, acks=True)
    assert plain[A] == plain[B] and acked[A] != acked[B]


@pytest.fixture(scope="module")
def network():
    """d2d-medium's TDMA network at K = 100 (the study's layout and radio), SINR schedule,
    fading off."""
    return SCRIPT["built"](100, "sinr", 0.0, fading="none")


def test_every_slot_decodes_with_the_medium_s_own_sinr(network):
    """All the transmissions of a slot on the air at once (each a broadcast to its
    neighbours): no reception is lost to interference or half-duplex."""
    air = network.air
    medium, env = air.medium, network.env
    slots: dict[int, list[int]] = {}
    for node, colour in air.colours.items():
        slots.setdefault(colour, []).append(node)
    assert len(slots) == air.frame_slots < 100 // 3  # real reuse: 19 slots for 100 nodes
    index = medium.index
    receptions = 0
    for members in slots.values():
        txs = [medium.start(t, [index[n] for n in network.graph.neighbors(medium.ids[t])],
                            1e-3, 64) for t in members]
        env.run(until=env.now + 2e-3)
        for tx in txs:
            medium.finish(tx)
            assert set(tx.causes.values()) <= {"outage"}, (members, tx.causes)
            receptions += len(tx.outcome)
    assert receptions == 2 * network.graph.number_of_edges()


@pytest.mark.parametrize(("broadcast", "phy", "slots"), [
    (True, "ideal", 19), (False, "ideal", 19), (False, "80211b", 21)])
def test_a_run_on_the_sinr_schedule_has_no_collision_rows(broadcast, phy, slots):
    """Two rounds of consensus (unicast with ARQ, or broadcast; with ``80211b`` every
    unicast frame acknowledged on the air) on the K = 100 network, fading off: every
    packet on the air, none (ACKs included) lost to a collision."""
    graph, kwargs = _settings(broadcast)
    medium = kwargs["medium"]
    kwargs["medium"] = replace(medium, radio=replace(medium.radio, phy=phy))
    sim = Simulation(0, record_messages=True)
    net = sim.build_network(graph, **kwargs)
    assert net.air.frame_slots == slots
    learner = ConsensusAveraging({k: float(k) for k in graph})
    sim.run(ConsensusProtocol(learner, "metropolis-hastings", StopRule(max_iterations=2),
                              broadcast=broadcast))
    frame = sim.recorder.to_frame()
    tx = frame[frame.event == "tx"]
    assert len(tx) >= 2 * len(graph) and tx.received.sum() > 0
    if phy != "ideal":
        assert (tx["frame"] == "ack").sum() > len(graph)
    assert "collision" not in set(frame.get("kind", []))


def _settings(broadcast: bool) -> tuple[nx.Graph, dict]:
    """The graph and network settings of d2d-medium's K = 100 TDMA run (the study's
    layout and radio), SINR schedule, no fading."""
    config = SCRIPT["D2DMediumConfig"](K=100, tasks="consensus", macs="tdma",
                                       **SCRIPT["STUDY"])
    graph = config.run_graph(0)
    kwargs = config.run_network("tdma", broadcast, 64).network_kwargs(graph)
    medium = kwargs["medium"]
    kwargs["medium"] = replace(medium, radio=replace(medium.radio, fading="none"),
                               mac=Tdma(schedule="sinr"))
    return graph, kwargs


def test_a_receiver_beyond_the_interference_range_is_scheduled_on_its_own_signal():
    """A 10 m interference range and links of 20 m: the medium does not count those
    signals as interference, and the schedule takes them from the mean gain."""
    from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec
    from bflnet.simulator.message import Message

    g = nx.Graph()
    g.add_nodes_from((k, {"pos": (20.0 * k, 0.0)}) for k in range(4))
    g.add_edges_from([(0, 1), (2, 3)])
    radio = RadioSpec(sinr_threshold_db=10.0, pathloss=LogDistance(3.0, 1.0, 40.0),
                      fading="none", interference_range_m=10.0)
    sim = Simulation(0, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(radio, mac=Tdma(schedule="sinr")),
                            mtu_bits=1000)
    # nobody counts anybody's power: two slots (half-duplex pairs), not four
    assert net.air.frame_slots == 2
    done = []

    def body(src, dst):
        d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, 1000),
                                                  deliver=False)
        done.append(d.delivered)
    for src, dst in [(0, 1), (1, 0), (2, 3), (3, 2)]:
        sim.env.process(body(src, dst))
    sim.env.run()
    assert done == [True] * 4
