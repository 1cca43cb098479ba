"""`python -m bflnet.data.ensure`: found, installed from Debian's package, or one line
saying what to do; and which data sets a `bflnet run` needs."""

import dataclasses

import pytest

from bflnet.cli import data_setup
from bflnet.data import ensure as ensure_mod
from bflnet.data import vision


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """Fashion-MNIST searched only in empty places under tmp_path."""
    monkeypatch.delenv(vision.ENV_VAR, raising=False)
    spec = dataclasses.replace(vision.FASHION_MNIST, system_dirs=(str(tmp_path / "sys"),))
    monkeypatch.setitem(ensure_mod.DATASETS, "fashion-mnist", spec)
    return tmp_path / "sys"


def test_found_through_the_environment_variable(nowhere, monkeypatch, tiny_fashion_dir):
    monkeypatch.setenv(vision.ENV_VAR, str(tiny_fashion_dir))
    assert ensure_mod.ensure("fashion-mnist", allow_install=False) == (
        True, "Fashion-MNIST: found")


def test_missing_without_install_is_one_line_naming_the_package_and_the_places(nowhere):
    found, message = ensure_mod.ensure("fashion-mnist", allow_install=False)
    assert not found and "\n" not in message
    for hint in ("dataset-fashion-mnist", "BFLNET_DATA", str(nowhere)):
        assert hint in message


def test_installs_the_debian_package_when_root_and_apt_are_there(nowhere, monkeypatch,
                                                                 tiny_fashion_dir):
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        if command[:2] == ["apt-get", "install"]:  # the package puts the files in place
            import shutil

            shutil.copytree(tiny_fashion_dir, nowhere)
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(ensure_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(ensure_mod.subprocess, "run", fake_run)
    found, message = ensure_mod.ensure("fashion-mnist")
    assert found and message == "Fashion-MNIST: installed (dataset-fashion-mnist)"
    assert calls == [["dpkg-query", "-W", "-f=${Status}", "dataset-fashion-mnist"],
                     ["apt-get", "update", "-qq"],
                     ["apt-get", "install", "-y", "-qq", "dataset-fashion-mnist"]]


def test_a_package_installed_without_its_files_is_reinstalled(nowhere, monkeypatch,
                                                              tiny_fashion_dir):
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        stdout = ""
        if command[0] == "dpkg-query":  # dpkg says installed, yet the files are gone
            stdout = "install ok installed"
        if command[:2] == ["apt-get", "install"] and "--reinstall" in command:
            import shutil

            shutil.copytree(tiny_fashion_dir, nowhere)
        return type("Done", (), {"returncode": 0, "stdout": stdout, "stderr": ""})()

    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(ensure_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(ensure_mod.subprocess, "run", fake_run)
    assert ensure_mod.ensure("fashion-mnist") == (
        True, "Fashion-MNIST: installed (dataset-fashion-mnist)")
    assert calls[-1] == ["apt-get", "install", "--reinstall", "-y", "-qq",
                         "dataset-fashion-mnist"]


def test_under_ci_a_missing_data_set_fails_the_main(nowhere, capsys, monkeypatch):
    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    assert ensure_mod.main(["fashion-mnist"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: CI=true and Fashion-MNIST train split not found")
    assert "\n" not in err


def test_no_install_attempt_without_apt_or_root(nowhere, monkeypatch):
    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: None)
    monkeypatch.setattr(ensure_mod.subprocess, "run", lambda *a, **k: pytest.fail("ran"))
    assert not ensure_mod.ensure("fashion-mnist")[0]
    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(ensure_mod.os, "geteuid", lambda: 1000)
    assert not ensure_mod.ensure("fashion-mnist")[0]


def test_a_failed_install_says_why(nowhere, monkeypatch):
    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(ensure_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(ensure_mod.subprocess, "run", lambda command, **k: type(
        "Done", (), {"returncode": 100, "stdout": "", "stderr": "E: Unable to locate package"})())
    found, message = ensure_mod.ensure("fashion-mnist")
    assert not found and message == ("apt-get update -qq failed: "
                                     "E: Unable to locate package")


def test_the_main_warns_in_one_line_and_exits_zero(nowhere, capsys, monkeypatch):
    monkeypatch.setattr(ensure_mod.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    assert ensure_mod.main(["fashion-mnist"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: Fashion-MNIST train split not found") and "\n" not in err
    assert ensure_mod.main(["imagenet"]) == 2


@pytest.mark.parametrize(("args", "needed"), [
    (["dsvgd-sparsifiers", "--set", "K=3"], ["fashion-mnist"]),
    (["--seed", "3", "forget-svgd"], ["fashion-mnist"]),
    (["--set", "K=3"], []),                       # the default scenario reads no data set
    ([], []),
    (["gfvl-beta-bernoulli", "--no-progress"], []),
    (["no-such-scenario"], []),                   # `bflnet run` reports the name itself
])
def test_which_data_sets_a_run_needs(args, needed):
    assert data_setup.datasets_of_run(args) == needed
