"""The random walk under node outages: the walk goes on over the live nodes, a holder that
goes down loses its update and the token is regenerated, and conjugate G-FVL still
reaches the exact posterior once every agent has been visited."""

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.data.synthetic import bernoulli_agents
from bflnet.faults.availability import OnOff, Trace
from bflnet.learners.base import GlobalStateLearner, Update, Work
from bflnet.learners.conjugate.gfvl import GFVL
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import FixedStepTime, Simulation


def walk_run(seed, node_outages, K=6, iterations=80, compute_s=0.01, graph=None, start=None):
    graph = graph if graph is not None else nx.cycle_graph(K)
    learner = GFVL.beta_bernoulli(bernoulli_agents(K, 30, 0.3, np.random.default_rng(seed)),
                                  a=2, b=2)
    sim = Simulation(seed, record_messages=True)
    sim.build_network(graph, channel=FixedRateChannel(1e5, 0.002),
                      compute=FixedStepTime(compute_s), node_outages=node_outages)
    protocol = RandomWalkProtocol(learner, MetropolisHastingsWalk(graph),
                                  StopRule(max_iterations=iterations), token_timeout_s=0.05,
                                  start=start)
    return sim.run(protocol), protocol.visits


@pytest.mark.parametrize("seed", range(6))
def test_gfvl_with_20_percent_downtime_is_exact_once_every_agent_was_visited(seed):
    spec = OnOff.with_downtime(0.2, mean_down_s=0.05, stationary=True)
    result, visits = walk_run(seed, spec)
    frame = result.frame
    rows = frame[frame.event == "iteration"].set_index("iteration")
    cover = next(i for i in range(1, len(visits) + 1) if len(set(visits[:i])) == 6)
    assert rows.kl[cover] < 1e-10 and rows.kl[cover - 1] > 1e-3
    assert rows.kl.loc[cover:].max() < 1e-10
    assert list(rows.index) == list(range(1, 81))  # a lost update is not an iteration
    assert frame["time_s"].is_monotonic_increasing
    faults = frame[frame.event == "fault"]
    assert {"node_down", "node_up"} <= set(faults["kind"])


def test_a_crashed_holder_loses_its_update_and_the_token_is_regenerated():
    """Two nodes, the walk starts at 0 (10 ms of compute a visit, a hop of 3.28 ms): node 1
    gets the token at 13.28 ms and goes down at 20 ms while computing. Its update is
    lost, node 0 regenerates the token 50 ms later, and the token reaches node 1 once it
    is back (at 0.5 s)."""
    result, visits = walk_run(3, {1: Trace([(0.02, 0.5)])}, K=2, iterations=6,
                              graph=nx.path_graph(2), start=0)
    frame = result.frame
    faults = frame[(frame.event == "fault") & frame.kind.isin(["token_lost",
                                                                "token_regenerated"])]
    assert faults[["kind", "node"]].values.tolist() == [["token_lost", 1],
                                                         ["token_regenerated", 0]]
    lost, regenerated = faults.iloc[0], faults.iloc[1]
    assert lost.lost_steps == 1 and lost.time_s == pytest.approx(0.02)
    assert regenerated.peer == 1 and regenerated.time_s == pytest.approx(0.07)
    iterations = frame[frame.event == "iteration"]
    # 0, (1's update lost), then 1 once it is back: node 0 does not compute again, its
    # walk decisions meet the outage (token_dropped) until 1 is up
    assert iterations["node"].tolist()[:3] == [0, 1, 0] and visits[:3] == [0, 1, 0]
    assert iterations["time_s"].iloc[1] > 0.5
    dropped = frame[(frame.event == "token_dropped") & (frame.time_s < 0.5)]
    assert len(dropped) > 0 and set(dropped["peer"]) == {1}


def test_without_outages_nothing_changes():
    a, va = walk_run(0, None)
    b, vb = walk_run(0, {})
    assert a.frame.equals(b.frame) and va == vb
    assert (a.frame.event != "fault").all()


def test_bad_token_timeout():
    with pytest.raises(ValueError, match="token_timeout_s"):
        RandomWalkProtocol(None, None, StopRule(max_iterations=1), token_timeout_s=float("nan"))


class VisitCounter(GlobalStateLearner):
    """Each agent's private state counts its own visits; the payload reports the count."""

    def init(self, rng):
        return np.zeros(1)

    def init_agent(self, agent, rng):
        return 0

    def local_update(self, agent, state, agent_state, rng):
        return Update(np.array([float(agent_state + 1)]), Work(steps=1), agent,
                      agent_state=agent_state + 1)

    def merge(self, state, updates):
        return updates[0].payload


@pytest.mark.parametrize("keep_state", [True, False])
def test_a_node_that_goes_down_keeps_or_loses_its_agent_state(keep_state):
    """Node 1 is down over [0.1, 0.2): with keep_state its visit count goes on after it is
    back; without, it starts again from init_agent (and the node_down row says so)."""
    graph = nx.path_graph(2)
    sim = Simulation(0)
    sim.build_network(graph, channel=FixedRateChannel(1e5, 0.002),
                      compute=FixedStepTime(0.01), node_outages={1: Trace([(0.1, 0.2)])},
                      keep_state=keep_state)
    protocol = RandomWalkProtocol(VisitCounter(), MetropolisHastingsWalk(graph),
                                  StopRule(max_time_s=0.5), start=0)
    result = sim.run(protocol)
    frame = result.frame
    rows = frame[(frame.event == "iteration") & (frame.node == 1)]
    before = rows[rows.time_s < 0.1]
    after = rows[rows.time_s > 0.2]
    assert len(before) > 0 and len(after) > 0
    down = frame[(frame.event == "fault") & (frame.kind == "node_down")]
    assert len(down) == 1
    assert protocol.visits.count(1) == len(rows)
    if keep_state:
        assert result.agent_states[1] == len(rows)
        assert "lost" not in frame or frame["lost"].isna().all()
    else:
        assert result.agent_states[1] == len(after)
        assert down["lost"].tolist() == ["agent_state"]


def test_keep_state_must_be_a_bool():
    with pytest.raises(ValueError, match="keep_state: must be True or False"):
        Simulation(0).build_network(nx.path_graph(2), keep_state="no")
