"""DSVGD and Forget-SVGD on a conjugate Gaussian model: closed-form posteriors, the factor
bookkeeping, payload conventions, the parameter-server run with compression, errors."""

import doctest
import math

import networkx as nx
import numpy as np
import pytest
import torch

from bflnet.learners.base import Update
from bflnet.learners.models.toy_models import GaussianMeanModel
from bflnet.learners.particles import dsvgd as dsvgd_module
from bflnet.learners.particles.dsvgd import DSVGD
from bflnet.learners.particles.svgd import kde_log_density, kde_score, svgd_direction
from bflnet.protocols.coding.codecs import topk_quantized
from bflnet.protocols.local import LocalDriver
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import RoundRobinSelector
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation


def gaussian_agents(model, means, n_per_agent, seed=1):
    """Agent k observes ``n_per_agent`` draws of N(means[k], noise_var·I)."""
    gen = torch.Generator().manual_seed(seed)
    sd = math.sqrt(model.noise_var)
    return {k: (m + sd * torch.randn(n_per_agent, model.d, generator=gen),
                torch.zeros(n_per_agent))
            for k, m in enumerate(means)}


def run_round_robin(driver, agents, n_iter):
    """``n_iter`` visits of ``agents`` in turn (each update merged); the global state."""
    for i in range(n_iter):
        driver.visit(agents[i % len(agents)])
    return driver.state


# --------------------------------------------------------------------------- learning


@pytest.mark.parametrize(("seed", "step_rule", "step_size"),
                         [(0, "adagrad", 0.05), (1, "adagrad", 0.05), (0, "constant", 0.1),
                          (1, "constant", 0.1)])
def test_round_robin_dsvgd_approaches_the_global_posterior(seed, step_rule, step_size):
    model = GaussianMeanModel(d=1, prior_var=4.0, noise_var=4.0)
    data = gaussian_agents(model, [0.5, 1.0, 1.5], n_per_agent=5)
    mean, var = model.posterior(torch.cat([x for x, _ in data.values()]))  # var = 1/4
    learner = DSVGD(model, data, 100, local_steps=100, step_size=step_size,
                    kde_bandwidth=0.1, step_rule=step_rule)
    driver = LocalDriver(learner, seed)
    theta0 = driver.state
    start_err = abs(float(theta0.mean()) - float(mean))
    theta = run_round_robin(driver, [0, 1, 2], 12)
    err = abs(float(theta.mean()) - float(mean))
    ratio = float(theta.var()) / var
    assert err < 0.4 * math.sqrt(var) and err < 0.5 * start_err
    assert 0.7 < ratio < 1.6           # the prior's ratio is 16; KDE smoothing biases it up
    assert float(theta0.var()) / var > 8


def test_first_update_commits_an_exact_factor_and_the_cavity_is_the_old_q():
    model = GaussianMeanModel(d=2, prior_var=4.0, noise_var=1.0)
    data = gaussian_agents(model, [1.0, -1.0], n_per_agent=4)
    learner = DSVGD(model, data, 8, local_steps=10, kde_bandwidth=0.3)
    driver = LocalDriver(learner, 0)
    theta0 = driver.state
    points = torch.randn(5, 2, generator=torch.Generator().manual_seed(3))
    assert torch.equal(learner.cavity_log_density(driver.agent_state(0), theta0, points),
                       kde_log_density(points, theta0, 0.3))  # t_0 ≡ 1
    theta1 = driver.visit(0)
    f = driver.agent_state(0)
    assert f.visits == 1 and not f.unlearning
    # local = θ_old + Δ in float32, so equal to the merged θ up to rounding
    torch.testing.assert_close(f.local, theta1, atol=1e-6, rtol=0)
    assert torch.equal(f.reference, theta0)
    # q^(1) / t_0 = KDE(Θ1) · KDE(r) / KDE(t̃) = KDE(Θ0): the first visit's cavity again
    assert torch.allclose(learner.cavity_log_density(f, theta1, points),
                          kde_log_density(points, theta0, 0.3), atol=1e-5)
    assert driver.agent_state(1).local is None


