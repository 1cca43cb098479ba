"""The CD-BFL / DSGLD / CF-FL code paths as they were before their speed-ups, for timing
the new ones against them in the same process (``bench/cdbfl_paper_jobs.py --legacy``):
the update arithmetic allocating every intermediate, the full top-k partition, and the
evaluation's convolutions over whole chunks. The results are the same bits either way."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

import bflnet.learners.models.lenet as lenet
import bflnet.protocols.coding.codecs as codecs
from bflnet.learners.base import Work
from bflnet.learners.langevin.cdbfl import CDBFL, CDBFLNode
from bflnet.learners.langevin.cffl import CFFL
from bflnet.learners.langevin.dsgld import DSGLD, DSGLDNode
from bflnet.learners.langevin.langevin import LocalObjective, accumulate, keeps
from bflnet.learners.models.torch_utils import torch_generator
from bflnet.protocols.coding.topk_select import _full, top_k_sorted


@contextlib.contextmanager
def paths(legacy: bool) -> Iterator[None]:
    """With ``legacy``, the full top-k partition and whole-chunk evaluation convolutions."""
    if not legacy:
        yield
        return
    cache = lenet.CACHE_ACTIVATIONS
    codecs.top_k_sorted, lenet.CACHE_ACTIVATIONS = _full, 2**62
    try:
        yield
    finally:
        codecs.top_k_sorted, lenet.CACHE_ACTIVATIONS = top_k_sorted, cache


def _grad(self: LocalObjective, node: Any, theta: Tensor, generator: torch.Generator
          ) -> Tensor:
    x, y = self.sampler(node, generator)
    scale = self.examples(node) / x.shape[0]
    theta = theta.detach()
    prior = (getattr(self.model, "prior_mean", 0.0) - theta) / self.model.prior_var
    lik = self._lik_grad(theta, x, y)
    return -scale * lik - prior / self.n_nodes


def legacy_objective(objective: LocalObjective) -> None:
    """``objective.grad`` allocating every intermediate (a Gaussian prior's models only)."""
    objective.grad = types.MethodType(_grad, objective)


class LegacyCDBFL(CDBFL):
    def local_steps(self, node: Any, state: CDBFLNode,
                    rng: np.random.Generator) -> tuple[CDBFLNode, Work]:
        gen = torch_generator(rng, torch.device("cpu"))
        theta, lr = state.theta, self.params.lr
        for _ in range(self.params.local_steps):
            theta = theta - lr * self.objective.grad(node, theta, gen)
        noise = None
        if self.noise_scale:
            noise = self.noise_scale * torch.randn(theta.shape, generator=gen,
                                                   dtype=self.dtype).to(self.device)
        work = Work(steps=self.params.local_steps, flops=self._flops())
        return replace(state, half=theta, noise=noise), work

    def absorb(self, node: Any, state: CDBFLNode, received: Mapping[Any, Tensor],
               weights: Mapping[Any, float]) -> CDBFLNode:
        assert state.half is not None and state.delta is not None
        s = state.s + weights[node] * state.delta
        for j, delta_j in received.items():
            s = s + weights[j] * delta_j
        missed = state.missed + sum(1 for j in weights if j != node and j not in received)
        theta = state.half + self.params.zeta * (s - state.v)
        if state.noise is not None:
            theta = theta + state.noise
        round_ = state.round + 1
        sums, kept = state.sums, state.kept
        if self.eval_sets and self.averages_samples and keeps(
                round_, self.params.burn_in, self.params.thin):
            sums, kept = accumulate(self.model, sums, theta, self.eval_sets), kept + 1
        return CDBFLNode(theta, state.v, s, None, None, None, dict(weights), missed, round_,
                         sums, kept)


class LegacyCFFL(LegacyCDBFL, CFFL):
    pass


class LegacyDSGLD(DSGLD):
    def local_steps(self, node: Any, state: DSGLDNode,
                    rng: np.random.Generator) -> tuple[DSGLDNode, Work]:
        gen = torch_generator(rng, torch.device("cpu"))
        grad = self.objective.grad(node, state.theta, gen)
        noise = torch.randn(state.theta.shape, generator=gen, dtype=self.dtype)
        step = -self.params.lr * grad + self.noise_scale * noise.to(self.device)
        return replace(state, step=step), Work(steps=1, flops=self._flops())

    def absorb(self, node: Any, state: DSGLDNode, received: Mapping[Any, Tensor],
               weights: Mapping[Any, float]) -> DSGLDNode:
        mixed = weights[node] * state.theta
        for j, theta_j in received.items():
            mixed = mixed + weights[j] * theta_j
        theta = mixed + state.step
        round_ = state.round + 1
        sums, kept = state.sums, state.kept
        if self.eval_sets and keeps(round_, self.params.burn_in, self.params.thin):
            sums, kept = accumulate(self.model, sums, theta, self.eval_sets), kept + 1
        return DSGLDNode(theta, None, round_, sums, kept)


CLASSES = {"cd-bfl": LegacyCDBFL, "dsgld": LegacyDSGLD, "cf-fl": LegacyCFFL}
