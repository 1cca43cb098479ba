"""`bflnet rerun` on a tampered result file: the stored record is checked like a config
before anything runs, and a bad one is refused in one line naming the bad key (exit 2);
a table or sidecar that is not what it claims to be likewise."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.runs import registry
from bflnet.runs.output import MAX_METADATA_BYTES, METADATA_KEY, read_metadata
from bflnet.runs.rerun import check_record

NAME = "consensus-averaging"


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """A real run's CSV and its sidecar record."""
    directory = tmp_path_factory.mktemp("run")
    path = directory / "r.csv"
    assert main(["run", NAME, "--set", "K=5", "--set", "rounds=3", "--no-progress",
                 "--out", str(path)]) == 0
    return path


@pytest.fixture
def no_run(monkeypatch):
    monkeypatch.setattr(registry.Scenario, "run",
                        lambda *a, **k: pytest.fail("the run started"))
    monkeypatch.setattr("bflnet.runs.sweep.sweep",
                        lambda *a, **k: pytest.fail("the sweep started"))


def one_line(capsys, argv, *texts):
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: "), err
    for text in texts:
        assert text in err, (text, err)


def _set(key, value):
    return lambda record: {**record, key: value}


def _set_config(key, value):
    return lambda record: {**record, "config": {**record["config"], key: value}}


def _drop(key):
    return lambda record: {k: v for k, v in record.items() if k != key}


def _drop_config(key):
    return lambda record: {**record, "config": {k: v for k, v in record["config"].items()
                                                if k != key}}


RUN_TAMPERS = {
    "scenario a list": (_set("scenario", [NAME]), "scenario: must be a scenario name"),
    "scenario a number": (_set("scenario", 5), "scenario: must be"),
    "scenario null": (_set("scenario", None), "scenario: must be"),
    "scenario unknown": (_set("scenario", "nope"), "scenario: unknown scenario 'nope'"),
    "no scenario": (_drop("scenario"), "lacks 'scenario'"),
    "seed a string": (_set("seed", "3"), "seed: must be a non-negative integer"),
    "seed null": (_set("seed", None), "seed: must be"),
    "seed negative": (_set("seed", -1), "seed: must be"),
    "seed true": (_set("seed", True), "seed: must be"),
    "seed a float": (_set("seed", 1.5), "seed: must be"),
    "no seed": (_drop("seed"), "lacks 'seed'"),
    "config 5": (_set("config", 5), "config: must be an object"),
    "config 'abc'": (_set("config", "abc"), "config: must be an object"),
    "config null": (_set("config", None), "config: must be an object"),
    "config []": (_set("config", []), "config: must be an object"),
    "config {}": (_set("config", {}), "config: lacks the parameter"),
    "no config": (_drop("config"), "lacks 'config'"),
    "a parameter missing": (_drop_config("K"), "config: lacks the parameter 'K'"),
    "a parameter 'abc'": (_set_config("K", "abc"), "config: K: must be"),
    "a parameter a list": (_set_config("K", [5]), "config: K: must be"),
    "a parameter out of range": (_set_config("K", 1), "config: K: must be"),
    "a parameter null": (_set_config("K", None), "config: K: must be"),
    "an unknown parameter": (_set_config("colour", "red"), "unknown parameter 'colour'"),
    "kind unknown": (_set("kind", "blob"), "kind: must be 'run' or 'sweep'"),
    "kind a list": (_set("kind", ["run"]), "kind: must be"),
    "no kind": (_drop("kind"), "lacks 'kind'"),
    "version a number": (_set("bflnet", 5), "bflnet: must be a version string"),
    "no version": (_drop("bflnet"), "lacks 'bflnet'"),
    "an unknown key": (_set("extra", 1), "unknown key 'extra'"),
}

SWEEP = {"bflnet": bflnet.__version__, "kind": "sweep", "scenario": NAME,
         "grid": {"graph": ["ring", "complete"]}, "fixed": {"K": 5, "rounds": 3},
         "seeds": [0, 1]}

