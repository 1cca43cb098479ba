"""FALD / WFALD on a torch model (MLP, LeNet): :class:`~bflnet.learners.fald.FALD`'s rounds
with each device's local steps on minibatches of its own data.

Device k's objective is the decentralised Langevin learners' f_k
(:class:`~bflnet.learners.langevin.LocalObjective`: its minibatch negative log-likelihood
scaled to its E_k examples plus 1/K of the negative log prior), so Σ_k f_k estimates the
negative log posterior. The local steps run in torch on the model's device and dtype;
each device's change leaves torch once per round, as the payload handed to the uplink
(a float64 numpy row), and the server's sample stays a numpy vector between rounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from bflnet.learners.fald import FALD
from bflnet.learners.langevin import LocalObjective
from bflnet.learners.torch_utils import torch_generator


class TorchFALD(FALD):
    """FALD on ``model`` with ``node_data[k] = (x_k, y_k)`` for devices ``0 .. K−1``,
    minibatches of ``batch_size`` (module docstring)."""

    def __init__(self, model: Any, node_data: Mapping[int, tuple[Any, Any]], *,
                 step_size: float, local_steps: int = 1, batch_size: int = 64) -> None:
        K = len(node_data)
        if sorted(node_data) != list(range(K)):
            raise ValueError("node_data: keys must be the devices 0 .. K-1")
        device = torch.device(getattr(model, "device", "cpu"))
        self.model = model
        self.objective = LocalObjective(model, node_data, batch_size, model.dtype, device)
        self.device = device
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
        if theta.ndim != 1:
            raise ValueError("theta: TorchFALD runs one chain (a vector)")
        start = torch.as_tensor(theta, dtype=self.model.dtype, device=self.device)[None]
        eta_k = self.step_size * self.K
        out = []
        for k in agents:
            gen = torch_generator(rngs[k], self.device)
            local = start.clone()
            for step in range(self.local_steps):
                local.sub_(self.objective.grad(k, local, gen), alpha=eta_k)
                if step < self.local_steps - 1:
                    noise = torch.randn(local.shape, generator=gen, dtype=local.dtype,
                                        device=self.device)
                    local.add_(noise, alpha=math.sqrt(2.0 * eta_k))
            out.append((local - start)[0])
        return torch.stack(out).double().cpu().numpy()

    def predictive(self, theta: np.ndarray, x: Any) -> torch.Tensor:
        """``(B, C)`` softmax outputs of the sample ``theta`` on ``x``."""
        from bflnet.learners.evaluation import posterior_predictive

        t = torch.as_tensor(theta, dtype=self.model.dtype, device=self.device)[None]
        return posterior_predictive(self.model, t, x)
