"""A result file's record says what ran: ``d2d-medium`` runs every MAC of ``macs`` and
every setting of ``broadcasts``, so its record holds those lists and none of the fields
it refuses (``medium``, ``mac``, ``broadcast``, the area, ...), which a record would
otherwise hold at misleading defaults (``medium: links, mac: csma``). ``bflnet rerun``
makes such a file again byte for byte; a file written while the record still held them
reruns too, with one note saying why its bytes differ; a record holding one of them at
another value is refused in one line."""

from __future__ import annotations

import json

import pytest

from bflnet.cli.main import main
from bflnet.scenarios import get_scenario

NAME = "d2d-medium"
#: The study's radio (docs/wireless-medium.md), as an older file's defaults were.
SETS = {"tasks": "consensus", "K": 6, "rounds": 3, "macs": "links,tdma",
        "tx_power_dbm": 0.0, "path_loss_exponent": 3.5, "radius_m": 30.0}
#: What an older record held of the fields d2d-medium refuses (their defaults).
OLD_KEYS = {"graph": "random-geometric", "area_m": 100.0, "medium": "links", "mac": "csma",
            "broadcast": False, "mean_snr_db": 60.0, "rate_bps": 1e6, "loss_prob": 0.0,
            "distance_m": 10.0, "layout": "random", "edge_prob": 0.3, "graph_file": None,
            "ge_p_good_to_bad": 0.01, "ge_p_bad_to_good": 0.3, "ge_loss_bad": 1.0}


def _args() -> list[str]:
    return [x for k, v in SETS.items() for x in ("--set", f"{k}={v}")]


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("d2d") / "r.csv"
    assert main(["run", NAME, *_args(), "--seed", "2", "--no-progress", "--out",
                 str(path)]) == 0
    return path


def _sidecar(path):
    return path.with_name(path.name + ".json")


def test_the_record_holds_the_list_parameters_not_the_refused_fields(run_file):
    config = json.loads(_sidecar(run_file).read_text())["config"]
    refused = set(get_scenario(NAME).config_cls.refused_fields())
    assert set(OLD_KEYS) == refused  # every field d2d-medium refuses, and only those
    assert not refused & set(config)
    assert config["macs"] == "links,tdma" and config["broadcasts"] == "false,true"
    assert config["tx_power_dbm"] == 0.0 and config["radius_m"] == 30.0
    # the record is still the whole config: the refused fields are at their defaults
    assert get_scenario(NAME).config(config) == get_scenario(NAME).config(SETS)


def test_rerun_reproduces_it_byte_for_byte(run_file, tmp_path, capsys):
    again = tmp_path / "again.csv"
    assert main(["rerun", str(run_file), "--out", str(again), "--no-progress"]) == 0
    assert again.read_bytes() == run_file.read_bytes()
    assert _sidecar(again).read_bytes() == _sidecar(run_file).read_bytes()
    err = capsys.readouterr().err
    assert "byte for byte" in err and "warning" not in err


def test_a_file_whose_record_holds_them_reruns_with_one_note(run_file, tmp_path, capsys):
    old = tmp_path / "old.csv"
    old.write_bytes(run_file.read_bytes())
    record = json.loads(_sidecar(run_file).read_text())
    record["config"] = {**record["config"], **OLD_KEYS}
    _sidecar(old).write_text(json.dumps(record))
    again = tmp_path / "again.csv"
    assert main(["rerun", str(old), "--out", str(again), "--no-progress"]) == 0
    assert again.read_bytes() == old.read_bytes()  # the same rows, byte for byte
    lines = capsys.readouterr().err.splitlines()
    notes = [line for line in lines if "no longer records" in line]
    assert len(notes) == 1 and notes[0].startswith(f"bflnet: warning: {old} records graph"), \
        lines
    assert "medium, mac, broadcast" in notes[0] and "the bytes differ" in notes[0]
    assert lines[-1] == f"bflnet: same rows as {old}; the bytes differ"


def test_a_record_holding_one_at_another_value_is_refused_in_one_line(run_file, tmp_path,
                                                                      capsys):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(run_file.read_bytes())
    record = json.loads(_sidecar(run_file).read_text())
    record["config"] = {**record["config"], "mac": "tdma"}
    _sidecar(bad).write_text(json.dumps(record))
    assert main(["rerun", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "config: mac: not used by d2d-medium; macs decides" in err, err
