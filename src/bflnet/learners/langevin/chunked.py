"""Element-wise arithmetic on long parameter vectors, run over cache-sized column chunks.

The decentralised Langevin learners (DSGLD, CD-BFL, CF-FL) update d-sized vectors with
chains of element-wise torch operations (at d = 2.7 M each vector is 11 MB, larger than
a core's cache): one pass over memory per operation. Running the whole chain on one
column chunk at a time keeps the chunk's operands in cache: every element goes through
the same operations in the same order, so the results are the same bits, with a fraction
of the memory traffic.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = ["CHUNK", "NUMPY_MIX", "column_chunks", "consensus_step", "gaussian_prior_step",
           "numpy_views", "weighted_sum"]

#: Columns per chunk: 256 KB of float32 per row, so that the four or five operands of a
#: chain stay in a core's L2 cache.
CHUNK = 2**16
#: Whether :func:`weighted_sum` and :func:`consensus_step` (and the sparse additions of
#: :mod:`bflnet.learners.langevin.sparse_mix`) may run in NumPy on the CPU: the same bits as the
#: learners' torch chains, with a fraction of torch's per-call overhead on 64 K-entry
#: chunks (a DSGLD node's mixing of ten 2.7 M-entry samples: about 15 ms against 34 ms).
#: False forces torch's chains (tests, benchmarks).
NUMPY_MIX = True


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


def numpy_views(*tensors: Tensor) -> list[np.ndarray] | None:
    """Flat NumPy views of ``tensors`` when every one can be viewed (:func:`_numpy_view`)
    and all share one dtype and size, else None."""
    views = [_numpy_view(t) for t in tensors]
    if any(v is None for v in views):
        return None
    if len({(v.dtype, v.shape) for v in views}) != 1:  # type: ignore[union-attr]
        return None
    return views  # type: ignore[return-value]


def _real(*constants: object) -> bool:
    """Whether every constant is a Python float or int (NumPy then computes in the
    arrays' dtype, as torch does with a Python scalar; a NumPy float64 scalar would
    not be weak)."""
    return all(type(c) in (float, int) for c in constants)


def weighted_sum(out: Tensor, terms: Sequence[tuple[Tensor, float]],
                 add: Tensor | None = None) -> bool:
    """``out = x_0·w_0 + x_1·w_1 + … (+ add)`` for ``terms = [(x_0, w_0), …]``, element by
    element in that order: torch's chain ``torch.mul(x_0, w_0, out=out)``, then
    ``out.add_(torch.mul(x_j, w_j))`` for each later term, then ``out.add_(add)``, run by
    NumPy over cache-sized chunks (the same IEEE operations in the same order: the same
    bits). ``out`` must not share memory with the others. Returns False, doing nothing,
    where NumPy cannot run it (:data:`NUMPY_MIX` off, another device or dtype, a
    non-contiguous tensor, a weight that is not a Python number)."""
    weights = [w for _, w in terms]
    extra = () if add is None else (add,)
    views = numpy_views(out, *(x for x, _ in terms), *extra) if NUMPY_MIX and terms else None
    if views is None or not _real(*weights):
        return False
    o, xs = views[0], views[1:1 + len(terms)]
    a = views[-1] if add is not None else None
    with np.errstate(all="ignore"):  # overflow to inf and NaN pass silently, as in torch
        for part, tmp in _spans(o):
            oc = o[part]
            np.multiply(xs[0][part], weights[0], out=oc)
            for x, w in zip(xs[1:], weights[1:], strict=True):
                np.add(oc, np.multiply(x[part], w, out=tmp), out=oc)
            if a is not None:
                np.add(oc, a[part], out=oc)
    return True


def consensus_step(theta: Tensor, s: Tensor, v: Tensor, half: Tensor,
                   noise: Tensor | None, zeta: float, noise_scale: float) -> bool:
    """CD-BFL's eq. 9 into ``theta``: ``half + (s − v)·ζ``, then ``+ noise·noise_scale``
    with ``noise``: torch's chain ``torch.add(half, torch.sub(s, v).mul_(ζ))``,
    ``theta.add_(torch.mul(noise, noise_scale))`` run by NumPy over cache-sized chunks
    (the same bits). ``theta`` must not share memory with the others. Returns False,
    doing nothing, where NumPy cannot run it (as :func:`weighted_sum`)."""
    extra = () if noise is None else (noise,)
    views = numpy_views(theta, s, v, half, *extra) if NUMPY_MIX else None
    if views is None or not _real(zeta, noise_scale):
        return False
    t, sn, vn, hn = views[:4]
    nn = views[4] if noise is not None else None
    with np.errstate(all="ignore"):
        for part, tmp in _spans(t):
            tc = t[part]
            np.subtract(sn[part], vn[part], out=tmp)
            np.add(hn[part], np.multiply(tmp, zeta, out=tmp), out=tc)
            if nn is not None:
                np.add(tc, np.multiply(nn[part], noise_scale, out=tmp), out=tc)
    return True


def _spans(out: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """The cache-sized spans (:data:`CHUNK` entries) of the flat array ``out``, each with
    a scratch array of the span's length and ``out``'s dtype (one buffer for all)."""
    n = out.shape[0]
    step = min(CHUNK, max(n, 1))
    scratch = np.empty(step, dtype=out.dtype)
    for i in range(0, n, step):
        yield slice(i, i + step), scratch[:min(step, n - i)]


def gaussian_prior_step(theta: Tensor, lik: Tensor, scale: float, mean: float, var: float,
                        nodes: int, lr: float | None) -> bool:
    """In place on ``lik`` (the log-likelihood gradient at ``theta``): ``g = (−scale·lik)
    − ((mean − θ)/var)/nodes``, then with ``lr`` ``θ − lr·g``: torch's chain of
    :class:`~bflnet.learners.langevin.langevin.LocalObjective` run by NumPy over cache-sized
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
    """:func:`gaussian_prior_step`'s loop over chunks of ``step`` entries. A step (``lr``
    given) with ``mean = 0`` and ``var = 1`` runs five operations instead of six:
    ``g − (0 − θ)/K`` is ``g + θ/K`` (the quotient's rounding is symmetric in sign and
    ``x − (−y)`` is ``x + y``), except that with ``θ = +0`` and ``g = −0`` the sum is
    ``+0`` where the difference is ``−0``; the step ``θ − lr·g`` is then ``+0 − (±0) =
    +0`` either way, so the result is the same bits."""
    if lr is not None and mean == 0 and var == 1:
        for i in range(0, tn.shape[0], step):
            t, g = tn[i:i + step], gn[i:i + step]
            p = scratch[:t.shape[0]]
            np.multiply(g, -scale, out=g)
            np.add(g, np.divide(t, nodes, out=p), out=g)
            np.multiply(g, lr, out=g)
            np.subtract(t, g, out=g)
        return
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