def test_distillation_tracks_q_new_over_q_old_times_the_old_factor():
    model = GaussianMeanModel(d=1, prior_var=4.0, noise_var=4.0)
    data = gaussian_agents(model, [1.0, 2.0], n_per_agent=5)
    learner = DSVGD(model, data, 60, local_steps=60, step_size=0.05, kde_bandwidth=0.2)
    driver = LocalDriver(learner, 0)
    theta = run_round_robin(driver, [0, 1], 2)
    old_local = driver.agent_state(0).local
    new = driver.visit(0)
    # t̃_0 ∝ KDE(Θ_new)/KDE(Θ_old) · KDE(t̃_old): compare the normalised densities on a grid
    grid = torch.linspace(-2.0, 4.0, 301).unsqueeze(1)
    target = (kde_log_density(grid, new, 0.2) - kde_log_density(grid, theta, 0.2)
              + kde_log_density(grid, old_local, 0.2))
    target = torch.softmax(target, 0)
    got = torch.softmax(kde_log_density(grid, driver.agent_state(0).local, 0.2), 0)
    mean_t, mean_g = float((grid[:, 0] * target).sum()), float((grid[:, 0] * got).sum())
    assert abs(mean_t - mean_g) < 0.1
    assert 0.5 * float(target.max()) < float(got.max()) < 2.0 * float(target.max())


def test_a_lost_update_leaves_the_factor_unchanged():
    model = GaussianMeanModel(d=1, prior_var=4.0)
    data = gaussian_agents(model, [1.0, 2.0], n_per_agent=3)
    learner = DSVGD(model, data, 5, local_steps=5)
    driver = LocalDriver(learner, 0)
    driver.update(0)                                      # uplink lost: merge never sees it
    assert driver.agent_state(0).local is None
    driver.visit(1)
    assert driver.agent_state(0).local is None and driver.agent_state(1).visits == 1
    driver.visit(0)
    assert driver.agent_state(0).visits == 1


def test_payload_is_the_particle_delta_and_merge_averages_deltas():
    model = GaussianMeanModel(d=3, prior_var=2.0)
    data = gaussian_agents(model, [0.0, 1.0], n_per_agent=200)
    learner = DSVGD(model, data, 4, local_steps=7, distill_iters=3, batch_size=50)
    driver = LocalDriver(learner, 0)
    theta = driver.state
    u0, u1 = driver.update(0), driver.update(1)
    assert u0.payload.shape == (4, 3) and u0.payload.dtype == torch.float32
    assert u0.agent == 0 and u0.work.steps == 7 and u0.work.flops > 0
    assert torch.equal(learner.merge(theta, [u0]), theta + u0.payload)
    assert torch.allclose(learner.merge(theta, [u0, u1]), theta + (u0.payload + u1.payload) / 2)
    assert u0.agent_state.visits == 1 and u1.agent_state.visits == 1
    assert torch.equal(learner.merge(theta, []), theta)
    # a decoded payload may come back as numpy
    assert torch.allclose(learner.merge(theta, [Update(u0.payload.numpy(), agent=0)]),
                          theta + u0.payload)


def test_minibatch_score_is_unbiased_for_the_full_data_sum():
    model = GaussianMeanModel(d=2, prior_var=1.0, noise_var=2.0)
    data = gaussian_agents(model, [1.0], n_per_agent=40)
    learner = DSVGD(model, data, 3, batch_size=8, temperature=2.0)
    theta = learner.init(np.random.default_rng(0))
    score, scale = learner._data_score(0, learner.init_agent(0, None),
                                       torch.Generator().manual_seed(0))
    x = data[0][0]
    # (1/α) ∇ Σ_n log N(x_n; θ, σ² I) = (Σ x − N θ) / (σ² α)
    exact = (x.sum(0) - 40 * theta) / (2.0 * 2.0)
    # the score may reuse one buffer across calls: keep a copy of each draw
    mean = scale * torch.stack([score(theta).clone() for _ in range(3000)]).mean(0)
    assert torch.allclose(mean, exact, atol=0.1 * float(exact.abs().max()))


