"""GossipAdapter: a global-state learner under gossip reaches, at every node, the state one
global-state run reaches (increments scaled by K for a state declared additive), or the
average of the nodes' states (declared averaged), against closed forms; its metrics are
per node (median, largest, spread) beside those of the nodes' mean state; a learner that
declares nothing mixable is refused in one line naming it."""

from __future__ import annotations

import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.learners.conjugate.gaussian_mean import GaussianMean, make
from bflnet.learners.gossip.gossip_adapter import GossipAdapter, NodeCopy
from bflnet.protocols import ConsensusProtocol, StopRule
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.simulator import Simulation
from bflnet.validation.errors import SimulationError


def run_gossip(learner, K, rounds=300, loss_prob=0.0, seed=0, **kwargs):
    sim = Simulation(seed, name="gossip-adapter")
    graph = make_graph("ring", K, sim.streams.numpy("graph"))
    sim.build_network(graph, channel=FixedRateChannel(rate_bps=1e6, latency_s=0.001,
                                                      loss_prob=loss_prob))
    gossip = GossipAdapter(learner, agents=kwargs.pop("agents_override", K), **kwargs)
    result = sim.run(ConsensusProtocol(gossip, "metropolis-hastings",
                                       StopRule(max_iterations=rounds)))
    return result


def test_an_additive_state_reaches_the_exact_posterior_at_every_node():
    K = 8
    learner = make(K, 20, np.random.default_rng(1))
    result = run_gossip(learner, K)
    exact = learner.exact()  # prior + every agent's statistics
    states = [copy.state for copy in result.agent_states.values()]
    assert len(states) == K
    for state in states:
        np.testing.assert_allclose(state, exact, rtol=1e-9)
    last = result.frame.iloc[-1]
    assert last["mean_error_max"] < 1e-9 and last["disagreement"] < 1e-6
    assert last["kl_max"] < 1e-12
    assert last["posterior_mean"] == pytest.approx(exact[0] / exact[1], rel=1e-12)


class AveragedMean(GaussianMean):
    """The same state, declared an average: gossip mixes it unscaled."""

    combines = Combines.AVERAGED


def test_an_averaged_state_is_the_average_of_the_nodes_states():
    """Without the scaling every node converges to prior + (1/K) Σ_k η_k."""
    K = 6
    learner = AveragedMean(make(K, 10, np.random.default_rng(2)).data)
    result = run_gossip(learner, K)
    stats = sum(np.array([x.sum(), len(x)]) for x in learner.data.values())
    expected = learner.init(None) + stats / K
    for copy in result.agent_states.values():
        np.testing.assert_allclose(copy.state, expected, rtol=1e-9)


def test_the_mean_over_nodes_is_kept_exactly_each_round():
    """Doubly stochastic mixing preserves the nodes' mean: after the first round's local
    steps it already equals the exact posterior (lossless links)."""
    K = 5
    learner = make(K, 4, np.random.default_rng(3))
    frame = run_gossip(learner, K, rounds=3).frame
    rounds = frame[frame.event == "round"]
    exact = learner.exact()
    assert np.allclose(rounds["posterior_mean_at_mean"], exact[0] / exact[1], rtol=1e-12)
    assert rounds["disagreement"].iloc[0] > rounds["disagreement"].iloc[-1] > 0


