"""Scenario ``cover-time``: simulated cover times through the random-walk protocol agree with
the theory, and time and bits follow the channel exactly."""

import math

import numpy as np
import pytest

from bflnet.analysis.cover_time import complete_graph_cover_time
from bflnet.runs.registry import get_scenario, run_scenario
from bflnet.scenarios import scenario_names

IDEAL = {"channel": "ideal"}


def cover(params, seed=0):
    return run_scenario("cover-time", {**IDEAL, **params}, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("K", (10, 20))
def test_mean_cover_time_on_the_complete_graph_is_within_3_percent_of_the_closed_form(K):
    frame = cover({"graph": "complete", "K": K, "runs": 2000}, seed=K)
    closed = complete_graph_cover_time(K)
    assert len(frame) == 2000
    assert (frame.closed_form_cover_iterations == closed).all()
    assert abs(frame.cover_iterations.mean() - closed) < 0.03 * closed
    # No self-loops on the complete graph: the token moves every slot.
    assert (frame.moves == frame.cover_iterations).all()
    assert (frame.cover_iterations >= K - 1).all()
    if K <= 12:
        assert frame.exact_cover_iterations.iloc[0] == pytest.approx(closed, abs=1e-9)
    else:
        assert frame.exact_cover_iterations.isna().all()


@pytest.mark.slow
@pytest.mark.parametrize("graph", ("ring", "star", "random-geometric"))
def test_mean_cover_time_is_within_4_standard_errors_of_the_exact_value(graph):
    frame = cover({"graph": graph, "K": 8, "runs": 800}, seed=3)
    exact = frame.exact_cover_iterations.iloc[0]
    c = frame.cover_iterations
    se = c.std(ddof=1) / math.sqrt(len(c))
    assert abs(c.mean() - exact) < 4 * se, (c.mean(), se, exact)
    assert frame.matthews_lower.iloc[0] <= exact <= frame.matthews_upper.iloc[0]
    assert frame.closed_form_cover_iterations.isna().all()
    # Runs start uniformly over the agents (G-FVL's initialisation).
    assert set(frame.start_node) == set(range(8))


@pytest.mark.parametrize("walk", ("metropolis-hastings", "uniform-neighbour"))
def test_time_and_bits_are_compute_per_slot_plus_one_packet_per_move(walk):
    # 1 Mbit/s, 5 ms, a 2-parameter float64 token (128 bits), 10 ms per visit. Iteration i
    # is recorded when k^(i) finishes computing, so at the cover slot C + 1 the clock shows
    # (C + 1) compute times plus one hop per hand-over (no message when the walk stays put).
    frame = run_scenario("cover-time", {
        "graph": "star", "K": 6, "runs": 40, "walk": walk, "channel": "fixed",
        "rate_bps": 1e6, "latency_s": 0.005, "loss_prob": 0.0, "payload_params": 2,
        "compute_s_per_step": 0.01}, seed=7)
    c, moves = frame.cover_iterations.to_numpy(), frame.moves.to_numpy()
    expected = c * 0.01 + 0.01 + moves * (0.005 + 128 / 1e6)
    assert np.allclose(frame.cover_time_s.to_numpy(), expected, rtol=0, atol=1e-12)
    assert (frame.cover_bits.to_numpy() == moves * 128).all()
    if walk == "metropolis-hastings":  # leaves reject the hub with prob 4/5: idle slots
        assert (moves < c).any() and (moves <= c).all()
    else:
        assert (moves == c).all()


def test_lost_tokens_cost_time_and_bits_and_the_same_seed_gives_the_same_frame():
    params = {"graph": "random-geometric", "K": 9, "runs": 25, "channel": "fixed",
              "loss_prob": 0.3, "max_attempts": 1, "compute_s_per_step": 0.001}
    a = run_scenario("cover-time", params, seed=4)
    b = run_scenario("cover-time", params, seed=4)
    c = run_scenario("cover-time", params, seed=5)
    assert a.equals(b)
    assert not a.equals(c)
    assert (a.cover_bits >= a.moves * 128).all() and (a.cover_bits > a.moves * 128).any()
    assert list(a.columns[:9]) == ["run", "run_seed", "event", "K", "start_node",
                                   "cover_iterations", "moves", "cover_time_s", "cover_bits"]
    assert (a.event == "run").all()


def test_registered_and_bad_config_names_the_field():
    assert "cover-time" in scenario_names()
    scenario = get_scenario("cover-time")
    for overrides, message in (({"runs": 0},
                                "^runs: must be an integer >= 1 and <= 1000000, got 0$"),
                               ({"walk": "round-robin"}, "^walk: must be one of "),
                               ({"payload_params": -1}, "^payload_params: must be an integer"),
                               ({"K": 1}, "^K: must be an integer >= 2")):
        with pytest.raises(ValueError, match=message):
            scenario.config(overrides)