def test_same_seed_same_particles():
    model = GaussianMeanModel(d=2, prior_var=4.0)
    data = gaussian_agents(model, [1.0, -1.0], n_per_agent=30)

    def run(seed):
        learner = DSVGD(model, data, 6, local_steps=5, batch_size=10)
        return run_round_robin(LocalDriver(learner, seed), [0, 1], 4)

    assert torch.equal(run(3), run(3))
    assert not torch.equal(run(3), run(4))


# --------------------------------------------------------------------------- protocol


class TrackedDSVGD(DSVGD):
    """Records the error of the particle mean against the closed-form posterior mean."""

    def __init__(self, *args, posterior_mean, **kwargs):
        super().__init__(*args, **kwargs)
        self.posterior_mean = posterior_mean

    def evaluate(self, state):
        return {"err": float((state.mean(0) - self.posterior_mean).norm())}


def test_runs_under_the_parameter_server_with_compressed_uplink():
    model = GaussianMeanModel(d=4, prior_var=4.0, noise_var=4.0)
    data = gaussian_agents(model, [1.5, 2.5], n_per_agent=10)
    mean, _ = model.posterior(torch.cat([x for x, _ in data.values()]))
    learner = TrackedDSVGD(model, data, 20, local_steps=40, step_size=0.05,
                           kde_bandwidth=0.3, posterior_mean=mean)
    sim = Simulation(0)
    sim.build_network(nx.empty_graph(2), server=True)
    codec = topk_quantized(k=2, groups=4, n_bits=5)
    result = sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=8),
                                             selector=RoundRobinSelector(1),
                                             uplink_codec=codec))
    frame = result.frame
    err = frame.err.dropna().to_numpy()
    assert len(err) == 9 and err[-1] < 0.5 * err[0]
    it = frame[frame.event == "iteration"]
    assert (it.cum_bits_up.diff().dropna() == codec.bits_for((20, 4))).all()
    assert result.agent_states[0].visits == 4 and result.agent_states[1].visits == 4


# --------------------------------------------------------------------------- unlearning


def test_forget_svgd_moves_towards_the_posterior_without_the_agent():
    model = GaussianMeanModel(d=1, prior_var=4.0, noise_var=4.0)
    data = gaussian_agents(model, [-1.0, 2.0], n_per_agent=5)
    full_mean, _ = model.posterior(torch.cat([data[0][0], data[1][0]]))
    keep_mean, keep_var = model.posterior(data[0][0])
    gap = abs(float(full_mean - keep_mean))                  # ≈ 0.7 posterior standard devs
    learned, unlearned = [], []
    for seed in range(6):     # one run's 100 particles scatter; statistics over seeds
        learner = DSVGD(model, data, 100, local_steps=100, step_size=0.05, kde_bandwidth=0.05)
        driver = LocalDriver(learner, seed)
        theta = run_round_robin(driver, [0, 1], 8)
        learned.append((float(theta.mean()), float(theta.var())))
        driver.forget([1])
        assert driver.agent_state(1).unlearning and driver.agent_state(1).local is None
        theta = run_round_robin(driver, [1], 3)
        unlearned.append((float(theta.mean()), float(theta.var())))
        assert driver.agent_state(1).unlearning and driver.agent_state(1).visits == 3
    learned_mean, learned_var = np.mean(learned, axis=0)
    unlearned_mean, unlearned_var = np.mean(unlearned, axis=0)
    assert abs(learned_mean - float(full_mean)) < 0.3 * gap
    # The KDE of q is wider than q by λ, so dividing it by the exact likelihood overshoots a
    # little; on average the particles still end much nearer the retrained posterior.
    err = abs(unlearned_mean - float(keep_mean))
    assert err < 0.45 * abs(learned_mean - float(keep_mean))
    assert err < abs(unlearned_mean - float(full_mean))
    assert learned_var < unlearned_var < 1.5 * float(keep_var)  # uncertainty comes back


