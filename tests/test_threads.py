"""``bflnet run --threads``: the check, the pools it sets, the scenario parameter it fills,
and tables that do not move."""

import dataclasses

import pytest
import torch

from bflnet.cli import app as cli
from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario, run_scenario, scenario_names
from bflnet.runtime import threads as threads_module
from bflnet.runtime.threads import MAX_THREADS, available_cpus, check_threads, set_threads
from bflnet.validation.params import field_names

#: The torch scenarios: each has a ``threads`` parameter (torch's threads in the run).
THREADS_SCENARIOS = ("dsvgd-sparsifiers", "dsvgd-vs-fedavg", "forget-svgd", "async-fedavg",
                     "cdbfl-shift", "cdbfl-local-steps", "d2d-medium", "emtdamp",
                     "emtdamp-boston", "emtdamp-mnist", "ota-langevin")
#: Where ``threads`` is how many EM-TDAMP client groups run at once (torch itself on one
#: thread, so the EM-TDAMP rows do not depend on it): the default is 0, as many as torch
#: has threads when the run starts.
AUTO_SCENARIOS = ("emtdamp", "emtdamp-boston", "emtdamp-mnist")


def default_threads(name: str) -> int:
    return 0 if name in AUTO_SCENARIOS else 1


@pytest.fixture
def keep_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_check_threads_names_the_field():
    assert check_threads(3) == 3
    for bad in (0, -1, MAX_THREADS + 1, 2.0, True, "2", None):
        with pytest.raises(ValueError, match=f"threads: must be an integer in 1..{MAX_THREADS}"):
            check_threads(bad)


def test_available_cpus_and_set_threads(keep_torch_threads, monkeypatch):
    assert available_cpus() >= 1
    for name in threads_module.THREAD_VARIABLES:
        monkeypatch.setenv(name, "7")  # restored afterwards
    set_threads(1)
    assert torch.get_num_threads() == 1
    assert all(__import__("os").environ[n] == "1" for n in threads_module.THREAD_VARIABLES)


def test_set_threads_reaches_numpys_blas_already_loaded(keep_torch_threads):
    from threadpoolctl import threadpool_limits

    from bflnet.learners.models.numpy_blas import openblas_threads

    if openblas_threads() is None:
        pytest.skip("NumPy does not use OpenBLAS here")
    with threadpool_limits(None):  # every pool back as it was afterwards
        set_threads(1)
        assert openblas_threads() == 1
        if available_cpus() >= 2:
            set_threads(2)
            assert openblas_threads() == 2


