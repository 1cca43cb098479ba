"""G-FVL learning and unlearning: exact conjugate behaviour, the non-conjugate fixed point,
and both communication patterns."""

import copy

import networkx as nx
import numpy as np
import pytest
from scipy import integrate, optimize, special

from bflnet.channels import FixedRateChannel
from bflnet.data.synthetic import (
    bernoulli_agents,
    exponential_agents,
    gaussian_agents,
    poisson_agents,
)
from bflnet.learners import GFVL, Update
from bflnet.learners.conjugate.expfam import BETA, ExpFam, beta
from bflnet.protocols import ParameterServerProtocol, RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.scheduling import UniformSelector
from bflnet.simulator import NO_WORK, FixedStepTime, Simulation, Work


def conjugate_learners(K=5, N=40, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    return {
        "beta-bernoulli": GFVL.beta_bernoulli(bernoulli_agents(K, N, 0.3, rng), a=2, b=2,
                                              **kwargs),
        "gamma-poisson": GFVL.gamma_poisson(poisson_agents(K, N, 4.0, rng), shape=2,
                                            rate=0.5, **kwargs),
        "gaussian": GFVL.gaussian_known_variance(gaussian_agents(K, N, 0.7, 2.0, rng),
                                                 noise_var=2.0, mean=0.0, var=1.0, **kwargs),
    }


class Driver:
    """A plain-Python protocol: keeps each agent's private state and stream (``agent``
    ``k`` draws from ``default_rng((seed, k))``), keeps an agent's new state only when its
    update is merged, applies forget requests and notes, in merge counts, when each was
    requested and when an update completing it was merged."""

    def __init__(self, learner, seed=0, eta=None):
        self.learner, self.seed = learner, seed
        self.eta = learner.init(np.random.default_rng(seed)) if eta is None else eta
        self.rngs, self.states = {}, {}
        self.merges = 0
        self.requested_at, self.completed_at = {}, {}

    def rng(self, k):
        if k not in self.rngs:
            self.rngs[k] = np.random.default_rng((self.seed, k))
        return self.rngs[k]

    def state(self, k):
        if k not in self.states:
            self.states[k] = self.learner.init_agent(k, self.rng(k))
        return self.states[k]

    def update(self, k, eta=None):
        """Agent ``k``'s update of ``eta`` (default: the current state); not merged."""
        return self.learner.local_update(k, self.eta if eta is None else eta, self.state(k),
                                         self.rng(k))

    def merge(self, updates):
        self.eta = self.learner.merge(self.eta, updates)
        self.merges += 1
        for u in updates:
            self.states[u.agent] = u.agent_state
            if u.event == "forgotten":
                self.completed_at[u.agent] = self.merges
        return self.eta

    def forget(self, agents):
        for k in agents:
            self.states[k] = self.learner.forget(k, self.state(k))
            self.requested_at.setdefault(k, self.merges)

    def latency(self, k):
        return self.completed_at[k] - self.requested_at[k]

    @property
    def pending(self):
        return {k for k in self.requested_at if k not in self.completed_at}

    def drive(self, visits, metrics=None, forget_at=None):
        """One update + merge per visit (requests ``forget_at[n]`` after merge ``n``);
        returns the states (and appends ``evaluate`` after each merge to ``metrics``)."""
        states = []
        for k in visits:
            if forget_at and self.merges in forget_at:
                self.forget(forget_at[self.merges])
            states.append(self.merge([self.update(k)]))
            if metrics is not None:
                metrics.append(self.learner.evaluate(self.eta))
        return states


def drive(learner, visits, eta=None, metrics=None, seed=0):
    """A fresh :class:`Driver`'s states over ``visits``."""
    return Driver(learner, seed, eta).drive(visits, metrics)


@pytest.mark.parametrize("model", ["beta-bernoulli", "gamma-poisson", "gaussian"])
def test_conjugate_posterior_is_exact_exactly_when_every_agent_has_been_visited(model):
    learner = conjugate_learners()[model]
    visits = [3, 3, 0, 1, 3, 0, 2, 1, 4, 2, 0, 4]  # agent 4 first reached at position 8
    states = drive(learner, visits)
    kls = [learner.evaluate(s)["kl"] for s in states]
    assert kls[8] < 1e-10
    assert kls[7] > 1e-2  # one agent's 40 points missing: clearly not the posterior
    assert all(k > 1e-2 for k in kls[:8])
    # Revisits change nothing, bit for bit.
    for i in (1, 4, 5, 9, 10, 11):
        assert np.array_equal(states[i], states[i - 1])
    assert np.allclose(states[-1], learner.exact_posterior().eta, rtol=1e-13)


def test_first_visit_adds_the_agents_statistics_and_reports_one_step():
    data = {0: np.array([1, 0, 1]), 1: np.array([1, 1])}
    learner = GFVL.beta_bernoulli(data, a=2, b=3)
    net = Driver(learner)
    update = net.update(0)
    assert update.payload.tolist() == [2.0, 1.0] and update.work == Work(steps=1)
    assert update.agent == 0
    eta = net.merge([update])
    assert net.states[0].eta.tolist() == [2.0, 1.0]  # eq. 14: η_k = η⁽ⁱ⁾ − η⁽ⁱ⁻¹⁾ + 0
    again = net.update(0)
    assert again.payload.tolist() == [0.0, 0.0] and again.work == Work(steps=1)
    assert BETA.to_params(eta) == {"a": 4.0, "b": 4.0}


def test_the_delta_convention_is_exact_for_agents_in_parallel():
    learner = conjugate_learners()["beta-bernoulli"]
    net = Driver(learner)
    net.merge([net.update(k) for k in (0, 1, 2)])
    eta = net.merge([net.update(k) for k in (2, 3, 4)])
    assert learner.evaluate(eta)["kl"] < 1e-10


def test_a_lost_update_is_not_committed():
    learner = conjugate_learners()["gamma-poisson"]
    net = Driver(learner)
    net.update(0)  # computed, but the upload never arrives: no merge
    net.merge([net.update(1)])
    assert not np.any(net.state(0).eta)
    states = net.drive([0, 2, 3, 4])
    assert learner.evaluate(states[-1])["kl"] < 1e-10


def complete_graph_walk(learner, K, iterations, seed, interventions=()):
    graph = nx.complete_graph(K)
    sim = Simulation(seed)
    sim.build_network(graph, channel=FixedRateChannel(1e6, 0.001), compute=FixedStepTime(0.0))
    protocol = RandomWalkProtocol(learner, MetropolisHastingsWalk(graph),
                                  StopRule(max_iterations=iterations),
                                  interventions=interventions)
    frame = sim.run(protocol).frame
    complete_graph_walk.frame = frame
    return frame[frame.event == "iteration"].set_index("iteration"), protocol.visits


@pytest.mark.parametrize("seed", [1, 2])
def test_random_walk_reaches_the_exact_posterior_at_its_cover_time(seed):
    K = 6
    learner = conjugate_learners(K=K, seed=seed)["beta-bernoulli"]
    rows, visits = complete_graph_walk(learner, K, 60, seed)
    cover = next(i for i in range(1, len(visits) + 1) if len(set(visits[:i])) == K)
    assert rows.kl[cover] < 1e-10
    assert rows.kl[cover - 1] > 1e-2
    assert rows.kl.loc[cover:].max() < 1e-10
    assert (rows.cum_bits.diff().dropna() % 128 == 0).all()  # 2 × float64 per hop


class Spy(GFVL):
    """Remembers which agents were scheduled, in order."""

    def local_update(self, agent, state, agent_state, rng):
        self.calls.append(agent)
        return super().local_update(agent, state, agent_state, rng)


def test_parameter_server_with_two_agents_per_round_is_exact_at_cover():
    K = 6
    rng = np.random.default_rng(3)
    learner = Spy.beta_bernoulli(bernoulli_agents(K, 30, 0.6, rng))
    learner.calls = []
    sim = Simulation(4)
    sim.build_network(nx.empty_graph(K), server=True, channel=FixedRateChannel(1e6, 0.001))
    frame = sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=15),
                                            selector=UniformSelector(2))).frame
    rows = frame[frame.event == "iteration"].set_index("iteration")
    rounds = [set(learner.calls[2 * i:2 * i + 2]) for i in range(15)]
    cover = next(i + 1 for i in range(15) if len(set().union(*rounds[:i + 1])) == K)
    assert rows.kl[cover] < 1e-10 and rows.kl[cover - 1] > 1e-2
    assert rows.kl.loc[cover:].max() < 1e-10


