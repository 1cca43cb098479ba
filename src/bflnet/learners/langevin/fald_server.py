"""A FALD-kind learner (:class:`~bflnet.learners.langevin.fald.FALD`, ``TorchFALD``,
``AnalogFedAvg``: ``init(rng, shape)``, ``local_updates(theta, rngs)``,
``merge(theta, mean, channel_var, rng)``) as a
:class:`~bflnet.learners.base.GlobalStateLearner` for the parameter server with an
uplink that delivers the devices' mean (``aircomp``, ``digital``, ``ideal``).

The agents are the devices ``0 .. K−1`` and keep no state; a round of every device
computes their changes in one ``local_updates`` call (each from its own stream, in
device order), a round of some of them one device at a time. The merge takes the
delivered mean and the variance of the channel noise on it (:meth:`FALDRounds.
merge_mean`): the learner adds the rest of its noise from the server's stream. Over
per-agent links (``uplink=links``) there is no such stream to draw from, so
:meth:`FALDRounds.merge` refuses.

>>> import numpy as np
>>> from bflnet.learners.langevin.fald import FALD
>>> rounds = FALDRounds(FALD([lambda th: th - 1.0, lambda th: th + 1.0], step_size=0.1),
...                     (1,))
>>> ups = rounds.local_update_batch([0, 1], np.zeros(1), [None, None], [None, None])
>>> [u.payload.tolist() for u in ups]
[[0.2], [-0.2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bflnet.learners.base import Combines, GlobalStateLearner, Update


class FALDRounds(GlobalStateLearner):
    """``fald`` (any FALD-kind learner, module docstring) on samples of ``shape``
    (``(d,)``, or ``(chains, d)`` for independent chains under the same channel)."""

    combines = Combines.AVERAGED
    merges_mean = True
    batches_agents = True

    def __init__(self, fald: Any, shape: tuple[int, ...]) -> None:
        self.fald = fald
        self.shape = tuple(int(n) for n in shape)
        self.K = int(fald.K)

    @property
    def noise_target(self) -> float | None:
        """The inner learner's (its Langevin noise per round; ``None``: none wanted)."""
        return self.fald.noise_target

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """The inner learner's initial sample(s) of :attr:`shape`."""
        return self.fald.init(rng, self.shape)

    def local_update(self, agent: Any, state: Any, agent_state: Any,
                     rng: np.random.Generator) -> Update:
        """Device ``agent``'s change from ``state``."""
        return self.local_update_batch([agent], state, [agent_state], [rng])[0]

    def local_update_batch(self, agents: Sequence[Any], state: Any,
                           agent_states: Sequence[Any],
                           rngs: Sequence[np.random.Generator]) -> list[Update]:
        """The changes of ``agents`` from ``state`` (module docstring)."""
        agents = list(agents)
        if agents == list(range(self.K)):
            deltas = self.fald.local_updates(state, list(rngs))
        elif hasattr(self.fald, "local_update"):
            deltas = np.stack([self.fald.local_update(k, state, rng)
                               for k, rng in zip(agents, rngs, strict=True)], axis=-2)
        else:
            raise ValueError(f"agents: {type(self.fald).__name__} computes every device's "
                             f"change at once; schedule all {self.K} devices every round")
        return [Update(deltas[..., i, :], agent=k) for i, k in enumerate(agents)]

    def merge(self, state: Any, updates: Sequence[Update]) -> Any:
        """Refused: the Langevin noise needs the server's stream (:meth:`merge_mean`)."""
        raise ValueError(f"uplink=links: {type(self.fald).__name__} adds its Langevin noise "
                         f"at the server; run it with uplink=ideal, aircomp or digital")

    def merge_mean(self, state: Any, mean: Any, channel_var: float,
                   rng: np.random.Generator) -> tuple[Any, float]:
        """The inner learner's merge of the delivered mean: ``(state, variance added)``."""
        return self.fald.merge(state, mean, channel_var, rng)