def test_constant_step_rule_moves_by_step_size_times_the_svgd_direction():
    model = GaussianMeanModel(d=2, prior_var=4.0, noise_var=1.0, dtype=torch.float64)
    data = {0: (torch.tensor([[1.0, -1.0], [0.5, 0.0], [2.0, -1.5]], dtype=torch.float64),
                torch.zeros(3))}
    learner = DSVGD(model, data, 6, local_steps=1, step_size=0.01, kde_bandwidth=0.3,
                    step_rule="constant", dtype=torch.float64)
    theta = learner.init(np.random.default_rng(3))
    t = theta.clone().requires_grad_(True)
    (data_score,) = torch.autograd.grad(model.log_likelihood(t, *data[0]).sum(), t)
    score = kde_score(theta, theta, 0.3) + data_score   # first visit: q and the full batch
    expected = 0.01 * svgd_direction(theta, score)
    torch.testing.assert_close(LocalDriver(learner, state=theta).update(0).payload, expected)


# --------------------------------------------------------------------------- errors


class NaNModel(GaussianMeanModel):
    log_likelihood_grad = None      # through autograd, where the NaN comes from

    def log_likelihood(self, theta, x, y=None):
        return super().log_likelihood(theta, x, y) * float("nan")


def test_nan_names_the_agent_and_the_iteration():
    data = {"a": (torch.zeros(3, 2), torch.zeros(3))}
    learner = DSVGD(NaNModel(d=2), data, 4, local_steps=5)
    theta = learner.init(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"local iteration 1 of 5 \(agent 'a', learning update 1"):
        LocalDriver(learner, state=theta).update("a")
    bad = theta.clone()
    bad[1, 0] = float("nan")
    learner = DSVGD(GaussianMeanModel(d=2), data, 4, local_steps=5)
    with pytest.raises(ValueError, match="agent 'a'.*NaN or inf"):
        LocalDriver(learner, state=bad).update("a")
    with pytest.raises(ValueError, match="non-finite global particles.*'a'"):
        learner.merge(theta, [Update(bad, agent="a")])


def test_validation():
    model = GaussianMeanModel(d=2)
    data = {0: (torch.zeros(3, 2), torch.zeros(3))}
    for kwargs, field in [({"local_steps": 0}, "local_steps"), ({"step_size": 0.0}, "step_size"),
                          ({"kde_bandwidth": -1.0}, "kde_bandwidth"),
                          ({"temperature": float("inf")}, "temperature"),
                          ({"batch_size": 0}, "batch_size"), ({"adagrad_decay": 1.0}, "decay"),
                          ({"step_rule": "adam"}, "step_rule: must be one of adagrad, constant")]:
        with pytest.raises(ValueError, match=field):
            DSVGD(model, data, 4, **kwargs)
    with pytest.raises(ValueError, match="n_particles"):
        DSVGD(model, data, 0)
    with pytest.raises(ValueError, match="agent_data"):
        DSVGD(model, {0: (torch.zeros(3, 2), torch.zeros(2))}, 4)
    learner = DSVGD(model, data, 4)
    theta = learner.init(np.random.default_rng(0))
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="no data for agent 5"):
        learner.local_update(5, theta, None, rng)
    with pytest.raises(ValueError, match="no data for 7"):
        learner.forget(7, None)
    with pytest.raises(ValueError, match=r"shape \(4, 2\)"):
        learner.local_update(0, theta[:3], None, rng)
    with pytest.raises(ValueError, match="unknown hyper-parameter 'local_particle_iters'"):
        DSVGD(model, data, 4, local_particle_iters=3)
    with pytest.raises(NotImplementedError):
        DSVGD.__mro__[1].forget(learner, 0, None)  # the base class has no unlearning


def test_evaluate_uses_the_posterior_predictive():
    from bflnet.learners.models.classifiers import LogisticRegression

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(60, 3, generator=gen)
    y = (x[:, 0] > 0).long()
    model = LogisticRegression(n_in=3, n_out=2)
    learner = DSVGD(model, {0: (x[:40], y[:40])}, 5, local_steps=30, step_size=0.05,
                    eval_data=(x[40:], y[40:]), eval_per_class=True)
    driver = LocalDriver(learner, 0)
    theta = driver.state
    assert learner.evaluate(theta).keys() >= {"accuracy", "ece", "nll", "brier",
                                              "acc_class_0", "acc_class_1"}
    before = learner.evaluate(theta)["nll"]
    theta = run_round_robin(driver, [0], 2)
    assert learner.evaluate(theta)["nll"] < before
    assert DSVGD(model, {0: (x, y)}, 5).evaluate(theta) == {}


