"""Offline loaders for MNIST and Fashion-MNIST (IDX files; never downloads anything).

The four standard files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each gzipped or not) are looked
for, in order, in

1. the ``root`` argument: ``<root>``, ``<root>/<slug>``, ``<root>/<TorchName>/raw``;
2. each directory in the ``BFLNET_DATA`` environment variable (``os.pathsep``-separated),
   with the same three layouts;
3. the system directory, ``/usr/share/datasets/fashion-mnist`` for Fashion-MNIST (Debian
   package ``dataset-fashion-mnist``) and ``/usr/share/datasets/mnist`` for MNIST.

``<slug>`` is ``fashion-mnist`` / ``mnist``; ``<TorchName>/raw`` is torchvision's layout
(``FashionMNIST/raw``, ``MNIST/raw``). A directory is used when it holds both files of the
requested split. Parsed files are cached in-process, so a second load is quick.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from bflnet.data.idx import read_idx
from bflnet.files.input_files import exists

Split = Literal["train", "test"]
ENV_VAR = "BFLNET_DATA"

FASHION_MNIST_CLASSES: tuple[str, ...] = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
_FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


class DatasetNotFoundError(FileNotFoundError):
    """A dataset's files are in none of the searched directories (the message lists them)."""


@dataclass(frozen=True, slots=True)
class IdxDatasetSpec:
    """Where an MNIST-like IDX dataset may live and what it must look like."""

    name: str
    slug: str
    torchvision_name: str
    system_dirs: tuple[str, ...] = ()
    debian_package: str | None = None
    image_shape: tuple[int, int] = (28, 28)
    n_classes: int = 10
    #: Whether a ``BFLNET_DATA`` directory itself (not only its ``slug`` or torchvision
    #: subdirectory) may hold the files. MNIST and Fashion-MNIST files have the same names,
    #: so only one of them (Fashion-MNIST, the project's default) can own the flat layout.
    flat_env_dir: bool = True


FASHION_MNIST = IdxDatasetSpec(
    "Fashion-MNIST", "fashion-mnist", "FashionMNIST",
    system_dirs=("/usr/share/datasets/fashion-mnist",), debian_package="dataset-fashion-mnist")
MNIST = IdxDatasetSpec("MNIST", "mnist", "MNIST", system_dirs=("/usr/share/datasets/mnist",),
                       flat_env_dir=False)


def search_dirs(spec: IdxDatasetSpec, root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The directories searched for ``spec``, in order (existing or not): ``root`` and its
    ``slug`` and torchvision subdirectories; the same under each ``BFLNET_DATA`` directory
    (MNIST only in the subdirectories: a flat directory there is Fashion-MNIST's); the
    system directories."""
    dirs: list[Path] = []
    if root is not None:
        base = Path(root)
        dirs += [base, base / spec.slug, base / spec.torchvision_name / "raw"]
    for base in (Path(d) for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d):
        dirs += ([base] if spec.flat_env_dir else []) + [base / spec.slug,
                                                         base / spec.torchvision_name / "raw"]
    dirs += [Path(d) for d in spec.system_dirs]
    return list(dict.fromkeys(dirs))  # drop duplicates, keep order


def _find(directory: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):  # the un-gzipped file is faster to read
        if exists(directory / name, "data set"):
            return directory / name
    return None


def find_split_files(spec: IdxDatasetSpec, split: Split,
                     root: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """``(images, labels)`` paths of ``split`` from the first directory that holds both."""
    if split not in _FILES:
        raise ValueError(f"split: must be 'train' or 'test', got {split!r}")
    image_stem, label_stem = _FILES[split]
    dirs = search_dirs(spec, root)
    for directory in dirs:
        images, labels = _find(directory, image_stem), _find(directory, label_stem)
        if images is not None and labels is not None:
            return images, labels
    hint = (f"; or install the Debian package {spec.debian_package} (apt install "
            f"{spec.debian_package})" if spec.debian_package else "")
    raise DatasetNotFoundError(
        f"{spec.name} {split} split not found: no directory holds both {image_stem}[.gz] and "
        f"{label_stem}[.gz]; searched {', '.join(map(str, dirs))}; put the files in one of "
        f"these directories, pass root=<dir>, or set {ENV_VAR}=<dir>{hint} "
        f"(bflnet never downloads data)")


def load_idx_dataset(spec: IdxDatasetSpec, root: str | os.PathLike[str] | None = None,
                     split: Split = "train", normalize: bool = True
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of an MNIST-like dataset as ``(x, y)``.

    ``x`` is float32 ``(n, h·w)``, in ``[0, 1]`` when ``normalize`` (else ``0..255``);
    ``y`` is int64 ``(n,)``. Both are fresh, writable arrays.
    """
    images_path, labels_path = find_split_files(spec, split, root)
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.shape[1:] != spec.image_shape or images.dtype != np.uint8:
        raise ValueError(f"{images_path}: expected uint8 images of shape (n, "
                         f"{spec.image_shape[0]}, {spec.image_shape[1]}), got "
                         f"{images.dtype} {images.shape}")
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise ValueError(f"{labels_path}: expected uint8 labels of shape (n,), got "
                         f"{labels.dtype} {labels.shape}")
    if len(labels) != len(images):
        raise ValueError(f"{labels_path}: {len(labels)} labels for {len(images)} images "
                         f"in {images_path}")
    if len(labels) and int(labels.max()) >= spec.n_classes:
        raise ValueError(f"{labels_path}: label {int(labels.max())} outside "
                         f"0..{spec.n_classes - 1}")
    flat = images.reshape(len(images), -1)
    x = np.empty(flat.shape, dtype=np.float32)
    if normalize:
        np.divide(flat, np.float32(255.0), out=x)
    else:
        x[...] = flat
    return x, labels.astype(np.int64)


def load_fashion_mnist(root: str | os.PathLike[str] | None = None, split: Split = "train",
                       normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST ``(x: float32 (n, 784), y: int64 (n,))``; 60 000 train, 10 000 test.

    Class names are :data:`FASHION_MNIST_CLASSES`. Raises :class:`DatasetNotFoundError`
    (listing the places searched) when the files are nowhere to be found.
    """
    return load_idx_dataset(FASHION_MNIST, root, split, normalize)


def load_mnist(root: str | os.PathLike[str] | None = None, split: Split = "train",
               normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """MNIST digits ``(x: float32 (n, 784), y: int64 (n,))``, found like Fashion-MNIST."""
    return load_idx_dataset(MNIST, root, split, normalize)


__all__ = [
    "ENV_VAR", "FASHION_MNIST", "FASHION_MNIST_CLASSES", "MNIST", "DatasetNotFoundError",
    "IdxDatasetSpec", "find_split_files", "load_fashion_mnist", "load_idx_dataset",
    "load_mnist", "search_dirs",
]
