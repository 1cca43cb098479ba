"""The DSVGD scenarios (compressed-DSVGD letter, Figs. 3-5): columns, the uplink budget
(bits per iteration <= R_u and equal to eqs. 9-11 + 32 bits of a_max for the chosen k, the
largest that fits), determinism, and one-line config errors. Tiny settings: small MLP,
a few examples, a few iterations, on the tiny Fashion-MNIST-shaped data set the tests
write (tests/conftest.py); the test of the real labels reads the real data set."""

import math

import numpy as np
import pandas as pd
import pytest

from bflnet.data import load_fashion_mnist
from bflnet.learners.models.classifiers import BayesianMLP, LogisticRegression
from bflnet.runs.registry import get_scenario, run_scenario
from bflnet.scenarios.dsvgd.common import budget_codec, mlp_dim, sparsity_groups
from bflnet.scenarios.dsvgd.forget_svgd import class_assignment, head_dim

SMALL = {"points_per_agent": 50, "eval_size": 200, "hidden": 8, "local_steps": 2, "K": 4,
         "eval_every": 2}
TINY = {
    "dsvgd-sparsifiers": {**SMALL, "particles": 4, "rounds": 3},
    "dsvgd-vs-fedavg": {**SMALL, "particles": "2,4", "rate_multiples": "0.5,5",
                        "rounds": 3},
    "forget-svgd": {"points_per_agent": 20, "eval_size": 300, "hidden": 16, "local_steps": 2,
                    "particles": 4, "pretrain_rounds": 2, "pretrain_local_steps": 2,
                    "learn_rounds": 3, "unlearn_rounds": 3, "scratch_rounds": 4,
                    "eval_every": 2},
}
COMMON = ["run_id", "iteration", "time_s", "cum_bits", "cum_bits_up", "cum_bits_down",
          "uplink_bits", "rate_multiple", "budget_bits", "k", "message_bits", "groups",
          "sharing_fraction", "accuracy", "ece", "nll", "brier"]
COLUMNS = {
    "dsvgd-sparsifiers": [*COMMON, "sparsifier", "n_particles"],
    "dsvgd-vs-fedavg": [*COMMON, "method", "n_particles"],
    "forget-svgd": [*COMMON, "method", "since_request", "acc_unlearned", "acc_remaining",
                    "pretrain_accuracy", *[f"acc_class_{c}" for c in range(10)]],
}


pytestmark = pytest.mark.usefixtures("use_tiny_fashion")


@pytest.fixture(scope="module")
def frames(use_tiny_fashion):
    return {name: run_scenario(name, params, seed=5) for name, params in TINY.items()}


def position_bits(d, k):
    """ceil(log2 C(d, k)), exactly."""
    return (math.comb(d, k) - 1).bit_length()


def model_d(name):
    h = TINY[name]["hidden"]
    return h * 10 + 10 if name == "forget-svgd" else 784 * h + h + 10 * h + 10


@pytest.mark.parametrize("name", sorted(TINY))
def test_columns_and_one_run_per_setting(frames, name):
    frame = frames[name]
    missing = [c for c in COLUMNS[name] if c not in frame.columns]
    assert not missing
    assert frame["run_id"].iloc[0] and frame["run_id"].str.endswith("-s5").all()
    for _, run in frame.groupby("run_id"):
        run = run[run["event"] != "forget_request"]
        assert run["iteration"].tolist() == list(range(len(run)))  # init row, then 1, 2, ...
        assert run["time_s"].is_monotonic_increasing
        evaluated = run.dropna(subset=["accuracy"])
        assert evaluated["accuracy"].between(0, 1).all()
        assert evaluated["iteration"].iloc[-1] == run["iteration"].iloc[-1]  # last evaluated


def test_sparsifiers_run_one_series_each_and_fig4_grid_is_complete(frames):
    sp = frames["dsvgd-sparsifiers"]
    assert sorted(sp["sparsifier"].unique()) == ["alpha-shared", "per-particle", "shared"]
    assert dict(sp.groupby("sparsifier")["groups"].first()) == {
        "alpha-shared": 2, "per-particle": 4, "shared": 1}
    vs = frames["dsvgd-vs-fedavg"]
    cells = set(map(tuple, vs[["method", "n_particles", "rate_multiple"]].drop_duplicates()
                    .to_numpy().tolist()))
    assert cells == {(m, n, r) for m, n in (("dsvgd", 2), ("dsvgd", 4), ("fedavg", 1))
                     for r in (0.5, 5.0)}
    # the same init and data for every run of a call: identical iteration-0 metrics
    init = vs[vs["iteration"] == 0]
    assert init[init["method"] == "fedavg"]["accuracy"].nunique() == 1