def test_parameter_server_with_lossy_uplinks_still_ends_exact():
    K = 5
    learner = conjugate_learners(K=K, seed=5)["gaussian"]
    sim = Simulation(6, record_messages=True)
    sim.build_network(nx.empty_graph(K), server=True, max_attempts=1,
                      channel=FixedRateChannel(1e6, 0.001, loss_prob=0.4))
    frame = sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=80),
                                            selector=UniformSelector(2))).frame
    uplinks = frame[(frame.event == "message") & (frame.peer == "server")]
    assert uplinks.dropped.astype(bool).sum() > 5  # computed updates that never arrived
    assert frame[frame.event == "iteration"].kl.iloc[-1] < 1e-10


# ---------------------------------------------------------------------- exact unlearning


@pytest.mark.parametrize("model", ["beta-bernoulli", "gamma-poisson", "gaussian"])
def test_exact_unlearning_gives_the_retrained_posterior_once_the_agent_is_reached(model):
    learner = conjugate_learners(forget_agents=[2])[model]
    net = Driver(learner)
    net.drive([0, 1, 2, 3, 4])
    net.forget([2])
    assert net.pending == {2} and net.state(2).status == "forgetting"
    metrics, pending = [], []
    states = []
    for k in [0, 4, 2, 1, 2]:
        states += net.drive([k], metrics)
        pending.append(len(net.pending))
    retrained = learner.without([2])
    assert [m["kl_retrained"] < 1e-10 for m in metrics] == [False, False, True, True, True]
    assert metrics[1]["kl_retrained"] > 1e-2 and pending[1] == 1
    assert pending[2] == 0
    assert net.state(2).status == "forgotten" and not net.pending
    assert net.requested_at == {2: 5} and net.completed_at == {2: 8}
    assert net.latency(2) == 3
    assert np.array_equal(states[3], states[2]) and np.array_equal(states[4], states[2])
    assert not np.any(net.state(2).eta)
    assert ExpFam(learner.family, states[-1]).kl(retrained.exact_posterior()) < 1e-10
    assert metrics[-1]["kl"] > 1e-2  # no longer the full-data posterior


