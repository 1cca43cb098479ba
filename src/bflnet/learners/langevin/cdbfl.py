"""CD-BFL: compressed decentralised Bayesian federated learning (Barbieri et al.), Algorithm 1
of the CD-BFL paper in the memory-efficient form of CHOCO-SGD (Koloskova, Stich and Jaggi,
"Decentralized stochastic optimization and gossip algorithms with compressed
communication", ICML 2019), plus one Langevin noise draw per round. Every round t each node k:

1. θ_k^(0) = θ_{k,t};  θ_k^(l) = θ_k^(l−1) − η ∇f_k(θ_k^(l−1); M_k), l = 1..L  (eq. 5)
2. Δθ_k = Q(θ_k^(L) − v_k)       — sent to every neighbour; Q is the protocol's codec
   (e.g. top-k keeping 1 %), and ``sent`` hands back exactly what the neighbours decode
3. v_k ← v_k + Δθ_k              — the node's public copy (eq. 7)
4. s_k ← s_k + Σ_{j ∈ N_k ∪ {k}} w_kj Δθ_j   — the weighted sum of the copies (eq. 8)
5. θ_{k,t+1} = θ_k^(L) + ζ (s_k − v_k) + sqrt(2 η τ) ξ_k   (eq. 9)

with v_k = s_k = 0 at t = 0 and f_k of :mod:`bflnet.learners.langevin.langevin`. Σ_k s_k = Σ_k v_k
holds exactly (Ω doubly stochastic), so the mixing step preserves the network average of
the θ_k whatever Q does. τ (``temperature``) = 1 targets the posterior; CF-FL
(:mod:`bflnet.learners.langevin.cffl`) is the same with no noise.

**A lost increment.** CHOCO assumes every Δθ_j arrives: the payloads are increments, so the
protocol must not reuse an old one (``ConsensusProtocol(lost="skip")``, which this learner
asks for). A node that misses Δθ_j has an s_k that no longer equals Σ_j w_kj v_j, for good:
the copies diverge. The records show it: ``missed_increments`` (total over the nodes) and
``copy_gap`` = max_k ‖s_k − Σ_j w_kj v_j‖_∞ (0 up to rounding while nothing is lost). Use
``max_attempts=None`` on the links (ARQ until delivered) to rule it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Work
from bflnet.learners.hyper import CDBFLParams
from bflnet.learners.langevin.chunked import column_chunks, consensus_step
from bflnet.learners.langevin.langevin import (
    LangevinLearner,
    accumulate,
    keeps,
    network_metrics,
)
from bflnet.learners.langevin.sparse_mix import add_on_support, support
from bflnet.learners.models.torch_utils import torch_generator

__all__ = ["CDBFL", "CDBFLNode"]


@dataclass(frozen=True)
class CDBFLNode:
    """A node's sample ``theta`` and local iterate ``half`` (θ^(L)), its public copy ``v``,
    the weighted sum ``s`` of its neighbourhood's copies, its own decoded increment
    ``delta``, its pending noise ξ (unscaled: ``absorb`` adds sqrt(2ητ)·ξ), its
    mixing-weight row, the increments it missed, the round and the running predictive
    sums of its kept samples."""

    theta: Tensor
    v: Tensor
    s: Tensor
    half: Tensor | None = None
    delta: Tensor | None = None
    noise: Tensor | None = None
    weights: Mapping[Any, float] | None = None
    missed: int = 0
    round: int = 0
    sums: dict[str, Tensor] | None = None
    kept: int = 0


class CDBFL(LangevinLearner):
    """CD-BFL over any graph (module docs give Algorithm 1).

    ``node_data`` maps each node to its ``(x, y)``; ``eval_sets`` maps names to ``(x, y)``
    on which the nodes' posterior predictives are measured (``"eval"`` unprefixed). Every
    node starts from one common draw ``model.init_particles(1)`` (the learner's stream).
    """

    #: CHOCO's payloads are increments: a lost one must not be replaced by an old one.
    increments = True
    #: Whether the predictive averages the kept samples (False: the current model only).
    averages_samples = True
    PARAMS = CDBFLParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # id(decoded increment) -> (that increment, its support) for the current round:
        # every receiver gets the object the sender's ``sent`` saw, so its support is
        # found once (:mod:`bflnet.learners.langevin.sparse_mix`); a miss takes the dense path
        self._supports: dict[int, tuple[Tensor, Tensor]] = {}
        self._supports_round = -1

    def init_node(self, node: Any, rng: np.random.Generator, common: Tensor) -> CDBFLNode:
        theta = self.common_start(node, common)
        return CDBFLNode(theta, torch.zeros_like(theta), torch.zeros_like(theta))

    def local_steps(self, node: Any, state: CDBFLNode,
                    rng: np.random.Generator) -> tuple[CDBFLNode, Work]:
        gen = torch_generator(rng, torch.device("cpu"))
        theta, lr = state.theta, self.params.lr
        for _ in range(self.params.local_steps):                              # eq. 5
            theta = self.objective.descend(node, theta, gen, lr)  # θ − lr·∇f_k, fresh
        noise = None
        if self.noise_scale:  # scaled in ``absorb``, chunk by chunk (the same bits)
            noise = torch.randn(theta.shape, generator=gen, dtype=self.dtype).to(self.device)
        work = Work(steps=self.params.local_steps, flops=self._flops())
        return replace(state, half=theta, noise=noise), work

    def outgoing(self, node: Any, state: CDBFLNode) -> Tensor:
        assert state.half is not None, "local_steps must run first"
        return state.half - state.v                                  # Q(.) is the codec's

    def sent(self, node: Any, state: CDBFLNode, decoded: Tensor) -> CDBFLNode:
        delta = torch.as_tensor(decoded, dtype=self.dtype, device=self.device)
        if state.round != self._supports_round:
            self._supports, self._supports_round = {}, state.round
        idx = support(delta)
        if idx is None:
            return replace(state, delta=delta, v=state.v + delta)            # eq. 7
        self._supports[id(delta)] = (delta, idx)
        v = state.v.clone()
        add_on_support(v, delta, idx)           # v + Δ: the same bits (sparse_mix docs)
        return replace(state, delta=delta, v=v)

    def _support(self, delta: Tensor) -> Tensor | None:
        """The support ``sent`` found for this very increment this round, or None."""
        entry = self._supports.get(id(delta))
        return entry[1] if entry is not None and entry[0] is delta else None

    def absorb(self, node: Any, state: CDBFLNode, received: Mapping[Any, Tensor],
               weights: Mapping[Any, float]) -> CDBFLNode:
        assert state.half is not None and state.delta is not None
        zeta, own = self.params.zeta, weights[node]
        items = list(received.items())
        theta = torch.empty_like(state.half)
        noise = () if state.noise is None else (state.noise,)
        supports = [self._support(d) for d in (state.delta, *(d for _, d in items))]
        if all(idx is not None for idx in supports):
            # every increment sparse: s = s0 + w·Δ + Σ_j w_j·Δ_j on their supports only,
            # the same operations per entry in the same order (sparse_mix docs)
            s = state.s.clone()
            terms = [(state.delta, own), *((d, weights[j]) for j, d in items)]
            for (delta, w), idx in zip(terms, supports, strict=True):
                add_on_support(s, delta, idx, w)                             # eq. 8
            if not consensus_step(theta, s, state.v, state.half, state.noise, zeta,
                                  self.noise_scale):                # eq. 9, by NumPy
                tmp = torch.empty_like(state.s)
                for cols in column_chunks(theta, tmp, s, state.v, state.half, *noise):
                    self._step(*cols[:5], cols[5] if noise else None, zeta)  # or torch
        else:
            # the same operations in the same order as s + w·Δ, ..., chunk by chunk
            # (:mod:`bflnet.learners.langevin.chunked`: the same bits), with one scratch tensor
            s, tmp = torch.empty_like(state.s), torch.empty_like(state.s)
            for cols in column_chunks(s, theta, tmp, state.s, state.delta, state.v,
                                      state.half, *(d for _, d in items), *noise):
                s_c, theta_c, tmp_c, s0, delta, v, half = cols[:7]
                torch.add(s0, torch.mul(delta, own, out=tmp_c), out=s_c)      # eq. 8
                for (j, _), delta_j in zip(items, cols[7:7 + len(items)], strict=True):
                    s_c.add_(torch.mul(delta_j, weights[j], out=tmp_c))
                self._step(theta_c, tmp_c, s_c, v, half, cols[-1] if noise else None, zeta)
        missed = state.missed + sum(1 for j in weights if j != node and j not in received)
        round_ = state.round + 1
        sums, kept = state.sums, state.kept
        if self.eval_sets and self.averages_samples and keeps(
                round_, self.params.burn_in, self.params.thin):
            sums, kept = accumulate(self.model, sums, theta, self.eval_sets), kept + 1
        return CDBFLNode(theta, state.v, s, None, None, None, dict(weights), missed, round_,
                         sums, kept)

    def _step(self, theta: Tensor, tmp: Tensor, s: Tensor, v: Tensor, half: Tensor,
              noise: Tensor | None, zeta: float) -> None:
        """Eq. 9 on one chunk: ``theta = half + ζ·(s − v) [+ sqrt(2ητ)·ξ]``, ``tmp`` the
        scratch (``noise`` is left unchanged)."""
        torch.add(half, torch.sub(s, v, out=tmp).mul_(zeta), out=theta)
        if noise is not None:
            theta.add_(torch.mul(noise, self.noise_scale, out=tmp))

    def evaluate(self, states: Mapping[Any, CDBFLNode]) -> dict[str, float]:
        out = network_metrics(self.model, states, self.eval_sets)
        out["missed_increments"] = float(sum(n.missed for n in states.values()))
        gaps = [float((n.s - sum(w * states[j].v for j, w in n.weights.items()))
                      .abs().max()) for n in states.values() if n.weights is not None]
        if gaps:
            out["copy_gap"] = max(gaps)
        return out

    def _flops(self) -> float:
        fn = getattr(self.model, "flops_per_example", None)
        per = float(fn()) if callable(fn) else 0.0
        return self.params.local_steps * self.params.batch_size * per
