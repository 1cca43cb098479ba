"""The shared medium: SINR against closed forms, decided at the end of the packet,
half-duplex, broadcast counted once, links byte-identical when off."""

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.faults.energy import Battery
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.stopping import StopRule
from bflnet.radio import Csma, LogDistance, RadioSpec, SharedMediumSpec, Tdma
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

BITS = 1000


def placed(positions, edges):
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": p}) for k, p in enumerate(positions))
    g.add_edges_from(edges)
    return g


def radio(**kw):
    base = dict(tx_power_dbm=0.0, bandwidth_hz=1e6, noise_figure_db=7.0, coding_rate=1.0,
                sinr_threshold_db=0.0, pathloss=LogDistance(3.0, 1.0, 40.0),
                fading="rayleigh")
    return RadioSpec(**{**base, **kw})


def build(graph, spec, seed=1, **kw):
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(graph, medium=SharedMediumSpec(spec), max_attempts=1,
                            mtu_bits=BITS, **kw)
    return sim, net


def repeat(sim, net, src, dst, times, out=None, offset=0.0, bits=BITS):
    """A process sending one packet ``src -> dst`` at each of ``times`` (+ offset)."""
    def body():
        for t in times:
            if t + offset > sim.env.now:
                yield sim.env.timeout(t + offset - sim.env.now)
            d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, bits),
                                                      deliver=False)
            if out is not None:
                out.append(d.delivered)
    return sim.env.process(body())


def test_rayleigh_outage_with_one_interferer_matches_closed_form():
    """SINR = S g / (N + I h), g, h ~ Exp(1): P(SINR >= θ) = exp(-θN/S) / (1 + θI/S)."""
    spec = radio()
    # receiver 1 at 10 m from its sender 0; interferer 2 at 20 m from 1, sending to 3
    g = placed([(0.0, 0.0), (10.0, 0.0), (30.0, 0.0), (40.0, 0.0)], [(0, 1), (2, 3)])
    sim, net = build(g, spec)
    n, ok = 3000, []
    times = [i * 0.01 for i in range(n)]
    repeat(sim, net, 0, 1, times, ok)
    repeat(sim, net, 2, 3, times)
    sim.env.run()
    s = spec.tx_mw * spec.pathloss.gain(10.0)
    i = spec.tx_mw * spec.pathloss.gain(20.0)
    th, noise = spec.threshold, spec.noise_mw
    p = math.exp(-th * noise / s) / (1.0 + th * i / s)
    assert 0.05 < 1 - p < 0.5  # an outage probability worth testing
    assert abs(np.mean(ok) - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_rayleigh_without_interference_is_the_links_outage():
    """Alone on the air, the medium's loss rate is the fading channel's closed form."""
    from bflnet.channels import RayleighChannel
    spec = radio(sinr_threshold_db=None, coding_rate=2.0)
    d = 60.0
    ch = RayleighChannel(1e6, spec.mean_snr_db(1.0), distance_m=d, coding_rate=2.0)
    sim, net = build(placed([(0.0, 0.0), (d, 0.0)], [(0, 1)]), spec)
    n, ok = 2000, []
    repeat(sim, net, 0, 1, [i * 0.01 for i in range(n)], ok)
    sim.env.run()
    p = 1 - ch.outage_probability
    assert 0.2 < p < 0.9
    assert abs(np.mean(ok) - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_interference_over_any_part_of_the_packet_kills_it_but_touching_does_not():
    spec = radio(fading="none", sinr_threshold_db=10.0)
    g = placed([(0.0, 0.0), (10.0, 0.0), (20.0, 0.0), (30.0, 0.0)], [(0, 1), (2, 3)])
    airtime = spec.airtime_s(BITS)
    for offset, expected in [(0.9 * airtime, False), (airtime, True), (-0.9 * airtime, False),
                             (-airtime, True), (5 * airtime, True)]:
        sim, net = build(g, spec)
        ok = []
        repeat(sim, net, 0, 1, [1.0], ok)
        repeat(sim, net, 2, 3, [1.0], offset=offset)
        sim.env.run()
        assert ok == [expected], offset
    frame = sim.recorder.to_frame()
    assert (frame.event == "tx").sum() == 2


def test_far_interferer_is_not_summed():
    spec = radio(fading="none", sinr_threshold_db=10.0, interference_range_m=50.0)
    g = placed([(0.0, 0.0), (10.0, 0.0), (200.0, 0.0), (210.0, 0.0)], [(0, 1), (2, 3)])
    sim, net = build(g, spec)
    ok = []
    repeat(sim, net, 0, 1, [0.0], ok)
    repeat(sim, net, 2, 3, [0.0])
    sim.env.run()
    assert ok == [True]
    assert list(net.air.medium.near(0)) == [0, 1]


def test_half_duplex_a_transmitting_node_receives_nothing():
    spec = radio(fading="none", sinr_threshold_db=0.0)
    g = placed([(0.0, 0.0), (10.0, 0.0), (20.0, 0.0)], [(0, 1), (1, 2)])
    # 1 starts sending to 2 halfway through 0's packet to 1: 0 -> 1 is lost
    sim, net = build(g, spec)
    ok01, ok12 = [], []
    airtime = spec.airtime_s(BITS)
    repeat(sim, net, 0, 1, [0.0], ok01)
    repeat(sim, net, 1, 2, [0.5 * airtime], ok12)
    sim.env.run()
    assert ok01 == [False] and ok12 == [True]
    rows = sim.recorder.to_frame()
    lost = rows[(rows.event == "mac") & (rows.kind == "collision")]
    assert lost[["node", "peer", "cause"]].values.tolist() == [[0, 1, "half_duplex"]]
    # and a packet sent to a node that is transmitting is lost too
    sim, net = build(g, spec)
    ok01 = []
    repeat(sim, net, 1, 2, [0.0])
    repeat(sim, net, 0, 1, [0.5 * airtime], ok01)
    sim.env.run()
    assert ok01 == [False]


def test_one_radio_per_node_queues_its_messages():
    spec = radio(fading="none")
    g = placed([(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)], [(0, 1), (0, 2)])
    sim, net = build(g, spec)
    ok = []
    repeat(sim, net, 0, 1, [0.0], ok)
    repeat(sim, net, 0, 2, [0.0], ok)
    sim.env.run()
    tx = sim.recorder.to_frame().query("event == 'tx'")
    airtime = spec.airtime_s(BITS)
    assert ok == [True, True]
    assert tx.start_s.tolist() == pytest.approx([0.0, airtime])


def consensus_round(K, broadcast, battery=None, seed=0):
    """One gossip round of consensus averaging on a complete graph of K nodes on a
    circle of radius 5 m, under TDMA (every reception arrives)."""
    spec = radio(fading="none", tx_power_dbm=20.0)
    angle = 2 * np.pi * np.arange(K) / K
    g = placed([(5 * math.cos(a), 5 * math.sin(a)) for a in angle],
               nx.complete_graph(K).edges)
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec, mac=Tdma()), mtu_bits=10_000,
                            energy=battery)
    learner = ConsensusAveraging({k: float(k) for k in range(K)})
    result = sim.run(ConsensusProtocol(learner, "metropolis-hastings",
                                       StopRule(max_iterations=1), broadcast=broadcast))
    return result, net


