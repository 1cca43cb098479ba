"""A small conjugate learner: the posterior of a scalar mean from Gaussian data.

Every agent holds ``points_per_agent`` noisy measurements ``x ~ N(theta, noise_var)`` of an
unknown ``theta``; the prior is ``N(0, prior_var)``. The global state is the posterior in
natural parameters ``[precision·mean, precision]``; an agent adds the sufficient
statistics of its data once, the first time it is scheduled (the conjugate G-FVL update),
and remembers that it did in its private state. The state adds the agents'
contributions (``combines = Combines.ADDITIVE``), so under gossip
(:class:`~bflnet.learners.gossip.gossip_adapter.GossipAdapter`) each node's increment is
scaled by K. Its settings (:class:`~bflnet.learners.hyper.GaussianMeanParams`) are
``custom-learner``'s ``learner.theta``, ``learner.noise_var`` and ``learner.prior_var``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.learners.hyper import GaussianMeanParams


class GaussianMean(GlobalStateLearner):
    """Posterior of ``theta`` from ``data`` (agent -> array of measurements).

    >>> learner = GaussianMean({0: np.array([1.0]), 1: np.array([3.0])}, noise_var=1.0)
    >>> state = learner.init(None)
    >>> for k in (0, 1):
    ...     state = learner.merge(state, [learner.local_update(k, state, False, None)])
    >>> learner.evaluate(state)["posterior_mean"]  # (1 + 3) / (1 + 2)
    1.3333333333333333
    """

    #: The state is prior + the agents' statistics (gossip scales increments by K).
    combines = Combines.ADDITIVE
    #: Why an over-the-air uplink refuses it (quoted by the protocol).
    merges_mean = ("its merge adds natural parameters (a sum, not a mean), and channel "
                   "noise could make them invalid (a negative precision)")
    uses_agent_streams = False

    def __init__(self, data: Mapping[Any, np.ndarray], noise_var: float = 1.0,
                 prior_var: float = 1.0, theta: float | None = None) -> None:
        self.data, self.noise_var, self.prior_var, self.theta = data, noise_var, prior_var, theta

    def init(self, rng: Any) -> np.ndarray:
        return np.array([0.0, 1.0 / self.prior_var])

    def init_agent(self, agent: Any, rng: Any) -> bool:
        return False  # the agent has not contributed yet

    def local_update(self, agent: Any, state: np.ndarray, added: bool, rng: Any) -> Update:
        if added:
            return Update(np.zeros(2), Work(steps=1), agent, agent_state=True)
        x = np.asarray(self.data[agent], dtype=float)
        stats = np.array([x.sum() / self.noise_var, len(x) / self.noise_var])
        return Update(stats, Work(steps=len(x)), agent, agent_state=True)

    def merge(self, state: np.ndarray, updates: Sequence[Update]) -> np.ndarray:
        return state + sum((u.payload for u in updates), np.zeros(2))

    def exact(self) -> np.ndarray:
        """The posterior with every agent's data: the state every protocol converges to."""
        x = np.concatenate([np.asarray(v, dtype=float) for v in self.data.values()])
        return self.init(None) + np.array([x.sum(), len(x)]) / self.noise_var

    def evaluate(self, state: np.ndarray) -> dict[str, float]:
        """``posterior_mean``, ``posterior_sd``, ``mean_error`` (against the exact
        posterior mean) and ``kl`` = KL(state's posterior ‖ exact posterior)."""
        mean, var = state[0] / state[1], 1.0 / state[1]
        exact = self.exact()
        mean_x, var_x = exact[0] / exact[1], 1.0 / exact[1]
        kl = 0.5 * (var / var_x + (mean - mean_x) ** 2 / var_x - 1.0 + np.log(var_x / var))
        return {"posterior_mean": float(mean), "posterior_sd": float(np.sqrt(var)),
                "mean_error": float(abs(mean - mean_x)), "kl": float(max(kl, 0.0))}


def make(K: int, points_per_agent: int, rng: np.random.Generator,
         settings: GaussianMeanParams | None = None) -> GaussianMean:
    """The ``gaussian-mean`` learner of ``custom-learner``: ``points_per_agent`` draws of
    N(theta, noise_var) per agent (defaults: theta = 0.7, unit noise and prior)."""
    p = settings if settings is not None else GaussianMeanParams()
    sd = float(np.sqrt(p.noise_var))
    data = {k: p.theta + sd * rng.standard_normal(points_per_agent) for k in range(K)}
    return GaussianMean(data, noise_var=p.noise_var, prior_var=p.prior_var, theta=p.theta)
