"""EM-TDAMP as a learner under the parameter server: merge against the closed forms,
records (bits, clip counts, active groups against the target) and determinism."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
import torch

from bflnet.learners.base import Update
from bflnet.learners.emtdamp.learner import EMTDAMP, NOISE_STAT, clip_metrics, part_codecs
from bflnet.learners.emtdamp.server_em import aggregate_gaussians
from bflnet.protocols.coding.codecs import RawCodec
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import RoundRobinSelector
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Simulation

SIZES = [5, 8, 1]


def regression_data(clients: int = 3, per_client: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((clients * per_client + 50, SIZES[0]))
    y = np.tanh(x[:, 0] + x[:, 1]) + 0.1 * rng.standard_normal(len(x))
    agents = {k: (x[k * per_client:(k + 1) * per_client], y[k * per_client:(k + 1) * per_client])
              for k in range(clients)}
    return agents, (x[-50:], y[-50:])


def run(learner: EMTDAMP, rounds: int, seed: int = 0, **protocol):
    sim = Simulation(seed, name="emtdamp-test")
    graph = nx.Graph()
    graph.add_nodes_from(learner.data)
    sim.build_network(graph, server=True)
    result = sim.run(ParameterServerProtocol(
        learner, StopRule(max_iterations=rounds),
        selector=RoundRobinSelector(len(learner.data)), **protocol))
    return result.frame[result.frame["event"].isin(("init", "iteration"))], result.state


def values_per_client(sizes: list[int]) -> int:
    """φ^k: per layer ρ (N_in) + slab mean and variance (2 N_in N_out) + bias ρ, mean,
    variance (3 N_out)."""
    return sum(n_in + 2 * n_in * n_out + 3 * n_out
               for n_in, n_out in itertools.pairwise(sizes))


def test_merge_of_one_client_is_its_posterior_and_its_noise_statistic():
    """The geometric mean of one Gaussian is itself (eq. 12), and eq. 18 with one client
    is its σ^k."""
    agents, _ = regression_data(clients=1)
    learner = EMTDAMP(SIZES, agents, sweeps=2)
    state = learner.init(np.random.default_rng(0))
    update = learner.local_update(0, state, None, np.random.default_rng(1))
    merged = learner.merge(state, [update])
    for key, value in update.payload.items():
        if key != NOISE_STAT:
            torch.testing.assert_close(merged[key], value, rtol=1e-12, atol=0)
    assert float(merged["noise_var"][0]) == pytest.approx(float(update.payload[NOISE_STAT][0]))


def test_merge_of_two_clients_is_the_weighted_product_of_gaussians():
    """Eqs. 12, 14: precision = Σ w_k/v_k with w_k = I_k/I, mean = v Σ w_k μ_k / v_k."""
    agents, _ = regression_data(clients=2)
    agents[1] = (agents[1][0][:10], agents[1][1][:10])  # I = (40, 10): weights 0.8, 0.2
    learner = EMTDAMP(SIZES, agents, sweeps=2)
    state = learner.init(np.random.default_rng(0))
    updates = [learner.local_update(k, state, None, np.random.default_rng(k)) for k in (0, 1)]
    merged = learner.merge(state, updates)
    m = [u.payload["l1.w_mean"] for u in updates]
    v = [u.payload["l1.w_var"] for u in updates]
    precision = 0.8 / v[0] + 0.2 / v[1]
    torch.testing.assert_close(merged["l1.w_var"], 1 / precision, rtol=1e-12, atol=0)
    torch.testing.assert_close(merged["l1.w_mean"], (0.8 * m[0] / v[0] + 0.2 * m[1] / v[1])
                               / precision, rtol=1e-10, atol=1e-14)
    stats = [float(u.payload[NOISE_STAT][0]) for u in updates]
    assert float(merged["noise_var"][0]) == pytest.approx(0.8 * stats[0] + 0.2 * stats[1])
    mean, _ = aggregate_gaussians(torch.stack(m), torch.stack(v),
                                    torch.tensor([0.8, 0.2], dtype=torch.float64))
    torch.testing.assert_close(merged["l1.w_mean"], mean)


def test_rounds_record_exact_bits_clips_and_metrics():
    agents, test = regression_data()
    learner = EMTDAMP(SIZES, agents, eval_data=test, sweeps=2)
    frame, _ = run(learner, rounds=3)
    rounds = frame[frame["event"] == "iteration"]
    per_client = 64 * (values_per_client(SIZES) + 1)  # + σ^k
    down = 64 * (values_per_client(SIZES) + 2)         # + v and the round counter
    assert rounds["cum_bits_up"].tolist() == [3 * per_client * r for r in (1, 2, 3)]
    assert rounds["cum_bits_down"].tolist() == [3 * down * r for r in (1, 2, 3)]
    clip_columns = [c for c in rounds if c.startswith("clip_")]
    assert len(clip_columns) == 7
    clips = rounds[clip_columns].to_numpy()
    assert np.all(np.isfinite(clips)) and np.all(clips >= 0) and np.all(clips == clips.round())
    assert rounds["clips"].tolist() == clips.sum(1).tolist()
    metrics = rounds[["test_nmse", "test_mse", "noise_var"]].to_numpy()
    assert np.all(np.isfinite(metrics)) and np.all(metrics > 0)
    assert rounds["noise_var"].iloc[-1] != pytest.approx(1.0)  # the M-step ran


def test_32_bit_codecs_halve_the_bits_of_every_part():
    agents, _ = regression_data()
    learner = EMTDAMP(SIZES, agents, sweeps=1)
    codec = part_codecs(2, dict.fromkeys(("activity", "mean", "var", "noise"), RawCodec(32)))
    frame, _ = run(learner, rounds=1, uplink_codec=codec, downlink_codec=codec)
    row = frame[frame["event"] == "iteration"].iloc[0]
    assert row["cum_bits_up"] == 3 * 32 * (values_per_client(SIZES) + 1)
    assert row["cum_bits_down"] == 3 * (32 * (values_per_client(SIZES) + 1) + 64)


def test_part_codecs_reject_an_unknown_kind():
    with pytest.raises(ValueError, match="codecs: unknown part kind 'slab'"):
        part_codecs(2, {"slab": RawCodec(32)})


def test_active_groups_reach_exactly_the_target_and_stay():
    """ρ = 0.5 of the weight groups (neurons) per layer: T = round(0.5·5) + round(0.5·8)
    = 2 + 4 groups survive from the round the rule starts at, and pruned groups stay
    pruned."""
    agents, test = regression_data()
    learner = EMTDAMP(SIZES, agents, eval_data=test, sweeps=2, target_density=0.5,
                      sparsify_from=2)
    frame, state = run(learner, rounds=5)
    rounds = frame[frame["event"] == "iteration"].set_index("iteration")
    assert rounds["target_groups"].iloc[0] == 6
    assert rounds.loc[1, "active_groups"] == 13
    assert rounds.loc[2:, "active_groups"].tolist() == [6, 6, 6, 6]
    assert int((state["l1.w_activity"] > 0).sum()) == 2
    assert int((state["l2.w_activity"] > 0).sum()) == 4
    assert np.isfinite(rounds["test_nmse"]).all()


def test_same_seed_same_frame():
    agents, test = regression_data()
    frames = [run(EMTDAMP(SIZES, agents, eval_data=test, sweeps=1), rounds=2, seed=5)[0]
              for _ in range(2)]
    assert frames[0].equals(frames[1])


def test_probit_classification_rounds_are_finite():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((160, 6))
    labels = (x[:, :3] @ rng.standard_normal((3, 3))).argmax(1)
    agents = {k: (x[k * 40:(k + 1) * 40], labels[k * 40:(k + 1) * 40]) for k in range(3)}
    learner = EMTDAMP([6, 8, 3], agents, eval_data=(x[120:], labels[120:]),
                      likelihood="probit", batch_size=20, sweeps=2)
    frame, _ = run(learner, rounds=3)
    rounds = frame[frame["event"] == "iteration"]
    assert np.isfinite(rounds[["accuracy", "noise_var", "clips"]].to_numpy()).all()
    assert ((rounds["accuracy"] >= 0) & (rounds["accuracy"] <= 1)).all()


@pytest.mark.parametrize("bad, message", [
    (dict(x=np.full((4, 5), np.nan)), "agent_data\\[0\\] inputs: must be finite"),
    (dict(x=np.zeros((4, 6))), "agent_data\\[0\\]: inputs must be \\(I, 5\\)"),
    (dict(y=np.zeros((4, 2))), "agent_data\\[0\\]: targets must be \\(I, 1\\)"),
])
def test_bad_data_is_one_line_naming_the_field(bad, message):
    data = {"x": np.zeros((4, 5)), "y": np.zeros(4), **bad}
    with pytest.raises(ValueError, match=message):
        EMTDAMP(SIZES, {0: (data["x"], data["y"])})


def test_bad_labels_and_hyper_parameters_are_refused():
    x = np.zeros((4, 5))
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        EMTDAMP([5, 3], {0: (x, np.array([0, 1, 2, 3]))}, likelihood="probit")
    with pytest.raises(ValueError, match="target_density"):
        EMTDAMP(SIZES, {0: (x, np.zeros(4))}, target_density=math.inf)
    with pytest.raises(ValueError, match="sizes"):
        EMTDAMP([5], {0: (x, np.zeros(4))})


def test_clip_metrics_sum_over_layers():
    out = clip_metrics({"layer1/r_gain": 2, "layer2/r_gain": 3, "layer2/p_var_floor": 1})
    assert out["clip_r_gain"] == 5 and out["clip_p_var_floor"] == 1 and out["clips"] == 6


def test_an_update_without_metrics_adds_no_columns():
    """The parameter server sums ``Update.metrics`` only when a learner sets them."""
    from bflnet.protocols.parameter_server import summed_metrics
    assert summed_metrics([Update(np.zeros(1)), Update(np.zeros(1))]) == {}
    assert summed_metrics([Update(np.zeros(1), metrics={"a": 1.0}),
                           Update(np.zeros(1), metrics={"a": 2.0})]) == {"a": 3.0}
