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


class _Ran(Exception):
    """Raised where a run or a sweep would start: the check came too late."""


@pytest.fixture
def nothing_runs(monkeypatch):
    from bflnet.runs import registry
    from bflnet.runs import sweep as sweep_module

    def ran(*args, **kwargs):
        raise _Ran

    monkeypatch.setattr(registry.Scenario, "run", ran)
    monkeypatch.setattr(sweep_module, "sweep", ran)


class _BytesPath:
    def __fspath__(self):
        return b"state"


RUN_ARGUMENTS = [
    ((["consensus-averaging"],), {}, TypeError, "name: must be a scenario name (a str), "
                                                "got list"),
    ((5,), {}, TypeError, "name: must be a scenario name (a str), got int"),
    ((None,), {}, TypeError, "name: must be a scenario name (a str), got None"),
    (("",), {}, ValueError, "name: must be a scenario name, got ''"),
    (("cover-time",), {"save_state": 5}, TypeError,
     "save_state: must be a path (a str or os.PathLike such as pathlib.Path) or None, got int"),
    (("cover-time",), {"save_state": b"path"}, TypeError, "save_state: must be a path"),
    (("cover-time",), {"save_state": _BytesPath()}, TypeError, "save_state: must be a path"),
    (("cover-time",), {"save_state": ""}, ValueError, "save_state: must be a non-empty path"),
    (("cover-time",), {"load_state": object()}, TypeError, "load_state: must be a path"),
    (("cover-time",), {"load_state": ""}, ValueError, "load_state: must be a non-empty path"),
    (("cover-time",), {"load_state": "a\x00b"}, ValueError, "load_state: must be a non-empty "
                                                            "path without NUL"),
    (("cover-time",), {"progress": "yes"}, TypeError, "progress: must be True or False, got "
                                                      "str 'yes'"),
    (("cover-time",), {"force": 3}, TypeError, "force: must be True or False, got int 3"),
    (("cover-time",), {"seed": "3"}, ValueError, "seed: must be a non-negative integer"),
    (("cover-time",), {"K": [4]}, ValueError, "K: must be an integer"),
]


@pytest.mark.parametrize(("args", "kwargs", "kind", "text"), RUN_ARGUMENTS)
def test_run_checks_its_own_arguments_before_anything_runs(args, kwargs, kind, text,
                                                           nothing_runs) -> None:
    with pytest.raises(kind) as caught:
        bflnet.run(*args, **kwargs)
    assert type(caught.value) is kind  # not a _Ran, nor an error from deeper down
    message = str(caught.value)
    assert message.startswith(text) and "\n" not in message, message


SWEEP_ARGUMENTS = [
    ({"out": None}, TypeError, "out: must be a path (a str or os.PathLike such as "
                               "pathlib.Path), got None"),
    ({"out": 5}, TypeError, "out: must be a path (a str or os.PathLike such as pathlib.Path), "
                            "got int 5"),
    ({"out": b"o"}, TypeError, "out: must be a path"),
    ({"out": ""}, ValueError, "out: must be a non-empty path"),
    ({"name": ["cover-time"]}, TypeError, "name: must be a scenario name (a str), got list"),
    ({"grid": [("K", [4])]}, TypeError, "grid: must be a mapping of parameter to a list of "
                                        "values, got list"),
    ({"grid": {5: [4]}}, TypeError, "grid: its keys must be parameter names (str), got int 5"),
    ({"grid": {"K": 4}}, ValueError, "grid: K must be a non-empty list of values"),
    ({"grid": {"K": []}}, ValueError, "grid: K must be a non-empty list of values"),
    ({"scheduler": 5}, TypeError, "scheduler: must be a Dask scheduler's address (a str such "
                                  "as 'tcp://host:8786') or None, got int"),
    ({"scheduler": " "}, ValueError, "scheduler: must be a Dask scheduler's address"),
    ({"workers": "2"}, ValueError, "workers: must be an integer >= 1 and <= "),
    ({"workers": 0}, ValueError, "workers: must be an integer >= 1 and <= "),
    ({"workers": 100_000}, ValueError, "workers: must be an integer >= 1 and <= "),
    ({"progress": 1}, TypeError, "progress: must be True or False, got int 1"),
    ({"K": "x"}, ValueError, "K: must be an integer"),
]


@pytest.mark.parametrize(("change", "kind", "text"), SWEEP_ARGUMENTS)
def test_sweep_checks_its_own_arguments_before_anything_runs(change, kind, text, nothing_runs,
                                                             tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    arguments = {"name": "cover-time", "grid": {"K": [4, 5]}, "out": "s", **change}
    with pytest.raises(kind) as caught:
        bflnet.sweep(**arguments)
    assert type(caught.value) is kind
    message = str(caught.value)
    assert message.startswith(text) and "\n" not in message, message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seeds", ["3", 0, [1, 1], [-1], 2.0, None])
def test_sweep_checks_its_seeds_before_any_cluster_starts(seeds, tmp_path, monkeypatch) -> None:
    import distributed

    from bflnet.runs import sweep as sweep_module

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(distributed, "Client", no_cluster)
    monkeypatch.setattr(sweep_module, "WorkerPool", no_cluster)
    with pytest.raises(ValueError, match="^seeds: must be a positive count or a list"):
        bflnet.sweep("cover-time", {"K": [4]}, tmp_path / "s", seeds=seeds)
    assert not (tmp_path / "s").exists()


def test_paths_may_be_str_or_path_like(tmp_path) -> None:
    from bflnet.validation.arguments import check_path

    assert check_path("out", tmp_path) == tmp_path == check_path("out", str(tmp_path))
    assert check_path("save_state", None, optional=True) is None
    with pytest.raises(TypeError, match="^out: must be a path .*, got None$"):
        check_path("out", None)