def test_doctests():
    assert doctest.testmod(dsvgd_module).failed == 0



# --------------------------------------------------------------------------- analytic score


def test_hand_written_mlp_gradient_gives_the_same_particles_as_autograd(monkeypatch):
    from bflnet.learners.models.classifiers import BayesianMLP

    class AutogradMLP(BayesianMLP):
        """Without the hand-written gradient: DSVGD's score falls back to autograd."""

        log_likelihood_grad = None

    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, 40, 6, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (2, 40), generator=gen)
    data = {k: (x[k], y[k]) for k in range(2)}
    calls = []
    analytic = BayesianMLP.log_likelihood_grad

    def counted(self, theta, x, y, out=None):
        calls.append(out)
        return analytic(self, theta, x, y, out=out)

    monkeypatch.setattr(BayesianMLP, "log_likelihood_grad", counted)

    def run(model):
        learner = DSVGD(model, data, 5, local_steps=15, distill_iters=5,
                        step_size=0.02, batch_size=16, dtype=torch.float64)
        driver = LocalDriver(learner, 2)
        start = driver.state
        run_round_robin(driver, [0, 1, 0], 3)  # first and steady visits
        driver.forget([1])
        return start, run_round_robin(driver, [1], 2)  # unlearning

    sizes = dict(n_in=6, n_hidden=8, n_out=3, dtype=torch.float64)
    start, reference = run(AutogradMLP(**sizes))
    assert not calls
    _, result = run(BayesianMLP(**sizes))
    # one call per SVGD step, each local update reusing one preallocated (N_p, d) buffer
    assert len(calls) == 5 * 15
    d = BayesianMLP(**sizes).d
    for update in range(5):
        outs = calls[15 * update:15 * (update + 1)]
        assert all(out is outs[0] for out in outs) and outs[0].shape == (5, d)
    assert (result - start).abs().max() > 0.1  # the particles did move
    torch.testing.assert_close(result, reference, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- agent state


def test_an_agents_draws_do_not_depend_on_the_visit_order():
    # Agent 1's update of one global state from its own stream is the same whether agent
    # 0 (with its own stream) was updated before it or not.
    model = GaussianMeanModel(d=2, prior_var=4.0)
    data = gaussian_agents(model, [1.0, -1.0], n_per_agent=30)
    learner = DSVGD(model, data, 6, local_steps=5, batch_size=10)
    alone = LocalDriver(learner, 3)
    after = LocalDriver(learner, 3)
    after.update(0)
    assert torch.equal(alone.update(1).payload, after.update(1).payload)


def test_interleaved_updates_of_one_agent_equal_the_same_updates_in_sequence():
    # Agent 0's second update starts from the state its first returned, before the first
    # is merged (two updates in flight); agent 1 updates in between, on its own stream.
    model = GaussianMeanModel(d=2, prior_var=4.0)
    data = gaussian_agents(model, [1.0, -1.0], n_per_agent=30)
    learner = DSVGD(model, data, 6, local_steps=5, batch_size=10)
    theta = learner.init(np.random.default_rng(0))

    def two_updates(interleave):
        rng = np.random.default_rng(9)
        first = learner.local_update(0, theta, learner.init_agent(0, rng), rng)
        if interleave:
            other = np.random.default_rng(4)
            learner.local_update(1, theta, learner.init_agent(1, other), other)
        second = learner.local_update(0, theta + first.payload, first.agent_state, rng)
        return first, second

    (a1, a2), (b1, b2) = two_updates(False), two_updates(True)
    assert torch.equal(a1.payload, b1.payload) and torch.equal(a2.payload, b2.payload)
    assert torch.equal(a2.agent_state.local, b2.agent_state.local)
    assert a2.agent_state.visits == 2
