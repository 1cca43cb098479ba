"""Saved states (``--save-state`` / ``--load-state``): learn once, unlearn many times.

A run started from saved states continues the saved simulation exactly: its table is
byte-identical to the one of the run that learnt and unlearnt in one go."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario, state_scenarios

NAME = "unlearning-latency"


def _csv(frame) -> str:
    return frame.to_csv(index=False)


def _reseal(state: Path) -> None:
    """Write ``checksums.json`` again for the files as they are now (a hand edit that
    also updates the checksums: the schema must still refuse what is wrong)."""
    digests = {name: hashlib.sha256((state / name).read_bytes()).hexdigest()
               for name in ("arrays.npz", "state.json")}
    (state / "checksums.json").write_text(json.dumps(
        {"format": "bflnet-state-checksums/1", "sha256": digests}))


@pytest.mark.parametrize("params", [
    {"runs": 4, "learn_rounds": 37},
    {"runs": 3, "learn_rounds": 0},
    {"runs": 3, "learn_rounds": 25, "channel": "fixed", "loss_prob": 0.3},
    {"runs": 3, "learn_rounds": 25, "channel": "gilbert-elliott", "ge_p_good_to_bad": 0.2},
    {"runs": 3, "learn_rounds": 25, "channel": "rayleigh", "mean_snr_db": 30.0,
     "graph": "ring", "walk": "uniform-neighbour"},
])
def test_learn_save_load_unlearn_is_learn_then_unlearn(tmp_path: Path, params) -> None:
    scenario = get_scenario(NAME)
    config = scenario.config(params)
    plain = scenario.run(config, seed=5)
    saved = scenario.run(config, seed=5, save_state=tmp_path / "s")
    loaded = scenario.run(config, seed=5, load_state=tmp_path / "s")
    assert _csv(saved) == _csv(plain)  # saving changes nothing
    assert _csv(loaded) == _csv(plain)  # and the loaded run continues it exactly
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "arrays.npz", "checksums.json", "state.json"]


def test_unlearn_many_from_one_learnt_state(tmp_path: Path) -> None:
    """Another forget request from the same learnt state: the same as learning again with
    that request (the learning does not depend on which agent is forgotten later)."""
    scenario = get_scenario(NAME)
    scenario.run(scenario.config({"runs": 3, "learn_rounds": 30}), seed=1,
                 save_state=tmp_path / "s")
    other = scenario.config({"runs": 3, "learn_rounds": 30, "forget": "0,4"})
    loaded = scenario.run(other, seed=1, load_state=tmp_path / "s")
    assert _csv(loaded) == _csv(scenario.run(other, seed=1))
    assert loaded["unlearn_iterations"].notna().all()


def test_states_hold_no_pickle(tmp_path: Path) -> None:
    import numpy as np

    scenario = get_scenario(NAME)
    scenario.run(scenario.config({"runs": 2, "learn_rounds": 20}), seed=0,
                 save_state=tmp_path / "s")
    record = json.loads((tmp_path / "s" / "state.json").read_text())
    assert record["scenario"] == NAME and record["seed"] == 0
    assert record["config"]["learn_rounds"] == 20 and len(record["runs"]) == 2
    with np.load(tmp_path / "s" / "arrays.npz", allow_pickle=False) as npz:
        assert "run0.state" in npz.files and npz["run0.state"].shape == (2,)


def _error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_cli_round_trip_and_refusals(tmp_path: Path, capsys) -> None:
    state, a, b = tmp_path / "s", tmp_path / "a.csv", tmp_path / "b.csv"
    base = ["run", NAME, "--set", "runs=3", "--set", "learn_rounds=20", "--no-progress"]
    assert main([*base, "--save-state", str(state), "--out", str(a)]) == 0
    assert main([*base, "--load-state", str(state), "--out", str(b)]) == 0
    assert a.read_text() == b.read_text()
    capsys.readouterr()
    assert "already holds a saved state" in _error([*base, "--save-state", str(state)], capsys)
    assert "--seed 0" in _error([*base, "--seed", "1", "--load-state", str(state)], capsys)
    assert "learn_rounds: the state in" in _error(
        [*base, "--set", "learn_rounds=21", "--load-state", str(state)], capsys)
    other = _error(["run", "gfvl-beta-bernoulli", "--load-state", str(state)], capsys)
    assert "cannot save or load states" in other and NAME in other
    assert "does not exist" in _error([*base, "--load-state", str(tmp_path / "no")], capsys)
    assert "not a directory" in _error([*base, "--load-state", str(a)], capsys)
    assert "not a directory" in _error([*base, "--save-state", str(a)], capsys)
    assert "holds no saved state" in _error([*base, "--load-state", str(tmp_path)], capsys)
    (state / "arrays.npz").write_bytes(b"junk")
    assert "arrays.npz' was changed after it was saved" in _error(
        [*base, "--load-state", str(state)], capsys)
    _reseal(state)
    assert "cannot read" in _error([*base, "--load-state", str(state)], capsys)


def test_scenario_of_another_state_refused(tmp_path: Path) -> None:
    from bflnet.runs.states import check_compatible

    with pytest.raises(ValueError, match="saved by scenario 'x'"):
        check_compatible({"scenario": "x", "seed": 0, "config": {}}, NAME, {}, 0, ())
    assert state_scenarios() == ["forget-svgd", "gfvl-unlearning", NAME]


def test_unwritable_save_dir(tmp_path: Path) -> None:
    import os

    from bflnet.runs.states import check_save_dir

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(ValueError, match="cannot write in"):
            check_save_dir(locked / "s")
    finally:
        locked.chmod(0o700)


def test_gfvl_unlearning_rows_after_the_request(tmp_path: Path) -> None:
    """gfvl-unlearning: the loaded run's rows are the one-go run's rows from the request
    on (and its retraining rows), byte for byte; iterative unlearning from the same state
    is the one-go iterative run's."""
    scenario = get_scenario("gfvl-unlearning")
    params = {"runs": 2, "learn_rounds": 60, "rounds": 40, "eval_every": 7,
              "samples": 4, "loss_prob": 0.2}
    config = scenario.config(params)
    plain = scenario.run(config, seed=2, save_state=tmp_path / "s")
    loaded = scenario.run(config, seed=2, load_state=tmp_path / "s")
    after = plain[(plain["method"] == "retraining") | (plain["since_request"] >= 0)]
    assert len(loaded) == len(after) < len(plain)
    assert _csv(loaded) == _csv(after)
    iterative = scenario.config({**params, "unlearning": "iterative", "unlearn_visits": 3})
    again = scenario.run(iterative, seed=2, load_state=tmp_path / "s")
    one_go = scenario.run(iterative, seed=2)
    after = one_go[(one_go["method"] == "retraining") | (one_go["since_request"] >= 0)]
    assert _csv(again) == _csv(after)