def test_forgetting_several_agents_completes_when_the_last_is_reached():
    learner = conjugate_learners(forget_agents=[1, 3])["beta-bernoulli"]
    net = Driver(learner)
    net.drive([4, 3, 2, 1, 0])
    net.forget([1, 3])
    metrics, pending, states = [], [], []
    for k in [3, 0, 2, 1, 4]:
        states += net.drive([k], metrics)
        pending.append(len(net.pending))
    kl_retrained = [m["kl_retrained"] for m in metrics]
    assert pending == [1, 1, 1, 0, 0]
    assert min(kl_retrained[:3]) > 1e-2 and max(kl_retrained[3:]) < 1e-10
    assert net.latency(3) == 1 and net.latency(1) == 4
    retrained = learner.without([1, 3])
    final = drive(retrained, [0, 1, 2, 3, 4])[-1]
    assert np.allclose(final, states[-1], rtol=1e-13)


def test_unlearning_a_state_without_the_agents_contribution_fails_loudly():
    learner = GFVL.beta_bernoulli({0: np.ones(5), 1: np.zeros(3)})
    net = Driver(learner)
    net.drive([0, 1])
    net.forget([0])
    with pytest.raises(ValueError, match="^unlearning: exact subtraction of agent 0's"):
        net.update(0, learner.prior.eta)  # a state that never saw agent 0
    assert net.pending == {0}
    net.merge([net.update(0)])
    assert not net.pending and net.state(0).status == "forgotten"


def test_a_forget_request_before_the_first_update_leaves_the_agent_out():
    learner = GFVL.beta_bernoulli(DATA, forget_agents=[1])
    net = Driver(learner)
    states = net.drive([1, 0], forget_at={0: [1]})
    assert net.requested_at == {1: 0} and net.latency(1) == 1
    assert learner.evaluate(states[-1])["kl_retrained"] < 1e-10


def test_forgetting_before_an_agent_contributed_leaves_it_out():
    learner = conjugate_learners(forget_agents=[4])["beta-bernoulli"]
    net = Driver(learner)
    net.drive([0, 1])
    net.forget([4])
    states = net.drive([4, 2, 3, 4])
    assert net.latency(4) == 1
    assert learner.evaluate(states[2])["kl_retrained"] < 1e-10


