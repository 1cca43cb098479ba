"""IDX parsing and the offline MNIST / Fashion-MNIST loaders (tiny files made here)."""

from __future__ import annotations

import dataclasses
import doctest
import gzip
from pathlib import Path

import numpy as np
import pytest

from bflnet.data import idx, vision
from bflnet.data.idx import parse_idx, read_idx, write_idx
from bflnet.data.vision import (
    DatasetNotFoundError,
    find_split_files,
    load_fashion_mnist,
    load_mnist,
    search_dirs,
)

SYSTEM_FASHION = Path("/usr/share/datasets/fashion-mnist")
N_TRAIN, N_TEST = 7, 3


def make_split_files(directory: Path, *, gz: bool, seed: int = 0,
                     splits: tuple[str, ...] = ("train", "test")) -> dict[str, np.ndarray]:
    """Write tiny standard-named IDX files; returns the arrays written."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = {}
    for split, n in (("train", N_TRAIN), ("test", N_TEST)):
        if split not in splits:
            continue
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        images[0, 0, 0], images[0, 0, 1] = 0, 255
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        prefix = "train" if split == "train" else "t10k"
        suffix = ".gz" if gz else ""
        write_idx(directory / f"{prefix}-images-idx3-ubyte{suffix}", images)
        write_idx(directory / f"{prefix}-labels-idx1-ubyte{suffix}", labels)
        out[f"{split}_images"], out[f"{split}_labels"] = images, labels
    return out


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No BFLNET_DATA, and system directories that point into tmp_path (empty)."""
    monkeypatch.delenv(vision.ENV_VAR, raising=False)
    monkeypatch.setattr(vision, "FASHION_MNIST", dataclasses.replace(
        vision.FASHION_MNIST, system_dirs=(str(tmp_path / "sys-fashion"),)))
    monkeypatch.setattr(vision, "MNIST", dataclasses.replace(
        vision.MNIST, system_dirs=(str(tmp_path / "sys-mnist"),)))
    return tmp_path


# -- IDX ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["u1", "i1", ">i2", "<i4", "f4", "f8"])
@pytest.mark.parametrize("name", ["a-idx", "a-idx.gz"])
def test_idx_round_trip_every_type_gz_and_raw(tmp_path, dtype, name):
    array = (np.arange(24) - 5).astype(dtype).reshape(2, 3, 4)
    write_idx(tmp_path / name, array)
    back = read_idx(tmp_path / name, cache=False)
    assert back.shape == (2, 3, 4) and back.dtype == array.dtype.newbyteorder("=")
    np.testing.assert_array_equal(back, array)
    assert not back.flags.writeable


def test_idx_header_is_big_endian_by_hand():
    data = bytes([0, 0, 0x0B, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0x01, 0x02, 0xFF, 0xFE])
    np.testing.assert_array_equal(parse_idx(data), [[0x0102, -2]])


def test_gzip_is_detected_from_content_not_name(tmp_path):
    write_idx(tmp_path / "x.gz", np.arange(3, dtype=np.uint8))
    (tmp_path / "x.gz").rename(tmp_path / "plain-name")
    np.testing.assert_array_equal(read_idx(tmp_path / "plain-name"), [0, 1, 2])


def test_cache_returns_same_array_and_sees_rewrites(tmp_path):
    path = tmp_path / "c-idx"
    write_idx(path, np.arange(4, dtype=np.uint8))
    assert read_idx(path) is read_idx(path)
    write_idx(path, np.arange(5, dtype=np.uint8))  # new size -> new cache key
    assert read_idx(path).shape == (5,)


def one_line_value_error(path: Path, match: str) -> str:
    with pytest.raises(ValueError, match=match) as info:
        read_idx(path, cache=False)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_bad_magic_names_the_file(tmp_path):
    path = tmp_path / "bad-idx"
    path.write_bytes(b"\x12\x34\x08\x01" + bytes(8))
    one_line_value_error(path, "bad IDX magic")
    path.write_bytes(b"\x00\x00\x42\x01" + bytes(8))  # unknown type code
    one_line_value_error(path, "bad IDX magic")


