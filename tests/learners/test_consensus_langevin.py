"""DSGLD, CD-BFL and CF-FL against closed forms: the stationary law of DSGLD on a Gaussian
model, CHOCO's invariants, CF-FL as plain decentralised SGD, and the bit counts."""

import math

import networkx as nx
import numpy as np
import pytest
import torch
from scipy import linalg

from bflnet.channels import FixedRateChannel
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.learners.langevin.cffl import CFFL
from bflnet.learners.langevin.dsgld import DSGLD
from bflnet.learners.models.toy_models import GaussianMeanModel
from bflnet.protocols import ConsensusProtocol, StopRule
from bflnet.protocols.coding.codecs import RawCodec, TopKCodec, position_bits
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.simulator import Simulation

K, D, E = 6, 2, 5
NOISE_VAR, PRIOR_VAR = 1.0, 4.0


def gaussian_setup(seed=0):
    rng = np.random.default_rng(seed)
    data = {k: (torch.tensor(1.0 + rng.standard_normal((E, D)), dtype=torch.float64),
                torch.zeros(E)) for k in range(K)}
    model = GaussianMeanModel(d=D, prior_var=PRIOR_VAR, noise_var=NOISE_VAR,
                              dtype=torch.float64)
    return model, data


class Recorder(DSGLD):
    """DSGLD that keeps every node's sample after each round (test-side)."""

    def evaluate(self, states):
        self.samples.append(np.stack([s.theta[0].numpy() for s in states.values()]))
        return super().evaluate(states)


def run_consensus(learner, rounds, seed, graph=None, codec=None, channel=None, **net):
    graph = nx.cycle_graph(K) if graph is None else graph
    sim = Simulation(seed)
    sim.build_network(graph, channel=channel, **net)
    protocol = ConsensusProtocol(learner, metropolis_hastings_weights(graph),
                                 StopRule(max_iterations=rounds), codec=codec)
    return sim.run(protocol)


def test_dsgld_on_a_gaussian_model_samples_the_exact_stationary_law_of_eq_4():
    # Full-batch gradients: eq. 4 is the linear Gaussian chain θ ← M θ + η b + sqrt(2η) ξ
    # with M = W − η diag(a), per coordinate; its stationary mean solves (I − M) μ = η b and
    # its covariance Σ = M Σ Mᵀ + 2η I (discrete Lyapunov). The network average is SGLD on
    # the posterior with step η/K, so mean over nodes ≈ the posterior mean.
    model, data = gaussian_setup()
    graph = nx.cycle_graph(K)
    W = metropolis_hastings_weights(graph)
    eta = 0.01
    a = E / NOISE_VAR + 1.0 / (K * PRIOR_VAR)
    M = W - eta * a * np.eye(K)
    b = np.stack([data[k][0].numpy().sum(0) / NOISE_VAR for k in range(K)])  # (K, D)
    mu = np.linalg.solve(np.eye(K) - M, eta * b)                              # (K, D)
    sigma = linalg.solve_discrete_lyapunov(M, 2 * eta * np.eye(K))
    samples = []
    for seed in range(3):
        learner = Recorder(model, data, lr=eta, batch_size=E, burn_in=0, dtype=torch.float64)
        learner.samples = []
        run_consensus(learner, 3000, seed)
        samples.append(np.stack(learner.samples[300:]))                       # (T, K, D)
    s = np.concatenate(samples)
    # autocorrelation of the slowest mode ~ 1/(η a) = 20 rounds: ~ 2700·3/40 independent draws
    n_eff = s.shape[0] / (2 / (eta * a))
    se_mean = np.sqrt(np.diag(sigma))[:, None] / np.sqrt(n_eff)
    assert np.all(np.abs(s.mean(0) - mu) < 5 * se_mean)
    var = s.var(0).mean(1)                                   # per node, pooled over coords
    assert np.allclose(var, np.diag(sigma), rtol=0.12)
    # the network average against the exact posterior of all the data
    precision = K * E / NOISE_VAR + 1 / PRIOR_VAR
    post_mean = (sum(data[k][0].numpy().sum(0) for k in range(K)) / NOISE_VAR) / precision
    avg = s.mean(1)                                          # (T, D) network average
    assert np.allclose(mu.mean(0), post_mean, rtol=1e-3)     # network bias O(η) is tiny here
    assert avg.var(0).mean() == pytest.approx(1 / precision, rel=0.15)