@pytest.mark.parametrize("name", sorted(TINY))
def test_uplink_bits_fit_the_budget_and_match_the_formulas(frames, name):
    frame = frames[name]
    d = model_d(name)
    n_bits = 5
    compressed = frame.dropna(subset=["budget_bits"])
    assert len(compressed)
    for _, run in compressed.groupby("run_id"):
        first = run.iloc[0]
        k, groups, budget = int(first["k"]), int(first["groups"]), int(first["budget_bits"])
        n_rows = int(first.get("n_particles", TINY[name].get("particles", 0))) \
            if name != "forget-svgd" else TINY[name]["particles"]
        assert budget == math.floor(first["rate_multiple"] * d)
        expected = groups * position_bits(d, k) + n_rows * k * n_bits + 32  # eqs. 9-11 + a_max
        assert int(first["message_bits"]) == expected <= budget
        if k < d:  # k is the largest that fits
            assert groups * position_bits(d, k + 1) + n_rows * (k + 1) * n_bits + 32 > budget
        compressed_phase = (run["event"] == "iteration") & (run["iteration"] >= 1)
        if name == "forget-svgd":  # the timeline's learning phase is uncompressed float32
            learning = run[compressed_phase & (run["method"] == "learning")]["uplink_bits"]
            assert (learning == 32 * n_rows * d).all()
            compressed_phase &= run["method"] != "learning"
        sent = run[compressed_phase]["uplink_bits"]
        assert len(sent) and (sent == expected).all() and (sent <= budget).all()


def test_forget_svgd_phases_and_class_assignment(frames):
    frame = frames["forget-svgd"]
    assert sorted(frame["method"].unique()) == ["forget-svgd", "learning", "scratch"]
    assert set(frame["rate_multiple"].dropna()) == {1.0, 0.5}
    params = TINY["forget-svgd"]
    for _, run in frame[frame["run_id"].str.startswith("forget")].groupby("run_id"):
        # learn, forget, unlearn: one timeline whose clock and bits run on through the request
        learning = run[run["method"] == "learning"]
        assert learning["since_request"].max() == 0
        assert learning["iteration"].tolist() == list(range(params["learn_rounds"] + 1))
        request = run[run["event"] == "forget_request"]
        assert request["node"].tolist() == [8, 9]           # the last n_forgetting of K = 10
        assert (request["iteration"] == params["learn_rounds"]).all()
        last = learning.iloc[-1]
        assert (request["time_s"] == last["time_s"]).all()
        assert (request["cum_bits"] == last["cum_bits"]).all()
        unlearning = run[(run["method"] == "forget-svgd") & (run["event"] == "iteration")]
        assert unlearning["iteration"].iloc[0] == params["learn_rounds"] + 1
        assert unlearning["time_s"].iloc[0] > last["time_s"]
        assert unlearning["cum_bits"].iloc[0] > last["cum_bits"]
        assert (unlearning["forget_pending"] == 2).all()    # DSVGD's unlearning has no end
        assert run["time_s"].is_monotonic_increasing and run["cum_bits"].is_monotonic_increasing
    classes = class_assignment(10, 2, [2, 9])
    assert classes[8:] == [(2, 9), (2, 9)]
    assert not {2, 9} & {c for pair in classes[:8] for c in pair}
    held = [c for pair in classes[:8] for c in pair]
    assert all(held.count(c) == 2 for c in (0, 1, 3, 4, 5, 6, 7, 8))


def test_forgetting_agents_hold_every_example_of_the_forgotten_labels(real_fashion_mnist):
    from bflnet.data import by_label

    _, y = load_fashion_mnist(split="train")
    parts = by_label(y, 10, class_assignment(10, 2, [2, 9]), 100, np.random.default_rng(0))
    forgotten = np.concatenate(parts[8:])
    assert set(y[forgotten].tolist()) == {2, 9}
    assert not np.isin(y[np.concatenate(parts[:8])], [2, 9]).any()


@pytest.mark.parametrize("name", ["dsvgd-sparsifiers", "forget-svgd"])
def test_same_seed_same_frame(frames, name):
    again = run_scenario(name, TINY[name], seed=5)
    pd.testing.assert_frame_equal(frames[name], again)


