"""One name for one idea: ``rounds``, ``local_steps``, ``local_steps_values``,
``points_per_agent``. The old names stay accepted everywhere a parameter comes in (``--set``,
``--grid``, TOML, :func:`bflnet.run`, a learner's keywords, the record of an older result
file) with one deprecation line on stderr, and give the same tables."""

import dataclasses
import json

import pandas as pd
import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.runs.config_file import sweep_request
from bflnet.runs.registry import scenario_names
from bflnet.runs.sweep import plan_sweep
from bflnet.scenarios import get_scenario
from bflnet.validation import renames

NAME = "gfvl-beta-bernoulli"
SMALL = ["--set", "K=5", "--set", "runs=2", "--set", "graphs=ring", "--seed", "3"]


@pytest.fixture(autouse=True)
def fresh_notes():
    """Each test sees the notes (they are printed once per process and old name)."""
    renames._NOTED.clear()
    yield
    renames._NOTED.clear()


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("note: ")]


def test_every_old_name_maps_to_a_field_and_is_not_one():
    checked = 0
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        fields = {f.name for f in dataclasses.fields(cls)}
        for old, new in renames.renamed_fields(cls).items():
            if new in fields:  # a base class may rename a field a subclass redefines
                assert old not in fields, (name, old)
                checked += 1
    assert checked >= 20


def test_set_with_an_old_name_gives_the_same_table_and_one_note(tmp_path, capsys):
    new, old = tmp_path / "new.csv", tmp_path / "old.csv"
    assert main(["run", NAME, *SMALL, "--set", "rounds=7", "--out", str(new)]) == 0
    assert notes(capsys.readouterr().err) == []
    assert main(["run", NAME, *SMALL, "--set", "iterations=7", "--out", str(old)]) == 0
    err = capsys.readouterr().err
    assert notes(err) == [f"note: {NAME}: parameter 'iterations' is now called 'rounds' "
                          "(the old name is deprecated)"]
    assert old.read_bytes() == new.read_bytes()
    # the record holds the new name: a rerun needs no alias
    assert json.loads(old.with_name("old.csv.json").read_text())["config"]["rounds"] == 7


def test_old_and_new_name_together_is_a_one_line_error(capsys):
    assert main(["run", NAME, "--set", "rounds=7", "--set", "iterations=7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("rounds: given twice ('iterations' is its old name)")


def test_toml_api_and_learner_keywords_accept_the_old_names(tmp_path, capsys):
    config = tmp_path / "exp.toml"
    config.write_text(f'scenario = "{NAME}"\nseed = 3\n[params]\nK = 5\nruns = 2\n'
                      'graphs = "ring"\niterations = 7\n')
    out = tmp_path / "toml.csv"
    assert main(["run", "--config", str(config), "--out", str(out)]) == 0
    assert len(notes(capsys.readouterr().err)) == 1
    renames._NOTED.clear()
    old = bflnet.run(NAME, seed=3, K=5, runs=2, graphs="ring", iterations=7)
    assert len(notes(capsys.readouterr().err)) == 1
    new = bflnet.run(NAME, seed=3, K=5, runs=2, graphs="ring", rounds=7)
    pd.testing.assert_frame_equal(old, new)
    assert pd.read_csv(out)["kl"].tolist() == pytest.approx(new["kl"].tolist(), rel=1e-15)

    from bflnet.learners.hyper import DSVGDParams
    from bflnet.validation.params import with_overrides
    assert with_overrides(DSVGDParams(), {"local_iters": 3}).local_steps == 3
    assert "'local_iters' is now called 'local_steps'" in capsys.readouterr().err


def test_grid_keys_are_renamed_for_the_sweep(tmp_path, capsys):
    request = sweep_request("unlearning-latency", None, ["learn_iterations=5,6"],
                            ["max_iterations=100"], 1, str(tmp_path / "s"))
    assert dict(request.grid) == {"learn_rounds": [5, 6]}
    assert dict(request.fixed) == {"max_rounds": 100}
    assert len(notes(capsys.readouterr().err)) == 2
    plan = plan_sweep(NAME, {"iterations": [5]}, 1, fixed={"K": 4})
    assert plan.grid == {"rounds": (5,)}


def test_rerun_of_a_record_with_the_old_names(tmp_path, capsys):
    """A file made by an older bflnet stores the old names; its rerun still reproduces."""
    path = tmp_path / "r.csv"
    assert main(["run", NAME, *SMALL, "--set", "rounds=6", "--out", str(path)]) == 0
    sidecar = path.with_name("r.csv.json")
    record = json.loads(sidecar.read_text())
    record["config"]["iterations"] = record["config"].pop("rounds")
    record["bflnet"] = "0.0.1"  # an older version: its names may differ
    sidecar.write_text(json.dumps(record))
    capsys.readouterr()
    assert main(["rerun", str(path), "--out", str(tmp_path / "again.csv")]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "again.csv").read_bytes() == path.read_bytes()
    assert "'iterations' is now called 'rounds'" in err


def test_describe_names_the_old_names_and_the_list_axes(capsys):
    assert main(["describe", "gfvl-beta-exponential"]) == 0
    out = capsys.readouterr().out
    assert "(old name, deprecated: iterations)" in out
    assert "(old name, deprecated: local_iters)" in out
    assert "--grid local_steps_values=1,10" in out


def test_a_comma_list_and_a_grid_over_it_give_the_same_rows(tmp_path):
    """``describe``'s claim: ``--grid local_steps_values=1,3`` runs the rows that
    ``--set local_steps_values=1,3`` runs, one sweep point per value."""
    fixed = {"K": 4, "runs": 2, "rounds": 12, "eval_every": 6, "points_per_agent": 10}
    listed = bflnet.run("gfvl-beta-exponential", seed=0, local_steps_values="1,3", **fixed)
    swept = bflnet.sweep("gfvl-beta-exponential", {"local_steps_values": ["1", "3"]},
                         tmp_path / "s", seeds=[0], **fixed)
    swept = swept[list(listed.columns)].sort_values(["L", "run", "iteration"])
    pd.testing.assert_frame_equal(swept.reset_index(drop=True),
                                  listed.sort_values(["L", "run", "iteration"])
                                  .reset_index(drop=True), check_dtype=False)