def drive(learner, W, rounds, codec=None, seed=0):
    """A plain-Python synchronous round loop over the learner's hooks (no SimPy), keeping
    every node's state; returns the states after each round."""
    nodes = list(range(W.shape[0]))
    rngs = {k: np.random.default_rng((seed, k)) for k in nodes}
    common = learner.init(np.random.default_rng(seed))
    states = {k: learner.init_node(k, rngs[k], common) for k in nodes}
    from bflnet.protocols.coding import wire

    history = []
    for _ in range(rounds):
        decoded = {}
        for k in nodes:
            states[k], _ = learner.local_steps(k, states[k], rngs[k])
            payload, _bits = wire.encode(codec, learner.outgoing(k, states[k]),
                                         np.random.default_rng(0))
            decoded[k] = torch.as_tensor(wire.decode(codec, payload, states[k].half))
            states[k] = learner.sent(k, states[k], decoded[k])
        halves = {k: states[k].half for k in nodes}
        for k in nodes:
            row = {j: float(W[k, j]) for j in nodes if W[k, j] != 0}
            received = {j: decoded[j] for j in row if j != k}
            states[k] = learner.absorb(k, states[k], received, row)
        history.append((dict(states), halves))
    return history


@pytest.mark.parametrize("codec", [None, TopKCodec(k=1)], ids=["exact", "top-1"])
def test_cdbfl_mixing_preserves_the_network_average_and_the_copies_track_the_iterates(codec):
    model, data = gaussian_setup(1)
    W = metropolis_hastings_weights(nx.cycle_graph(K))
    learner = CDBFL(model, data, lr=0.01, batch_size=E, local_steps=3, zeta=0.4,
                    temperature=0.0, dtype=torch.float64)
    for states, halves in drive(learner, W, 30, codec):
        theta = sum(s.theta for s in states.values())
        half = sum(halves.values())
        assert torch.allclose(theta, half, atol=1e-12)          # Σ_k θ_k = Σ_k θ_k^(L)
        s_sum, v_sum = sum(s.s for s in states.values()), sum(s.v for s in states.values())
        assert torch.allclose(s_sum, v_sum, atol=1e-12)         # Σ_k s_k = Σ_k v_k
        gaps = [float((states[k].v - halves[k]).abs().max()) for k in states]
        if codec is None:
            assert max(gaps) < 1e-12                            # v_k = θ_k^(L) exactly
        else:
            # after its update v_k misses θ_k^(L) by exactly what top-1 dropped
            assert max(gaps) > 0


def test_cffl_at_full_precision_with_zeta_one_is_plain_decentralised_sgd():
    model, data = gaussian_setup(2)
    W = metropolis_hastings_weights(nx.cycle_graph(K))
    learner = CFFL(model, data, lr=0.02, batch_size=E, local_steps=3, zeta=1.0,
                   dtype=torch.float64)
    result = run_consensus(learner, 15, seed=3)
    common = learner.init(Simulation(3).streams.numpy("learner"))
    theta = {k: common.clone() for k in range(K)}
    gen = torch.Generator()  # full batch: the minibatch generator is never used
    for _ in range(15):
        half = {}
        for k in range(K):
            x = theta[k]
            for _ in range(3):
                x = x - 0.02 * learner.objective.grad(k, x, gen)
            half[k] = x
        theta = {k: sum(W[k, j] * half[j] for j in range(K)) for k in range(K)}
    for k in range(K):
        assert torch.allclose(result.agent_states[k].theta, theta[k], rtol=1e-10, atol=1e-12)