@pytest.mark.parametrize("K", [3, 6])
def test_broadcast_round_is_K_transmissions_not_K_K_minus_1(K):
    one, _ = consensus_round(K, broadcast=True)
    each, _ = consensus_round(K, broadcast=False)
    bits = 64  # one float64 value
    rows = one.frame
    assert (rows.event == "tx").sum() == K
    assert (rows.event == "message").sum() == K
    assert rows.cum_bits.max() == K * bits
    msgs = rows[rows.event == "message"]
    assert (msgs.receivers == K - 1).all() and (msgs.received == K - 1).all()
    rows = each.frame
    assert (rows.event == "tx").sum() == K * (K - 1)
    assert rows.cum_bits.max() == K * (K - 1) * bits
    # Metropolis-Hastings weights on a complete graph are 1/K: one round averages exactly
    for result in (one, each):
        values = [float(s.x[0]) for s in result.agent_states.values()]
        assert values == pytest.approx([(K - 1) / 2] * K)


def test_broadcast_energy_is_charged_once():
    K = 4
    battery = Battery(capacity_j=1.0, tx_power_w=0.5)
    _, net = consensus_round(K, broadcast=True, battery=battery)
    spent = [1.0 - net.nodes[k].battery.left_j for k in range(K)]
    per_bit = 0.5 / radio().rate_bps
    assert spent == pytest.approx([64 * per_bit] * K)
    _, net = consensus_round(K, broadcast=False, battery=battery)
    spent = [1.0 - net.nodes[k].battery.left_j for k in range(K)]
    assert spent == pytest.approx([(K - 1) * 64 * per_bit] * K)


