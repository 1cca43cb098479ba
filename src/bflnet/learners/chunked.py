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

from torch import Tensor

__all__ = ["CHUNK", "column_chunks"]

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
