"""Asynchronous pairwise gossip: the pair's closed form, the average kept exactly on
lossless links (and broken only by a lost reply), the deviation decaying, timing and bits
of each exchange, determinism and rows in time order."""

import itertools
import re

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import Channel, FixedRateChannel
from bflnet.faults.energy import Battery
from bflnet.faults.mobility import RandomWaypoint
from bflnet.learners.base import Work
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.protocols.async_gossip import AsyncGossipProtocol
from bflnet.protocols.graphs.topologies import random_geometric
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation
from bflnet.simulator.compute import LogNormalTime
from bflnet.simulator.live_graph import Mobility


def gossip(graph, x0, stop, *, seed=0, channel=None, weight=0.5, rate=1.0, mobility=None,
           **net):
    sim = Simulation(seed, record_messages=True)
    sim.build_network(graph, channel=channel or FixedRateChannel(1e6, 0.001),
                      mobility=mobility, **net)
    protocol = AsyncGossipProtocol(ConsensusAveraging(dict(enumerate(x0))), stop,
                                   rate=rate, weight=weight)
    result = sim.run(protocol)
    values = np.array([result.agent_states[k].x[0] for k in range(len(x0))])
    return result.frame, values


@pytest.mark.parametrize("weight", [0.5, 0.25, 0.75])
def test_one_exchange_is_the_pairwise_closed_form(weight):
    frame, x = gossip(nx.path_graph(2), [1.0, 3.0], StopRule(max_iterations=1),
                      weight=weight)
    first = frame[frame.event == "exchange"].iloc[0]
    i, j = int(first.node), int(first.peer)
    x0 = [1.0, 3.0]
    assert x[i] == x0[i] + weight * (x0[j] - x0[i])
    assert x[j] == x0[j] + weight * (x0[i] - x0[j])
    assert x.sum() == 4.0
    # two messages of 64 bits, each latency + airtime, after the initiator's wake-up
    messages = frame[frame.event == "message"]
    assert list(messages.kind) == ["gossip", "gossip_reply"]
    assert first.cum_bits == 128
    assert first.time_s == pytest.approx(messages.start_s.iloc[0] + 2 * (0.001 + 64 / 1e6))


def test_lossless_links_keep_the_average_exactly_and_the_deviation_decays():
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(12)
    frame, x = gossip(nx.cycle_graph(12), x0, StopRule(max_time_s=150.0))
    rows = frame[frame.event == "exchange"]
    assert (rows.outcome == "ok").all() and len(rows) > 1000
    # with no reply in the air the sum is the initial one; with one, it is off by its half
    settled = rows[rows.replies_in_flight == 0]
    assert len(settled) > 0.9 * len(rows)
    assert np.allclose(settled.mean_value, x0.mean(), rtol=0, atol=1e-13)
    assert np.abs(rows[rows.replies_in_flight > 0].mean_value - x0.mean()).max() > 1e-6
    if frame.replies_in_flight.iloc[-1] == 0:
        assert abs(x.mean() - x0.mean()) < 1e-13
    dev = rows.max_deviation.to_numpy()
    assert dev[-1] < 1e-3 * dev[0]
    # decays: each fifth of the run ends lower than the previous one
    fifths = [chunk[-1] for chunk in np.array_split(dev, 5)]
    assert all(b < a for a, b in itertools.pairwise(fifths))
    # 64 bits a message, two messages an exchange (a few may still be in the air)
    messages = frame[frame.event == "message"]
    assert frame.cum_bits.iloc[-1] == 64 * len(messages)
    assert 0 <= len(messages) - 2 * len(rows) <= 3


def test_records_are_in_time_order_and_exchanges_are_counted():
    frame, _ = gossip(nx.cycle_graph(8), np.arange(8.0), StopRule(max_time_s=30.0),
                      rate={k: 0.5 + k / 8 for k in range(8)})
    assert frame.time_s.is_monotonic_increasing
    rows = frame[frame.event == "exchange"]
    assert list(rows.iteration) == list(range(1, len(rows) + 1))
    assert frame.event.iloc[0] == "init" and frame.event.iloc[-1] == "end"
    assert frame.time_s.iloc[-1] == 30.0
    # every exchange is between neighbours of the ring
    assert (rows.node - rows.peer).abs().isin([1, 7]).all()