def test_same_seed_same_frame():
    spec = radio(pathloss=LogDistance(3.0, 1.0, 40.0, shadowing_db=4.0))
    g = nx.random_geometric_graph(12, 0.5, seed=3)
    for k in g:
        g.nodes[k]["pos"] = tuple(100 * x for x in g.nodes[k]["pos"])

    def run(seed):
        sim = Simulation(seed, record_messages=True)
        sim.build_network(g, medium=SharedMediumSpec(spec), mtu_bits=BITS)
        learner = ConsensusAveraging({k: float(k) for k in range(12)})
        return sim.run(ConsensusProtocol(learner, "metropolis-hastings",
                                         StopRule(max_iterations=3))).frame

    a, b, c = run(5), run(5), run(6)
    assert a.equals(b)
    assert not a.equals(c)


def test_schedule_is_refused_on_a_shared_medium():
    _sim, net = build(placed([(0.0, 0.0), (1.0, 0.0)], [(0, 1)]), radio())
    with pytest.raises(ValueError, match="shared medium"):
        net.links[(0, 1)].schedule(10)


def test_off_by_default_costs_nothing():
    sim = Simulation(0)
    net = sim.build_network(nx.path_graph(3))
    assert net.air is None
    assert all(link.radio is None for link in net.links.values())


def test_receiving_costs_rx_power_for_the_air_time():
    K = 4
    battery = Battery(capacity_j=1.0, tx_power_w=0.0, rx_power_w=2.0)
    _, net = consensus_round(K, broadcast=True, battery=battery)
    airtime = radio().airtime_s(64)
    spent = [1.0 - net.nodes[k].battery.left_j for k in range(K)]
    assert spent == pytest.approx([2.0 * (K - 1) * airtime] * K)


def test_a_rebound_network_gives_the_frame_of_a_fresh_one():
    spec = radio(pathloss=LogDistance(3.0, 1.0, 40.0, shadowing_db=3.0))
    g = placed([(0.0, 0.0), (20.0, 0.0), (0.0, 25.0), (30.0, 30.0)],
               [(0, 1), (0, 2), (1, 3), (2, 3)])

    def protocol():
        learner = ConsensusAveraging({k: float(k) for k in range(4)})
        return ConsensusProtocol(learner, "metropolis-hastings", StopRule(max_iterations=4))

    first = Simulation(3, record_messages=True)
    net = first.build_network(g, medium=SharedMediumSpec(spec, mac=Csma()), mtu_bits=BITS)
    first.run(protocol())
    again = Simulation(5, record_messages=True)
    again.use_network(net)
    rebound = again.run(protocol()).frame
    fresh = Simulation(5, record_messages=True)
    fresh.build_network(g, medium=SharedMediumSpec(spec, mac=Csma()), mtu_bits=BITS)
    assert rebound.equals(fresh.run(protocol()).frame)


def test_moving_nodes_are_heard_at_their_live_positions():
    from bflnet.faults.mobility import RandomWaypoint
    from bflnet.simulator.live_graph import Mobility
    spec = radio(fading="none", sinr_threshold_db=10.0)
    # two nodes 5 m apart; node 1 runs away at 100 m/s; positions updated every 0.5 s
    g = placed([(0.0, 0.0), (5.0, 0.0)], [(0, 1)])
    mobility = Mobility(RandomWaypoint(area_m=1e5, speed_min=100.0, speed_max=100.0),
                        radius_m=1e6, update_s=0.5)
    sim = Simulation(0, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec), mobility=mobility,
                            max_attempts=1, mtu_bits=BITS)
    ok = []
    repeat(sim, net, 0, 1, [0.1, 600.0], ok)
    net.start_fault_records()  # starts the live graph's position updates
    sim.env.run(until=601.0)
    distance = net.air.medium.distance(0, 1)
    assert distance > 1000.0 > spec.range_m
    assert ok == [True, False]


def test_parameter_server_runs_on_a_shared_medium_with_the_server_at_the_centre():
    from bflnet.learners import Combines, GlobalStateLearner, Update
    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.simulator import Work

    class Count(GlobalStateLearner):
        combines = Combines.AVERAGED
        uses_agent_streams = False

        def init(self, rng):
            return np.zeros(3)

        def local_update(self, agent, state, agent_state, rng):
            return Update(state + 1, Work(steps=1), agent)

        def merge(self, state, updates):
            return np.mean([u.payload for u in updates], axis=0)

        def evaluate(self, state):
            return {"x": float(state[0])}

    sim = Simulation(0, record_messages=True)
    net = sim.build_network(nx.empty_graph(5), server=True, medium=SharedMediumSpec(
        radio(fading="none", tx_power_dbm=20.0), area_m=40.0))
    frame = sim.run(ParameterServerProtocol(Count(), StopRule(max_iterations=3))).frame
    rows = frame[frame.event == "iteration"]
    assert rows.x.tolist() == [1.0, 2.0, 3.0]
    assert rows.cum_bits.tolist() == [384, 768, 1152]  # 3 float64 down and up a round
    assert net.air.medium.positions()[-1].tolist() == [20.0, 20.0]