def test_scheduled_forget_through_the_random_walk_measures_the_unlearning_latency():
    K, forget_after = 5, 25
    data = bernoulli_agents(K, 30, 0.4, np.random.default_rng(7))
    learner = GFVL.beta_bernoulli(data, forget_agents=[0])
    rows, visits = complete_graph_walk(learner, K, 60, 8, [
        ForgetRequest([0], after_iteration=forget_after)])
    frame = complete_graph_walk.frame
    first = forget_after + visits[forget_after:].index(0) + 1  # iteration that reaches 0
    assert frame[frame.event == "forget_request"].iteration.tolist() == [forget_after]
    assert frame[frame.event == "forgotten"].iteration.tolist() == [first]
    assert rows.forget_pending.loc[:forget_after].isna().all()
    done = rows.index[rows.forget_pending == 0]
    assert done.min() == first
    assert rows.kl_retrained[first] < 1e-10 and rows.kl_retrained[first - 1] > 1e-3
    assert rows.kl[forget_after] < 1e-10  # everything learned before the request


# ---------------------------------------------------------------------- non-conjugate


def exponential_setup(K=4, N=10, seed=1):
    data = exponential_agents(K, N, 0.5, np.random.default_rng(seed))
    n = sum(v.size for v in data.values())
    total = sum(v.sum() for v in data.values())
    return data, n, total


def best_beta(n, total, a0=2.0, b0=2.0):
    """argmin over Beta(a, b) of KL(q ‖ p(θ | D)) by scipy.optimize + scipy quadrature."""

    def log_post(t):
        return (a0 - 1) * np.log(t) + (b0 - 1) * np.log1p(-t) - n * np.log(t) - total / t

    mode = total / n
    log_z = np.log(integrate.quad(lambda t: np.exp(log_post(t)), 0, 1, points=[mode])[0])

    def kl(x):
        a, b = np.exp(x)

        def integrand(t):
            log_q = (a - 1) * np.log(t) + (b - 1) * np.log1p(-t) - special.betaln(a, b)
            return np.exp(log_q) * (log_q - log_post(t) + log_z)

        return integrate.quad(integrand, 0, 1, points=[a / (a + b)])[0]

    res = optimize.minimize(kl, np.log([15.0, 8.0]), method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-12})
    return beta(*np.exp(res.x)), res.fun


def test_natural_gradient_step_is_an_unbiased_reinforce_estimate_of_eq_17():
    # One local step from the prior with η_k = 0: Δη = −ρ ∇_μ E_q[Σ_n −log p(z_n|θ)].
    # Closed form: E_q[N log θ + Z/θ] = N(ψ(a) − ψ(a+b)) + Z (a+b−1)/(a−1).
    data, n, total = exponential_setup(K=1)
    a, b, rho = 6.0, 3.0, 1e-4
    grad_eta = np.array([n * (special.polygamma(1, a) - special.polygamma(1, a + b))
                         - total * b / (a - 1) ** 2,
                         -n * special.polygamma(1, a + b) + total / (a - 1)])
    exact = np.linalg.solve(BETA.fisher(beta(a, b).eta), grad_eta)
    spread = {}
    for i, c in enumerate((0.0, 8.0, "loo")):  # baselines change the variance, not the mean
        learner = GFVL.beta_exponential(data, a=a, b=b, rho=rho, S=400_000, c=c)
        eta = learner.init(None)
        update = learner.local_update(0, eta, None, np.random.default_rng(i))
        assert update.work == Work(steps=1)
        estimate = -update.payload / rho
        # MC error of the mean of S terms, from many S = 2 estimates; generous 5 sigma.
        probe = GFVL.beta_exponential(data, a=a, b=b, rho=rho, S=2, c=c)
        rng = np.random.default_rng(99)
        pairs = np.array([-probe.local_update(0, eta, None, rng).payload / rho
                          for _ in range(4000)])
        se = pairs.std(axis=0) * np.sqrt(2 / 400_000)
        assert np.all(np.abs(estimate - exact) < 5 * se)
        spread[c] = pairs.std(axis=0)
    assert np.all(spread["loo"] < spread[0.0])