def test_budget_mode_helpers():
    assert sparsity_groups("per-particle", 10, 0.5) == 10
    assert sparsity_groups("shared", 10, 0.5) == 1
    assert sparsity_groups("alpha-shared", 10, 0.2) == 5
    assert sparsity_groups("alpha-shared", 5, 0.5, strict=False) == 1
    assert sparsity_groups("alpha-shared", 2, 0.5, strict=False) == 2
    with pytest.raises(ValueError, match=r"^sharing_fraction: .*N_p=5"):
        sparsity_groups("alpha-shared", 5, 0.5)
    budget = budget_codec(1.0, 79_510, 10, 2, 5)
    assert budget.message_bits <= budget.budget_bits == 79_510
    assert budget.codec.bits_for((10, 79_510)) == budget.message_bits
    with pytest.raises(ValueError, match=r"^rate_multiple: .*too small"):
        budget_codec(0.01, 1010, 40, 40, 5)


@pytest.mark.parametrize(("name", "overrides", "field"), [
    ("dsvgd-sparsifiers", {"sparsifiers": "shared,topk"}, "sparsifiers"),
    ("dsvgd-sparsifiers", {"sparsifiers": "shared,shared"}, "sparsifiers"),
    ("dsvgd-sparsifiers", {"sharing_fraction": 0.3}, "sharing_fraction"),
    ("dsvgd-sparsifiers", {"rate_multiple": 0.0}, "rate_multiple"),
    ("dsvgd-sparsifiers", {"rate_multiple": 0.001}, "rate_multiple"),
    ("dsvgd-sparsifiers", {"points_per_agent": 0}, "points_per_agent"),
    ("dsvgd-vs-fedavg", {"particles": "2,x"}, "particles"),
    ("dsvgd-vs-fedavg", {"rate_multiples": "1,-5"}, "rate_multiples"),
    ("dsvgd-vs-fedavg", {"methods": "dsvgd,sgd"}, "methods"),
    ("dsvgd-vs-fedavg", {"threads": 0}, "threads"),
    ("forget-svgd", {"forget_classes": "2,10"}, "forget_classes"),
    ("forget-svgd", {"n_forgetting": 10}, "n_forgetting"),
    ("forget-svgd", {"sharing_fractions": "0.3"}, "sharing_fraction"),
    ("forget-svgd", {"rate_multiples": "0.1"}, "rate_multiple"),
])
def test_bad_config_is_a_one_line_error_naming_the_field(name, overrides, field):
    with pytest.raises(ValueError) as info:
        get_scenario(name).config(overrides)
    message = str(info.value)
    assert message.startswith(f"{field}") and "\n" not in message


def test_default_plots_draw(frames):
    for name, frame in frames.items():
        fig = get_scenario(name).plot(frame)
        assert fig.axes


def test_forget_svgd_without_a_learning_phase_unlearns_from_the_initial_particles():
    params = {**TINY["forget-svgd"], "learn_rounds": 0, "rate_multiples": "1",
              "scratch_rounds": 1, "forget_stop_accuracy": None}
    frame = run_scenario("forget-svgd", params, seed=1)
    learning = frame[frame["method"] == "learning"]
    assert len(learning) == 1 and learning["iteration"].iloc[0] == 0
    forget = frame[frame["method"] == "forget-svgd"]
    assert (forget[forget["event"] == "forget_request"]["iteration"] == 0).all()
    steps = forget[forget["event"] == "iteration"]
    assert steps["iteration"].tolist() == list(range(1, params["unlearn_rounds"] + 1))


def test_forget_svgd_stops_at_the_first_iteration_the_agents_data_are_forgotten():
    params = {**TINY["forget-svgd"], "learn_rounds": 0, "rate_multiples": "1",
              "scratch_rounds": 1, "unlearn_rounds": 6, "eval_every": 1,
              "pretrain_rounds": 20, "step_size": 0.003}
    full = run_scenario("forget-svgd", {**params, "forget_stop_accuracy": None}, seed=2)
    timeline = full[full["run_id"].str.startswith("forget")].reset_index(drop=True)
    forget = timeline[timeline["event"].isin(["init", "iteration"])].reset_index(drop=True)
    acc = forget["forget_train_acc"]
    assert len(forget) == 7 and acc.between(0, 1).all()
    assert acc[0] > acc[1] > acc[2]           # unlearning lowers the agents' own accuracy
    limit = (acc[1] + acc[2]) / 2
    stopped = run_scenario("forget-svgd", {**params, "forget_stop_accuracy": limit}, seed=2)
    cut = stopped[stopped["run_id"].str.startswith("forget")].reset_index(drop=True)
    assert cut[cut["event"] != "forget_request"]["iteration"].tolist() == [0, 1, 2]
    pd.testing.assert_frame_equal(cut, timeline.iloc[:len(cut)])


@pytest.mark.parametrize("hidden", [1, 8, 16, 100])
def test_model_dims_computed_without_torch_match_the_models(hidden):
    assert mlp_dim(hidden) == BayesianMLP(784, hidden, 10).d
    assert head_dim(hidden) == LogisticRegression(hidden, 10).d
