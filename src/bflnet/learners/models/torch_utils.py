"""Torch helpers the particle and FedAvg learners share: generators seeded from an agent's
stream, agents' data as tensors, minibatches, merging mean deltas, particle checks and the
posterior-predictive evaluation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Update


def torch_generator(rng: np.random.Generator | None, device: torch.device) -> torch.Generator:
    """A torch generator seeded from ``rng`` (a fixed seed 0 when ``rng`` is None)."""
    seed = 0 if rng is None else int(rng.integers(0, 2**63 - 1))
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def as_agent_data(agent_data: Mapping[Any, tuple[Any, Any]], dtype: torch.dtype,
                  device: torch.device) -> dict[Any, tuple[Tensor, Tensor]]:
    """Agents' ``(x, y)`` as tensors on ``device`` (``x`` in ``dtype``), validated."""
    if not agent_data:
        raise ValueError("agent_data: must hold at least one agent")
    out = {}
    for agent, pair in agent_data.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"agent_data: agent {agent!r} must map to (x, y), got {type(pair)}")
        x = torch.as_tensor(pair[0], device=device)
        x = x.to(dtype) if x.is_floating_point() else x
        y = torch.as_tensor(pair[1], device=device)
        if x.ndim < 1 or x.shape[0] < 1 or y.shape[:1] != x.shape[:1]:
            raise ValueError(f"agent_data: agent {agent!r} needs x, y with the same number "
                             f"(>= 1) of rows, got {tuple(x.shape)} and {tuple(y.shape)}")
        out[agent] = (x, y)
    return out


#: Below this many rows a minibatch is the head of a full permutation (``randperm(N)``
#: costs under ~50 µs there); above it, and when the batch is at most 1/8 of the rows,
#: :func:`sample_without_replacement` draws O(batch) numbers (``randperm`` of 232 404 rows
#: costs ~4 ms). Every scenario default and documented reproduction has N_k <= 6000, so
#: their draws are those of ``randperm``.
LARGE_SET_ROWS = 8192


