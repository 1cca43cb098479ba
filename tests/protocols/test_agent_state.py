"""Agent state kept at the nodes, per-agent streams, forget requests as events, and what a
run gives back, under the three patterns."""

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import (
    Combines,
    ConsensusLearner,
    GlobalStateLearner,
    PerNeighbour,
    Update,
    Work,
)
from bflnet.protocols import (
    ConsensusProtocol,
    ParameterServerProtocol,
    RandomWalkProtocol,
    StopRule,
)
from bflnet.protocols.coding.codecs import RawCodec, StochasticQuantizer
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.protocols.interventions import ForgetRequest, Phase
from bflnet.protocols.scheduling import AllAgents
from bflnet.simulator import FixedStepTime, Simulation


class Counter(GlobalStateLearner):
    """The global state counts merged updates; each agent counts its own merged updates
    (its private state) and draws one number per update from its stream; a forget request
    zeroes the agent's count at its next update, which completes the forget."""

    combines = Combines.ADDITIVE

    def init(self, rng):
        return np.zeros(1)

    def init_agent(self, agent, rng):
        return {"count": 0, "draws": [], "forgetting": False}

    def local_update(self, agent, state, agent_state, rng):
        draw = float(rng.random())
        if agent_state["forgetting"]:
            new = {"count": 0, "draws": [*agent_state["draws"], draw], "forgetting": False}
            return Update(np.zeros(1), Work(steps=1), agent, agent_state=new, event="forgotten")
        new = {"count": agent_state["count"] + 1, "draws": [*agent_state["draws"], draw],
               "forgetting": False}
        return Update(np.ones(1), Work(steps=1), agent, agent_state=new)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def forget(self, agent, agent_state):
        return {**agent_state, "forgetting": True}

    def evaluate(self, state):
        return {"merged": float(state[0])}


def server_sim(K, seed=0, **kwargs):
    sim = Simulation(seed, record_messages=True)
    sim.build_network(nx.empty_graph(K), server=True, compute=FixedStepTime(0.01), **kwargs)
    return sim


def test_the_run_gives_back_the_final_state_and_every_agents_state():
    sim = server_sim(3)
    result = sim.run(ParameterServerProtocol(Counter(), StopRule(max_iterations=7)))
    assert result.state.tolist() == [7.0] and result.reason == "max_iterations"
    assert {k: s["count"] for k, s in result.agent_states.items()} == {0: 3, 1: 2, 2: 2}
    assert result.frame.merged.iloc[-1] == 7.0


def test_an_agent_whose_update_is_lost_keeps_its_old_state():
    sim = server_sim(4, seed=3, channel=FixedRateChannel(1e6, 0.001, loss_prob=0.5),
                     max_attempts=1)
    result = sim.run(ParameterServerProtocol(Counter(), StopRule(max_iterations=30),
                                             selector=AllAgents()))
    frame = result.frame
    counts = {k: s["count"] for k, s in result.agent_states.items()}
    assert sum(counts.values()) == result.state[0] == frame.updates.sum()
    assert frame.updates.sum() < 4 * 30  # some updates were lost


def test_each_agent_draws_from_its_own_stream_whatever_the_schedule():
    def draws(selector_agents, iterations):
        sim = server_sim(4, seed=11)
        protocol = ParameterServerProtocol(
            Counter(), StopRule(max_iterations=iterations),
            interventions=[ForgetRequest([0], after_iteration=0,
                                         then=Phase(agents=selector_agents))])
        return sim.run(protocol).agent_states

    one_order = draws((0, 1, 2, 3), 8)   # agent 2 is third in each round
    other = draws((2, 3, 1, 0), 8)       # agent 2 first
    for k in range(4):
        assert one_order[k]["draws"] == other[k]["draws"]
    expected = Simulation(11).streams.numpy("agent.2").random(2).tolist()
    assert one_order[2]["draws"] == expected


@pytest.mark.parametrize("pattern", ["server", "walk"])
def test_a_forget_request_is_an_event_and_time_and_bits_run_on(pattern):
    K, after = 4, 6
    learner = Counter()
    request = ForgetRequest([1], after_iteration=after)
    if pattern == "server":
        sim = server_sim(K)
        protocol = ParameterServerProtocol(learner, StopRule(max_iterations=12),
                                           interventions=[request])
    else:
        graph = nx.complete_graph(K)
        sim = Simulation(2)
        sim.build_network(graph, channel=FixedRateChannel(1e6, 0.001))
        protocol = RandomWalkProtocol(learner, MetropolisHastingsWalk(graph),
                                      StopRule(max_iterations=60, forgotten=True),
                                      interventions=[request])
    result = sim.run(protocol)
    frame = result.frame
    req = frame[frame.event == "forget_request"]
    assert req.iteration.tolist() == [after] and req.node.tolist() == [1]
    done = frame[frame.event == "forgotten"]
    assert len(done) == 1 and done.node.iloc[0] == 1 and done.iteration.iloc[0] > after
    rows = frame[frame.event == "iteration"].set_index("iteration")
    assert rows.forget_pending.loc[:after].isna().all()
    assert (rows.forget_pending.loc[after + 1:done.iteration.iloc[0] - 1] == 1).all()
    assert (rows.forget_pending.loc[done.iteration.iloc[0]:] == 0).all()
    assert rows.time_s.is_monotonic_increasing and rows.cum_bits.is_monotonic_increasing
    assert rows.time_s.loc[after + 1] > rows.time_s.loc[after]  # one clock, not restarted
    assert result.agent_states[1]["count"] == 0
    if pattern == "walk":
        assert result.reason == "forgotten"
        assert rows.index.max() == done.iteration.iloc[0]


