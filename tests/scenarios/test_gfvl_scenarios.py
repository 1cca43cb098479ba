"""The G-FVL scenarios (paper Figs. 3-5 and the unlearning latency): columns, determinism,
exactness, the channel's time and bit accounting, and the latency theory."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from bflnet.analysis.cover_time import (
    complete_graph_cover_time,
    complete_graph_retrain_iterations,
    exact_cover_time,
    expected_first_hitting,
    harmonic_number,
)
from bflnet.cli.main import main
from bflnet.protocols.graphs.topologies import make_graph
from bflnet.protocols.graphs.walks import make_walk
from bflnet.runs.registry import DEFAULT_SCENARIO, get_scenario, run_scenario
from bflnet.scenarios.gfvl.common import with_run_id
from bflnet.scenarios.gfvl.unlearning_latency import (
    complete_graph_targets_cover,
    expected_targets_cover,
)

HOP = 0.005 + 128 / 1e6  # 5 ms latency + 2 float64 at 1 Mbit/s
TINY = {
    "gfvl-beta-bernoulli": {"runs": 2, "rounds": 30},
    "gfvl-beta-exponential": {"runs": 2, "rounds": 40, "local_steps_values": "1,4",
                              "eval_every": 8},
    "gfvl-unlearning": {"runs": 2, "learn_rounds": 30, "rounds": 20, "eval_every": 10},
    "unlearning-latency": {"runs": 5, "learn_rounds": 10},
}
COLUMNS = {
    "gfvl-beta-bernoulli": ["graph", "run", "run_seed", "event", "iteration", "time_s",
                            "cum_bits",
                            "cum_bits_delivered", "node", "kl", "theta_mean",
                            "theory_cover_iterations"],
    "gfvl-beta-exponential": ["L", "run", "run_seed", "iteration", "total_local_iterations",
                              "event", "time_s", "cum_bits", "cum_bits_delivered", "node", "kl",
                              "theta_mean"],
    "gfvl-unlearning": ["method", "run", "run_seed", "iteration", "since_request", "event",
                        "time_s", "cum_bits", "cum_bits_delivered", "node",
                        "time_since_request_s", "bits_since_request", "kl_retrained", "kl",
                        "theta_mean", "unlearn_pending", "unlearned_at",
                        "unlearned_at_time_s", "unlearned_at_bits"],
    "unlearning-latency": ["run", "run_seed", "event", "unlearn_iterations", "unlearn_time_s",
                           "unlearn_bits", "unlearn_kl_retrained", "retrain_iterations",
                           "retrain_time_s", "retrain_bits", "theory_unlearn_iterations",
                           "theory_retrain_iterations", "paper_retrain_iterations"],
}


@pytest.fixture(scope="module")
def tiny_frames():
    return {name: run_scenario(name, params, seed=3) for name, params in TINY.items()}


def test_registered_columns_default_plot_and_sweepable(tiny_frames, tmp_path):
    assert DEFAULT_SCENARIO == "gfvl-beta-bernoulli"
    for name, frame in tiny_frames.items():
        assert list(frame.columns) == COLUMNS[name], name
        # seed / run_id / config_hash are the columns a sweep adds: no clash.
        assert not {"seed", "run_id", "config_hash"} & set(frame.columns)
        assert set(frame.run) == set(range(TINY[name]["runs"]))
        fig = get_scenario(name).plot(frame)
        assert isinstance(fig, Figure) and fig.axes[0].get_legend_handles_labels()[1]
        fig.savefig(tmp_path / f"{name}.png", dpi=50)
    bb = tiny_frames["gfvl-beta-bernoulli"]
    assert list(bb.graph.unique()) == ["star", "ring", "complete"]
    assert len(bb) == 3 * 2 * 31 and bb.iteration.max() == 30


def test_the_same_seed_gives_the_same_frame(tiny_frames):
    for name, params in TINY.items():
        assert run_scenario(name, params, seed=3).equals(tiny_frames[name]), name
        assert not run_scenario(name, params, seed=4).equals(tiny_frames[name]), name


def test_one_graph_alone_gives_the_same_rows_as_in_the_multi_graph_call(tiny_frames):
    ring = run_scenario("gfvl-beta-bernoulli", {**TINY["gfvl-beta-bernoulli"],
                                                "graphs": "ring"}, seed=3)
    both = tiny_frames["gfvl-beta-bernoulli"]
    assert ring.equals(both[both.graph == "ring"].reset_index(drop=True))


def test_conjugate_kl_is_exact_from_the_cover_slot_on():
    K = 10
    frame = run_scenario("gfvl-beta-bernoulli", {"graphs": "complete,ring", "runs": 2,
                                                 "rounds": 150}, seed=5)
    closed = complete_graph_cover_time(K) + 1
    assert np.allclose(frame[frame.graph == "complete"].theory_cover_iterations, closed,
                       rtol=1e-12)
    for _, run in frame.groupby(["graph", "run"]):
        nodes = run.node.to_numpy()[1:]  # the agent scheduled at slots 1, 2, ...
        cover = next(i + 1 for i in range(len(nodes)) if len(set(nodes[:i + 1])) == K)
        kl = run.kl.to_numpy()  # index = iteration (0 = prior)
        assert kl[-1] < 1e-10
        assert (kl[cover:] < 1e-10).all() and (kl[:cover] > 1e-3).all()


def assert_hop_times(frame, compute_per_iteration):
    """Each iteration's time step is its compute plus, if the token moved to reach that
    agent, one 1-packet hop: latency + 128 bits / rate; bits grow by 128 per hop."""
    for _, run in frame.groupby(list({"graph", "L", "run"} & set(frame.columns))):
        moved = (run.node.to_numpy()[1:] != run.node.to_numpy()[:-1]).astype(float)
        expected = compute_per_iteration(run)[1:] + moved * HOP
        assert np.allclose(np.diff(run.time_s.to_numpy()), expected, rtol=0, atol=1e-12)
        assert (np.diff(run.cum_bits.to_numpy()) == moved * 128).all()
        assert (run.cum_bits == run.cum_bits_delivered).all()


def test_each_recorded_hop_takes_compute_plus_latency_plus_bits_over_rate():
    link = {"channel": "fixed", "rate_bps": 1e6, "latency_s": 0.005, "compute_s_per_step": 0.01}
    # MH on a star: leaves reject the hub 4 times in 5, so the token often stays put.
    bb = run_scenario("gfvl-beta-bernoulli", {**link, "graphs": "star", "K": 6, "runs": 3,
                                              "rounds": 40}, seed=1)
    assert (bb.node.diff() == 0).any()
    assert_hop_times(bb, lambda run: np.full(len(run), 0.01))
    ex = run_scenario("gfvl-beta-exponential", {**link, "graph": "ring", "K": 5, "runs": 2,
                                                "rounds": 24, "local_steps_values": "1,3",
                                                "eval_every": 1}, seed=2)
    assert set(ex.L) == {1, 3}
    assert_hop_times(ex, lambda run: 0.01 * run.L.to_numpy())


def test_beta_exponential_runs_every_L_on_the_same_budget_of_local_iterations(tiny_frames):
    frame = tiny_frames["gfvl-beta-exponential"]
    assert (frame.total_local_iterations == frame.L * frame.iteration).all()
    by_l = frame[frame.run == 0].groupby("L")
    assert by_l.iteration.apply(list).to_dict() == {1: [0, 8, 16, 24, 32, 40],
                                                    4: [0, 2, 4, 6, 8, 10]}
    assert (by_l.total_local_iterations.max() == 40).all()
    assert np.isfinite(frame.kl).all() and (frame.kl > 0).all()
    # Same run, same data: the prior's KL does not depend on L.
    first = frame[frame.iteration == 0]
    assert first.groupby("run").kl.nunique().eq(1).all()


def test_unlearning_subtracts_the_agent_at_its_first_visit_and_retraining_starts_over():
    # Agent 9's data have mean 0.9 against 0.5 elsewhere: forgetting it matters.
    frame = run_scenario("gfvl-unlearning", {"runs": 2, "learn_rounds": 300,
                                             "rounds": 120, "rho": 0.05,
                                             "forget_theta": 0.9}, seed=0)
    unl = frame[frame.method == "unlearning"]
    ret = frame[frame.method == "retraining"]
    assert unl.since_request.min() == -300 and unl.since_request.max() == 120
    assert ret.since_request.min() == 0 and ret.since_request.max() == 120
    assert ret.unlearn_pending.isna().all() and ret.unlearned_at.isna().all()
    assert ret.unlearned_at_time_s.isna().all() and ret.unlearned_at_bits.isna().all()
    assert set(frame.event) == {"init", "iteration"}
    assert (frame.event == "init").eq(frame.iteration == 0).all()
    for _, run in unl.groupby("run"):
        at = int(run.unlearned_at.iloc[0])
        row = run.set_index("since_request")
        assert at >= 1 and row.node[at] == 9  # the forgotten agent's first visit
        assert 9 not in set(row.node.loc[1:at - 1])
        assert (row.unlearn_pending.loc[:at - 1] == 1).all()
        assert (row.unlearn_pending.loc[at:] == 0).all()
        assert row.kl_retrained[at] < 0.5 * row.kl_retrained[at - 1]
        assert row.time_since_request_s[0] == 0 and row.bits_since_request[0] == 0
        # the latency in seconds and bits: from the request to the merge's row
        assert run.unlearned_at_time_s.iloc[0] == row.time_since_request_s[at] > 0
        assert run.unlearned_at_bits.iloc[0] == row.bits_since_request[at] > 0
    # Retraining starts from the prior: theta_mean = 1/2 under Beta(2, 2).
    assert (ret[ret.since_request == 0].theta_mean == 0.5).all()
    assert (ret[ret.since_request == 0].kl_retrained > 10).all()


def test_targets_cover_agrees_with_cover_time_hitting_time_and_the_closed_form():
    for graph in ("star", "ring", "path"):
        for rule in ("metropolis-hastings", "uniform-neighbour"):
            P = make_walk(rule, make_graph(graph, 7, None)).transition_matrix()
            assert expected_targets_cover(P, range(7)) == pytest.approx(
                exact_cover_time(P) + 1, rel=1e-12)
            assert expected_targets_cover(P, [4]) == pytest.approx(
                expected_first_hitting(P, 4), rel=1e-12)
    K = 10
    P = make_walk("metropolis-hastings", make_graph("complete", K, None)).transition_matrix()
    for t in (1, 2, 5, 9, 10):
        assert expected_targets_cover(P, range(t)) == pytest.approx(
            complete_graph_targets_cover(K, t), rel=1e-12)
    assert complete_graph_targets_cover(K, 1) == pytest.approx(1 / K + K - 1)
    assert complete_graph_targets_cover(K, K) == pytest.approx(complete_graph_cover_time(K) + 1)
    assert complete_graph_targets_cover(K, K - 1) == pytest.approx(
        1 + 1 / K + (K - 1) * harmonic_number(K - 2))
    with pytest.raises(ValueError, match="^targets: must be distinct nodes"):
        expected_targets_cover(P, [3, 3])


def test_latency_rows_follow_the_channel_and_carry_the_theory():
    K = 10
    frame = run_scenario("unlearning-latency", {"runs": 40}, seed=2)
    unl = frame.unlearn_iterations
    # Complete graph: the token moves every slot; every visit is one 1 ms step.
    assert np.allclose(frame.unlearn_time_s, unl * (0.001 + HOP), rtol=0, atol=1e-12)
    assert (frame.unlearn_bits == unl * 128).all()
    ret = frame.retrain_iterations
    assert (frame.retrain_bits == (ret - 1) * 128).all()
    # The forgotten agent only forwards (no compute) when retraining skips its data.
    assert ((frame.retrain_time_s >= (ret - 1) * HOP + (K - 1) * 0.001 - 1e-12)
            & (frame.retrain_time_s <= (ret - 1) * HOP + ret * 0.001 + 1e-12)).all()
    assert (ret >= K - 1).all()
    assert frame.theory_unlearn_iterations.iloc[0] == pytest.approx(1 / K + K - 1, abs=1e-12)
    assert frame.theory_retrain_iterations.iloc[0] == pytest.approx(
        1 + 1 / K + (K - 1) * harmonic_number(K - 2), abs=1e-12)
    assert frame.paper_retrain_iterations.iloc[0] == pytest.approx(
        complete_graph_retrain_iterations(K) + 1, abs=1e-12)
    assert (frame.unlearn_kl_retrained < 1e-10).mean() > 0.5


@pytest.mark.slow
def test_mean_unlearning_latency_on_the_complete_graph_is_1_over_K_plus_K_minus_1():
    # Var(L) = 72.1 for K = 10, so 16000 runs put 3 % of 9.1 at about 4 standard errors.
    frame = run_scenario("unlearning-latency", {"runs": 16000, "learn_rounds": 0,
                                                "retrain": False, "channel": "ideal"}, seed=7)
    target = 1 / 10 + 10 - 1
    assert abs(frame.unlearn_iterations.mean() - target) < 0.03 * target
    assert abs((frame.unlearn_iterations == 1).mean() - 0.1) < 4 * math.sqrt(0.09 / 16000)
    assert frame.retrain_iterations.isna().all()


@pytest.mark.slow
def test_mean_retraining_latency_is_the_exact_cover_of_the_remaining_agents():
    frame = run_scenario("unlearning-latency", {"runs": 2000, "learn_rounds": 0,
                                                "channel": "ideal"}, seed=8)
    exact = frame.theory_retrain_iterations.iloc[0]
    mean, se = frame.retrain_iterations.mean(), frame.retrain_iterations.std() / math.sqrt(2000)
    assert abs(mean - exact) < 0.03 * exact and abs(mean - exact) < 4 * se
    # The paper's (K-2) H_{K-2} (+1) ignores the forgotten agent's forwarding slots.
    assert mean - frame.paper_retrain_iterations.iloc[0] > 10 * se


@pytest.mark.slow
def test_latencies_with_a_non_uniform_start_law_match_the_markov_chain():
    # Simple random walk on a star: the hub is occupied every other slot, so the law of
    # the node at slot learn_iterations + 1 is far from uniform.
    params = {"graph": "star", "K": 6, "walk": "uniform-neighbour", "forget": "3",
              "learn_rounds": 5, "runs": 1500, "channel": "ideal"}
    frame = run_scenario("unlearning-latency", params, seed=9)
    P = make_walk("uniform-neighbour", make_graph("star", 6, None)).transition_matrix()
    law = np.full(6, 1 / 6) @ np.linalg.matrix_power(P, 5)
    assert frame.theory_unlearn_iterations.iloc[0] == pytest.approx(
        expected_first_hitting(P, 3, start=law), rel=1e-12)
    for column in ("unlearn_iterations", "retrain_iterations"):
        values = frame[column]
        theory = frame[f"theory_{column}"].iloc[0]
        assert abs(values.mean() - theory) < 4 * values.std() / math.sqrt(len(values)), column
    assert frame.paper_retrain_iterations.isna().all()


def test_run_id_for_plots_tells_runs_apart_inside_and_across_sweep_runs():
    frame = pd.DataFrame({"run_id": ["a", "a", "b"], "L": [1, 1, 1], "run": [0, 1, 0]})
    assert with_run_id(frame, ["L"]).run_id.tolist() == ["a/1/0", "a/1/1", "b/1/0"]
    assert with_run_id(frame.drop(columns="run_id"), []).run_id.tolist() == ["0", "1", "0"]


@pytest.mark.parametrize("name, overrides, message", [
    ("gfvl-beta-bernoulli", {"graphs": "star,blob"}, "^graphs: each value must be one of "),
    ("gfvl-beta-bernoulli", {"graphs": "ring,,star"}, "^graphs: must be a non-empty comma"),
    ("gfvl-beta-bernoulli", {"theta_true": 1.5},
     "^theta_true: must be a finite number >= 0 and <= 1"),
    ("gfvl-beta-bernoulli", {"rounds": 0}, "^rounds: must be an integer >= 1"),
    ("gfvl-beta-exponential", {"local_steps_values": "1,0"},
     "^local_steps_values: each value must be an integer >= 1, got '0'$"),
    ("gfvl-beta-exponential", {"baseline": "mean"}, "^baseline: must be 'loo' or a finite"),
    ("gfvl-beta-exponential", {"samples": 1}, "^samples: must be an integer >= 2"),
    ("gfvl-unlearning", {"forget": "10"}, "^forget: agent ids must be in 0..9, got 10$"),
    ("gfvl-unlearning", {"forget_theta": -1.0}, "^forget_theta: must be a finite number > 0"),
    ("unlearning-latency", {"threshold": 0.0}, "^threshold: must be a finite number > 0"),
    ("unlearning-latency", {"runs": 0}, "^runs: must be an integer >= 1 and <= 1000000, got 0$"),
    ("unlearning-latency", {"forget": "a"}, "^forget: each value must be an integer >= 0"),
])
def test_bad_config_is_a_one_line_error_naming_the_field(name, overrides, message):
    with pytest.raises(ValueError, match=message) as info:
        get_scenario(name).config(overrides)
    assert "\n" not in str(info.value)


def test_cli_reports_a_bad_list_in_one_line(capsys):
    assert main(["run", "gfvl-beta-exponential", "--set", "local_steps_values=1,x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "local_steps_values: each value must be an integer" in err


def test_lost_tokens_cost_time_and_bits_but_keep_one_row_per_iteration():
    params = {"graphs": "ring", "runs": 2, "rounds": 40, "loss_prob": 0.3,
              "max_attempts": 1}
    lossy = run_scenario("gfvl-beta-bernoulli", params, seed=6)
    clean = run_scenario("gfvl-beta-bernoulli", {**params, "loss_prob": 0.0,
                                                 "max_attempts": 8}, seed=6)
    assert len(lossy) == len(clean) == 2 * 41
    moves = lossy.groupby("run").node.apply(lambda n: int((n.diff().fillna(0) != 0).sum()))
    sent = lossy.groupby("run").cum_bits.max()
    assert (sent >= 128 * moves).all() and (sent > 128 * moves).any()
    assert (lossy.groupby("run").cum_bits_delivered.max() == 128 * moves).all()


# ------------------------------------------------------------------ the original set-ups

TINY_UNLEARN = {"K": 5, "runs": 2, "learn_rounds": 30, "rounds": 40,
                "points_per_agent": 10, "eval_every": 5, "samples": 60, "baseline": "loo",
                "data": "agent-skewed"}


def _iteration_rows(frame, method):
    return frame[frame.method == method]


def test_hold_token_keeps_the_forgetting_agent_scheduled_until_it_is_done():
    frame = run_scenario("gfvl-unlearning", {**TINY_UNLEARN, "unlearning": "iterative",
                                             "unlearn_visits": 7}, seed=2)
    unl = _iteration_rows(frame, "unlearning")
    for _, run in unl.groupby("run"):
        done = int(run.unlearned_at.iloc[0])
        first = done - 7 + 1  # slots first .. done (since the request) are the agent's
        held = run[(run.since_request >= first) & (run.since_request <= done)]
        assert len(held) == 7 and (held.node == 4).all()
        assert (run[run.since_request.between(1, first - 1)].node != 4).all()
        assert run[run.since_request == done].unlearn_pending.iloc[0] == 0


def test_walk_schedule_spreads_the_unlearning_visits_over_the_walk():
    params = {**TINY_UNLEARN, "unlearning": "iterative", "unlearn_visits": 3,
              "unlearn_schedule": "walk", "rounds": 80}
    unl = _iteration_rows(run_scenario("gfvl-unlearning", params, seed=2), "unlearning")
    for _, run in unl.groupby("run"):
        done = run.unlearned_at.iloc[0]
        visits = run[(run.since_request >= 1) & (run.since_request <= done) & (run.node == 4)]
        assert len(visits) == 3 and visits.since_request.max() == done
        assert (run.node[run.since_request.between(1, done)] != 4).any()


def test_iterative_unlearning_moves_q_towards_the_retrained_posterior():
    params = {**TINY_UNLEARN, "unlearning": "iterative", "unlearn_visits": 60, "rho": 0.05,
              "learn_rounds": 400, "rounds": 120}
    unl = _iteration_rows(run_scenario("gfvl-unlearning", params, seed=4), "unlearning")
    for _, run in unl.groupby("run"):
        done = run.unlearned_at.iloc[0]
        before = run[run.since_request == 0].kl_retrained.iloc[0]
        after = run[run.since_request <= done].kl_retrained.iloc[-1]
        assert after < before / 3


def test_retraining_without_the_forgotten_agent_never_schedules_it():
    frame = run_scenario("gfvl-unlearning", {**TINY_UNLEARN, "retrain_graph": "without"},
                         seed=1)
    retrain = _iteration_rows(frame, "retraining")
    assert len(retrain) and not (retrain.node == 4).any()
    forwarder = _iteration_rows(run_scenario("gfvl-unlearning", TINY_UNLEARN, seed=1),
                                "retraining")
    assert (forwarder.node == 4).any()
    with pytest.raises(ValueError, match=r"^retrain_graph: removing agents \[0\] disconnects"):
        run_scenario("gfvl-unlearning", {**TINY_UNLEARN, "graph": "star", "forget": "0",
                                         "retrain_graph": "without"}, seed=1)


def test_per_point_draws_and_skewed_data_reach_the_learner():
    base = {"K": 4, "runs": 1, "rounds": 30, "local_steps_values": "1", "points_per_agent": 10,
            "eval_every": 10}
    frames = [run_scenario("gfvl-beta-exponential", {**base, **extra}, seed=0)
              for extra in ({}, {"reinforce_draws": "per-point"}, {"data": "agent-skewed"})]
    assert not frames[0].kl.equals(frames[1].kl) and not frames[0].kl.equals(frames[2].kl)
    assert frames[0].kl.iloc[0] != frames[2].kl.iloc[0]  # other data: another posterior


@pytest.mark.parametrize("name, overrides, message", [
    ("gfvl-unlearning", {"unlearn_visits": 5}, "unlearn_visits: not used with unlearning=exact"),
    ("gfvl-unlearning", {"unlearn_schedule": "walk"},
     "unlearn_schedule: not used with unlearning=exact"),
    ("gfvl-beta-exponential", {"data": "agent-skewed", "theta_true": 0.4},
     "theta_true: not used with data=agent-skewed"),
    ("gfvl-beta-bernoulli", {"data": "agent-skewed", "theta_true": 0.4},
     "theta_true: not used with data=agent-skewed"),
])
def test_parameters_the_chosen_setting_ignores_are_errors(name, overrides, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        get_scenario(name).config(overrides)
