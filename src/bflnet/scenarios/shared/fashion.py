"""Fashion-MNIST evaluation subsets, as the DSVGD, CD-BFL and EM-TDAMP scenarios draw
them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def eval_subset(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` Fashion-MNIST test examples drawn without replacement (all, in order, if
    ``size`` is the whole test set)."""
    import numpy as np

    from bflnet.data import load_fashion_mnist
    x, y = load_fashion_mnist(split="test")
    if size >= len(y):
        return x, y
    idx = np.sort(rng.choice(len(y), size=size, replace=False))
    return x[idx], y[idx]