SWEEP_TAMPERS = {
    "grid 5": (_set("grid", 5), "grid: must be an object of lists"),
    "grid of an empty list": (_set("grid", {"K": []}), "grid: 'K' must be a non-empty list"),
    "grid of a bad value": (_set("grid", {"K": [5, "x"]}), "grid: K: must be"),
    "grid of an unknown parameter": (_set("grid", {"colour": [1]}), "unknown parameter"),
    "fixed []": (_set("fixed", []), "fixed: must be an object"),
    "fixed of a bad value": (_set("fixed", {"K": 1e400}), "fixed: K: must be"),
    "seeds 'abc'": (_set("seeds", "abc"), "seeds: must be a non-empty list"),
    "seeds [-1]": (_set("seeds", [-1]), "seeds: must be"),
    "seeds []": (_set("seeds", []), "seeds: must be"),
    "no seeds": (_drop("seeds"), "lacks 'seeds'"),
}


def _write_sidecar(tmp_path, run_file, record_text):
    table = tmp_path / "t.csv"
    table.write_bytes(run_file.read_bytes())
    (tmp_path / "t.csv.json").write_text(record_text)
    return table


@pytest.mark.parametrize("case", RUN_TAMPERS)
def test_a_tampered_run_record_is_refused_naming_the_key(case, run_file, tmp_path, capsys,
                                                         no_run):
    tamper, text = RUN_TAMPERS[case]
    record = tamper(read_metadata(run_file))
    table = _write_sidecar(tmp_path, run_file, json.dumps(record))
    one_line(capsys, ["rerun", str(table), "--out", str(tmp_path / "again.csv")],
             f"the bflnet metadata of {str(table)!r}", text)
    assert not (tmp_path / "again.csv").exists()


@pytest.mark.parametrize("case", SWEEP_TAMPERS)
def test_a_tampered_sweep_record_is_refused_naming_the_key(case, tmp_path, capsys, no_run):
    tamper, text = SWEEP_TAMPERS[case]
    table = tmp_path / "sweep.parquet"
    arrow = pa.table({"x": [1]})
    pq.write_table(arrow.replace_schema_metadata(
        {METADATA_KEY: json.dumps(tamper(SWEEP), allow_nan=True).encode()}), table)
    one_line(capsys, ["rerun", str(table)], text)


def test_the_untampered_sweep_record_passes_the_check():
    assert check_record(SWEEP) == SWEEP


def test_a_record_of_another_version_may_lack_or_add_fields(run_file):
    record = read_metadata(run_file)
    older = {**record, "bflnet": "0.0.1", "extra": 1,
             "config": {k: v for k, v in record["config"].items() if k != "K"}}
    assert check_record(older) == older


BROKEN_FILES = {
    "sidecar not JSON": ("t.csv", None, b"{not json", "is not JSON"),
    "sidecar a JSON list": ("t.csv", None, b"[1, 2]", "is not a JSON object"),
    "sidecar nested 100 000 deep": ("t.csv", None, b"[" * 100_000 + b"]" * 100_000,
                                    "nested too deeply"),
    "sidecar over the size bound": ("t.csv", None, b" " * (MAX_METADATA_BYTES + 1),
                                    "larger than"),
    "sidecar binary": ("t.csv", None, b"\x00\x01\xff", "binary file"),
    "sidecar not UTF-8": ("t.csv", None, b'{"a": "\xe9"}', "not UTF-8"),
    "sidecar a directory": ("t.csv", None, "dir", "it is a directory"),
    "table binary": ("t.csv", b"\xff\xfe\x00\x01" * 100, None, "cannot read"),
    "parquet random bytes": ("t.parquet", b"\x13\x37" * 500, None, "cannot read"),
}


@pytest.mark.parametrize("case", BROKEN_FILES)
def test_a_broken_result_file_is_one_line(case, run_file, tmp_path, capsys, no_run):
    name, table_bytes, sidecar_bytes, text = BROKEN_FILES[case]
    table = tmp_path / name
    table.write_bytes(run_file.read_bytes() if table_bytes is None else table_bytes)
    sidecar = tmp_path / f"{name}.json"
    if sidecar_bytes == "dir":
        sidecar.mkdir()
    elif sidecar_bytes is not None:
        sidecar.write_bytes(sidecar_bytes)
    else:
        sidecar.write_bytes((run_file.parent / "r.csv.json").read_bytes())
    one_line(capsys, ["rerun", str(table)], text)
