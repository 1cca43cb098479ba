"""The Python API (``bflnet.run``, ``bflnet.sweep``): the CLI's tables and errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.runs.output import read_frame
from bflnet.runs.registry import get_scenario

SMALL = {"K": 5, "runs": 3, "channel": "fixed", "loss_prob": 0.25}


def test_import_is_cheap() -> None:
    lazy = ("import sys, bflnet; "
            "print(sorted(m for m in ('pandas', 'simpy', 'torch', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    assert sorted(bflnet.__all__) == ["run", "summarize", "sweep"]


def test_run_is_the_cli_table(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    argv = ["run", "cover-time", "--seed", "4", "--no-progress", "--out", str(out)]
    for key, value in SMALL.items():
        argv += ["--set", f"{key}={value}"]
    assert main(argv) == 0
    frame = bflnet.run("cover-time", seed=4, **SMALL)
    assert frame.to_csv(index=False) == read_frame(out).to_csv(index=False)
    scenario = get_scenario("cover-time")
    assert frame.equals(scenario.run(scenario.config(SMALL), seed=4))


@pytest.mark.parametrize(("key", "value", "text"), [
    ("K", "x", "x"), ("K", 2.5, "2.5"), ("K", 1, "1"), ("nope", 1, "1"),
    ("loss_prob", 1.0, "1.0"), ("channel", "wifi", "wifi"), ("K", None, "none"),
])
def test_errors_are_the_cli_errors(key, value, text, capsys) -> None:
    with pytest.raises(ValueError) as caught:
        bflnet.run("cover-time", **{key: value})
    assert main(["run", "cover-time", "--set", f"{key}={text}"]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("bflnet: error: ")
    # the same message; the value shown as given (a number, or the --set text)
    assert str(caught.value).split(", got ")[0] == cli.split(", got ")[0]
    assert "\n" not in cli


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_bad_seed(seed) -> None:
    with pytest.raises(ValueError, match="seed: must be a non-negative integer"):
        bflnet.run("cover-time", seed=seed)


def test_unknown_scenario() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'; known: .*cover-time"):
        bflnet.run("nope")


def test_sweep(tmp_path: Path) -> None:
    table = bflnet.sweep("cover-time", {"K": [4, 5]}, tmp_path / "s", seeds=2, workers=1,
                         runs=2)
    assert sorted(table["K"].unique()) == [4, 5] and sorted(table["seed"].unique()) == [0, 1]
    one = bflnet.run("cover-time", seed=1, K=5, runs=2)
    rows = table[(table["K"] == 5) & (table["seed"] == 1)]
    assert rows["cover_iterations"].tolist() == one["cover_iterations"].tolist()
    with pytest.raises(ValueError, match="K: must be an integer >= 2"):
        bflnet.sweep("cover-time", {"K": [4, 1]}, tmp_path / "t")
