"""Link outages: a message handed to a down link is lost, one in flight when an outage
begins is cut with its bits on the air counted, every such loss is a ``fault`` row, and
a link whose outages never touch a transmission behaves exactly as one without."""

import networkx as nx
import numpy as np
import pytest
import simpy

from bflnet.channels import FixedRateChannel
from bflnet.faults.availability import OnOff, Trace
from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.protocols import ParameterServerProtocol, StopRule
from bflnet.protocols.scheduling import AllAgents
from bflnet.simulator import Simulation
from bflnet.simulator.link import OUTAGE_ATTEMPTS, Interrupted, Link
from bflnet.simulator.message import Message
from bflnet.simulator.recorder import Recorder


def link_with(outages, *, seed=0, channel=None, mtu_bits=12_000, max_attempts=8):
    env = simpy.Environment()
    rec = Recorder(env, record_messages=True)
    channel = channel or FixedRateChannel(1e6, latency_s=0.0)
    link = Link(env, "a", "b", channel, np.random.default_rng(seed), rec,
                inbox=simpy.Store(env), mtu_bits=mtu_bits, max_attempts=max_attempts,
                outages=None if outages is None else outages.timeline(None))
    return env, link, rec


def send_all(env, link, plan):
    """Send ``(time, bits)`` messages; the deliveries in order."""
    out = []

    def proc(t, bits, i):
        yield env.timeout(t)
        out.append((yield from link.send(Message("a", "b", f"m{i}", None, bits))))

    for i, (t, bits) in enumerate(plan):
        env.process(proc(t, bits, i))
    env.run()
    return out


def test_outages_that_miss_every_transmission_change_nothing():
    """Lossy channel, multi-packet messages with ARQ: the same draws, times and bits as a
    link without outages."""
    lossy = FixedRateChannel(1e6, latency_s=0.001, loss_prob=0.3)
    plan = [(0.5 * i, bits) for i, bits in enumerate([100, 30_000, 12_000, 0, 5000] * 6)]
    far = Trace([(1e6, 1e6 + 1)])
    for seed in range(3):
        plain = send_all(*link_with(None, seed=seed, channel=lossy, mtu_bits=4000)[:2], plan)
        env, link, _ = link_with(far, seed=seed, channel=lossy, mtu_bits=4000)
        assert send_all(env, link, plan) == plain


def test_attempts_while_the_link_is_down_are_lost():
    """8000 bits at 1 Mbit/s handed over at 1.5 s, the link down on [1, 2): the sender
    cannot tell, so its 8 ARQ attempts take their airtime and are lost."""
    env, link, rec = link_with(Trace([(1.0, 2.0)]))
    d = send_all(env, link, [(1.5, 8000)])[0]
    assert (d.delivered, d.attempts, d.bits_on_air) == (False, 8, 64_000)
    assert d.end_s == pytest.approx(1.564)
    faults = rec.to_frame().query("event == 'fault'")
    assert faults[["kind", "node", "peer", "bits", "bits_on_air"]].values.tolist() == [
        ["lost_in_outage", "a", "b", 8000, 64_000]]


def test_arq_carries_the_message_once_the_link_is_back():
    env, link, _ = link_with(Trace([(0.0, 0.02)]), max_attempts=None)
    d = send_all(env, link, [(0.0, 8000)])[0]
    assert d.delivered and d.attempts == 4 and d.end_s == pytest.approx(0.032)


def test_a_link_down_for_good_stops_unlimited_arq():
    env, link, rec = link_with(Trace([(0.0, 1e15)]), max_attempts=None)
    d = send_all(env, link, [(0.0, 8000)])[0]
    assert not d.delivered and d.attempts == OUTAGE_ATTEMPTS
    assert rec.to_frame().query("event == 'fault'")["kind"].tolist() == ["lost_in_outage"]


def test_an_outage_mid_air_cuts_the_message_and_counts_the_bits_sent():
    """10 000 bits at 1 Mbit/s from t = 0; the link goes down at 4 ms: 4000 bits were on
    the air, the message is lost at 4 ms, the medium is free from then."""
    env, link, rec = link_with(Trace([(0.004, 0.1)]))
    d = send_all(env, link, [(0.0, 10_000)])[0]
    assert (d.delivered, d.end_s, d.bits_on_air, d.attempts) == (False, 0.004, 4000, 1)
    assert rec.cum_bits == 4000 and rec.cum_bits_delivered == 0
    frame = rec.to_frame()
    assert frame.query("event == 'fault'")["kind"].tolist() == ["cut_mid_air"]
    assert frame.query("event == 'message'")["dropped"].tolist() == [1]


def test_after_the_outage_the_link_carries_again():
    env, link, _ = link_with(Trace([(0.004, 0.1)]))
    first, second = send_all(env, link, [(0.0, 10_000), (0.2, 10_000)])
    assert not first.delivered and second.delivered and second.end_s == pytest.approx(0.21)


def test_interrupted_is_a_five_tuple():
    _env, link, _ = link_with(Trace([(0.0, 1.0)]))
    schedule = link.schedule(100)
    assert isinstance(schedule, Interrupted) and schedule.reason == "lost_in_outage"
    assert tuple(schedule) == (0.0, pytest.approx(8e-4), 8, 800, False)