def test_every_message_costs_its_formula_and_cdbfl_top1pct_sends_at_most_1p5pct_of_dsgld():
    d = 5000
    rng = np.random.default_rng(0)
    model = GaussianMeanModel(d=d, prior_var=1.0)
    data = {k: (torch.tensor(rng.standard_normal((4, d)), dtype=torch.float32),
                torch.zeros(4)) for k in range(4)}
    graph = nx.complete_graph(4)
    k = 50  # 1 %
    cd = run_consensus(CDBFL(model, data, lr=1e-4, batch_size=4, local_steps=1), 3, 0,
                       graph=graph, codec=TopKCodec(k=k, value_bits=32)).frame
    ds = run_consensus(DSGLD(model, data, lr=1e-4, batch_size=4), 3, 0, graph=graph,
                       codec=RawCodec(32)).frame
    per_message_cd = position_bits(d, k) + 32 * k
    assert position_bits(d, k) == math.ceil(math.log2(math.comb(d, k)))
    messages = 4 * 3  # K · degree per round
    rounds_cd = cd[cd.event == "round"].cum_bits.diff().dropna()
    rounds_ds = ds[ds.event == "round"].cum_bits.diff().dropna()
    assert (rounds_cd == messages * per_message_cd).all()
    assert (rounds_ds == messages * 32 * d).all()
    assert per_message_cd / (32 * d) <= 0.015


def test_a_lost_increment_is_counted_and_the_copies_visibly_diverge():
    model, data = gaussian_setup(3)
    learner = CDBFL(model, data, lr=0.01, batch_size=E, local_steps=1, zeta=0.3,
                    dtype=torch.float64)
    lossless = run_consensus(learner, 20, 0).frame
    assert lossless.missed_increments.max() == 0 and lossless.copy_gap.max() < 1e-12
    lossy = run_consensus(learner, 20, 0, channel=FixedRateChannel(1e6, loss_prob=0.3),
                          max_attempts=1).frame
    rounds = lossy[lossy.event == "round"]
    assert rounds.missed_increments.iloc[-1] == rounds.dropped.sum() > 0
    assert rounds.copy_gap.iloc[-1] > 1e-6
    arq = run_consensus(learner, 20, 0, channel=FixedRateChannel(1e6, loss_prob=0.3),
                        max_attempts=None).frame
    assert arq.missed_increments.max() == 0 and arq.copy_gap.max() < 1e-12


def test_increments_are_never_reused():
    model, data = gaussian_setup()
    with pytest.raises(ValueError, match="^lost: CDBFL sends increments"):
        ConsensusProtocol(CDBFL(model, data), np.eye(K), StopRule(max_iterations=1),
                          lost="reuse")


def test_same_seed_same_frame_and_the_noise_makes_runs_differ():
    model, data = gaussian_setup()

    def frame(seed):
        learner = CDBFL(model, data, lr=0.01, batch_size=2, local_steps=2,
                        dtype=torch.float64)
        return run_consensus(learner, 10, seed, codec=TopKCodec(k=1)).frame

    a, b, c = frame(4), frame(4), frame(5)
    assert a.equals(b)
    assert not a.consensus_error.equals(c.consensus_error)


def test_the_predictive_averages_the_post_burn_in_samples():
    from bflnet.learners.models.classifiers import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    data = {k: (x[10 * k:10 * k + 10], y[10 * k:10 * k + 10]) for k in range(4)}
    model = LogisticRegression(3, 2)
    learner = DSGLD(model, data, lr=0.01, batch_size=5, burn_in=6, thin=2,
                    eval_sets={"eval": (x, y)})
    result = run_consensus(learner, 11, 0, graph=nx.complete_graph(4))
    rows = result.frame[result.frame.event == "round"].set_index("iteration")
    # kept after rounds 7, 9 and 11
    assert rows.kept_samples.tolist() == [0] * 6 + [1, 1, 2, 2, 3]
    assert {"accuracy", "ece", "nll", "consensus_error"} <= set(rows.columns)
    node = result.agent_states[0]
    assert node.kept == 3 and torch.allclose(node.sums["eval"].sum(1), torch.full((40,), 3.0))
