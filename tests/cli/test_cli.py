"""The bflnet command line, run as a user would (through main, in process)."""

import subprocess
import sys

import pandas as pd

from bflnet.cli.main import main


def test_run_writes_identical_files_for_the_same_seed(tmp_path, capsys):
    args = ["run", "consensus-averaging", "--set", "graph=ring", "--set", "K=20",
            "--seed", "3", "--out"]
    assert main([*args, str(tmp_path / "a.csv")]) == 0
    assert main([*args, str(tmp_path / "b.csv")]) == 0
    a = (tmp_path / "a.csv").read_bytes()
    assert a == (tmp_path / "b.csv").read_bytes()
    frame = pd.read_csv(tmp_path / "a.csv")
    assert {"time_s", "iteration", "cum_bits", "cum_bits_delivered",
            "max_deviation"} <= set(frame.columns)
    assert "wrote 301 rows" in capsys.readouterr().err


def test_run_without_name_runs_the_default_scenario_and_prints_a_summary(capsys):
    assert main(["run", "--set", "runs=2", "--set", "K=5"]) == 0
    out = capsys.readouterr().out
    assert "kl" in out and "iteration" in out and "complete" in out


def test_parquet_output(tmp_path):
    assert main(["run", "consensus-averaging", "--set", "rounds=5", "--out",
                 str(tmp_path / "r.parquet")]) == 0
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 6


def test_list_and_describe(capsys):
    assert main(["list"]) == 0
    assert "gfvl-beta-bernoulli (default)" in capsys.readouterr().out
    assert main(["describe", "consensus-averaging"]) == 0
    out = capsys.readouterr().out
    assert "K" in out and "default 20" in out and "one of ring" not in out


def one_line_error(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ") and text in err


def test_bad_input_is_one_line_on_stderr_and_exit_code_2(capsys, tmp_path):
    one_line_error(capsys, ["run", "nope"], "unknown scenario 'nope'")
    one_line_error(capsys, ["run", "--set", "K=1"], "K: must be an integer >= 2")
    one_line_error(capsys, ["run", "--set", "graph=blob"], "graph: must be one of")
    one_line_error(capsys, ["run", "--set", "colour=red"], "unknown parameter 'colour'")
    one_line_error(capsys, ["run", "--seed", "x"], "--seed")
    one_line_error(capsys, ["run", "--seed", "-4"], "seed: must be a non-negative integer")
    one_line_error(capsys, ["run", "--out", str(tmp_path / "r.xlsx")], "--out: must end in")
    one_line_error(capsys, ["describe", "nope"], "unknown scenario")
    one_line_error(capsys, ["frobnicate"], "No such command")


def test_importing_the_scenarios_and_the_cli_does_not_import_torch():
    """`bflnet list` / `describe` stay fast: torch is imported only by the runs that use it
    (a fresh interpreter, as this test session has torch loaded already)."""
    code = ("import sys, bflnet.scenarios, bflnet.cli.main; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_mistyped_name_gets_did_you_mean_in_its_one_line(tmp_path):
    """A mistyped scenario name, --set parameter name or choice value: exit code 2 and one
    line on stderr that names the closest allowed one (run as a user would)."""
    cases = [
        (["run", "d2d-mediun"], "unknown scenario 'd2d-mediun'; did you mean 'd2d-medium'? "
                                "known: "),
        (["run", "d2d-medium", "--set", "radius=10"],
         "unknown parameter 'radius'; did you mean 'radius_m'? allowed: "),
        (["sweep", "consensus-averaging", "--grid", "graph=ring,rnig", "--out", "never"],
         "graph: must be one of complete, star, ring, path, grid, torus, erdos-renyi, "
         "random-geometric, file, got 'rnig'; did you mean 'ring'?"),
        (["draw", "d2d-medium", "--set", "macs=links,csm", "--out", "never.png"],
         "macs: each value must be one of links, none, tdma, csma, aloha, got 'csm'; "
         "did you mean 'csma'?"),
    ]
    for argv, text in cases:
        result = subprocess.run([sys.executable, "-m", "bflnet.cli", *argv], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (argv, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith("bflnet: error: ") and text in result.stderr, (
            argv, result.stderr)
    assert not list(tmp_path.iterdir())  # nothing written
