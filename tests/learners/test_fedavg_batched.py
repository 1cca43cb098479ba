"""Batched agents: FedAvg's ``local_update_batch`` against its sequential ``local_update``,
and the parameter server's batched path against its sequential one (times, bits and each
agent's stream unchanged, lost downlinks included)."""

import networkx as nx
import numpy as np
import pytest
import torch
from tests.protocols.test_agent_state import Counter

from bflnet.channels import FixedRateChannel
from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.models.classifiers import BayesianMLP
from bflnet.learners.models.toy_models import LinearGaussianModel
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import FixedStepTime, Simulation


def classification_agents(sizes=(40, 40, 5, 40), n_in=12, n_classes=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(n_classes, n_in, generator=gen)
    data = {}
    for agent, n in enumerate(sizes):
        y = torch.randint(n_classes, (n,), generator=gen)
        data[agent] = (centres[y] + torch.randn(n, n_in, generator=gen), y)
    return data


SETTINGS = [dict(optimizer="sgd", lr=0.1), dict(optimizer="sgd", lr=0.05, momentum=0.9,
                                                weight_decay=0.01),
            dict(optimizer="adam", lr=0.01)]


@pytest.mark.parametrize("settings", SETTINGS)
def test_each_row_is_the_agents_sequential_update(settings):
    """Agent 2 has fewer rows than the batch (its own stack); every payload equals the
    sequential update up to float rounding, and each agent's stream ends where it would."""
    model = BayesianMLP(12, 8, 3)
    data = classification_agents()
    learner = FedAvg(model, data, local_steps=7, batch_size=10, batch_agents=True, **settings)
    w = learner.init(np.random.default_rng(0))
    agents = [0, 1, 2, 3]
    batch_rngs = [np.random.default_rng(10 + a) for a in agents]
    seq_rngs = [np.random.default_rng(10 + a) for a in agents]
    batched = learner.local_update_batch(agents, w, [None] * 4, batch_rngs)
    assert [u.agent for u in batched] == agents
    for a, update, rng in zip(agents, batched, seq_rngs, strict=True):
        expected = learner.local_update(a, w, None, rng)
        torch.testing.assert_close(update.payload, expected.payload, rtol=1e-5, atol=1e-6)
        assert update.work == expected.work
    assert [r.random() for r in batch_rngs] == [r.random() for r in seq_rngs]


def test_models_without_a_hand_written_gradient_run_one_by_one():
    model = LinearGaussianModel(d=3, noise_var=0.25)
    data = {a: (torch.randn(20, 3), torch.randn(20)) for a in range(3)}
    learner = FedAvg(model, data, local_steps=3, lr=0.05, batch_size=5, batch_agents=True)
    w = learner.init(np.random.default_rng(0))
    got = learner.local_update_batch([0, 1, 2], w, [None] * 3,
                                     [np.random.default_rng(a) for a in range(3)])
    for a, update in enumerate(got):
        expected = learner.local_update(a, w, None, np.random.default_rng(a))
        assert torch.equal(update.payload, expected.payload)


def test_errors_name_the_field():
    learner = FedAvg(BayesianMLP(12, 8, 3), classification_agents(), batch_agents=True)
    w = learner.init(np.random.default_rng(0))
    with pytest.raises(ValueError, match="agents: no data for agents \\[9\\]"):
        learner.local_update_batch([0, 9], w, [None, None], [None, None])
    with pytest.raises(ValueError, match="agent_states, rngs: need one per agent"):
        learner.local_update_batch([0, 1], w, [None], [None, None])
    big = FedAvg(BayesianMLP(12, 8, 3), classification_agents(), lr=1e6, local_steps=5,
                 batch_agents=True)
    with pytest.raises(ValueError, match="non-finite parameters after 5 local steps"):
        big.local_update_batch([0, 1], w * 1e30, [None, None], [None, None])


class BatchedCounter(Counter):
    """:class:`Counter` with a batched update that is exactly the sequential one."""

    batches_agents = True

    def local_update_batch(self, agents, state, agent_states, rngs):
        return [self.local_update(a, state, s, r)
                for a, s, r in zip(agents, agent_states, rngs, strict=True)]


def lossy_server_run(learner, seed):
    sim = Simulation(seed, record_messages=True)
    lossy = FixedRateChannel(1e5, latency_s=0.002, loss_prob=0.3)
    sim.build_network(nx.empty_graph(5), server=True, compute=FixedStepTime(0.01),
                      channel=lossy, downlink_channel=lossy, max_attempts=1)
    return sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=25),
                                           selector=AllAgents()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_batched_path_keeps_times_bits_and_streams(seed):
    """With 30 % loss and no ARQ, the batched path gives the same frame and the same
    per-agent draws as the sequential one: a lost downlink rewinds the agent's stream."""
    plain = lossy_server_run(Counter(), seed)
    batched = lossy_server_run(BatchedCounter(), seed)
    assert plain.frame.equals(batched.frame)
    assert plain.agent_states == batched.agent_states
    lost = plain.frame[(plain.frame.event == "message") & (plain.frame.kind == "state")
                       & plain.frame.dropped.astype(bool)]
    assert len(lost) > 0


def test_batched_fedavg_under_the_server_matches_the_sequential_run():
    data = classification_agents(sizes=(40, 40, 40, 40, 40))

    def run(batch_agents):
        learner = FedAvg(BayesianMLP(12, 8, 3), data, local_steps=4, lr=0.1, batch_size=10,
                         batch_agents=batch_agents)
        return lossy_server_run(learner, 0)

    plain, batched = run(False), run(True)
    cols = ["time_s", "cum_bits", "event", "iteration"]
    assert plain.frame[cols].equals(batched.frame[cols])
    torch.testing.assert_close(batched.state, plain.state, rtol=1e-4, atol=1e-5)


def test_batched_agents_is_the_default_except_for_the_group_baselines():
    from bflnet.learners.hyper import FedAvgParams, GroupFedAvgParams

    assert FedAvgParams().batch_agents and not GroupFedAvgParams().batch_agents
    assert FedAvg(BayesianMLP(12, 8, 3), classification_agents()).batches_agents


@pytest.mark.parametrize("decay", [1.0, 0.99])
def test_the_fused_sgd_step_is_a_step_along_the_hand_written_gradient(decay):
    """``BayesianMLP.sgd_step``: ``decay · θ + step · ∇ Σ log p`` per row, each row on its
    own minibatch, equal to the gradient path up to float rounding."""
    model = BayesianMLP(12, 8, 3)
    gen = torch.Generator().manual_seed(0)
    theta = model.init_particles(4, gen)
    x = torch.randn(4, 10, 12, generator=gen)
    y = torch.randint(3, (4, 10), generator=gen)
    expected = decay * theta + 0.05 * model.log_likelihood_grad(theta, x, y)
    got = theta.clone()
    model.sgd_step(got, x, y, 0.05, decay)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_the_fused_sgd_step_refuses_a_subclass_with_other_maths():
    class Other(BayesianMLP):
        def logits(self, theta, x):
            return 2 * super().logits(theta, x)

    assert BayesianMLP(12, 8, 3).has_sgd_step() and not Other(12, 8, 3).has_sgd_step()
    with pytest.raises(ValueError, match="redefines the forward maths"):
        Other(12, 8, 3).sgd_step(torch.zeros(2, Other(12, 8, 3).d), torch.zeros(2, 5, 12),
                                 torch.zeros(2, 5, dtype=torch.long), 0.1)