def one_line_error(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ") and text in err


def test_bad_thread_counts_are_one_line_errors(capsys):
    one_line_error(capsys, ["run", "cover-time", "--threads", "0"], "threads: must be")
    one_line_error(capsys, ["run", "cover-time", "--threads", "5000"], "threads: must be")
    one_line_error(capsys, ["run", "cover-time", "--threads", "x"], "--threads")


def test_the_tables_do_not_move_with_the_thread_count(tmp_path, keep_torch_threads,
                                                      monkeypatch):
    for name in threads_module.THREAD_VARIABLES:
        monkeypatch.setenv(name, "1")
    args = ["run", "cover-time", "--set", "runs=30", "--seed", "2", "--no-progress", "--out"]
    assert main([*args, str(tmp_path / "default.csv")]) == 0
    assert main([*args, str(tmp_path / "one.csv"), "--threads", "1"]) == 0
    assert main([*args, str(tmp_path / "two.csv"), "--threads", "2"]) == 0
    default = (tmp_path / "default.csv").read_bytes()
    assert (tmp_path / "one.csv").read_bytes() == default
    assert (tmp_path / "two.csv").read_bytes() == default


def test_every_torch_scenario_has_the_threads_parameter():
    """The same parameter everywhere: default 1 (0, "auto", for :data:`AUTO_SCENARIOS`),
    the one-line error of a bad count; a new scenario with one must join
    :data:`THREADS_SCENARIOS`."""
    have = {name for name in scenario_names()
            if "threads" in field_names(get_scenario(name).config_cls)}
    assert have == set(THREADS_SCENARIOS)
    for name in THREADS_SCENARIOS:
        scenario = get_scenario(name)
        assert scenario.config({}).threads == default_threads(name)
        assert scenario.config({"threads": 2}).threads == 2
        for bad in (-1, MAX_THREADS + 1) if name in AUTO_SCENARIOS else (0, MAX_THREADS + 1):
            with pytest.raises(ValueError, match="^threads: must be"):
                scenario.config({"threads": bad})


@pytest.mark.parametrize("name", THREADS_SCENARIOS)
def test_threads_fills_the_scenario_parameter_unless_set(name, monkeypatch, capsys):
    """A torch scenario's ``threads`` parameter follows ``--threads``; ``--set threads=``
    wins; without ``--threads`` the scenario's default stays."""
    seen, pools = [], []
    real = cli.get_scenario(name)

    def fake_run(config, *, seed, progress):
        import pandas as pd

        seen.append(config.threads)
        return pd.DataFrame({"iteration": [0]})

    monkeypatch.setattr(cli, "get_scenario", lambda _: dataclasses.replace(real,
                                                                          run_fn=fake_run))
    monkeypatch.setattr(threads_module, "set_threads", pools.append)
    assert main(["run", name, "--threads", "2"]) == 0
    assert main(["run", name, "--threads", "2", "--set", "threads=1"]) == 0
    assert main(["run", name]) == 0
    assert seen == [2, 1, default_threads(name)] and pools == [2, 2]


def test_the_emtdamp_table_does_not_move_with_the_thread_count(tmp_path, keep_torch_threads,
                                                               monkeypatch):
    """``emtdamp``'s default ``threads`` is the CPUs this machine has: its table must not
    depend on it (10 clients in groups of 3, 1 to 3 groups at once)."""
    for name in threads_module.THREAD_VARIABLES:
        monkeypatch.setenv(name, "1")
    args = ["run", "emtdamp", "--set", "K=10", "--set", "client_group=3", "--set", "rounds=2",
            "--set", "sweeps=1", "--seed", "4", "--no-progress", "--out"]
    assert main([*args, str(tmp_path / "default.csv")]) == 0
    default = (tmp_path / "default.csv").read_bytes()
    for threads in (1, 2, 3):
        assert main([*args, str(tmp_path / f"{threads}.csv"), "--threads", str(threads)]) == 0
        assert (tmp_path / f"{threads}.csv").read_bytes() == default, threads


def test_auto_threads_follow_torchs_count_and_leave_it_as_it_was(keep_torch_threads,
                                                                  monkeypatch):
    """``threads = 0`` runs as many EM-TDAMP client groups at once as torch has threads
    when the run starts; inside, torch is on one thread; afterwards it is as before."""
    from bflnet.learners.emtdamp import learner as learner_module
    from bflnet.runtime.threads import groups_on_threads

    torch.set_num_threads(3)
    with groups_on_threads(0) as groups:
        assert (groups, torch.get_num_threads()) == (3, 1)
    with groups_on_threads(2) as groups:
        assert (groups, torch.get_num_threads()) == (2, 1)
    assert torch.get_num_threads() == 3
    seen = []
    real = learner_module.EMTDAMP.__init__

    def spy(self, *args, threads=1, **kwargs):
        seen.append((threads, torch.get_num_threads()))
        real(self, *args, threads=threads, **kwargs)

    monkeypatch.setattr(learner_module.EMTDAMP, "__init__", spy)
    small = {"K": 2, "rounds": 1, "sweeps": 1}
    for name in AUTO_SCENARIOS:
        extra = {"emtdamp": {}, "emtdamp-boston": {"methods": "emtdamp"},
                 "emtdamp-mnist": {"methods": "emtdamp", "eval_size": 20}}[name]
        run_scenario(name, {**small, **extra}, seed=1)
    assert seen == [(3, 1)] * len(AUTO_SCENARIOS)
    assert torch.get_num_threads() == 3