def test_truncated_and_oversized_files(tmp_path):
    write_idx(tmp_path / "g-idx", np.zeros((3, 4), dtype=np.uint8))
    good = (tmp_path / "g-idx").read_bytes()
    path = tmp_path / "t-idx"
    path.write_bytes(good[:-1])
    one_line_value_error(path, "truncated IDX file")
    path.write_bytes(good[:6])
    one_line_value_error(path, "truncated IDX header")
    path.write_bytes(good[:2])
    one_line_value_error(path, "not an IDX file")
    path.write_bytes(good + b"\x00")
    one_line_value_error(path, "trailing bytes")
    path.write_bytes(gzip.compress(good)[:-6])  # truncated gzip stream
    one_line_value_error(path, "gzip")


def test_idx_doctests():
    result = doctest.testmod(idx)
    assert result.attempted > 0 and result.failed == 0


# -- search locations ------------------------------------------------------------------

LOCATIONS = ["root", "root/fashion-mnist", "root/FashionMNIST/raw", "env", "env/fashion-mnist",
             "env/FashionMNIST/raw", "system"]


@pytest.mark.parametrize("gz", [True, False], ids=["gz", "raw"])
@pytest.mark.parametrize("where", LOCATIONS)
def test_loads_from_every_search_location(isolated, monkeypatch, where, gz):
    tmp = isolated
    base, _, sub = where.partition("/")
    directory = {"root": tmp / "r", "env": tmp / "e", "system": tmp / "sys-fashion"}[base] / sub
    written = make_split_files(directory, gz=gz)
    root = tmp / "r" if base == "root" else None
    if base == "env":
        monkeypatch.setenv(vision.ENV_VAR, str(tmp / "e"))
    for split, n in (("train", N_TRAIN), ("test", N_TEST)):
        x, y = load_fashion_mnist(root, split=split)
        assert x.shape == (n, 784) and x.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int64
        expected = written[f"{split}_images"].reshape(n, -1) / np.float32(255)
        np.testing.assert_array_equal(x, expected)
        np.testing.assert_array_equal(y, written[f"{split}_labels"])
        assert x.min() == 0.0 and x.max() == 1.0


def test_mnist_torchvision_layout_and_unnormalized(isolated, monkeypatch):
    written = make_split_files(isolated / "e" / "MNIST" / "raw", gz=True)
    monkeypatch.setenv(vision.ENV_VAR, str(isolated / "e"))
    x, _ = load_mnist(split="train", normalize=False)
    np.testing.assert_array_equal(x, written["train_images"].reshape(N_TRAIN, -1))
    assert x.dtype == np.float32 and x.max() == 255.0
    with pytest.raises(DatasetNotFoundError):  # MNIST files are not Fashion-MNIST files
        load_fashion_mnist()


def test_search_order_root_then_env_then_system(isolated, monkeypatch):
    tmp = isolated
    make_split_files(tmp / "sys-fashion", gz=True, seed=3)
    sys_y = load_fashion_mnist()[1]
    make_split_files(tmp / "e", gz=True, seed=2)
    monkeypatch.setenv(vision.ENV_VAR, str(tmp / "e"))
    env_y = load_fashion_mnist()[1]
    make_split_files(tmp / "r" / "FashionMNIST" / "raw", gz=False, seed=1)
    root_y = load_fashion_mnist(tmp / "r")[1]
    assert not np.array_equal(sys_y, env_y) and not np.array_equal(env_y, root_y)
    assert find_split_files(vision.FASHION_MNIST, "train", tmp / "r")[0].parent \
        == tmp / "r" / "FashionMNIST" / "raw"
    # A root without the files falls through to the next places.
    np.testing.assert_array_equal(load_fashion_mnist(tmp / "nowhere")[1], env_y)


