"""Over-the-air FedAvg: the digital FedAvg's arithmetic (:class:`~bflnet.learners.federated.fedavg.
FedAvg`) with the analog aggregate of the AirComp uplink (Zhu, Wang and Huang, "Broadband
Analog Aggregation for Low-Latency Federated Edge Learning"; Amiri and Gündüz, "Federated
Learning over Wireless Fading Channels": truncated channel inversion).

:class:`AnalogFedAvg` gives a :class:`FedAvg` the FALD-kind interface that
(:func:`bflnet.protocols.uplink.run_fald`) drives: every device's change ``Δw_k`` comes from
``FedAvg.local_update_batch`` (the same local steps, minibatches and optimiser), and the
new model is ``w + m`` with ``m`` the mean the uplink delivered: the exact
``(1/K) Σ_k Δw_k`` over ideal links (FedAvg's own ``merge``), or the analog estimate
``y / (sqrt(a) K_a)`` of the active devices' mean, channel noise included, over the air.
Nothing is added to it: FedAvg wants as little noise as possible (``noise_target`` is
``None``, so the power rule is ``full``). The learner never sees the channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from bflnet.learners.federated.fedavg import FedAvg


class AnalogFedAvg:
    """``fedavg`` (its agents must be ``0 .. K−1``) as a learner of the AirComp server
    protocol (module docstring); the sample ``theta`` is a float64 vector."""

    #: FedAvg wants no noise: the power rule spends the whole budget.
    noise_target: float | None = None

    def __init__(self, fedavg: FedAvg) -> None:
        agents = list(fedavg.agents)
        if agents != list(range(len(agents))):
            raise ValueError("fedavg: its agents must be the devices 0 .. K-1")
        self.fedavg = fedavg
        self.K = len(agents)

    def init(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """FedAvg's initial model as a float64 vector (``shape`` must be ``(d,)``)."""
        w = self.fedavg.init(rng)
        if tuple(shape) != (w.shape[-1],):
            raise ValueError(f"shape: must be ({w.shape[-1]},), got {tuple(shape)}")
        return w[0].double().cpu().numpy()

    def local_updates(self, theta: np.ndarray,
                      rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """``(K, d)``: every device's ``Δw_k`` from ``theta`` (FedAvg's local steps)."""
        if theta.ndim != 1:
            raise ValueError("theta: FedAvg runs one model (a vector)")
        f = self.fedavg
        w = torch.as_tensor(theta, dtype=f.dtype, device=f.device)[None]
        agents = list(range(self.K))
        updates = f.local_update_batch(agents, w, [None] * self.K, list(rngs))
        return torch.cat([u.payload for u in updates]).double().cpu().numpy()

    def merge(self, theta: np.ndarray, mean_update: np.ndarray, channel_var: float,
              rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """``theta + mean_update`` (noise and all); nothing added (0)."""
        if not channel_var >= 0:
            raise ValueError(f"channel_var: must be a number >= 0, got {channel_var!r}")
        new = theta + mean_update
        if not np.isfinite(new).all():
            raise ValueError("FedAvg: the model is no longer finite (lr too large?)")
        return new, 0.0

    def predictive(self, theta: np.ndarray, x: Any) -> torch.Tensor:
        """``(B, C)`` softmax outputs of the model ``theta`` on ``x``."""
        from bflnet.learners.evaluation import posterior_predictive

        f = self.fedavg
        t = torch.as_tensor(theta, dtype=f.dtype, device=f.device)[None]
        return posterior_predictive(f.model, t, x)
