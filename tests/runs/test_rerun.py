"""Result files say how they were made, and `bflnet rerun FILE` makes them again byte for
byte: runs (.csv with its sidecar, .parquet), a sweep's parts and a sweep's table."""

import doctest
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.runs import provenance
from bflnet.runs.output import read_metadata, write_frame
from bflnet.runs.provenance import run_record
from bflnet.runs.sweep import sweep, sweep_paths
from bflnet.scenarios import get_scenario

NAME = "consensus-averaging"
RUN = ["run", NAME, "--set", "graph=ring", "--set", "K=6", "--set", "rounds=12",
       "--set", "loss_prob=0.2", "--seed", "5", "--out"]


def file_bytes(path):
    """A result file's bytes, with its CSV sidecar's if there is one."""
    sidecar = path.with_name(path.name + ".json")
    return path.read_bytes(), sidecar.read_bytes() if sidecar.exists() else None


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rerun_reproduces_a_run_file_byte_for_byte(tmp_path, capsys, suffix):
    original, again = tmp_path / f"r{suffix}", tmp_path / f"again{suffix}"
    assert main([*RUN, str(original)]) == 0
    assert main(["rerun", str(original), "--out", str(again)]) == 0
    assert file_bytes(again) == file_bytes(original)
    assert f"reproduces {original} byte for byte" in capsys.readouterr().err
    # without --out: a summary on stdout and the same verdict
    assert main(["rerun", str(original)]) == 0
    captured = capsys.readouterr()
    assert "max_deviation" in captured.out and "byte for byte" in captured.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_run_file_stores_the_exact_config_the_seed_and_the_version(tmp_path, suffix):
    path = tmp_path / f"r{suffix}"
    assert main([*RUN, str(path)]) == 0
    record = read_metadata(path)
    config = get_scenario(NAME).config({"graph": "ring", "K": 6, "rounds": 12,
                                        "loss_prob": 0.2})
    assert record == {"bflnet": bflnet.__version__, "kind": "run", "scenario": NAME,
                      "seed": 5, "config": provenance.canonical_config(config)}
    assert get_scenario(NAME).config(record["config"]) == config  # the whole config
    if suffix == ".parquet":  # key-value metadata of the Parquet schema
        stored = pq.read_schema(path).metadata[b"bflnet"]
        assert json.loads(stored) == record
    else:  # a sidecar FILE.csv.json
        assert json.loads((tmp_path / "r.csv.json").read_text()) == record


def one_line_error(capsys, argv, text):
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ") and text in err, err


def test_a_file_without_metadata_gives_a_one_line_error(tmp_path, capsys):
    frame = pd.DataFrame({"iteration": [0, 1], "x": [0.5, 0.25]})
    frame.to_csv(tmp_path / "plain.csv", index=False)
    frame.to_parquet(tmp_path / "plain.parquet", index=False)
    one_line_error(capsys, ["rerun", str(tmp_path / "plain.csv")],
                   "has no bflnet metadata (plain.csv.json is missing)")
    one_line_error(capsys, ["rerun", str(tmp_path / "plain.parquet")], "has no bflnet metadata")
    (tmp_path / "plain.csv.json").write_text("{not json")
    one_line_error(capsys, ["rerun", str(tmp_path / "plain.csv")], "is not JSON")
    (tmp_path / "plain.csv.json").write_text('{"bflnet": "0.1.0", "kind": "run"}')
    one_line_error(capsys, ["rerun", str(tmp_path / "plain.csv")], "lacks 'scenario'")
    one_line_error(capsys, ["rerun", str(tmp_path / "missing.csv")], "does not exist")
    one_line_error(capsys, ["rerun", str(tmp_path / "r.toml")], "file: must end in .csv")


def test_a_version_mismatch_warns_in_one_line_or_errors_with_strict_version(tmp_path, capsys):
    config = get_scenario(NAME).config({"K": 4, "rounds": 3})
    frame = get_scenario(NAME).run(config, seed=1)
    old = {**run_record(NAME, config, 1), "bflnet": "0.0.1"}
    write_frame(frame, tmp_path / "old.parquet", old)
    assert main(["rerun", str(tmp_path / "old.parquet")]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("bflnet:")]
    assert err[0] == (f"bflnet: warning: {tmp_path / 'old.parquet'} was made by bflnet 0.0.1, "
                      f"this is bflnet {bflnet.__version__}; the rerun may differ")
    # the new file records this version, so only the rows can match
    assert err[1] == f"bflnet: same rows as {tmp_path / 'old.parquet'}; the bytes differ"
    one_line_error(capsys, ["rerun", str(tmp_path / "old.parquet"), "--strict-version"],
                   "version: ")


def test_a_file_whose_rows_were_changed_is_not_reproduced(tmp_path, capsys):
    path = tmp_path / "r.csv"
    assert main([*RUN, str(path)]) == 0
    frame = pd.read_csv(path)
    frame.loc[3, "max_deviation"] *= 2
    frame.to_csv(path, index=False)  # the sidecar still describes the original run
    assert main(["rerun", str(path)]) == 1
    assert f"bflnet: differs from {path}" in capsys.readouterr().err
    # written in the other format, the run is made again but not compared
    assert main(["rerun", str(path), "--out", str(tmp_path / "r.parquet")]) == 0
    assert "in another format" in capsys.readouterr().err
    assert read_metadata(tmp_path / "r.parquet") == read_metadata(path)


def test_rerun_reproduces_a_sweep_table_and_its_parts_byte_for_byte(tmp_path, capsys):
    out = tmp_path / "sweep.parquet"
    table = sweep(NAME, {"graph": ["ring", "complete"]}, [0, 3], out,
                  fixed={"K": 5, "rounds": 8, "loss_prob": 0.1}, workers=1, progress=False)
    record = read_metadata(out)
    assert record == {"bflnet": bflnet.__version__, "kind": "sweep", "scenario": NAME,
                      "grid": {"graph": ["ring", "complete"]},
                      "fixed": {"K": 5, "rounds": 8, "loss_prob": 0.1}, "seeds": [0, 3]}
    part = sweep_paths(out).part(table["run_id"].iloc[-1])
    assert read_metadata(part)["seed"] == 3 and read_metadata(part)["kind"] == "run"
    assert main(["rerun", str(part), "--out", str(tmp_path / "part.parquet")]) == 0
    assert (tmp_path / "part.parquet").read_bytes() == part.read_bytes()
    again = tmp_path / "again.parquet"
    assert main(["rerun", str(out), "--out", str(again), "--workers", "1",
                 "--no-progress"]) == 0
    assert again.read_bytes() == out.read_bytes()
    assert f"reproduces {out} byte for byte" in capsys.readouterr().err
    # over an existing file: refused unless --force
    one_line_error(capsys, ["rerun", str(out), "--out", str(again)], "--force")
    # into a sweep that already has runs: refused (they would be reused, not run again)
    one_line_error(capsys, ["rerun", str(out), "--out", str(again), "--force"],
                   "already holds a sweep")


def test_the_provenance_example_runs():
    failures, tried = doctest.testmod(provenance)
    assert tried > 0 and failures == 0