def reinforce_spread(data, eta_ab, draws, c, S, n_estimates, seed):
    """Many one-step estimates of ∇_μ E_q[L_k] (Δη / −ρ from η_k = 0)."""
    a, b = eta_ab
    learner = GFVL.beta_exponential(data, a=a, b=b, rho=1e-4, S=S, c=c,
                                    reinforce_draws=draws)
    eta = learner.init(None)
    rng = np.random.default_rng(seed)
    return np.array([-learner.local_update(0, eta, None, rng).payload / 1e-4
                     for _ in range(n_estimates)])


@pytest.mark.parametrize("c", [0.0, "loo"])
def test_per_point_and_per_agent_reinforce_draws_are_unbiased_for_the_same_gradient(c):
    # Closed form as in the eq. 17 test above; per-point draws S samples for each point
    # (N x S draws per step), per-agent S samples shared by the agent's N points.
    data, n, total = exponential_setup(K=1)
    a, b = 6.0, 3.0
    grad_eta = np.array([n * (special.polygamma(1, a) - special.polygamma(1, a + b))
                         - total * b / (a - 1) ** 2,
                         -n * special.polygamma(1, a + b) + total / (a - 1)])
    exact = np.linalg.solve(BETA.fisher(beta(a, b).eta), grad_eta)
    for i, draws in enumerate(("per-agent", "per-point")):
        big = reinforce_spread(data, (a, b), draws, c, 40_000, 1, seed=i)[0]
        pairs = reinforce_spread(data, (a, b), draws, c, 2, 4000, seed=10 + i)
        se = pairs.std(axis=0) * np.sqrt(2 / 40_000)
        assert np.all(np.abs(big - exact) < 5 * se), (draws, big, exact, se)


def test_per_point_draws_have_less_variance_than_per_agent_draws_at_c_0():
    # With c = 0 the per-agent estimate multiplies one score by the sum of N losses, so the
    # points' terms are perfectly correlated; per-point draws make them independent.
    data, _, _ = exponential_setup(K=1, N=100)
    agent = reinforce_spread(data, (2.0, 2.0), "per-agent", 0.0, 30, 2000, seed=1)
    point = reinforce_spread(data, (2.0, 2.0), "per-point", 0.0, 30, 2000, seed=2)
    assert np.all(point.std(axis=0) < agent.std(axis=0) / 2)
    assert np.allclose(point.mean(axis=0), agent.mean(axis=0),
                       atol=5 * np.hypot(point.std(axis=0), agent.std(axis=0)).max() / 40)


def test_reinforce_draws_is_checked():
    data, _, _ = exponential_setup(K=1)
    with pytest.raises(ValueError, match="reinforce_draws: must be one of"):
        GFVL.beta_exponential(data, reinforce_draws="per-step")
    with pytest.raises(ValueError, match="reinforce_draws: 'per-point' needs method='natgrad'"):
        GFVL.beta_bernoulli({0: np.array([1, 0])}, reinforce_draws="per-point")


def test_non_conjugate_fixed_point_is_the_best_beta_approximation():
    data, n, total = exponential_setup()
    best, best_kl = best_beta(n, total)
    # c = 5 ≈ the typical per-agent loss: same fixed point as c = 0, less variance. The
    # average over 8 runs keeps the Monte-Carlo spread of the tail average well inside the
    # tolerances (single runs scatter over KL 3e-4 .. 7e-3 to the best Beta).
    means = []
    for seed in range(8):
        learner = GFVL.beta_exponential(data, a=2, b=2, rho=0.05, S=30, c=5.0, L=1)
        states = drive(learner, [i % 4 for i in range(6000)], seed=seed)
        means.append(np.mean(states[1500:], axis=0))
    q = ExpFam(BETA, np.mean(means, axis=0))
    assert q.kl(best) < 2e-3
    assert q.mean == pytest.approx(best.mean, rel=0.02)
    assert np.sqrt(q.var) == pytest.approx(np.sqrt(best.var), rel=0.05)
    # The learner's own metric agrees with the quadrature optimum's KL to the posterior.
    assert learner.evaluate(best.eta)["kl"] == pytest.approx(best_kl, rel=1e-5)
    assert learner.evaluate(q.eta)["kl"] >= best_kl - 1e-9


def test_natgrad_on_a_conjugate_model_converges_to_the_exact_posterior():
    data = bernoulli_agents(3, 20, 0.3, np.random.default_rng(2))
    learner = GFVL.beta_bernoulli(data, method="natgrad", rho=0.1, S=30, c=12.0, L=2)
    net = Driver(learner)
    states = net.drive([i % 3 for i in range(2400)])
    q = ExpFam(BETA, np.mean(states[600:], axis=0))
    assert q.kl(learner.exact_posterior()) < 2e-3
    assert net.update(0).work == Work(steps=2)


