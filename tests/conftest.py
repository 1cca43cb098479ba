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


@pytest.fixture
def deny_access(monkeypatch: pytest.MonkeyPatch):
    """``deny(directory, code, writes_only=False)``: from then on, opening or looking at
    anything under ``directory`` (with ``writes_only``: creating, writing or renaming
    there) fails with ``OSError(code)`` (default EACCES), as an unreadable directory or a
    read-only file system would, even for root (who ignores permission bits)."""
    import builtins
    import errno as errno_mod
    import io

    denied: list[tuple[str, int, bool]] = []
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | getattr(os, "O_TMPFILE", 0)

    def check(path: object, writing: bool) -> None:
        if isinstance(path, int):
            return
        text = os.path.abspath(os.fsdecode(path))  # type: ignore[arg-type]
        for base, code, writes_only in denied:
            if (text == base or text.startswith(base + os.sep)) and (writing or
                                                                     not writes_only):
                raise OSError(code, os.strerror(code), text)

    def wrap(real, writing):
        def guarded(path, *args, **kwargs):
            check(path, writing(args, kwargs))
            return real(path, *args, **kwargs)
        return guarded

    def open_mode(args, kwargs):
        mode = args[0] if args else kwargs.get("mode", "r")
        return any(c in mode for c in "wax+")

    def os_open_flags(args, kwargs):
        flags = args[0] if args else kwargs.get("flags", 0)
        return bool(flags & write_flags)

    def never(args, kwargs):
        return False

    def always(args, kwargs):
        return True

    for module, name, writing in ((builtins, "open", open_mode), (io, "open", open_mode),
                                  (os, "open", os_open_flags), (os, "stat", never),
                                  (os, "lstat", never), (os, "mkdir", always),
                                  (os, "replace", always)):
        monkeypatch.setattr(module, name, wrap(getattr(module, name), writing))

    def deny(directory: Path, code: int = errno_mod.EACCES, writes_only: bool = False) -> None:
        denied.append((os.path.abspath(directory), code, writes_only))

    return deny