class Count(GlobalStateLearner):
    combines = Combines.ADDITIVE
    uses_agent_streams = False

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state, rng):
        return Update(np.ones(1), Work(steps=1), agent)

    def merge(self, state, updates):
        return state + len(updates)


def server_run(seed=0, **network):
    sim = Simulation(seed, record_messages=True)
    sim.build_network(nx.empty_graph(4), server=True,
                      channel=FixedRateChannel(1e4, latency_s=0.001), **network)
    return sim.run(ParameterServerProtocol(Count(), StopRule(max_iterations=40),
                                           selector=AllAgents()))


def test_random_link_outages_under_the_parameter_server():
    """Exponential on/off outages on every link: the run finishes, every lost message is a
    fault row, and the same seed gives the same frame."""
    spec = OnOff(mean_up_s=0.05, mean_down_s=0.01)
    a, b = server_run(link_outages=spec), server_run(link_outages=spec)
    assert a.frame.equals(b.frame)
    faults = a.frame.query("event == 'fault'")
    lost = faults[faults["kind"].isin(["lost_in_outage", "cut_mid_air"])]
    assert len(lost) > 0
    assert set(faults["kind"]) == {"lost_in_outage", "cut_mid_air", "link_down", "link_up"}
    messages = a.frame.query("event == 'message'")
    assert int(messages["dropped"].sum()) == len(lost)
    assert a.frame["time_s"].is_monotonic_increasing
    assert a.state[0] < 4 * 40  # some updates were lost
    assert server_run(seed=1, link_outages=spec).frame["time_s"].iloc[-1] != \
        a.frame["time_s"].iloc[-1]


def test_both_directions_of_a_pair_share_one_timeline_and_only_named_pairs_fail():
    sim = Simulation(0)
    net = sim.build_network(nx.path_graph(3), link_outages={(1, 0): OnOff(1.0, 1.0)})
    assert net.links[(0, 1)].outages is net.links[(1, 0)].outages is not None
    assert net.links[(1, 2)].outages is None


@pytest.mark.parametrize("value, message", [
    ("often", "link_outages: must be an availability"),
    ({(0, 2): OnOff(1.0, 1.0)}, r"link_outages: \(0, 2\) is not a pair of nodes with a link"),
    ({(0, 1): 3}, r"link_outages\[\(0, 1\)\]: must be an availability"),
])
def test_bad_link_outages_name_the_field(value, message):
    with pytest.raises(ValueError, match=message):
        Simulation(0).build_network(nx.path_graph(3), link_outages=value)


def test_a_rebound_network_redraws_the_outages_as_a_fresh_one():
    spec = OnOff(mean_up_s=0.05, mean_down_s=0.01)
    fresh = server_run(seed=5, link_outages=spec).frame
    first = Simulation(4, record_messages=True)
    net = first.build_network(nx.empty_graph(4), server=True,
                              channel=FixedRateChannel(1e4, latency_s=0.001),
                              link_outages=spec)
    first.run(ParameterServerProtocol(Count(), StopRule(max_iterations=40),
                                      selector=AllAgents()))
    again = Simulation(5, record_messages=True)
    again.use_network(net)
    rebound = again.run(ParameterServerProtocol(Count(), StopRule(max_iterations=40),
                                                selector=AllAgents())).frame
    assert rebound.equals(fresh)


def test_a_down_node_takes_its_links_down_and_every_change_is_a_row():
    """Agent 2 is down on [0.05, 0.2): its uplinks and downlinks fail then, the other
    agents' do not; node_down and node_up rows at 0.05 and 0.2."""
    result = server_run(node_outages={2: Trace([(0.05, 0.2)])})
    frame = result.frame
    changes = frame.query("event == 'fault' and kind in ['node_down', 'node_up']")
    assert changes[["time_s", "node", "kind"]].values.tolist() == [[0.05, 2, "node_down"],
                                                                  [0.2, 2, "node_up"]]
    lost = frame.query("event == 'message' and dropped == 1")
    assert len(lost) > 0
    assert set(lost["node"]) | set(lost["peer"]) <= {2, "server"}
    assert ((lost["time_s"] >= 0.05) & (lost["start_s"] < 0.2)).all()  # cut or refused


def test_union_of_node_and_link_outages():
    from bflnet.faults.availability import UnionTimeline

    line = UnionTimeline([Trace([(1.0, 2.0)]).timeline(), Trace([(1.5, 3.0), (4, 5)]).timeline()])
    assert [line.is_up(t) for t in (0.5, 1.2, 2.5, 3.0, 4.5)] == [True, False, False, True,
                                                                 False]
    assert line.next_change(0.0) == 1.0 and line.next_change(1.2) == 3.0
    assert line.next_change(3.5) == 4.0 and line.next_change(4.5) == 5.0


def test_bad_node_outages_name_the_field():
    with pytest.raises(ValueError, match="node_outages: 7 is not an agent of the graph"):
        Simulation(0).build_network(nx.path_graph(3), node_outages={7: OnOff(1.0, 1.0)})
    with pytest.raises(ValueError, match="node_outages: must be an availability"):
        Simulation(0).build_network(nx.path_graph(3), node_outages=0.2)