def test_natgrad_is_reproducible_from_the_agents_generators():
    data, _, _ = exponential_setup()
    runs = []
    for seed in (0, 0, 1):
        learner = GFVL.beta_exponential(data, rho=0.05, L=3)
        runs.append(drive(learner, [0, 1, 2, 3], seed=seed)[-1])
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2])


def test_an_agents_draws_do_not_depend_on_the_visit_order():
    # Agent 2's update from the same global state and its own stream is the same whether
    # agents 0 and 1 (each drawing from its own stream) were updated before it or not.
    data, _, _ = exponential_setup()
    learner = GFVL.beta_exponential(data, rho=0.05, L=3)
    eta = learner.init(None)
    first = Driver(learner, seed=4, eta=eta)
    alone = first.update(2).payload
    second = Driver(learner, seed=4, eta=eta)
    for k in (0, 1):
        second.update(k)  # computed (and drawn) but not merged
    assert np.array_equal(second.update(2).payload, alone)


def test_interleaved_updates_of_one_agent_equal_the_same_updates_in_sequence():
    # Two updates of agent 0 in flight at once (the second computed before the first is
    # merged, from the first's returned state), interleaved with agent 1's, equal the same
    # updates of agent 0 run one after the other on its own state and stream.
    data, _, _ = exponential_setup()
    learner = GFVL.beta_exponential(data, rho=0.05, L=2)
    eta = learner.init(None)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    s0 = learner.init_agent(0, rng_a)
    seq1 = learner.local_update(0, eta, s0, rng_a)
    seq2 = learner.local_update(0, eta, seq1.agent_state, rng_a)
    other = learner.local_update(1, eta, learner.init_agent(1, None), np.random.default_rng(1))
    mixed1 = learner.local_update(0, eta, s0, rng_b)
    learner.local_update(1, eta, other.agent_state, np.random.default_rng(2))
    mixed2 = learner.local_update(0, eta, mixed1.agent_state, rng_b)
    assert np.array_equal(seq1.payload, mixed1.payload)
    assert np.array_equal(seq2.payload, mixed2.payload)
    assert np.array_equal(seq2.agent_state.eta, mixed2.agent_state.eta)


def test_a_step_leaving_the_natural_domain_is_halved():
    # All-zero Bernoulli data under a Beta(0.3, 0.3) prior: the posterior has a = 0.3, close
    # to the domain edge a > 0, and full steps (ρ = 1) with noisy gradients overshoot it.
    data = {k: np.zeros(20) for k in range(3)}
    halvings = 0
    for seed in range(3):
        learner = GFVL.beta_bernoulli(data, a=0.3, b=0.3, method="natgrad", rho=1.0, S=30)
        net = Driver(learner, seed)
        for i in range(30):
            update = net.update(i % 3)
            assert BETA.in_domain(net.merge([update]))
            halvings += (update.metrics or {}).get("step_halvings", 0)
    assert halvings > 0


def test_a_step_landing_within_rounding_of_the_edge_stays_inside_after_the_merge():
    # x is inside the domain (b = eta_1 + 1 = 1e-16 > 0), but eta + (x - eta), what the
    # holder computes, rounds to the edge b = 0: the delta is halved until it stays inside.
    learner = GFVL.beta_exponential(DATA)
    eta = np.array([4.0, 31.521349884662023])
    x = np.array([4.4, np.nextafter(-1.0, 0.0)])
    assert BETA.in_domain(x) and not BETA.in_domain(eta + (x - eta))
    halvings = [0]
    delta = learner._landing(eta, x, 0, halvings)
    assert BETA.in_domain(learner.merge(eta, [Update(delta, agent=0)]))
    assert halvings[0] == 1 and np.array_equal(delta, (x - eta) / 2)


