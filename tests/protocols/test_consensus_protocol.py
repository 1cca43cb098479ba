"""The synchronous consensus pattern against the closed form W^t x."""

import networkx as nx
import numpy as np
import pandas as pd

from bflnet.channels import FixedRateChannel
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols.consensus import ConsensusProtocol
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights, spectral_gap
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation


def run(graph, x0, rounds, channel, **kwargs):
    sim = Simulation(0, record_messages=True)
    sim.build_network(graph, channel=channel, **kwargs)
    learner = ConsensusAveraging(dict(enumerate(x0)))
    W = metropolis_hastings_weights(graph)
    result = sim.run(ConsensusProtocol(learner, W, StopRule(max_iterations=rounds)))
    return result.frame, result.agent_states, W


def test_lossless_rounds_equal_powers_of_the_mixing_matrix():
    graph = nx.cycle_graph(7)
    x0 = np.arange(7.0)
    frame, states, W = run(graph, x0, 25, FixedRateChannel(1e6, 0.001))
    expected = np.linalg.matrix_power(W, 25) @ x0
    got = np.array([states[k].x[0] for k in range(7)])
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    rounds = frame[frame.event == "round"]
    assert np.allclose(rounds.time_s, np.arange(1, 26) * (0.001 + 64 / 1e6))
    assert (rounds.cum_bits.diff().dropna() == 2 * 7 * 64).all()


def test_deviation_decays_at_the_rate_of_the_spectral_gap():
    graph = nx.cycle_graph(12)
    rng = np.random.default_rng(0)
    frame, _, W = run(graph, rng.standard_normal(12), 200, FixedRateChannel(1e6))
    dev = frame[frame.event == "round"].max_deviation.to_numpy()
    rate = np.exp(np.polyfit(np.arange(100, 200), np.log(dev[100:200]), 1)[0])
    assert abs(rate - (1 - spectral_gap(W))) < 0.01


def test_a_lost_message_leaves_the_last_value_received_in_use():
    graph = nx.path_graph(2)
    frame, states, _ = run(graph, [0.0, 1.0], 30, FixedRateChannel(1e6, loss_prob=0.4),
                           max_attempts=1)
    msgs = frame[frame.event == "message"]
    assert msgs.dropped.astype(bool).any()
    rounds = frame[frame.event == "round"]
    assert rounds.dropped.sum() == msgs.dropped.astype(bool).sum()
    # With stale values the pair still agrees in the end, somewhere between 0 and 1.
    a, b = states[0].x[0], states[1].x[0]
    assert abs(a - b) < 1e-3 and 0 < a < 1


def test_a_frame_with_message_rows_writes_to_parquet(tmp_path):
    # message rows (dropped 0/1) and round rows (dropped: a count) share one int column
    graph = nx.path_graph(3)
    frame, _, _ = run(graph, [0.0, 1.0, 2.0], 5, FixedRateChannel(1e6, loss_prob=0.3),
                      max_attempts=1)
    frame.to_parquet(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert back.dropped.dtype.kind in "if" and len(back) == len(frame)
    assert back.dropped.max() >= 1
