"""Sweeps: grid expansion, one table, determinism across workers, resume, errors, a remote
scheduler. Each sweep starts a small Dask cluster (about 2 s), so the runs are tiny."""

import itertools
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from bflnet.analysis.plots import curve_key
from bflnet.cli.main import main
from bflnet.runs.sweep import (
    SweepError,
    assemble,
    config_hash,
    load_manifest,
    load_sweep,
    parse_grid,
    plan_sweep,
    sweep,
    sweep_paths,
)
from bflnet.scenarios import get_scenario, run_scenario

NAME = "consensus-averaging"
GRID = {"graph": ["ring", "complete"], "K": [4, 6]}
FIXED = {"rounds": 30}
CLI_GRID = ["--grid", "graph=ring,complete", "--grid", "K=4,6", "--set", "rounds=30"]


@pytest.fixture(scope="module")
def one_worker_table(tmp_path_factory):
    """The 2 graphs x 2 sizes x 3 seeds sweep on one local worker."""
    return sweep(NAME, GRID, 3, tmp_path_factory.mktemp("one") / "sweep", fixed=FIXED,
                 workers=1, progress=False)


def run_ids(table):
    return list(dict.fromkeys(table["run_id"]))


def stamps(out):
    """(inode, mtime) of every part: a recomputed part is a new file."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sweep_paths(out).runs.glob("*.parquet")}


def test_sweep_gives_one_table_identical_for_one_and_two_workers(one_worker_table, tmp_path,
                                                                 capsys):
    table = one_worker_table
    assert list(table.columns[:5]) == ["graph", "K", "seed", "run_id", "config_hash"]
    assert len(run_ids(table)) == 12 and len(table) == 12 * 31
    order = table.drop_duplicates("run_id")[["graph", "K", "seed"]]
    assert list(order.itertuples(index=False, name=None)) == list(
        itertools.product(["ring", "complete"], [4, 6], range(3)))  # grid order, then seed
    assert table.attrs["sweep"]["computed"] == 12
    # each run's rows are exactly those of the scenario run alone
    alone = run_scenario(NAME, {"graph": "complete", "K": 6, **FIXED}, seed=2)
    mine = table[(table.graph == "complete") & (table.K == 6) & (table.seed == 2)]
    pd.testing.assert_frame_equal(mine.iloc[:, 5:].reset_index(drop=True), alone)
    # the same sweep from the command line with two workers, into a .parquet file
    out = tmp_path / "two.parquet"
    assert main(["sweep", NAME, *CLI_GRID, "--seeds", "3", "--workers", "2", "--out",
                 str(out), "--no-progress"]) == 0
    assert "12 runs: 12 computed, 0 already done, 0 failed" in capsys.readouterr().err
    assert (tmp_path / "two.parts" / "manifest.jsonl").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(out), table)
    pd.testing.assert_frame_equal(load_sweep(out), table)


def test_resume_skips_finished_runs_and_gives_the_same_table(one_worker_table, tmp_path):
    out = tmp_path / "sweep"
    first = sweep(NAME, GRID, 2, out, fixed=FIXED, workers=1, progress=False)
    assert len(run_ids(first)) == 8
    lost = sweep_paths(out).part(run_ids(first)[-1])
    lost.unlink()  # as if the run had never finished
    manifest = sweep_paths(out).manifest  # and a kill that lost a record and tore a line
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[1:]) + lines[0][:40])
    kept = stamps(out)
    again = sweep(NAME, GRID, 3, out, fixed=FIXED, workers=1, progress=False)
    info = again.attrs["sweep"]
    assert (info["skipped"], info["computed"]) == (7, 5)
    after = stamps(out)
    assert all(after[name] == stamp for name, stamp in kept.items())  # not recomputed
    assert lost.exists() and len(after) == 12
    pd.testing.assert_frame_equal(again, one_worker_table)
    manifest = load_manifest(out)
    assert len(manifest) == 12 and set(manifest["status"]) == {"ok"}
    assert set(manifest["rows"]) == {31}


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    # graph=file without a graph_file passes validation but raises inside the run
    out = tmp_path / "sweep"
    args = ["sweep", NAME, "--grid", "graph=ring,file", "--set", "rounds=5", "--seeds", "1",
            "--workers", "1", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "failed: {'graph': 'file'} seed 0: ValueError: graph_file: must be set" in err
    assert "1 failed" in err
    manifest = load_manifest(out).set_index("graph")
    assert manifest.loc["ring", "status"] == "ok" and manifest.loc["file", "status"] == "error"
    assert "graph_file: must be set when graph=file" in manifest.loc["file", "error"]
    assert set(load_sweep(out)["graph"]) == {"ring"}
    # a sweep in which every run fails exits non-zero with one line
    with pytest.raises(SweepError, match="all 2 runs failed"):
        sweep(NAME, {"graph": ["file"]}, 2, tmp_path / "bad", fixed={"rounds": 5}, workers=1,
              progress=False)


def test_grid_is_validated_before_any_cluster_starts(monkeypatch, capsys, tmp_path):
    import distributed

    from bflnet.runs import sweep as sweep_module

    monkeypatch.chdir(tmp_path)
    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(sweep_module, "WorkerPool", no_cluster)
    monkeypatch.setattr(distributed, "Client", no_cluster)
    cases = [(["--grid", "K=4,1"], "K: must be an integer >= 2 and <= 1000000, got 1"),
             (["--grid", "colour=red"], "unknown parameter 'colour'"),
             (["--grid", "graph=ring,blob"], "graph: must be one of"),
             (["--grid", "K"], "--grid: expected key=v1,v2"),
             (["--grid", "K=4", "--set", "K=6"], "grid: K is both swept and fixed"),
             (["--grid", "K=4,4"], "are the same config"),
             (["--seeds", "0"], "seeds: must be a positive count"),
             (["--workers", "0"], "workers: must be an integer >= 1"),
             (["--out", "x.csv"], "--out: must be a directory or a .parquet file")]
    for extra, text in cases:
        argv = ["sweep", NAME, "--out", "never-written", *extra]
        assert main(argv) == 2, extra
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, (extra, err)
    assert not os.path.exists("never-written")


def test_plan_and_config_hash():
    plan = plan_sweep(NAME, {"K": [4, "6"], "rate_bps": [1e6]}, [5, 7],
                      fixed={"rounds": np.int64(10)})
    assert [(r.params["K"], r.seed) for r in plan.runs] == [(4, 5), (4, 7), (6, 5), (6, 7)]
    config = get_scenario(NAME).config({"K": 4, "rounds": 10})
    assert plan.runs[0].config_hash == config_hash(NAME, plan.configs[plan.runs[0].config_hash])
    # an integer for a float field hashes like the float
    same = plan_sweep(NAME, {"K": [4], "rate_bps": [1_000_000]}, 1, fixed={"rounds": 10})
    assert same.runs[0].config_hash == plan.runs[0].config_hash
    assert plan.configs[plan.runs[0].config_hash]["K"] == config.K
    assert parse_grid(get_scenario(NAME).config_cls, ["K=4,6", "graph=ring"]) == {
        "K": [4, 6], "graph": ["ring"]}


def test_run_columns_named_like_sweep_columns_are_dropped_or_renamed(tmp_path):
    # cover-time, for one, reports K (the swept value) and per-run sub-seeds in `seed`
    plan = plan_sweep("cover-time", {"K": [5]}, [3])
    run = plan.runs[0]
    paths = sweep_paths(tmp_path / "sweep")
    paths.runs.mkdir(parents=True)
    pd.DataFrame({"K": [5, 5], "seed": [11, 12], "x": [1.0, 2.0]}).to_parquet(
        paths.part(run.run_id))
    table = assemble(plan.runs, ["K"], paths)
    assert list(table.columns) == ["K", "seed", "run_id", "config_hash", "run_seed", "x"]
    assert list(table["seed"]) == [3, 3] and list(table["run_seed"]) == [11, 12]


def test_a_scenarios_own_run_id_is_kept_and_the_tables_run_id_names_one_curve(tmp_path):
    # async-fedavg, for one, runs several methods per call, each with its own run_id
    plan = plan_sweep("async-fedavg", {"K": [4, 6]}, [3])
    paths = sweep_paths(tmp_path / "sweep")
    paths.runs.mkdir(parents=True)
    own = ["sync-s3", "sync-s3", "fedbuff-s3", None]
    for run in plan.runs:
        pd.DataFrame({"run_id": own, "method": ["sync", "sync", "fedbuff", "init"],
                      "x": [1.0, 2.0, 3.0, 0.0]}).to_parquet(paths.part(run.run_id))
    table = assemble(plan.runs, ["K"], paths)
    assert list(table.columns) == ["K", "seed", "run_id", "config_hash", "run_run_id",
                                   "method", "x"]
    first, second = (run.run_id for run in plan.runs)
    assert list(table["run_id"]) == [f"{first}/sync-s3", f"{first}/sync-s3",
                                     f"{first}/fedbuff-s3", first,
                                     f"{second}/sync-s3", f"{second}/sync-s3",
                                     f"{second}/fedbuff-s3", second]
    assert list(table["run_run_id"].iloc[:3]) == own[:3] and table["run_run_id"].isna()[3]
    # one curve per (sweep run, scenario run): the table's curves are the runs' curves
    assert table.groupby("run_id").ngroups == 2 * 3
    assert curve_key(table, None) == ["run_id"]
    # the sweep run (part, manifest) is the part before the "/"
    assert set(table["run_id"].str.split("/").str[0]) == {first, second}


def _start(argv, tmp_path, name):
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process):
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_for(path, process, timeout=60):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"{process.args} exited"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)


def test_sweep_runs_on_a_separately_started_scheduler(tmp_path, capsys):
    from distributed import Client

    scheduler_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    processes = [_start([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                         "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                        tmp_path, "scheduler")]
    try:
        _wait_for(scheduler_file, processes[0])
        address = json.loads(scheduler_file.read_text())["address"]
        processes.append(_start([*dask, "worker", address, "--host", "127.0.0.1",
                                 "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                tmp_path, "worker"))
        out = tmp_path / "sweep"
        assert main(["sweep", NAME, "--grid", "K=4,6", "--set", "rounds=10", "--seeds", "2",
                     "--scheduler", address, "--out", str(out), "--no-progress"]) == 0
        assert "4 runs: 4 computed" in capsys.readouterr().err
        with Client(address, timeout="20s") as client:
            workers = set(client.scheduler_info()["workers"])
        manifest = load_manifest(out)
        assert set(manifest["worker"]) <= workers and len(workers) == 1
        assert len(load_sweep(out)) == 4 * 11
    finally:
        for process in reversed(processes):
            _stop(process)
