"""Data: offline dataset loaders, synthetic generators and partitioners. Names are
imported lazily."""

from bflnet.lazy import lazy_exports

_HOMES = {
    "clear_idx_cache": "idx",
    "parse_idx": "idx",
    "read_idx": "idx",
    "write_idx": "idx",
    "BostonSplit": "boston",
    "boston_split": "boston",
    "find_boston": "boston",
    "load_boston": "boston",
    "read_boston_csv": "boston",
    "Digits": "digits",
    "load_digits": "digits",
    "read_mnist_5k": "digits",
    "by_label": "partition",
    "cyclic_classes": "partition",
    "dirichlet": "partition",
    "iid": "partition",
    "FASHION_MNIST": "vision",
    "FASHION_MNIST_CLASSES": "vision",
    "MNIST": "vision",
    "DatasetNotFoundError": "vision",
    "IdxDatasetSpec": "vision",
    "find_split_files": "vision",
    "load_fashion_mnist": "vision",
    "load_idx_dataset": "vision",
    "load_mnist": "vision",
    "search_dirs": "vision",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
