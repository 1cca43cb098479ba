"""Per-run root seeds for the scenarios that run many independent runs from one seed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class RunSeeds(Sequence[int]):
    """Per-run root seeds: the children of ``SeedSequence(seed, "runs")``, each made when
    it is read, so that a million runs start at once; run ``r``'s seed does not depend on
    the number of runs. Equal to ``spawn(runs)``'s children, in order."""

    def __init__(self, seed: int, runs: int) -> None:
        from bflnet.simulator.rng import RngStreams
        parent = RngStreams(seed).seed_sequence("runs")
        self._entropy, self._key, self._pool = parent.entropy, parent.spawn_key, parent.pool_size
        self._runs = runs

    def __len__(self) -> int:
        return self._runs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._runs))]
        import numpy as np
        r = range(self._runs)[index]  # negative indices; IndexError past the end
        child = np.random.SeedSequence(self._entropy, spawn_key=(*self._key, r),
                                       pool_size=self._pool)
        return int(child.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def run_seeds(seed: int, runs: int) -> RunSeeds:
    """Per-run root seeds (:class:`RunSeeds`): children of ``SeedSequence(seed, "runs")``;
    run ``r``'s seed does not depend on the number of runs."""
    return RunSeeds(seed, runs)
