"""Named, independent random streams derived from one root seed.

Every component (link, node, scheduler, learner) asks for its own stream by name. The
stream is derived with ``numpy.random.SeedSequence(seed, spawn_key=...)`` from a stable
hash of the name, so streams do not depend on the order in which they are requested and
adding a component never shifts another component's draws.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING
from zlib import crc32

import numpy as np

if TYPE_CHECKING:
    import torch


@functools.lru_cache(maxsize=65_536)
def _name_key(name: str) -> tuple[int, ...]:
    """A stable integer key for a stream name (crc32 of each dotted part)."""
    return tuple([crc32(part.encode()) for part in name.split(".")])


class RngStreams:
    """Factory of independent ``numpy.random.Generator`` (and torch) streams.

    >>> streams = RngStreams(7)
    >>> a = streams.numpy("link.0-1").random()
    >>> b = RngStreams(7).numpy("link.0-1").random()
    >>> a == b
    True
    """

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)

    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        """The ``SeedSequence`` behind the stream called ``name``."""
        return np.random.SeedSequence(self.seed, spawn_key=_name_key(name))

    def numpy(self, name: str) -> np.random.Generator:
        """A fresh numpy ``Generator`` for the component called ``name``."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(name)))

    def torch(self, name: str, device: str | torch.device = "cpu") -> torch.Generator:
        """A seeded ``torch.Generator`` for the component called ``name``."""
        import torch

        seed = int(self.seed_sequence(name).generate_state(1, dtype=np.uint64)[0] >> 1)
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        return gen