@pytest.mark.parametrize(("path", "value", "message"), [
    (("now",), float("nan"), "checkpoint.now: must be a finite number"),
    (("now",), -5.0, "checkpoint.now: must be a finite number"),
    (("iteration",), "x", "checkpoint.iteration: must be 20, got 'x'"),
    (("current",), 99, "checkpoint.current: must be an integer in 0..9, got 99"),
    (("streams", "protocol.walk"), {"bit_generator": "MT19937"},
     "streams['protocol.walk'].has_uint32: missing"),
    (("streams", "protocol.walk", "bit_generator"), "MT19937",
     "streams['protocol.walk'].bit_generator: must be 'PCG64'"),
    (("links",), [[0]], "checkpoint.links[0]: must have 4 items"),
    (("state",), {"array": "nope"}, "checkpoint.state.array: must be 'run0.state'"),
    (("agent_states",), [[0, {"fields": {"eta": {"value": 1}}}]],
     "agent_states[0][1].fields.nu: missing"),
])
def test_a_tampered_state_is_one_line(tmp_path: Path, capsys, path, value, message) -> None:
    base = ["run", NAME, "--set", "runs=2", "--set", "learn_rounds=20", "--no-progress"]
    state = tmp_path / "s"
    assert main([*base, "--save-state", str(state)]) == 0
    record = json.loads((state / "state.json").read_text())
    target = record["runs"][0]["checkpoint"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (state / "state.json").write_text(json.dumps(record))
    _reseal(state)
    capsys.readouterr()
    assert message in _error([*base, "--load-state", str(state)], capsys)


@pytest.mark.parametrize(("name", "sets"), [
    (NAME, ["runs=2", "learn_rounds=20"]),
    ("gfvl-unlearning", ["runs=1", "learn_rounds=30", "rounds=20", "samples=4"]),
])
def test_rerun_of_a_loaded_run_loads_again(tmp_path: Path, capsys, name, sets) -> None:
    base = ["run", name, "--no-progress", *[x for s in sets for x in ("--set", s)]]
    state, out = tmp_path / "s", tmp_path / "a.csv"
    assert main([*base, "--save-state", str(state)]) == 0
    assert main([*base, "--load-state", str(state), "--out", str(out)]) == 0
    record = json.loads((tmp_path / "a.csv.json").read_text())
    assert record["load_state"] == str(state.resolve())
    capsys.readouterr()
    assert main(["rerun", str(out)]) == 0
    assert "reproduces" in capsys.readouterr().err


@pytest.fixture(scope="module")
def latency_state(tmp_path_factory) -> Path:
    """An unlearning-latency state saved with runs=2, learn_rounds=20, seed 3."""
    state = tmp_path_factory.mktemp("latency") / "s"
    scenario = get_scenario(NAME)
    scenario.run(scenario.config({"runs": 2, "learn_rounds": 20}), seed=3, save_state=state)
    return state


def test_a_load_takes_the_saved_settings_and_seed(latency_state: Path) -> None:
    """A load repeats nothing; settings of the learning given again (old names, an
    integer for a number) must equal the saved ones; the seed is the saved one."""
    import bflnet

    scenario = get_scenario(NAME)
    repeated = scenario.config({"runs": 2, "learn_rounds": 20, "forget": "0"})
    expected = _csv(scenario.run(repeated, seed=3, load_state=latency_state))
    assert scenario.load_config(latency_state, {"forget": "0"}) == (repeated, 3)
    assert _csv(bflnet.run(NAME, load_state=latency_state, forget="0")) == expected
    assert _csv(bflnet.run(NAME, 3, load_state=latency_state, forget="0", runs=2,
                           learn_iterations=20, prior_a=2, theta_true=0.3)) == expected
    with pytest.raises(ValueError, match=r"^learn_rounds: the state in '.*' was saved with "
                       r"learn_rounds=20, this run sets learn_rounds=21; .* may change only "
                       r"forget, max_rounds, retrain, threshold$"):
        bflnet.run(NAME, load_state=latency_state, learn_rounds=21)
    with pytest.raises(ValueError, match="prior_a: .* saved with prior_a=2.0, this run sets "
                       "prior_a=2.5"):
        bflnet.run(NAME, load_state=latency_state, prior_a=2.5)
    with pytest.raises(ValueError, match=r"^seed: .* saved with seed 3; .* give --seed 3\)$"):
        bflnet.run(NAME, 0, load_state=latency_state)
    with pytest.raises(ValueError, match="unknown parameter 'nope'"):
        bflnet.run(NAME, load_state=latency_state, nope=1)
    with pytest.raises(ValueError, match="saved by scenario 'unlearning-latency', not "
                       "'gfvl-unlearning'"):
        bflnet.run("gfvl-unlearning", load_state=latency_state)


def test_a_config_file_or_a_sweep_grid_is_checked_like_set(latency_state: Path, tmp_path,
                                                           capsys) -> None:
    file = tmp_path / "run.toml"
    file.write_text(f'scenario = "{NAME}"\n[params]\nlearn_rounds = 21\n')
    assert "learn_rounds: the state in" in _error(
        ["run", "--config", str(file), "--load-state", str(latency_state)], capsys)
    file.write_text('seed = 4\n[params]\nforget = "0"\n')
    assert "seed: the state in" in _error(
        ["run", "--config", str(file), "--load-state", str(latency_state)], capsys)
    file.write_text('seeds = 2\n[grid]\nforget = ["0", "1"]\n')
    assert "seeds: a sweep that loads" in _error(
        ["sweep", "--config", str(file), "--load-state", str(latency_state), "--out",
         str(tmp_path / "o")], capsys)
    assert not (tmp_path / "o").exists()


def test_a_sweep_that_loads_runs_the_saved_seed_only(latency_state: Path, tmp_path) -> None:
    import bflnet
    from bflnet.runs.sweep import plan_sweep

    plan = plan_sweep(NAME, {"forget": ["0", "last"]}, 1, {"threshold": 1e-3},
                      load_state=latency_state)
    assert plan.seeds == (3,) and plan.load_state == str(latency_state.resolve())
    assert [c["learn_rounds"] for c in plan.configs.values()] == [20, 20]
    assert plan_sweep(NAME, {"forget": ["0"]}, [3], load_state=latency_state).seeds == (3,)
    for seeds in (2, [0], [3, 4], True):
        with pytest.raises(ValueError, match=r"^seeds: a sweep that loads a saved state "
                           r"runs the state's seed \(3\) only"):
            plan_sweep(NAME, {"forget": ["0"]}, seeds, load_state=latency_state)
    with pytest.raises(ValueError, match="^learn_rounds: the state in"):
        plan_sweep(NAME, {"learn_rounds": [20, 30]}, 1, load_state=latency_state)
    with pytest.raises(ValueError, match="^runs: the state in"):  # nothing starts first
        bflnet.sweep(NAME, {"forget": ["0"]}, tmp_path / "o", load_state=latency_state,
                     runs=5)
    assert not (tmp_path / "o").exists()


def test_a_sweep_record_names_its_state() -> None:
    from bflnet.runs.provenance import sweep_record
    from bflnet.runs.rerun import check_record

    record = sweep_record(NAME, {"forget": ["0"]}, {}, [3], "/states/s")
    assert check_record(record)["load_state"] == "/states/s"
    with pytest.raises(ValueError, match="load_state: must be a directory name"):
        check_record({**record, "load_state": 5})


def test_gfvl_unlearning_chooses_who_is_forgotten_on_load(tmp_path: Path) -> None:
    """Another forget request from the saved learning: the rows from the request on of
    a run that learns with that request. With forget_theta the data depend on who is
    forgotten: a load keeps the saved agents (9 is 'last' here)."""
    scenario = get_scenario("gfvl-unlearning")
    params = {"runs": 1, "learn_rounds": 40, "rounds": 20, "eval_every": 5, "samples": 4}
    scenario.run(scenario.config(params), seed=1, save_state=tmp_path / "s")
    other = scenario.config({**params, "forget": "0,3"})
    one_go = scenario.run(other, seed=1)
    after = one_go[(one_go["method"] == "retraining") | (one_go["since_request"] >= 0)]
    loaded = scenario.run(other, seed=1, load_state=tmp_path / "s")
    assert _csv(loaded) == _csv(after)
    assert loaded["unlearned_at"].dropna().nunique() == 1
    theta = {**params, "forget_theta": 2.0}
    scenario.run(scenario.config(theta), seed=1, save_state=tmp_path / "t")
    scenario.run(scenario.config({**theta, "forget": "9"}), seed=1, load_state=tmp_path / "t")
    with pytest.raises(ValueError, match="^forget: the state was saved with forget='last', "
                       "this run sets forget='0'; with forget_theta set"):
        scenario.run(scenario.config({**theta, "forget": "0"}), seed=1,
                     load_state=tmp_path / "t")
