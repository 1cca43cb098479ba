import numpy as np
import pytest

from bflnet.data.synthetic import (
    agent_skewed_bernoulli_agents,
    agent_skewed_exponential_agents,
    agent_skewed_parameters,
)


def test_agent_skewed_parameters_follow_beta_k_plus_1_minus_i_i():
    K, N = 10, 40_000
    t = agent_skewed_parameters(K, N, np.random.default_rng(0))
    i = np.arange(1, K + 1)
    a, b = K + 1 - i, i
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert np.all(np.abs(t.mean(axis=1) - mean) < 5 * np.sqrt(var / N))
    assert np.allclose(t.var(axis=1), var, rtol=0.05)


@pytest.mark.parametrize("make", [agent_skewed_exponential_agents, agent_skewed_bernoulli_agents])
def test_agent_i_points_have_mean_k_plus_1_minus_i_over_k_plus_1(make):
    # E[z] = E[t] for both: the exponential's mean is t, the Bernoulli's P(z = 1) is t.
    K, N = 4, 50_000
    data = make(K, N, np.random.default_rng(1))
    assert sorted(data) == list(range(K))
    for k, z in data.items():
        assert z.shape == (N,)
        assert abs(z.mean() - (K - k) / (K + 1)) < 5 * z.std() / np.sqrt(N)
    again = make(K, N, np.random.default_rng(1))
    assert all(np.array_equal(data[k], again[k]) for k in data)