def non_conjugate_unlearning(unlearning, seed, **kwargs):
    """kl_retrained every 10 iterations of a round-robin walk; agent 0 forgotten at 400.

    ``unlearning=None``: retraining from scratch (``without([0])``), its ``kl``.
    """
    data, _, _ = exponential_setup(K=4, N=10, seed=3)
    data[0] = data[0] * 2.0  # the agent to forget pulls θ up: forgetting it matters
    # S = 100: the exp(+L_k/α) tilt of iterative unlearning rewards mass where the loss is
    # large, so REINFORCE noise feeds back on itself; few samples can make it diverge.
    common = dict(rho=0.05, c=5.0, L=5, S=100)
    if unlearning is None:
        learner = GFVL.beta_exponential(data, **common).without([0])
    else:
        learner = GFVL.beta_exponential(data, **common, unlearning=unlearning,
                                        forget_agents=[0], **kwargs)
    net = Driver(learner, seed)
    states = net.drive([i % 4 for i in range(1200)],
                       forget_at=None if unlearning is None else {400: [0]})
    metric = "kl" if unlearning is None else "kl_retrained"
    return net, np.array([learner.evaluate(s)[metric] for s in states[::10]])


@pytest.fixture(scope="module")
def retrained_floor():
    """KL of retraining from scratch at convergence: the best Beta's gap to the
    non-conjugate posterior (≈ 0.04 here), not Monte-Carlo noise."""
    return non_conjugate_unlearning(None, 0)[1][-40:].mean()


def test_non_conjugate_exact_subtraction_then_relearning_matches_retraining(retrained_floor):
    net, kl_r = non_conjugate_unlearning("exact", 0)
    assert net.latency(0) == 1  # i = 400 is agent 0's turn
    excess_before = kl_r[30:40].mean() - retrained_floor
    excess_after = kl_r[-40:].mean() - retrained_floor
    assert excess_before > 0.02
    assert abs(excess_after) < 0.1 * excess_before


def test_iterative_unlearning_reduces_kl_to_the_retrained_posterior(retrained_floor):
    net, kl_r = non_conjugate_unlearning("iterative", 1, unlearn_visits=100)
    excess_before = kl_r[30:40].mean() - retrained_floor
    excess_after = kl_r[-40:].mean() - retrained_floor
    assert excess_before > 0.02
    assert excess_after < 0.4 * excess_before
    assert not net.pending and net.latency(0) == 397
    # Once done, the agent only forwards.
    eta = np.array([10.0, 10.0])
    assert net.update(0, eta).work == NO_WORK
    # Before the request, a forgetting agent's iterative step costs L local steps.
    fresh = Driver(GFVL.beta_exponential({0: [0.5], 1: [0.2]}, L=5, unlearning="iterative"),
                   eta=eta)
    fresh.merge([fresh.update(0)])
    fresh.forget([0])
    assert fresh.update(0, eta).work == Work(steps=5)


def test_excluded_and_forgotten_agents_only_forward():
    learner = conjugate_learners()["beta-bernoulli"].without([1])
    update = Driver(learner).update(1)
    assert not np.any(update.payload) and update.work == NO_WORK
    assert learner.evaluate(drive(learner, [0, 2, 3, 4])[-1])["kl"] < 1e-10


# ---------------------------------------------------------------------- validation

DATA = {0: np.array([1.0, 0.0]), 1: np.array([1.0])}