def test_each_node_wakes_at_its_own_rate():
    rates = {0: 0.2, 1: 2.0, 2: 0.2, 3: 2.0}
    frame, _ = gossip(nx.complete_graph(4), np.zeros(4), StopRule(max_time_s=2000.0),
                      rate=rates)
    started = frame[frame.event == "exchange"].node.value_counts()
    for k, rate in rates.items():  # Poisson counts: within 5 standard deviations
        assert abs(started[k] - rate * 2000) < 5 * np.sqrt(rate * 2000)


def test_same_seed_same_frame_other_seed_other_frame():
    graph = nx.cycle_graph(10)
    lossy = FixedRateChannel(1e6, 0.001, loss_prob=0.2)
    runs = [gossip(graph, np.arange(10.0), StopRule(max_time_s=20.0), seed=s,
                   channel=lossy, max_attempts=1)[0] for s in (4, 4, 5)]
    assert runs[0].equals(runs[1])
    assert not runs[0].equals(runs[2])


class Working(ConsensusAveraging):
    """Averaging with one local step of work before each exchange."""

    def local_steps(self, node, state, rng):
        return state, Work(steps=1)


def test_compute_draws_from_each_nodes_stream_and_charges_its_battery():
    graph = nx.complete_graph(3)
    runs = []
    for compute in (None, LogNormalTime(0.05, sigma=0.5), LogNormalTime(0.05, sigma=0.5)):
        sim = Simulation(2, record_messages=True)
        sim.build_network(graph, channel=FixedRateChannel(1e6, 0.001), compute=compute,
                          energy={0: Battery(0.1, joules_per_step=0.03)})
        protocol = AsyncGossipProtocol(Working(dict(enumerate([0.0, 1.0, 2.0]))),
                                       StopRule(max_time_s=20.0))
        runs.append(sim.run(protocol).frame)
    free, drawn, again = runs
    assert drawn.equals(again)
    first = [f[f.event == "message"].time_s.iloc[0] for f in (free, drawn)]
    assert first[1] > first[0]  # the same first tick, then a drawn computation
    # node 0's fourth step empties its 0.1 J battery (0.03 J per step)
    empty = drawn[(drawn.event == "fault") & (drawn.kind == "battery_empty")]
    assert empty.node.tolist() == [0] and empty.cause.tolist() == ["compute"]
    exchanges = drawn[drawn.event == "exchange"]
    started_by_0 = exchanges[(exchanges.node == 0) & (exchanges.time_s < empty.time_s.iloc[0])]
    assert len(started_by_0) <= 4


class Dead(Channel):
    """Every attempt is lost."""

    def attempt(self, bits, start_s, rng):
        return 0.001, True


def test_a_lost_reply_breaks_the_average_and_a_lost_request_changes_nothing():
    # link 0 -> 1 works, 1 -> 0 is dead: 0's requests arrive but their replies are lost,
    # 1's requests are lost
    def channel(src, dst):
        return FixedRateChannel(1e6, 0.001) if src == 0 else Dead()

    frame, x = gossip(nx.path_graph(2), [0.0, 4.0], StopRule(max_iterations=1),
                      channel=channel, max_attempts=1, seed=1)
    row = frame[frame.event == "exchange"].iloc[0]
    if row.node == 0:
        assert row.outcome == "reply_lost" and row.dropped == 1
        assert list(x) == [0.0, 2.0]  # 1 mixed, 0 did not: the mean moved from 2 to 1
    else:
        assert row.outcome == "request_lost"
        assert list(x) == [0.0, 4.0]
    frame, x = gossip(nx.path_graph(2), [0.0, 4.0], StopRule(max_time_s=50.0),
                      channel=channel, max_attempts=1, seed=1)
    outcomes = set(frame[frame.event == "exchange"].outcome)
    assert outcomes == {"reply_lost", "request_lost"}
    assert x.mean() != 2.0