def test_the_metrics_are_per_node_while_the_nodes_disagree():
    """The mean state is exact from round 1 (its KL is 0), but no node's is yet: ``kl``
    is the median of the nodes' own KLs, with the largest and the spread beside it,
    each checked against the nodes' states."""
    K = 6
    learner = make(K, 5, np.random.default_rng(4))
    result = run_gossip(learner, K, rounds=1)
    first = result.frame[result.frame.event == "round"].iloc[0]
    kls = [learner.evaluate(copy.state)["kl"] for copy in result.agent_states.values()]
    assert first["kl_at_mean"] < 1e-12 < first["kl"]
    assert first["kl"] == pytest.approx(float(np.median(kls)), rel=1e-12)
    assert first["kl_max"] == pytest.approx(max(kls), rel=1e-12)
    assert first["kl_spread"] == pytest.approx(max(kls) - min(kls), rel=1e-12)
    assert first["disagreement"] > 0
    # per_node=False: one evaluation a round, of the mean state, under its own names
    frame = run_gossip(learner, K, rounds=1, per_node=False).frame
    assert "kl_max" not in frame.columns
    assert frame[frame.event == "round"]["kl"].iloc[0] < 1e-12


class PairState(GlobalStateLearner):
    """A structured (dict and tuple) state: sum of the agents' values, twice."""

    combines = Combines.ADDITIVE

    def init(self, rng):
        return {"a": np.zeros(1), "b": (np.zeros(2),)}

    def init_agent(self, agent, rng):
        return False

    def local_update(self, agent, state, added, rng):
        v = 0.0 if added else float(agent)
        return Update({"a": np.array([v]), "b": (np.array([v, 2 * v]),)}, agent=agent,
                      agent_state=True)

    def merge(self, state, updates):
        out = state
        for u in updates:
            out = {"a": out["a"] + u.payload["a"], "b": (out["b"][0] + u.payload["b"][0],)}
        return out


def test_structured_states_mix_part_by_part():
    K = 4
    result = run_gossip(PairState(), K, rounds=200)
    total = sum(range(K))
    for copy in result.agent_states.values():
        np.testing.assert_allclose(copy.state["a"], [total], rtol=1e-9)
        np.testing.assert_allclose(copy.state["b"][0], [total, 2 * total], rtol=1e-9)


class Undeclared(PairState):
    combines = None


class Particles(PairState):
    combines = Combines.PARTICLES


class Misspelt(PairState):
    combines = "sum"


@pytest.mark.parametrize("cls, has", [
    (Undeclared, "declares nothing (no combines attribute)"),
    (Particles, "declares combines = <Combines.PARTICLES: 'particles'>"),
    (Misspelt, "declares combines = 'sum'"),
])
def test_a_learner_without_a_mixable_declaration_is_refused_in_one_line(cls, has):
    with pytest.raises(ValueError) as caught:
        GossipAdapter(cls(), agents=4)
    message = str(caught.value)
    assert message == (f"gossip: learner {cls.__name__} {has}; mixing the nodes' copies of "
                       f"its state needs combines = Combines.ADDITIVE or Combines.AVERAGED "
                       f"(bflnet.learners.base.Combines)")


class Clashing(PairState):
    def evaluate(self, state):
        return {"loss": 1.0, "loss_max": 2.0}


def test_bad_arguments_are_one_line():
    with pytest.raises(TypeError, match="learner: must be a GlobalStateLearner"):
        GossipAdapter(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agents: must be an integer >= 1, got 0"):
        GossipAdapter(GaussianMean({0: np.ones(1)}), agents=0)
    with pytest.raises(ValueError, match=r"^agents: gossip needs the number of agents K for "
                       r"learner GaussianMean, whose state is additive"):
        GossipAdapter(GaussianMean({0: np.ones(1)}))
    assert isinstance(GossipAdapter(GaussianMean({0: np.ones(1)}), agents=1).init_node(
        0, None, 1), NodeCopy)
    assert GossipAdapter(AveragedMean({0: np.ones(1)})).increment_scale == 1.0
    with pytest.raises(SimulationError, match="agents: 3 given to gossip, but it runs on 4 "
                       "nodes"):
        run_gossip(GaussianMean({k: np.ones(1) for k in range(4)}), 4, rounds=1,
                   agents_override=3)
    with pytest.raises(SimulationError, match="reports metrics 'loss' and 'loss_max'"):
        run_gossip(Clashing(), 4, rounds=1)