def test_a_forget_request_at_a_simulated_time_happens_at_the_next_iteration_boundary():
    sim = server_sim(2)
    # each iteration: compute 0.01 s on an ideal link
    result = sim.run(ParameterServerProtocol(
        Counter(), StopRule(max_iterations=10),
        interventions=[ForgetRequest([0], at_time_s=0.035)]))
    req = result.frame[result.frame.event == "forget_request"]
    assert req.iteration.tolist() == [4]
    assert req.time_s.iloc[0] == pytest.approx(0.04)


def test_a_phase_changes_who_is_scheduled_the_uplink_codec_and_the_evaluation_cadence():
    sim = server_sim(4)
    protocol = ParameterServerProtocol(
        Counter(), StopRule(max_iterations=12), uplink_codec=RawCodec(64), eval_every=4,
        interventions=[ForgetRequest([3], after_iteration=4, then=Phase(
            agents=[2, 3], uplink_codec=RawCodec(32), eval_every=1))])
    frame = sim.run(protocol).frame
    msgs = frame[(frame.event == "message") & (frame.peer == "server")]
    assert msgs[msgs.iteration <= 4].node.tolist() == [0, 1, 2, 3]
    assert set(msgs[msgs.iteration > 4].node) == {2, 3}
    assert set(msgs[msgs.iteration <= 4].bits) == {64}
    assert set(msgs[msgs.iteration > 4].bits) == {32}
    rows = frame[frame.event == "iteration"]
    assert rows[rows.iteration <= 4].merged.notna().tolist() == [False, False, False, True]
    assert rows[rows.iteration > 4].merged.notna().all()


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(agents=[1]), "forget: set exactly one of after_iteration and at_time_s"),
    (dict(agents=[1], after_iteration=1, at_time_s=1.0), "forget: set exactly one"),
    (dict(agents=[], after_iteration=1), "forget.agents: must name at least one agent"),
    (dict(agents=[1], after_iteration=-1), "forget.after_iteration: must be an integer >= 0"),
    (dict(agents=[1], at_time_s=float("nan")), "forget.at_time_s: must be a finite number"),
])
def test_bad_forget_requests_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        ForgetRequest(**kwargs)


def test_holding_a_token_the_parameter_server_does_not_have_is_a_one_line_error():
    with pytest.raises(ValueError, match="^forget.hold_token: applies to the random walk"):
        ParameterServerProtocol(Counter(), StopRule(max_iterations=3), interventions=[
            ForgetRequest([0], after_iteration=1, hold_token=True)])


# ---------------------------------------------------------------------- consensus


class Gossip(ConsensusLearner):
    """Node state: its value and what it last published (as its neighbours decode it).
    It sends a different payload to each neighbour: its value plus the neighbour's id."""

    def __init__(self, per_neighbour):
        self.per_neighbour = per_neighbour

    def init_node(self, node, rng, common):
        return {"x": np.array([float(node)]), "published": None, "seen": {}}

    def outgoing(self, node, state):
        if self.per_neighbour:
            return PerNeighbour({j: state["x"] + 100 * j for j in range(4) if j != node})
        return np.array([state["x"][0] + 1.0, 0.123456789, -0.3])

    def sent(self, node, state, decoded):
        return {**state, "published": decoded}

    def absorb(self, node, state, received, weights):
        return {**state, "seen": dict(received)}


def test_consensus_senders_know_what_their_neighbours_decode():
    graph = nx.complete_graph(4)
    sim = Simulation(0)
    sim.build_network(graph)
    codec = StochasticQuantizer(3)
    result = sim.run(ConsensusProtocol(Gossip(False), metropolis_hastings_weights(graph),
                                       StopRule(max_iterations=1), codec=codec))
    states = result.agent_states
    for k in range(4):
        published = states[k]["published"]
        raw = np.array([k + 1.0, 0.123456789, -0.3])
        assert not np.allclose(published, raw)  # quantised: not what was sent
        for j in range(4):
            if j != k:
                assert np.array_equal(states[j]["seen"][k], published)


def test_a_consensus_node_may_send_each_neighbour_its_own_payload():
    graph = nx.complete_graph(4)
    sim = Simulation(0)
    sim.build_network(graph)
    result = sim.run(ConsensusProtocol(Gossip(True), metropolis_hastings_weights(graph),
                                       StopRule(max_iterations=1)))
    states = result.agent_states
    for k in range(4):
        for j in range(4):
            if j != k:
                assert states[j]["seen"][k].tolist() == [k + 100.0 * j]
        assert set(states[k]["published"]) == {j for j in range(4) if j != k}
