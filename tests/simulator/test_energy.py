"""Energy budgets: batteries drained by sent bits (tx power / rate) and computed work, and
devices that stop when theirs is empty."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.faults.energy import Battery, joules_per_bit
from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import RoundRobinSelector
from bflnet.simulator import FixedStepTime, Simulation

RATE, LATENCY, POWER, STEPS, J_STEP = 1e5, 0.001, 0.2, 3, 0.01
PAYLOAD = 50  # float64 values: 3200 bits


class Sender(GlobalStateLearner):
    """Every update is ``STEPS`` steps and a fixed-size payload; the state counts merges."""

    combines = Combines.ADDITIVE
    uses_agent_streams = False

    def init(self, rng):
        return np.zeros(PAYLOAD)

    def local_update(self, agent, state, agent_state, rng):
        return Update(np.ones(PAYLOAD), Work(steps=STEPS), agent)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)


def server_run(capacity_j, loss=0.0, rounds=10, seed=0):
    graph = nx.empty_graph(2)
    sim = Simulation(seed, record_messages=True)
    sim.build_network(graph, server=True, channel=FixedRateChannel(RATE, LATENCY, loss),
                      compute=FixedStepTime(0.01),
                      energy={0: Battery(capacity_j, tx_power_w=POWER, joules_per_step=J_STEP)})
    result = sim.run(ParameterServerProtocol(Sender(), StopRule(max_iterations=rounds),
                                             selector=RoundRobinSelector(2)))
    return sim, result.frame


def test_energy_per_bit_is_power_over_rate():
    battery = Battery(1.0, tx_power_w=POWER)
    assert joules_per_bit(battery, FixedRateChannel(RATE)) == pytest.approx(POWER / RATE)
    from bflnet.channels import IdealChannel
    assert joules_per_bit(battery, IdealChannel()) == 0.0


def test_a_round_costs_the_closed_form_and_the_battery_empties_on_time():
    """Per round agent 0 computes 3 steps (0.03 J, at the start) and sends 3200 bits
    (0.2 W × 3200 / 1e5 bit/s = 6.4 mJ, at the end): 36.4 mJ. With 0.1 J it pays rounds 1
    and 2 (72.8 mJ) and round 3's computation (102.8 mJ ≥ 0.1 J): it dies as round 3's
    computation starts; its update of round 3 is lost and it gets nothing afterwards."""
    per_round = STEPS * J_STEP + POWER * 64 * PAYLOAD / RATE
    assert per_round == pytest.approx(0.0364)
    sim, frame = server_run(0.1)
    empty = frame[(frame.event == "fault") & (frame.kind == "battery_empty")]
    assert empty[["node", "cause", "energy_j"]].values.tolist() == [[0, "compute", 0.1]]
    rows = frame[frame.event == "iteration"].set_index("iteration")
    assert rows["updates"].tolist() == [2, 2] + [1] * 8
    # round 3's downlink (ideal, instantaneous) arrives at the round's start
    assert empty["time_s"].iloc[0] == pytest.approx(rows.loc[2, "time_s"])
    assert sim.network.nodes[0].battery.left_j == 0.0
    assert sim.network.nodes[1].battery is None  # mains power


def test_retransmissions_cost_energy_too():
    """On a lossy uplink the battery pays every attempt: capacity − Σ bits on air × P/R −
    the steps computed."""
    sim, frame = server_run(100.0, loss=0.4, rounds=12, seed=3)
    sent = frame[(frame.event == "message") & (frame.node == 0)]
    assert (sent["attempts"] > 1).any()
    computed = 12 * STEPS * J_STEP
    expected = 100.0 - sent["bits_on_air"].sum() * POWER / RATE - computed
    assert sim.network.nodes[0].battery.left_j == pytest.approx(expected, rel=1e-12)


def test_a_token_holder_whose_battery_dies_loses_its_update_and_the_walk_goes_on():
    graph = nx.cycle_graph(4)
    sim = Simulation(1)
    sim.build_network(graph, channel=FixedRateChannel(RATE, LATENCY),
                      compute=FixedStepTime(0.01),
                      energy={2: Battery(0.05, tx_power_w=POWER, joules_per_step=J_STEP)})
    protocol = RandomWalkProtocol(Sender(), MetropolisHastingsWalk(graph),
                                  StopRule(max_iterations=60), token_timeout_s=0.05, start=0)
    frame = sim.run(protocol).frame
    faults = frame[frame.event == "fault"]
    assert faults[faults.kind == "battery_empty"]["node"].tolist() == [2]
    died = faults[faults.kind == "battery_empty"]["time_s"].iloc[0]
    later = frame[(frame.event == "iteration") & (frame.time_s > died)]
    assert len(later) > 0 and 2 not in set(later["node"])
    assert frame["time_s"].is_monotonic_increasing
    assert frame[frame.event == "iteration"]["iteration"].tolist() == list(range(1, 61))


def test_rebinding_gives_full_batteries_again():
    from bflnet.simulator.network import Network  # noqa: F401 (the rebind path)
    sim, first = server_run(0.1)
    again = Simulation(0, record_messages=True)
    again.use_network(sim.network)
    frame = again.run(ParameterServerProtocol(Sender(), StopRule(max_iterations=10),
                                              selector=RoundRobinSelector(2))).frame
    assert frame.equals(first)


@pytest.mark.parametrize("kwargs, message", [
    (dict(capacity_j=math.nan), "capacity_j"),
    (dict(capacity_j=0.0), "capacity_j"),
    (dict(capacity_j=1.0, tx_power_w=-1.0), "tx_power_w"),
    (dict(capacity_j=1.0, joules_per_step=math.inf), "joules_per_step"),
    (dict(capacity_j=10**400), "capacity_j"),
])
def test_bad_batteries(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Battery(**kwargs)


def test_bad_energy_specs():
    graph = nx.empty_graph(2)
    with pytest.raises(ValueError, match="energy: must be a Battery"):
        Simulation(0).build_network(graph, energy="full")
    with pytest.raises(ValueError, match="energy: 7 is not an agent"):
        Simulation(0).build_network(graph, energy={7: Battery(1.0)})
    with pytest.raises(ValueError, match=r"energy\[0\]: must be a Battery"):
        Simulation(0).build_network(graph, energy={0: 1.0})
