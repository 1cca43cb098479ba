"""``bflnet summarize`` as a user runs it (a subprocess): the table it prints and writes,
the same as ``bflnet.summarize``; a bad argument or table is one line on stderr, exit
code 2, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import bflnet

SRC = Path(__file__).resolve().parents[2] / "src"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", "summarize", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two MACs x two seeds; by hand (acc >= 0.8): links t 1 and 2; tdma t 3 and never."""
    rows = []
    for mac, dt, curves in (("links", 1.0, ([0.1, 0.8, 0.9], [0.1, 0.5, 0.85])),
                            ("tdma", 3.0, ([0.1, 0.9, 0.9], [0.1, 0.2, 0.3]))):
        for seed, acc in enumerate(curves):
            for i, a in enumerate(acc):
                rows.append({"mac": mac, "seed": seed, "run_id": f"{mac}-{seed}",
                             "iteration": i, "time_s": i * dt, "cum_bits": 10 * i,
                             "acc": a})
    path = tmp_path_factory.mktemp("summarize") / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_prints_mean_sd_and_writes_the_tidy_table(table: Path, tmp_path: Path):
    shown = _cli(str(table), "--target", "acc>=0.8", "--reference", "mac=links",
                 cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.splitlines() == [
        "bflnet: settings (--by): mac; runs told apart by run_id; replicates: seed"]
    lines = shown.stdout.splitlines()
    assert lines[1].split() == ["links", "acc>=0.8", "2/2", "1.5", "±", "0.71", "15", "±",
                                "7.1", "1", "±", "0", "1", "±", "0"]
    assert lines[2].split() == ["tdma", "acc>=0.8", "1/2", "3", "10", "3", "1"]
    out = tmp_path / "s.csv"
    written = _cli(str(table), "--target", "acc>=0.8", "--reference", "mac=links",
                   "--x", "time_s", "--out", str(out), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert written.stderr.splitlines()[-1] == f"wrote 2 rows to {out}"
    frame = pd.read_csv(out)
    api = bflnet.summarize(table, "acc>=0.8", reference={"mac": "links"}, x="time_s")
    pd.testing.assert_frame_equal(frame, api, check_dtype=False)
    assert frame["time_s_ratio_to_reference_mean"].tolist() == [1.0, 3.0]
    assert frame["reached_share"].tolist() == [1.0, 0.5]


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "acc=0.8"], "--target: expected COLUMN<=VALUE or COLUMN>=VALUE"),
    (["--target", "acc>=0.8", "--reference", "mac=csma"],
     "--reference mac=csma: no run has this value; mac takes links, tdma"),
    (["--target", "acc>=0.8", "--by", "seed", "--by", "run_id", "--reference", "mac=links"],
     "--reference mac: not one of the setting columns (seed, run_id)"),
    (["--target", "acc>=0.8", "--by", "iteration"], "--by iteration: not constant"),
    (["--target", "acc>=0.8", "--out", "s.txt"], "--out: must end in .csv or .parquet"),
    (["--last", "mac"], "--last mac: not a numeric column"),
])
def test_bad_arguments(table: Path, tmp_path: Path, args: list[str], message: str):
    result = _cli(str(table), *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"bflnet: error: {result.stderr[15:].strip()}"]
    assert result.stderr.startswith(f"bflnet: error: {message}")
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_bad_tables_and_an_existing_out(tmp_path: Path, table: Path):
    (tmp_path / "bad.csv").write_text("not,a\n1,2\n")
    (tmp_path / "empty.csv").write_text("acc,time_s\n")
    (tmp_path / "s.csv").write_text("keep me")
    for args, message in (
            (["missing.csv", "--target", "a>=1"], "file: 'missing.csv' does not exist"),
            (["bad.csv", "--target", "b>=1"], "--target: unknown column 'b'"),
            (["empty.csv", "--target", "acc>=1"], "table: has no rows"),
            ([str(table), "--target", "acc>=1", "--out", "s.csv"], "--out: 's.csv' already "
                                                                    "exists")):
        result = _cli(*args, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith(f"bflnet: error: {message}")
    assert (tmp_path / "s.csv").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "empty.csv", "s.csv"]


def test_the_api_reads_files_and_filters_rows_like_the_command(table: Path, tmp_path: Path):
    out = tmp_path / "s.parquet"
    result = _cli(str(table), "--target", "acc>=0.8", "--where", "mac=tdma", "--out",
                  str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    api = bflnet.summarize(str(table), ["acc>=0.8"], where=["mac=tdma"])
    pd.testing.assert_frame_equal(pd.read_parquet(out), api, check_dtype=False)
    assert api["runs"].tolist() == [2] and api["reached"].tolist() == [1]
    with pytest.raises(ValueError, match="--where mac=csma: no row has this value"):
        bflnet.summarize(str(table), "acc>=0.8", where="mac=csma")
