"""Adding sparse increments to long vectors: the support of a decoded increment, and the
weighted sum of increments touching only their nonzero entries.

CD-BFL's and CF-FL's nodes exchange compressed increments (e.g. top-k keeping 1 % of the
entries): once decoded, each is a dense d-sized vector that is zero almost everywhere.
Adding ``w·Δ`` entry by entry costs a pass over all d entries per increment; adding it on
the support of Δ alone gives the same bits wherever the vector it is added to is never
``-0.0``: off the support ``w·Δ`` is ``±0`` and ``x + (±0) = x`` for every ``x`` except
``x = -0.0``. Vectors that start at ``+0.0`` and only ever have values added to them are
never ``-0.0`` (a round-to-nearest sum is ``-0.0`` only when both terms are), which is
what CD-BFL's public copies and their weighted sums do. On the CPU the gather, multiply,
add and scatter run in NumPy (:data:`bflnet.learners.langevin.chunked.NUMPY_MIX`): the same
element operations as torch's, with less overhead per call.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.langevin import chunked

__all__ = ["SPARSE_SHARE", "add_on_support", "support"]

#: An increment is added sparsely when at most this share of its entries is nonzero
#: (gathering and scattering an entry costs several times a dense pass's per entry).
SPARSE_SHARE = 0.1


def support(t: Tensor) -> Tensor | None:
    """The flat indices of the nonzero entries of ``t`` (NaN counts as nonzero), or None
    when more than :data:`SPARSE_SHARE` of them are nonzero."""
    flat = t.detach().reshape(-1)
    if flat.device.type == "cpu" and flat.dtype in (torch.float32, torch.float64):
        idx = torch.from_numpy(np.flatnonzero(flat.numpy() != 0))  # ~3 x torch.nonzero
    else:
        idx = torch.nonzero(flat).reshape(-1)
    return idx if idx.numel() <= SPARSE_SHARE * flat.numel() else None


def add_on_support(x: Tensor, delta: Tensor, idx: Tensor, weight: float | None = None
                   ) -> None:
    """``x += weight·delta`` (``x += delta`` without ``weight``) on the flat indices
    ``idx`` only, in place, with the element-wise operations of the dense update (the
    same bits where ``delta`` is zero off ``idx`` and ``x`` holds no ``-0.0``)."""
    if _numpy_add(x, delta, idx, weight):
        return
    xf, df = x.view(-1), delta.reshape(-1)
    idx = idx.to(x.device)
    term = df.index_select(0, idx)
    if weight is not None:
        term.mul_(weight)
    xf.index_put_((idx,), xf.index_select(0, idx).add_(term))


def _numpy_add(x: Tensor, delta: Tensor, idx: Tensor, weight: float | None) -> bool:
    """:func:`add_on_support` by NumPy (gather, multiply, add, scatter: the same element
    operations as torch's ``index_select`` / ``mul_`` / ``add_`` / ``index_put_``, with
    less overhead per call) where it can run, else False."""
    views = chunked.numpy_views(x, delta) if chunked.NUMPY_MIX else None
    if (views is None or idx.device.type != "cpu" or idx.dtype != torch.int64
            or not (weight is None or type(weight) in (float, int))):
        return False
    xf, df = views
    ii = idx.numpy()
    term = np.take(df, ii)
    with np.errstate(all="ignore"):
        if weight is not None:
            np.multiply(term, weight, out=term)
        picked = np.take(xf, ii)
        np.add(picked, term, out=picked)
    xf[ii] = picked
    return True