def test_parameter_server_broadcasts_the_state_once_a_round_and_a_lost_reception_sits_out():
    from bflnet.learners import Combines, GlobalStateLearner, Update
    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.protocols.scheduling import AllAgents
    from bflnet.simulator import Work

    class Count(GlobalStateLearner):
        combines = Combines.AVERAGED
        uses_agent_streams = False

        def init(self, rng):
            return np.zeros(3)

        def local_update(self, agent, state, agent_state, rng):
            return Update(state + 1, Work(steps=1), agent)

        def merge(self, state, updates):
            return np.mean([u.payload for u in updates], axis=0)

        def evaluate(self, state):
            return {"x": float(state[0])}

    K, rounds = 5, 3
    # agents 0-3 on a 5 m circle around the server at (20, 20); agent 4 far beyond range
    g = placed([(20 + 5 * math.cos(a), 20 + 5 * math.sin(a))
                for a in 2 * np.pi * np.arange(K - 1) / (K - 1)] + [(5000.0, 5000.0)], [])
    spec = radio(fading="none", tx_power_dbm=20.0)
    sim = Simulation(0, record_messages=True)
    sim.build_network(g, server=True, medium=SharedMediumSpec(spec, mac=Tdma(), area_m=40.0))
    frame = sim.run(ParameterServerProtocol(Count(), StopRule(max_iterations=rounds),
                                            selector=AllAgents(), broadcast=True)).frame
    down = frame[(frame.event == "message") & (frame.peer == "*")]
    assert len(down) == rounds  # one downlink transmission a round, not K
    assert (down.receivers == K).all() and (down.received == K - 1).all()
    rows = frame[frame.event == "iteration"]
    assert rows.updates.tolist() == [K - 1] * rounds  # the far agent sits every round out
    assert rows.cum_bits_down.tolist() == [192 * r for r in range(1, rounds + 1)]
    links = Simulation(0)
    links.build_network(nx.empty_graph(2), server=True)
    with pytest.raises(Exception, match="broadcast: needs a shared medium"):
        links.run(ParameterServerProtocol(Count(), StopRule(max_iterations=1), broadcast=True))
    with pytest.raises(ValueError, match="broadcast: not with deadline_s"):
        ParameterServerProtocol(Count(), StopRule(max_iterations=1), broadcast=True,
                                deadline_s=1.0)


def test_async_broadcast_gossip_one_transmission_and_each_receiver_mixes():
    from bflnet.protocols.async_gossip import AsyncGossipProtocol
    K, w = 4, 0.5
    angle = 2 * np.pi * np.arange(K) / K
    g = placed([(5 * math.cos(a), 5 * math.sin(a)) for a in angle], nx.complete_graph(K).edges)
    sim = Simulation(1, record_messages=True)
    sim.build_network(g, medium=SharedMediumSpec(radio(fading="none", tx_power_dbm=20.0),
                                                 mac=Tdma()))
    x0 = {k: 4.0 * k for k in range(K)}
    result = sim.run(AsyncGossipProtocol(ConsensusAveraging(x0), StopRule(max_iterations=1),
                                         weight=w, broadcast=True))
    rows = result.frame
    assert (rows.event == "tx").sum() == 1
    sent = rows[rows.event == "message"]
    assert sent.peer.tolist() == ["*"] and sent.received.tolist() == [K - 1]
    ex = rows[rows.event == "exchange"].iloc[0]
    assert ex.outcome == "broadcast" and ex.received == K - 1 and ex.dropped == 0
    i = int(ex.node)
    values = {k: float(s.x[0]) for k, s in result.agent_states.items()}
    expected = {k: x0[k] if k == i else x0[k] + w * (x0[i] - x0[k]) for k in range(K)}
    assert values == pytest.approx(expected)
    links = Simulation(1)
    links.build_network(nx.complete_graph(3))
    with pytest.raises(Exception, match="broadcast: needs a shared medium"):
        links.run(AsyncGossipProtocol(ConsensusAveraging({k: 0.0 for k in range(3)}),
                                      StopRule(max_iterations=1), broadcast=True))