@pytest.mark.parametrize(("call", "message"), [
    (lambda: GFVL.beta_bernoulli(DATA, alpha=0.0), "alpha: must be a finite number > 0"),
    (lambda: GFVL.beta_exponential(DATA, rho=-1.0), "rho: must be a finite number > 0"),
    (lambda: GFVL.beta_exponential(DATA, S=0), "S: must be an integer >= 1"),
    (lambda: GFVL.beta_exponential(DATA, L=1.5), "L: must be an integer >= 1"),
    (lambda: GFVL.beta_exponential(DATA, c=np.nan), "c: must be a finite number or 'loo'"),
    (lambda: GFVL.beta_exponential(DATA, c="loo", S=1), "S: must be >= 2 with c='loo'"),
    (lambda: GFVL.beta_exponential(DATA, S="30"), "S: must be an integer >= 1"),
    (lambda: GFVL.beta_exponential(DATA, rho=None), "rho: must be a finite number > 0"),
    (lambda: GFVL.beta_exponential(DATA, method="exact"), "method: 'exact' needs a likelihood"),
    (lambda: GFVL.beta_bernoulli(DATA, method="ep"), "method: must be one of"),
    (lambda: GFVL.beta_bernoulli(DATA, unlearning="retrain"), "unlearning: must be one of"),
    (lambda: GFVL.beta_bernoulli(DATA, unlearning="iterative"), "unlearning: 'iterative' needs"),
    (lambda: GFVL.beta_bernoulli({}), "data: must be a non-empty mapping"),
    (lambda: GFVL.beta_bernoulli({0: []}), "data[0]: must be a non-empty 1-D array"),
    (lambda: GFVL.beta_bernoulli({0: [0.0, 2.0]}), "data[0]: Bernoulli data must be in {0, 1}"),
    (lambda: GFVL.beta_exponential({0: [-1.0]}), "data[0]: exponential data must be >= 0"),
    (lambda: GFVL.beta_bernoulli(DATA, a=0.0), "a: Beta parameter must be > 0"),
    (lambda: GFVL.beta_bernoulli(DATA, exclude=[7]), "exclude: unknown agents [7]"),
    (lambda: GFVL.beta_bernoulli(DATA, forget_agents=[5]), "forget_agents: unknown agents [5]"),
    (lambda: GFVL.beta_bernoulli(DATA, metrics="all"), "metrics: must be one of"),
    (lambda: GFVL.beta_bernoulli(DATA).forget(5, None), "agents: unknown agent 5"),
    (lambda: GFVL.beta_bernoulli(DATA).local_update(9, np.zeros(2), None, None),
     "agent: 9 has no data"),
    (lambda: GFVL.beta_bernoulli(DATA).local_update(0, np.array([-2.0, 0.0]), None, None),
     "state: Beta natural parameters must be > -1"),
    (lambda: GFVL.beta_bernoulli(DATA).evaluate(np.array([np.nan, 0.0])),
     "state: Beta natural parameters must be finite"),
    (lambda: GFVL.beta_exponential(DATA).local_update(0, np.zeros(2), None, None),
     "rng: method 'natgrad' needs"),
    (lambda: GFVL.beta_exponential(DATA).exact_posterior(), "likelihood: the exact posterior"),
])
def test_bad_arguments_raise_one_line_errors_naming_them(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_merge_rejects_a_state_leaving_the_domain():
    learner = GFVL.beta_bernoulli(DATA)
    eta = learner.init(None)
    bad = copy.copy(Driver(learner).update(0))
    bad.payload = np.array([-5.0, 0.0])
    with pytest.raises(ValueError, match="^state: Beta natural parameters must be > -1"):
        learner.merge(eta, [bad])


# ---------------------------------------------------------------------- synthetic data


def test_synthetic_generators_have_the_right_shape_and_moments():
    rng = np.random.default_rng(0)
    b = bernoulli_agents(4, 5000, 0.3, rng)
    e = exponential_agents(4, 5000, 0.5, rng)
    assert sorted(b) == sorted(e) == [0, 1, 2, 3] and b[0].shape == (5000,)
    allb, alle = np.concatenate(list(b.values())), np.concatenate(list(e.values()))
    assert set(np.unique(allb)) <= {0.0, 1.0}
    assert abs(allb.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / allb.size)
    assert abs(alle.mean() - 0.5) < 5 * 0.5 / np.sqrt(alle.size) and alle.min() >= 0
    p = np.concatenate(list(poisson_agents(2, 5000, 4.0, rng).values()))
    assert abs(p.mean() - 4.0) < 5 * 2.0 / np.sqrt(p.size)
    g = np.concatenate(list(gaussian_agents(2, 5000, 0.7, 2.0, rng).values()))
    assert abs(g.mean() - 0.7) < 5 * np.sqrt(2.0 / g.size)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: bernoulli_agents(0, 5, 0.3, np.random.default_rng(0)), "K: must be an integer"),
    (lambda: exponential_agents(2, 0, 0.3, np.random.default_rng(0)), "N: must be an integer"),
    (lambda: bernoulli_agents(2, 5, 1.3, np.random.default_rng(0)), "theta: must be in [0, 1]"),
    (lambda: exponential_agents(2, 5, 0.0, np.random.default_rng(0)), "theta: must be > 0"),
    (lambda: gaussian_agents(2, 5, 0.0, -1.0, np.random.default_rng(0)), "noise_var: must"),
])
def test_synthetic_generators_validate_arguments(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message)


def test_docstring_examples_run():
    import doctest

    from bflnet.data import synthetic
    from bflnet.learners.conjugate import gfvl

    for module in (gfvl, synthetic):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
