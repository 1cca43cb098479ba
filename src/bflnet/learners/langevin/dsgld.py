"""DSGLD: decentralised stochastic gradient Langevin dynamics (Gürbüzbalaban et al. 2021),
eq. 4 of the CD-BFL paper: every round each node k

    θ_k ← Σ_{j ∈ N_k ∪ {k}} w_kj θ_j − η ∇f_k(θ_k; M_k) + sqrt(2 η τ) ξ_k,   ξ_k ~ N(0, I),

mixing its neighbours' raw samples (uncompressed) with the mixing matrix the protocol
applies, from one local Langevin step on its f_k (:mod:`bflnet.learners.langevin.langevin`: the
minibatch scaled to the node's data, 1/K of the prior). τ (``temperature``) = 1 targets the
posterior. The gradient and the noise are drawn in ``local_steps`` from the node's own
stream, at the sample the node sent; ``absorb`` mixes and adds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Work
from bflnet.learners.langevin.chunked import column_chunks, weighted_sum
from bflnet.learners.langevin.langevin import (
    LangevinLearner,
    accumulate,
    keeps,
    network_metrics,
)
from bflnet.learners.models.torch_utils import torch_generator

__all__ = ["DSGLD", "DSGLDNode"]


@dataclass(frozen=True)
class DSGLDNode:
    """A node's sample ``theta`` ``(1, d)``, its pending Langevin step (−η∇f_k + noise),
    the round, and the running sums of its kept samples' predictive probabilities."""

    theta: Tensor
    step: Tensor | None = None
    round: int = 0
    sums: dict[str, Tensor] | None = None
    kept: int = 0


class DSGLD(LangevinLearner):
    """DSGLD over any graph (module docs give the update).

    ``node_data`` maps each node to its ``(x, y)``; ``eval_sets`` maps names to ``(x, y)``
    on which the nodes' posterior predictives are measured (``"eval"`` unprefixed). Every
    node starts from one common draw ``model.init_particles(1)`` (the learner's stream).
    """

    def init_node(self, node: Any, rng: np.random.Generator, common: Tensor) -> DSGLDNode:
        return DSGLDNode(self.common_start(node, common))

    def local_steps(self, node: Any, state: DSGLDNode,
                    rng: np.random.Generator) -> tuple[DSGLDNode, Work]:
        gen = torch_generator(rng, torch.device("cpu"))
        step = self.objective.grad(node, state.theta, gen)
        noise = torch.randn(state.theta.shape, generator=gen, dtype=self.dtype).to(self.device)
        # -η·grad + scale·noise, in place on the fresh tensors, chunk by chunk (the same bits)
        for g, n in column_chunks(step, noise):
            g.mul_(-self.params.lr).add_(n.mul_(self.noise_scale))
        return replace(state, step=step), Work(steps=1, flops=self._flops())

    def outgoing(self, node: Any, state: DSGLDNode) -> Tensor:
        return state.theta

    def absorb(self, node: Any, state: DSGLDNode, received: Mapping[Any, Tensor],
               weights: Mapping[Any, float]) -> DSGLDNode:
        # w·θ + Σ_j w_j·θ_j + step in the same order, with one scratch tensor, chunk by
        # chunk (:mod:`bflnet.learners.langevin.chunked`: the same bits)
        theta = torch.empty_like(state.theta)
        items = list(received.items())
        terms = [(state.theta, weights[node]), *((t, weights[j]) for j, t in items)]
        if not weighted_sum(theta, terms, state.step):  # NumPy's chain, else torch's
            tmp = torch.empty_like(state.theta)
            for cols in column_chunks(theta, tmp, state.theta, state.step,
                                      *(t for _, t in items)):
                mixed, tmp_c, own, step = cols[:4]
                torch.mul(own, weights[node], out=mixed)
                for (j, _), theta_j in zip(items, cols[4:], strict=True):
                    mixed.add_(torch.mul(theta_j, weights[j], out=tmp_c))
                mixed.add_(step)
        round_ = state.round + 1
        sums, kept = state.sums, state.kept
        if self.eval_sets and keeps(round_, self.params.burn_in, self.params.thin):
            sums, kept = accumulate(self.model, sums, theta, self.eval_sets), kept + 1
        return DSGLDNode(theta, None, round_, sums, kept)

    def evaluate(self, states: Mapping[Any, DSGLDNode]) -> dict[str, float]:
        return network_metrics(self.model, states, self.eval_sets)

    def _flops(self) -> float:
        fn = getattr(self.model, "flops_per_example", None)
        return self.params.batch_size * float(fn()) if callable(fn) else 0.0
