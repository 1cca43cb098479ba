"""FALD / WFALD on a torch model (MLP, LeNet): :class:`~bflnet.learners.langevin.fald.FALD`'s rounds
with each device's local steps on minibatches of its own data.

Device k's objective is the decentralised Langevin learners' f_k
(:class:`~bflnet.learners.langevin.langevin.LocalObjective`: its minibatch negative log-likelihood
scaled to its E_k examples plus 1/K of the negative log prior), so Σ_k f_k estimates the
negative log posterior. The local steps run in torch on the model's device and dtype;
each device's change leaves torch once per round, as the payload handed to the uplink
(a float64 numpy row), and the server's sample stays a numpy vector between rounds.

**Batched devices** (``batch_agents``, on by default), as FedAvg's batched agents: the
devices that share a minibatch size and a data size run as one ``(K, d)`` stack, per step
one batched forward and backward and one update of the whole stack (the model's fused
``sgd_step`` where it has one and the prior is N(0, σ² I): the step
``θ ← θ − η K ∇f_k(θ)`` is ``θ ← (1 − η / σ²) θ + η K (E_k / M) ∇ Σ_batch log p``;
else the batched ``log_likelihood_grad``), and one addition of every device's noise. Each
device draws its minibatches and noises from its own stream in the order of the one by
one path (the same draws); the changes equal that path's up to float rounding (batched
products sum in another order: about 1e-7 of the largest change in float32).
``batch_agents=False`` runs the devices one by one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from bflnet.learners.langevin.fald import FALD
from bflnet.learners.langevin.langevin import LocalObjective
from bflnet.learners.models.torch_utils import torch_generator


class TorchFALD(FALD):
    """FALD on ``model`` with ``node_data[k] = (x_k, y_k)`` for devices ``0 .. K−1``,
    minibatches of ``batch_size``, the devices as one stack with ``batch_agents``
    (module docstring)."""

    def __init__(self, model: Any, node_data: Mapping[int, tuple[Any, Any]], *,
                 step_size: float, local_steps: int = 1, batch_size: int = 64,
                 batch_agents: bool = True) -> None:
        K = len(node_data)
        if sorted(node_data) != list(range(K)):
            raise ValueError("node_data: keys must be the devices 0 .. K-1")
        device = torch.device(getattr(model, "device", "cpu"))
        self.model = model
        self.objective = LocalObjective(model, node_data, batch_size, model.dtype, device)
        self.device = device
        self.batch_agents = bool(batch_agents)
        super().__init__([self._unused] * K, step_size=step_size, local_steps=local_steps)

    @staticmethod
    def _unused(theta: np.ndarray) -> np.ndarray:  # pragma: no cover - never called
        raise NotImplementedError

    def init(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """The model's initial parameter vector (``shape`` must be ``(d,)``)."""
        if tuple(shape) != (self.model.d,):
            raise ValueError(f"shape: must be ({self.model.d},), got {tuple(shape)}")
        gen = torch_generator(rng, self.device)
        return self.model.init_particles(1, gen)[0].double().cpu().numpy()

    def local_update(self, agent: int, theta: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
        """Device ``agent``'s change after its local steps from ``theta``."""
        return self.local_updates_of([agent], theta, {agent: rng})[0]

    def local_updates(self, theta: np.ndarray,
                      rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """``(K, d)``: every device's change."""
        return self.local_updates_of(range(self.K), theta, dict(enumerate(rngs)))

    def local_updates_of(self, agents: Any, theta: np.ndarray,
                         rngs: Mapping[int, np.random.Generator]) -> np.ndarray:
        """``(len(agents), d)``: the changes of ``agents`` from ``theta``, device ``k``
        drawing from ``rngs[k]``. With ``batch_agents`` (and a model with a hand-written
        ``log_likelihood_grad``) the devices that share a minibatch size and a data size
        run as one stack (module docstring); otherwise one after the other."""
        if theta.ndim != 1:
            raise ValueError("theta: TorchFALD runs one chain (a vector)")
        agents = list(agents)
        start = torch.as_tensor(theta, dtype=self.model.dtype, device=self.device)[None]
        gens = [torch_generator(rngs[k], self.device) for k in agents]
        if not (self.batch_agents and callable(getattr(self.model, "log_likelihood_grad",
                                                         None))):
            out = [self._one_by_one(k, start, gen) for k, gen in zip(agents, gens,
                                                                     strict=True)]
            return torch.cat(out).sub_(start).double().cpu().numpy()
        groups: dict[tuple[int, int], list[int]] = {}
        for i, k in enumerate(agents):
            key = (self.objective.sampler.size(k), self.objective.examples(k))
            groups.setdefault(key, []).append(i)
        if len(groups) == 1:
            return self._stacked(start, agents, gens).sub_(start).double().cpu().numpy()
        new = start.new_empty((len(agents), start.shape[1]))
        for rows in groups.values():
            new[rows] = self._stacked(start, [agents[i] for i in rows],
                                      [gens[i] for i in rows])
        return new.sub_(start).double().cpu().numpy()

    def _one_by_one(self, k: int, start: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``(1, d)``: device ``k``'s sample after its local steps from ``start``."""
        eta_k = self.step_size * self.K
        local = start.clone()
        for step in range(self.local_steps):
            local.sub_(self.objective.grad(k, local, gen), alpha=eta_k)
            if step < self.local_steps - 1:
                noise = torch.randn(local.shape, generator=gen, dtype=local.dtype,
                                    device=self.device)
                local.add_(noise, alpha=math.sqrt(2.0 * eta_k))
        return local

    def _stacked(self, start: torch.Tensor, agents: list[int],
                 gens: list[torch.Generator]) -> torch.Tensor:
        """``(len(agents), d)``: the samples of ``agents`` (one minibatch size and data
        size) after their local steps from ``start``, as one stack (module docstring)."""
        eta_k = self.step_size * self.K
        obj = self.objective
        local = start.expand(len(agents), -1).clone()
        fused = obj.sgd_form()
        grad = None if fused else torch.empty_like(local)
        noise = torch.empty_like(local)
        decay = 1.0 - eta_k / (self.K * getattr(self.model, "prior_var", 1.0))
        for step in range(self.local_steps):
            if fused:  # θ ← (1 − η_K / (K σ²)) θ + η_K (E_k / M) ∇ Σ_batch log p
                x, y, scale = obj.minibatch_stack(agents, gens)
                self.model.sgd_step(local, x, y, eta_k * scale, decay)
            else:
                local.sub_(obj.grad_stack(agents, local, gens, out=grad), alpha=eta_k)
            if step < self.local_steps - 1:
                for row, gen in enumerate(gens):
                    torch.randn(noise.shape[1:], generator=gen, out=noise[row])
                local.add_(noise, alpha=math.sqrt(2.0 * eta_k))
        return local

    def predictive(self, theta: np.ndarray, x: Any) -> torch.Tensor:
        """``(B, C)`` softmax outputs of the sample ``theta`` on ``x``."""
        from bflnet.learners.evaluation import posterior_predictive

        t = torch.as_tensor(theta, dtype=self.model.dtype, device=self.device)[None]
        return posterior_predictive(self.model, t, x)