def sample_without_replacement(n: int, m: int, generator: torch.Generator) -> Tensor:
    """``m`` distinct indices of ``range(n)`` in random order, every ordered sample equally
    likely, in expected O(m log m) for ``8 m <= n``: the first occurrences of a stream of
    uniform draws (a value seen before is skipped), drawn ``m + m/8 + 8`` at a time."""
    if not 0 <= m <= n:
        raise ValueError(f"m: must be in 0..{n}, got {m}")
    draws = torch.randint(n, (m + m // 8 + 8,), generator=generator)
    if torch.unique(draws[:m]).numel() == m:  # the usual case: the first m are distinct
        return draws[:m]
    picked = torch.empty(0, dtype=torch.int64)
    stream = draws
    while True:
        values, inverse = torch.unique(stream, return_inverse=True)
        first = torch.full((values.numel(),), stream.numel(), dtype=torch.int64)
        first.scatter_reduce_(0, inverse, torch.arange(stream.numel()), "amin")
        picked = stream[first.sort().values]
        if picked.numel() >= m:
            return picked[:m]
        draws = torch.randint(n, (m + m // 8 + 8,), generator=generator)
        stream = torch.cat([picked, draws])


class MinibatchSampler:
    """Per-agent minibatches: ``M = min(batch_size, N_k)`` examples drawn without
    replacement with the torch generator the caller passes (the agent's own; the whole
    set, in order, when ``M = N_k``): the first ``M`` of ``randperm(N_k)``, or for large
    sets (``N_k > LARGE_SET_ROWS`` and ``8 M <= N_k``) :func:`sample_without_replacement`,
    O(M) instead of O(N_k) per minibatch."""

    def __init__(self, data: dict[Any, tuple[Tensor, Tensor]], batch_size: int) -> None:
        self.data = data
        self.batch_size = batch_size

    def size(self, agent: Any) -> int:
        """``M`` for ``agent``."""
        return min(self.batch_size, self.data[agent][0].shape[0])

    def indices(self, agent: Any, generator: torch.Generator) -> Tensor:
        """The ``M`` row indices of the next minibatch (on the data's device)."""
        x = self.data[agent][0]
        n = x.shape[0]
        if self.batch_size >= n:
            return torch.arange(n, device=x.device)
        if n > LARGE_SET_ROWS and 8 * self.batch_size <= n:
            idx = sample_without_replacement(n, self.batch_size, generator)
        else:  # drawn where the generator is (the CPU: the same draws on every device)
            idx = torch.randperm(n, generator=generator,
                                 device=generator.device)[:self.batch_size]
        return idx.to(x.device)

    def many_indices(self, agent: Any, generator: torch.Generator, count: int) -> Tensor:
        """``(count, M)``: the row indices of the next ``count`` minibatches, exactly those
        of ``count`` calls of :meth:`indices` (the generator ends in the same state). For
        large sets one ``randint`` draws the candidates of all of them (a
        ``randint`` of ``count · w`` numbers gives the ``count`` draws of ``w`` in turn);
        the rare minibatch whose first ``M`` candidates repeat a value rewinds the
        generator and is redrawn by :func:`sample_without_replacement` itself (when
        ``M² > N_k`` most would: one by one)."""
        if count < 0:
            raise ValueError(f"count: must be >= 0, got {count}")
        x = self.data[agent][0]
        n, m = x.shape[0], self.batch_size
        if m >= n or not (n > LARGE_SET_ROWS and 8 * m <= n) or m * m > n:
            # (m² > n: most minibatches would repeat a value; drawn one by one)
            rows = [self.indices(agent, generator) for _ in range(count)]
            return (torch.stack(rows) if rows else
                    torch.empty((0, min(m, n)), dtype=torch.int64, device=x.device))
        width = m + m // 8 + 8  # what sample_without_replacement draws at a time
        out = torch.empty((count, m), dtype=torch.int64)
        done = 0
        most = max(1, 2**20 // width)  # minibatches per draw (memory)
        while done < count:
            state = generator.get_state()
            draws = torch.randint(n, (min(count - done, most) * width,), generator=generator)
            head = draws.view(-1, width)[:, :m].sort(dim=1).values
            repeats = (head[:, 1:] == head[:, :-1]).any(dim=1)
            good = int(repeats.int().argmax()) if bool(repeats.any()) else head.shape[0]
            out[done:done + good] = draws.view(-1, width)[:good, :m]
            done += good
            if good < head.shape[0]:  # rewind to the bad minibatch, draw it the slow way
                generator.set_state(state)
                torch.randint(n, (good * width,), generator=generator)
                out[done] = sample_without_replacement(n, m, generator)
                done += 1
        return out.to(x.device)

    def __call__(self, agent: Any, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        x, y = self.data[agent]
        if self.batch_size >= x.shape[0]:
            return x, y
        idx = self.indices(agent, generator)
        return x[idx], y[idx]


def apply_mean_delta(state: Tensor, updates: Sequence[Update], context: str,
                     what: str, weights: Sequence[float] | None = None) -> Tensor:
    """``state`` plus the mean of the updates' payloads (deltas of ``state``'s shape), or
    with ``weights`` ``state + (1/n) Σ_i weights[i] Δ_i``; one-line errors naming the agent
    for a wrong shape, or the agents for a non-finite result."""
    deltas = []
    for u in updates:
        delta = torch.as_tensor(u.payload, dtype=state.dtype, device=state.device)
        if delta.shape != state.shape:
            raise ValueError(f"{context}: update of agent {u.agent!r} has shape "
                             f"{tuple(delta.shape)}, expected {tuple(state.shape)}")
        deltas.append(delta)
    if weights is None:
        new = state + (deltas[0] if len(deltas) == 1 else torch.stack(deltas).mean(0))
    else:
        if len(weights) != len(deltas):
            raise ValueError(f"{context}: {len(weights)} weights for {len(deltas)} updates")
        scale = torch.as_tensor([float(a) for a in weights], dtype=state.dtype,
                                device=state.device) / len(deltas)
        new = state + torch.tensordot(scale, torch.stack(deltas), dims=1)
    if not bool(torch.isfinite(new).all()):
        raise ValueError(f"{context}: non-finite {what} after the updates of agents "
                         f"{[u.agent for u in updates]!r}")
    return new


def check_particles(state: Any, shape: tuple[int, int], dtype: torch.dtype,
                    device: torch.device, who: str) -> Tensor:
    """``state`` as a finite ``shape`` tensor (``ValueError`` naming ``who`` otherwise)."""
    theta = torch.as_tensor(state, dtype=dtype, device=device)
    if tuple(theta.shape) != shape:
        raise ValueError(f"{who}: expected particles of shape {shape}, got {tuple(theta.shape)}")
    if not bool(torch.isfinite(theta).all()):
        raise ValueError(f"{who}: particles contain NaN or inf")
    return theta


def predictive_evaluation(model: Any, theta: Tensor, eval_data: tuple[Any, Any],
                          per_class: bool) -> dict[str, float]:
    """:func:`bflnet.learners.evaluation.predictive_metrics` (plus per-class accuracy)."""
    from bflnet.learners.evaluation import (
        per_class_accuracy,
        posterior_predictive,
        predictive_metrics,
    )

    x, y = eval_data
    metrics = predictive_metrics(model, theta, x, y)
    if per_class:
        probs = posterior_predictive(model, theta, x)
        acc = per_class_accuracy(probs, y, model.n_classes)
        metrics.update({f"acc_class_{c}": float(a) for c, a in enumerate(acc)})
    return metrics
