"""Consensus averaging: every node holds a number; mixing drives all of them to the mean."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bflnet.learners.base import ConsensusLearner


@dataclass(frozen=True, slots=True)
class AveragingState:
    """A node's initial value ``x0`` and its current estimate ``x`` (shape ``(1,)``)."""

    x0: float
    x: np.ndarray


class ConsensusAveraging(ConsensusLearner):
    """Average-consensus on initial values (``x_k ← Σ_j w_kj x_j``).

    Each node's initial value is ``initial[node]``, or a draw from its own stream
    (standard normal or uniform on [0, 1)). ``evaluate`` reports
    ``max_deviation = max_k |x_k − mean(x⁽⁰⁾)|`` against the true mean of the initial
    values, and ``mean_value``.

    >>> learner = ConsensusAveraging({0: 1.0, 1: 3.0})
    >>> s0, s1 = (learner.init_node(k, np.random.default_rng(0), None) for k in (0, 1))
    >>> new = learner.absorb(0, s0, {1: learner.outgoing(1, s1)}, {0: 0.5, 1: 0.5})
    >>> float(new.x[0])
    2.0
    """

    def __init__(self, initial: Mapping[Any, float] | None = None, *,
                 distribution: str = "normal") -> None:
        if distribution not in ("normal", "uniform"):
            raise ValueError(f"distribution: must be 'normal' or 'uniform', got {distribution!r}")
        self.initial = dict(initial) if initial is not None else None
        self.distribution = distribution

    def init_node(self, node: Any, rng: np.random.Generator, common: Any) -> AveragingState:
        if self.initial is None:
            value = float(rng.standard_normal() if self.distribution == "normal"
                          else rng.random())
        elif node not in self.initial:
            raise ValueError(f"initial: no value for node {node!r}")
        else:
            value = float(self.initial[node])
        return AveragingState(value, np.array([value]))

    def outgoing(self, node: Any, state: AveragingState) -> np.ndarray:
        return state.x

    def absorb(self, node: Any, state: AveragingState, received: Mapping[Any, np.ndarray],
               weights: Mapping[Any, float]) -> AveragingState:
        mixed = weights[node] * state.x
        for peer, value in received.items():
            mixed = mixed + weights[peer] * np.asarray(value, dtype=float)
        return AveragingState(state.x0, mixed)

    def absorb_pair(self, node: Any, state: AveragingState, peer: Any, mine: np.ndarray,
                    theirs: np.ndarray, weight: float) -> AveragingState:
        """``x ← x + weight · (theirs − mine)``: the two ends of an exchange move by exactly
        opposite amounts, so their sum (and the network's mean) is kept."""
        step = weight * (np.asarray(theirs, dtype=float) - np.asarray(mine, dtype=float))
        return AveragingState(state.x0, state.x + step)

    def evaluate(self, states: Mapping[Any, AveragingState]) -> dict[str, float]:
        stacked = np.concatenate([s.x for s in states.values()])
        true_mean = float(np.mean([s.x0 for s in states.values()]))
        return {
            "max_deviation": float(np.max(np.abs(stacked - true_mean))),
            "mean_value": float(stacked.mean()),
        }
