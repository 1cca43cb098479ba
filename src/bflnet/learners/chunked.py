"""Element-wise arithmetic on long parameter vectors, run over cache-sized column chunks.

The decentralised Langevin learners (DSGLD, CD-BFL, CF-FL) update d-sized vectors with
chains of element-wise torch operations (at d = 2.7 M each vector is 11 MB, larger than
a core's cache): one pass over memory per operation. Running the whole chain on one
column chunk at a time keeps the chunk's operands in cache: every element goes through
the same operations in the same order, so the results are the same bits, with a fraction
of the memory traffic.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch import Tensor

__all__ = ["CHUNK", "column_chunks", "gaussian_prior_step"]

#: Columns per chunk: 256 KB of float32 per row, so that the four or five operands of a
#: chain stay in a core's L2 cache.
CHUNK = 2**16


def column_chunks(*tensors: Tensor, chunk: int | None = None
                  ) -> Iterator[tuple[Tensor, ...]]:
    """Views of the same column range of every ``(N, d)`` tensor, ``chunk`` (default
    :data:`CHUNK`) columns at a time (the whole width in one piece if any of them is not
    contiguous)."""
    chunk = CHUNK if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"chunk: must be >= 1, got {chunk}")
    width = tensors[0].shape[-1]
    if any(t.shape[-1] != width for t in tensors):
        raise ValueError(f"tensors: need the same last dimension, got "
                         f"{[tuple(t.shape) for t in tensors]}")
    step = chunk if all(t.is_contiguous() for t in tensors) else max(width, 1)
    for i in range(0, width, step):
        yield tuple(t[..., i:i + step] for t in tensors)


def _numpy_view(t: Tensor) -> np.ndarray | None:
    """``t`` as a flat NumPy view (CPU, float32/float64, contiguous, no grad), else None."""
    if (t.device.type != "cpu" or t.dtype not in (torch.float32, torch.float64)
            or not t.is_contiguous() or t.requires_grad):
        return None
    return t.numpy().reshape(-1)


def gaussian_prior_step(theta: Tensor, lik: Tensor, scale: float, mean: float, var: float,
                        nodes: int, lr: float | None) -> bool:
    """In place on ``lik`` (the log-likelihood gradient at ``theta``): ``g = (−scale·lik)
    − ((mean − θ)/var)/nodes``, then with ``lr`` ``θ − lr·g``: torch's chain of
    :class:`~bflnet.learners.langevin.LocalObjective` run by NumPy over cache-sized
    chunks (each element through the same IEEE operations in the same order: the same
    bits, with a fraction of torch's per-call overhead; the division by ``var = 1`` is
    exact and skipped). Returns False, doing nothing, where NumPy cannot run it (another
    device or dtype, a non-contiguous tensor, non-float constants)."""
    tn, gn = _numpy_view(theta), _numpy_view(lik)
    if (tn is None or gn is None or tn.shape != gn.shape or tn.dtype != gn.dtype
            or not all(isinstance(c, float | int) and not isinstance(c, bool)
                       for c in (scale, mean, var, nodes, 0.0 if lr is None else lr))):
        return False
    step = min(CHUNK, max(tn.shape[0], 1))
    scratch = np.empty(step, dtype=tn.dtype)
    with np.errstate(all="ignore"):  # overflow to inf and NaN pass silently, as in torch
        _prior_chain(tn, gn, scratch, step, scale, mean, var, nodes, lr)
    return True


def _prior_chain(tn: np.ndarray, gn: np.ndarray, scratch: np.ndarray, step: int,
                 scale: float, mean: float, var: float, nodes: int, lr: float | None
                 ) -> None:
    """:func:`gaussian_prior_step`'s loop over chunks of ``step`` entries."""
    for i in range(0, tn.shape[0], step):
        t, g = tn[i:i + step], gn[i:i + step]
        p = scratch[:t.shape[0]]
        np.multiply(g, -scale, out=g)
        np.subtract(mean, t, out=p)
        if var != 1:
            np.divide(p, var, out=p)
        np.divide(p, nodes, out=p)
        np.subtract(g, p, out=g)
        if lr is not None:
            np.multiply(g, lr, out=g)
            np.subtract(t, g, out=g)