def test_with_loss_the_mean_moves_only_after_a_reply_is_lost():
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(10)
    frame, _ = gossip(nx.cycle_graph(10), x0, StopRule(max_time_s=60.0),
                      channel=FixedRateChannel(1e6, 0.001, loss_prob=0.1), max_attempts=1,
                      seed=2)
    rows = frame[frame.event == "exchange"]
    assert {"ok", "request_lost", "reply_lost"} <= set(rows.outcome)
    replies = frame[(frame.event == "message") & (frame.kind == "gossip_reply")]
    first_broken = replies[replies.dropped == 1].start_s.min()  # the responder mixed here
    before = rows[(rows.time_s < first_broken) & (rows.replies_in_flight == 0)]
    assert len(before) > 0
    assert np.allclose(before.mean_value, x0.mean(), rtol=0, atol=1e-13)
    assert abs(rows.mean_value.iloc[-1] - x0.mean()) > 1e-9


def test_on_moving_nodes_partners_are_live_neighbours_and_the_average_is_kept():
    graph = random_geometric(15, 35.0, 100.0, np.random.default_rng(0))
    mobility = Mobility(RandomWaypoint(100.0, 3.0, 6.0), 35.0, 0.1)
    sim = Simulation(3)
    net = sim.build_network(graph, channel=FixedRateChannel(1e6, 0.001), mobility=mobility)
    assert net.live is not None
    x0 = np.random.default_rng(1).standard_normal(15)
    result = sim.run(AsyncGossipProtocol(ConsensusAveraging(dict(enumerate(x0))),
                                         StopRule(max_time_s=30.0)))
    frame = result.frame
    assert (frame[frame.event == "fault"].cause == "mobility").any()
    messages = frame[(frame.event == "message") & (frame.kind == "gossip")]
    faults = frame[frame.event == "fault"]
    edges = {tuple(sorted(e)) for e in graph.edges}
    rows = iter(faults.itertuples())
    pending = next(rows, None)
    for m in messages.itertuples():  # replay the edge changes up to each request's start:
        # the request goes over an edge that is live then
        while pending is not None and pending.time_s <= m.start_s:
            pair = (int(pending.node), int(pending.peer))
            edges.add(pair) if pending.kind == "link_up" else edges.remove(pair)
            pending = next(rows, None)
        assert tuple(sorted((int(m.node), int(m.peer)))) in edges
    rows = frame[(frame.event == "exchange") & (frame.replies_in_flight == 0)]
    assert len(rows) > 100 and (rows.outcome == "ok").all()
    assert np.allclose(rows.mean_value, x0.mean(), rtol=0, atol=1e-13)


def test_bad_arguments_are_one_line_errors():
    learner = ConsensusAveraging()
    stop = StopRule(max_iterations=1)
    for kwargs, field in [({"rate": 0.0}, "rate"), ({"rate": float("nan")}, "rate"),
                          ({"rate": 1e300}, "rate"), ({"weight": 1.0}, "weight"),
                          ({"weight": -0.5}, "weight"), ({"rate": {0: -1.0}}, "rate[0]"),
                          ({"eval_every": 0}, "eval_every")]:
        with pytest.raises(ValueError, match=f"^{re.escape(field)}:"):
            AsyncGossipProtocol(learner, stop, **kwargs)
    with pytest.raises(ValueError, match="^learner: CDBFL sends increments"):
        AsyncGossipProtocol(CDBFL.__new__(CDBFL), stop)
    sim = Simulation(0)
    sim.build_network(nx.path_graph(3))
    with pytest.raises(ValueError, match="^rate: no rate for node 2"):
        sim.run(AsyncGossipProtocol(learner, stop, rate={0: 1.0, 1: 1.0}))
