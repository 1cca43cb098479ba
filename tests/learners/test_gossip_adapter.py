"""GossipAdapter: a global-state learner under gossip reaches, at every node, the state one
global-state run reaches (increments scaled by K for an additive state), or the average of
the nodes' states (scale 1), against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.learners.conjugate.gaussian_mean import GaussianMean, make
from bflnet.learners.gossip.gossip_adapter import GossipAdapter, NodeCopy
from bflnet.protocols import ConsensusProtocol, StopRule
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.simulator import Simulation


def run_gossip(learner, K, scale, rounds=300, loss_prob=0.0, seed=0):
    sim = Simulation(seed, name="gossip-adapter")
    graph = make_graph("ring", K, sim.streams.numpy("graph"))
    sim.build_network(graph, channel=FixedRateChannel(rate_bps=1e6, latency_s=0.001,
                                                      loss_prob=loss_prob))
    gossip = GossipAdapter(learner, increment_scale=scale)
    result = sim.run(ConsensusProtocol(gossip, "metropolis-hastings",
                                       StopRule(max_iterations=rounds)))
    return result


def test_an_additive_state_reaches_the_exact_posterior_at_every_node():
    K = 8
    learner = make(K, 20, np.random.default_rng(1))
    result = run_gossip(learner, K, scale=K)
    exact = learner.exact()  # prior + every agent's statistics
    states = [copy.state for copy in result.agent_states.values()]
    assert len(states) == K
    for state in states:
        np.testing.assert_allclose(state, exact, rtol=1e-9)
    last = result.frame.iloc[-1]
    assert last["mean_error"] < 1e-12 and last["disagreement"] < 1e-6
    assert last["posterior_mean"] == pytest.approx(exact[0] / exact[1], rel=1e-12)


def test_scale_one_averages_the_nodes_states():
    """Without the scaling every node converges to prior + (1/K) Σ_k η_k."""
    K = 6
    learner = make(K, 10, np.random.default_rng(2))
    result = run_gossip(learner, K, scale=1.0)
    stats = sum(np.array([x.sum(), len(x)]) for x in learner.data.values())
    expected = learner.init(None) + stats / K
    for copy in result.agent_states.values():
        np.testing.assert_allclose(copy.state, expected, rtol=1e-9)


def test_the_mean_over_nodes_is_kept_exactly_each_round():
    """Doubly stochastic mixing preserves the nodes' mean: after the first round's local
    steps it already equals the exact posterior (lossless links)."""
    K = 5
    learner = make(K, 4, np.random.default_rng(3))
    frame = run_gossip(learner, K, scale=K, rounds=3).frame
    rounds = frame[frame.event == "round"]
    exact = learner.exact()
    assert np.allclose(rounds["posterior_mean"], exact[0] / exact[1], rtol=1e-12)
    assert rounds["disagreement"].iloc[0] > rounds["disagreement"].iloc[-1] > 0


class PairState(GlobalStateLearner):
    """A structured (dict and tuple) state: sum of the agents' values, twice."""

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
    result = run_gossip(PairState(), K, scale=K, rounds=200)
    total = sum(range(K))
    for copy in result.agent_states.values():
        np.testing.assert_allclose(copy.state["a"], [total], rtol=1e-9)
        np.testing.assert_allclose(copy.state["b"][0], [total, 2 * total], rtol=1e-9)


def test_bad_arguments_are_one_line():
    with pytest.raises(TypeError, match="learner: must be a GlobalStateLearner"):
        GossipAdapter(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="increment_scale: must be > 0"):
        GossipAdapter(GaussianMean({0: np.ones(1)}), increment_scale=0)
    assert isinstance(GossipAdapter(GaussianMean({0: np.ones(1)})).init_node(0, None, 1),
                      NodeCopy)
