"""The fault matrix: every fault against every protocol, the
asynchronous modes included. Each run finishes or stops with a one-line reason, every
fault shows in the records, and no metric is NaN.

Faults hit node 1 (of four) or its links:

| fault | how | evidence in the records |
| --- | --- | --- |
| crash | node 1 down over [0.05, 0.15) s, no ``keep_state`` | ``node_down``, ``lost`` |
| rejoin | the same downtime, ``keep_state=True`` | ``node_down`` then ``node_up`` |
| outage | node 1's links down over [0.05, 0.15) s | ``link_down`` then ``link_up`` |
| loss 90 % | node 1's links lose 90 % of the packets | messages with several attempts or dropped |
| zero-rate link | node 1's links have rate 0 | a one-line ``rate_bps`` error before the run |
| mid-air cut | node 1's links slow (50 ms a message), down 5 ms every 100 ms | ``cut_mid_air`` |
| battery | node 1 has 1 mJ | ``battery_empty`` |
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.faults.availability import Trace
from bflnet.faults.energy import Battery
from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.async_gossip import AsyncGossipProtocol
from bflnet.protocols.buffered_server import BufferedServerProtocol
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import make_mixing
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import RoundRobinSelector
from bflnet.simulator import FixedStepTime, Simulation

FAULTS = ("crash", "rejoin", "outage", "loss90", "zero_rate", "mid_air_cut", "battery")
PROTOCOLS = ("parameter_server", "deadline_server", "fedbuff", "random_walk", "consensus",
             "async_gossip")
SERVED = {"parameter_server", "deadline_server", "fedbuff"}
VALUES = 8  # float64 values per global-state message: 512 bits
DOWN = Trace([(0.05, 0.15)])
BLINKS = Trace([(0.03 + 0.1 * k, 0.035 + 0.1 * k) for k in range(100)])


class Mean(GlobalStateLearner):
    """Pulls the state towards each agent's own number; ``value`` is the state's mean."""

    combines = Combines.AVERAGED
    uses_agent_streams = False

    def init(self, rng):
        return np.zeros(VALUES)

    def init_agent(self, agent, rng):
        return 0

    def local_update(self, agent, state, agent_state, rng):
        return Update(0.5 * (float(agent) - state), Work(steps=1), agent,
                      agent_state=agent_state + 1)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates) / len(updates)

    def evaluate(self, state):
        return {"value": float(state.mean())}


def pairs_of_node_1(protocol: str) -> list[tuple]:
    return [(1, "server")] if protocol in SERVED else [(0, 1), (1, 2)]


def network_kwargs(fault: str, protocol: str) -> dict:
    good = FixedRateChannel(1e5, 0.001)
    kwargs: dict = {"channel": good, "compute": FixedStepTime(0.01)}

    def node_1_links(channel):
        return lambda src, dst: channel if 1 in (src, dst) else good

    pairs = pairs_of_node_1(protocol)
    if fault in ("crash", "rejoin"):
        kwargs.update(node_outages={1: DOWN}, keep_state=fault == "rejoin")
    elif fault == "outage":
        kwargs.update(link_outages=dict.fromkeys(pairs, DOWN))
    elif fault == "loss90":
        kwargs.update(channel=node_1_links(FixedRateChannel(1e5, 0.001, loss_prob=0.9)))
    elif fault == "zero_rate":
        kwargs.update(channel=node_1_links(FixedRateChannel(0.0)))
    elif fault == "mid_air_cut":
        kwargs.update(channel=node_1_links(FixedRateChannel(512 / 0.05)),
                      link_outages=dict.fromkeys(pairs, BLINKS))
    elif fault == "battery":
        kwargs.update(energy={1: Battery(1e-3, tx_power_w=0.2, joules_per_step=2e-4)})
    if protocol in SERVED:
        kwargs.update(server=True, uplink_channel=kwargs["channel"],
                      downlink_channel=kwargs["channel"])
    return kwargs


def make_protocol(protocol: str, graph: nx.Graph):
    stop = StopRule(max_iterations=40, max_time_s=5.0)
    if protocol == "parameter_server":
        return ParameterServerProtocol(Mean(), stop, selector=RoundRobinSelector(4)), "value"
    if protocol == "deadline_server":
        return ParameterServerProtocol(Mean(), stop, selector=RoundRobinSelector(4),
                                       deadline_s=0.2), "value"
    if protocol == "fedbuff":
        return BufferedServerProtocol(Mean(), stop, buffer_size=2), "value"
    if protocol == "random_walk":
        return RandomWalkProtocol(Mean(), MetropolisHastingsWalk(graph), stop,
                                  token_timeout_s=0.05), "value"
    if protocol == "consensus":
        return ConsensusProtocol(ConsensusAveraging(), make_mixing("metropolis-hastings", graph),
                                 stop), "max_deviation"
    return AsyncGossipProtocol(ConsensusAveraging(), stop, rate=20.0), "max_deviation"


#: The event of the rows that carry the metrics.
ROW_EVENT = {"consensus": "round", "async_gossip": "exchange"}


def evidence(fault: str, frame) -> bool:
    faults = frame[frame.event == "fault"] if "kind" in frame else frame.iloc[:0]
    kinds = set(faults["kind"]) if len(faults) else set()
    if fault == "crash":
        down = faults[faults.kind == "node_down"]
        return len(down) > 0 and (down["lost"] == "agent_state").all()
    if fault == "rejoin":
        return {"node_down", "node_up"} <= kinds
    if fault == "outage":
        return {"link_down", "link_up"} <= kinds
    if fault == "loss90":
        messages = frame[(frame.event == "message")
                         & ((frame.node == 1) | (frame.peer == 1))]
        return bool(((messages["attempts"] > 1) | (messages["dropped"] == 1)).any())
    if fault == "mid_air_cut":
        return "cut_mid_air" in kinds
    return "battery_empty" in kinds


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", FAULTS)
def test_fault_matrix(fault, protocol):
    graph = nx.cycle_graph(4)
    sim = Simulation(11, record_messages=True)
    if fault == "zero_rate":  # refused up front, in one line naming the field
        with pytest.raises(ValueError, match="rate_bps: must be") as error:
            sim.build_network(graph, **network_kwargs(fault, protocol))
        assert "\n" not in str(error.value)
        return
    sim.build_network(graph, **network_kwargs(fault, protocol))
    runner, metric = make_protocol(protocol, graph)
    try:
        frame = sim.run(runner).frame
    except (ValueError, RuntimeError) as exc:  # a stop with a reason is allowed: one line
        assert "\n" not in str(exc)
        pytest.fail(f"{fault} × {protocol} stopped: {exc}")  # none of these should
    assert evidence(fault, frame), f"{fault} left no trace in the {protocol} records"
    rows = frame[frame.event == ROW_EVENT.get(protocol, "iteration")]
    assert len(rows) > 0 and rows[metric].notna().all()
    assert np.isfinite(rows[metric].to_numpy(dtype=float)).all()
    assert frame["time_s"].is_monotonic_increasing
    assert frame["time_s"].iloc[-1] <= 6.0  # max_time_s = 5 is checked between iterations