def test_raw_file_preferred_over_gz_in_the_same_directory(isolated):
    make_split_files(isolated / "r", gz=True)
    make_split_files(isolated / "r", gz=False)
    images, labels = find_split_files(vision.FASHION_MNIST, "test", isolated / "r")
    assert images.name == "t10k-images-idx3-ubyte" and labels.suffix != ".gz"


def test_missing_dataset_message_is_one_line_and_lists_the_places(isolated, monkeypatch):
    monkeypatch.setenv(vision.ENV_VAR, str(isolated / "e"))
    make_split_files(isolated / "r", gz=True, splits=("test",))  # train split missing
    with pytest.raises(DatasetNotFoundError) as info:
        load_fashion_mnist(isolated / "r", split="train")
    assert isinstance(info.value, FileNotFoundError)
    message = str(info.value)
    assert "\n" not in message
    for place in search_dirs(vision.FASHION_MNIST, isolated / "r"):
        assert str(place) in message
    for hint in ("train-images-idx3-ubyte", "BFLNET_DATA", "dataset-fashion-mnist",
                 "FashionMNIST/raw", "sys-fashion"):
        assert hint in message
    # The test split is there, so it loads.
    assert load_fashion_mnist(isolated / "r", split="test")[0].shape == (N_TEST, 784)


def test_inconsistent_files_are_value_errors(isolated):
    make_split_files(isolated / "r", gz=False)
    write_idx(isolated / "r" / "t10k-labels-idx1-ubyte", np.zeros(N_TEST + 1, np.uint8))
    with pytest.raises(ValueError, match="labels for"):
        load_fashion_mnist(isolated / "r", split="test")
    write_idx(isolated / "r" / "t10k-labels-idx1-ubyte", np.full(N_TEST, 10, np.uint8))
    with pytest.raises(ValueError, match="outside 0..9"):
        load_fashion_mnist(isolated / "r", split="test")
    write_idx(isolated / "r" / "t10k-images-idx3-ubyte", np.zeros((N_TEST, 27, 28), np.uint8))
    with pytest.raises(ValueError, match=r"shape \(n, 28, 28\)"):
        load_fashion_mnist(isolated / "r", split="test")
    with pytest.raises(ValueError, match="split"):
        load_fashion_mnist(isolated / "r", split="validation")  # type: ignore[arg-type]


def test_returned_arrays_are_fresh_copies(isolated):
    make_split_files(isolated / "r", gz=True)
    x, y = load_fashion_mnist(isolated / "r")
    x[:] = -1.0
    y[:] = -1
    x2, y2 = load_fashion_mnist(isolated / "r")
    assert x2.min() >= 0 and y2.min() >= 0


# -- the real data set -------------------------------------------------------------------

def test_real_debian_fashion_mnist(real_fashion_mnist, monkeypatch):
    monkeypatch.delenv(vision.ENV_VAR, raising=False)
    for split, n in (("train", 60_000), ("test", 10_000)):
        x, y = load_fashion_mnist(split=split)
        assert x.shape == (n, 784) and x.dtype == np.float32
        assert x.min() >= 0.0 and x.max() <= 1.0
        assert y.shape == (n,) and y.dtype == np.int64
        np.testing.assert_array_equal(np.bincount(y), np.full(10, n // 10))


def test_a_flat_bflnet_data_directory_is_fashion_mnist_not_mnist(tmp_path, monkeypatch):
    """MNIST and Fashion-MNIST files share their names: a BFLNET_DATA directory holding
    them directly answers Fashion-MNIST only; MNIST must be in its mnist/ or MNIST/raw/."""
    from bflnet.data.vision import ENV_VAR, FASHION_MNIST, MNIST, find_split_files
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert find_split_files(FASHION_MNIST, "train")[0].parent == tmp_path
    with pytest.raises(FileNotFoundError, match="MNIST train split not found"):
        find_split_files(MNIST, "train")
    (tmp_path / "mnist").mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (tmp_path / "mnist" / name).write_bytes(b"")
    assert find_split_files(MNIST, "train")[0].parent == tmp_path / "mnist"
