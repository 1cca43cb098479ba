"""A global-state learner driven without a network: for notebooks, learner development and
unit tests that want the maths without SimPy, links or a clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.simulator.rng import RngStreams


class LocalDriver:
    """Keeps what a protocol keeps for a :class:`GlobalStateLearner`: the global state, each
    agent's private state and own stream (the same streams as a protocol run with the
    same seed: ``learner`` for ``init``, ``agent.<k>`` for agent ``k``), and an agent's new
    state only once its update is merged.

    >>> from bflnet.learners import GFVL
    >>> learner = GFVL.beta_bernoulli({0: np.array([1, 0]), 1: np.array([1])})
    >>> driver = LocalDriver(learner, seed=0)
    >>> _ = driver.run([0, 1, 0])
    >>> learner.family.to_params(driver.state)
    {'a': 4.0, 'b': 3.0}
    """

    def __init__(self, learner: GlobalStateLearner, seed: int = 0, state: Any = None) -> None:
        self.learner = learner
        self.streams = RngStreams(seed)
        self.state = learner.init(self.streams.numpy("learner")) if state is None else state
        self.agent_states: dict[Any, Any] = {}
        self._rngs: dict[Any, np.random.Generator] = {}
        self.merges = 0

    def rng(self, agent: Any) -> np.random.Generator:
        """Agent ``agent``'s own stream."""
        if agent not in self._rngs:
            self._rngs[agent] = self.streams.numpy(f"agent.{agent}")
        return self._rngs[agent]

    def agent_state(self, agent: Any) -> Any:
        """Agent ``agent``'s current private state."""
        if agent not in self.agent_states:
            self.agent_states[agent] = self.learner.init_agent(agent, self.rng(agent))
        return self.agent_states[agent]

    def update(self, agent: Any, state: Any = None) -> Update:
        """Agent ``agent``'s update of ``state`` (default: the current global state); not
        merged, so nothing is kept (as when the upload is lost)."""
        state = self.state if state is None else state
        update = self.learner.local_update(agent, state, self.agent_state(agent),
                                           self.rng(agent))
        if update.agent is None:
            update.agent = agent
        return update

    def merge(self, updates: Sequence[Update]) -> Any:
        """Merge ``updates`` into the global state; their agents keep their new states."""
        self.state = self.learner.merge(self.state, updates)
        self.merges += 1
        for update in updates:
            self.agent_states[update.agent] = update.agent_state
        return self.state

    def visit(self, agent: Any) -> Any:
        """One update of ``agent``, merged."""
        return self.merge([self.update(agent)])

    def run(self, agents: Iterable[Any]) -> Any:
        """Visit ``agents`` in turn; the final global state."""
        for agent in agents:
            self.visit(agent)
        return self.state

    def forget(self, agents: Iterable[Any]) -> None:
        """A forget request reaches ``agents``."""
        for agent in agents:
            self.agent_states[agent] = self.learner.forget(agent, self.agent_state(agent))
