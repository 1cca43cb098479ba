"""Test-session settings and fixtures shared by every test module."""

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

# One BLAS/OpenMP thread per test process: on the 2-core CI machine small torch ops run
# many times slower with thread contention, and results do not depend on the count.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

#: Examples per split of the tiny Fashion-MNIST-shaped data set the tests write.
TINY_TRAIN, TINY_TEST = 1500, 500


def _write_idx(path: Path, array: np.ndarray) -> None:
    """An unsigned-byte IDX file (gzipped), as the real data set ships."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_tiny_fashion(directory: Path, seed: int = 0) -> Path:
    """A learnable 10-class data set with Fashion-MNIST's file names and shapes: class c
    is a bright 8×8 square at its own place on a noisy 28×28 background, the same number
    of examples per class."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", TINY_TRAIN), ("t10k", TINY_TEST)):
        labels = np.tile(np.arange(10), n // 10)
        rng.shuffle(labels)
        images = rng.integers(0, 140, size=(n, 28, 28))
        rows, cols = 2 + 6 * (labels // 4), 2 + 6 * (labels % 4)
        for r in range(8):
            for c in range(8):
                images[np.arange(n), rows + r, cols + c] += rng.integers(0, 90, size=n)
        _write_idx(directory / f"{prefix}-images-idx3-ubyte.gz", np.clip(images, 0, 255))
        _write_idx(directory / f"{prefix}-labels-idx1-ubyte.gz", labels)
    return directory


@pytest.fixture(scope="session")
def tiny_fashion_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the tiny data set (see :func:`write_tiny_fashion`)."""
    return write_tiny_fashion(tmp_path_factory.mktemp("tiny-fashion"))


@pytest.fixture(scope="module")
def use_tiny_fashion(tiny_fashion_dir: Path):
    """For a whole test module: Fashion-MNIST loads resolve to the tiny data set (tests
    of mechanics: columns, bits, determinism, stop rules)."""
    from bflnet.data.vision import ENV_VAR

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_VAR, str(tiny_fashion_dir))
        yield tiny_fashion_dir


@pytest.fixture
def real_fashion_mnist(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that needs the real Fashion-MNIST: loads resolve to it (not to the tiny
    set); where it cannot be found the test is skipped with the one-line reason, and under
    ``CI=true`` it fails instead."""
    from bflnet.data.ensure import DATASETS, missing
    from bflnet.data.vision import ENV_VAR

    if Path(os.environ.get(ENV_VAR, "")).name.startswith("tiny-fashion"):
        monkeypatch.delenv(ENV_VAR)
    reason = missing(DATASETS["fashion-mnist"])
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the data set is missing: {reason}")
        pytest.skip(reason)
