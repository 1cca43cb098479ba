"""The EM-TDAMP paper's structured-pruning baselines (Sec. IV): FedAvg with Adam over a plain
ReLU MLP, trained plainly, with a group-lasso penalty, or after group SNIP, and pruned to
the target group sparsity by energy.

**Groups** are those of EM-TDAMP's prior (paper eq. 2, Fig. 4): the outgoing weights of one
input or hidden neuron, i.e. column ``n`` of ``W_l`` ``(N_l, N_{l−1})``; layer ``l`` has
``N_{l−1}`` groups and keeps ``T_l = round(ρ N_{l−1})`` (at least 1) of them, the per-layer
targets of :class:`~bflnet.learners.emtdamp.learner.EMTDAMP`. Biases are not grouped.

**Energy pruning** (:func:`prune_by_energy`, "pruned by energy after training"): in every
layer the ``T_l`` columns of largest energy ``Σ_m W_{l,mn}²`` are kept and the others set
to zero, exactly ``T_l`` survivors (ties broken by ``torch.topk``).

With ``budget_scope="network"`` both energy pruning and SNIP keep one budget
``round(ρ Q_W)`` over all layers (:func:`network_budget`, ``Q_W = Σ_l N_{l−1}``): each
layer's best group, then the largest scores network-wide (:func:`top_masks`); raw energy
favours groups with many outgoing weights, as "pruned by energy" does when the groups of
all layers compete.

**Group lasso** (Scardapane et al. 2017, the paper's [13]): the local objective adds
``λ Σ_l Σ_n √N_l ‖W_l[:, n]‖₂`` (the ``√(group size)`` weighting of that paper), minimised
by Adam through its (sub)gradient ``λ √N_l W_l[:, n] / ‖W_l[:, n]‖`` (0 at a zero column).

**Group SNIP** (Lee et al. 2019, SNIP, extended to neurons as the paper says): one mask
``c_{l,n}`` per group multiplies column ``n`` of ``W_l``; the saliency of a neuron is
``|∂L/∂c_{l,n}|`` at ``c = 1``, ``= |Σ_m W_{l,mn} ∂L/∂W_{l,mn}|``, with ``L`` the mean loss
on one minibatch of every client at the initial weights (weighted ``I_k / I``). The
``T_l`` most salient groups per layer survive; the others are zero from round 0 on and
stay zero (every local step re-applies the mask read from the downloaded model). The
clients' signed sensitivities (``Σ_l N_{l−1}`` numbers each, once) are summed at the
server; their bits are not counted in the run's ``cum_bits_up``.

The learner evaluates the energy-pruned copy of the global model (the trained model
itself is not changed), and the unpruned one under ``<metric>_dense``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.hyper import GroupFedAvgParams
from bflnet.learners.models.torch_utils import check_particles, torch_generator
from bflnet.runtime.devices import resolve_device
from bflnet.validation.params import with_overrides

__all__ = ["DenseMLP", "GroupFedAvg", "active_groups", "energy_masks", "group_lasso_penalty",
           "group_saliency", "layer_targets", "network_budget", "prune_by_energy",
           "regression_metrics", "top_masks"]

LIKELIHOODS = ("gaussian", "softmax")


def layer_targets(sizes: Sequence[int], density: float) -> list[int]:
    """``T_l = max(1, round(ρ N_{l−1}))`` for every layer (EM-TDAMP's rule)."""
    return [max(1, round(density * n)) for n in sizes[:-1]]


class DenseMLP:
    """A ReLU MLP ``sizes`` over a batch of parameter vectors ``theta`` ``(N, d)``, with a
    Gaussian (regression, fixed ``noise_var``) or softmax (classification) output.

    Layout of a vector: per layer, ``W_l`` ``(N_l, N_{l−1})`` row-major, then ``b_l``.

    >>> model = DenseMLP([3, 4, 1])
    >>> theta = model.init_particles(2, torch.Generator().manual_seed(0))
    >>> model.d, model.forward(theta, torch.ones(5, 3)).shape
    (21, torch.Size([2, 5, 1]))
    """

    def __init__(self, sizes: Sequence[int], likelihood: str = "gaussian", *,
                 noise_var: float = 1.0) -> None:
        self.sizes = [int(s) for s in sizes]
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"sizes: must list at least 2 positive widths, got {list(sizes)!r}")
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood: must be one of {', '.join(LIKELIHOODS)}, got "
                             f"{likelihood!r}")
        if not (math.isfinite(noise_var) and 0 < noise_var <= 1e6):
            raise ValueError(f"noise_var: must be in (0, 1e6], got {noise_var!r}")
        self.likelihood, self.noise_var = likelihood, float(noise_var)
        self.n_classes = self.sizes[-1] if likelihood == "softmax" else 0
        self.slices: list[tuple[int, int, int]] = []  # (weights start, bias start, end)
        start = 0
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            self.slices.append((start, start + n_in * n_out, start + n_in * n_out + n_out))
            start += n_in * n_out + n_out
        self.d = start

    @property
    def depth(self) -> int:
        """Number of layers ``L``."""
        return len(self.sizes) - 1

    def unpack(self, theta: Tensor) -> list[tuple[Tensor, Tensor]]:
        """``[(W_l (N, N_l, N_{l−1}), b_l (N, N_l))]`` views of ``theta`` ``(N, d)``."""
        out = []
        for (w0, b0, end), n_in, n_out in zip(self.slices, self.sizes[:-1], self.sizes[1:],
                                              strict=True):
            out.append((theta[:, w0:b0].reshape(-1, n_out, n_in), theta[:, b0:end]))
        return out

    def forward(self, theta: Tensor, x: Tensor) -> Tensor:
        """Outputs ``(N, B, N_L)`` for inputs ``(B, N_0)`` (shared) or ``(N, B, N_0)``."""
        h = x.to(theta.dtype)
        layers = self.unpack(theta)
        for index, (w, b) in enumerate(layers):
            h = torch.matmul(h, w.transpose(1, 2)) + b[:, None, :]
            if index < len(layers) - 1:
                h = torch.relu(h)
        return h

    def log_likelihood(self, theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``(N,)``: ``Σ_batch log p(y | x, θ_n)``."""
        out = self.forward(theta, x)
        if self.likelihood == "softmax":
            labels = y.long().reshape(1, -1, 1).expand(out.shape[0], -1, 1)
            return torch.log_softmax(out, -1).gather(-1, labels).squeeze(-1).sum(-1)
        target = y.to(out.dtype).reshape(1, out.shape[1], -1)
        sq = (out - target).square().sum((-1, -2))
        count = out.shape[1] * out.shape[2]
        return -0.5 * sq / self.noise_var - 0.5 * count * math.log(2 * math.pi * self.noise_var)

    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` float32 vectors, every weight and bias ``U(−1/√N_{l−1}, 1/√N_{l−1})``
        (torch's default for linear layers), on the generator's device (the learner draws
        on the CPU, the same numbers on every device, and moves them)."""
        theta = torch.rand((n, self.d), generator=generator, device=generator.device) * 2 - 1
        for (w0, _, end), n_in in zip(self.slices, self.sizes[:-1], strict=True):
            theta[:, w0:end] /= math.sqrt(n_in)
        return theta

    def flops_per_example(self) -> float:
        """Forward and backward: about ``6 Σ_l N_{l−1} N_l``."""
        return 6.0 * sum(a * b for a, b in zip(self.sizes[:-1], self.sizes[1:], strict=True))


# --------------------------------------------------------------------------- groups


def network_budget(sizes: Sequence[int], density: float) -> int:
    """``max(L, round(ρ Q_W))`` groups over all layers, ``Q_W = Σ_l N_{l−1}`` (EM-TDAMP's
    ``sparsity_mode="paper"`` budget; at least one group per layer)."""
    return max(len(sizes) - 1, round(density * sum(sizes[:-1])))


def top_masks(scores: Sequence[Tensor], targets: Sequence[int] | int) -> list[Tensor]:
    """Per layer ``(N, N_{l−1})`` booleans keeping the largest ``scores``: ``T_l`` per layer
    (``targets`` a list), or one budget over all layers (``targets`` an int): each layer's
    best group, then the largest remaining scores network-wide (ties: lower index)."""
    if not isinstance(targets, int):
        masks = []
        for score, target in zip(scores, targets, strict=True):
            keep = torch.zeros_like(score, dtype=torch.bool)
            keep.scatter_(1, score.topk(min(target, score.shape[1]), dim=1).indices, True)
            masks.append(keep)
        return masks
    flat = torch.cat([score.to(torch.float64) for score in scores], dim=1)
    keep = torch.zeros_like(flat, dtype=torch.bool)
    start = 0
    for score in scores:
        keep[torch.arange(flat.shape[0], device=flat.device), start + score.argmax(1)] = True
        start += score.shape[1]
    room = targets - len(scores)
    if room > 0:
        rest = torch.where(keep, -torch.inf, flat)
        keep.scatter_(1, torch.sort(rest, dim=1, descending=True, stable=True)
                      .indices[:, :room], True)
    return list(torch.split(keep, [score.shape[1] for score in scores], dim=1))


def energy_masks(model: DenseMLP, theta: Tensor, targets: Sequence[int] | int) -> list[Tensor]:
    """Per layer ``(N, N_{l−1})`` booleans: the ``T_l`` columns of largest energy per layer,
    or ``targets`` columns over all layers (:func:`top_masks`)."""
    return top_masks([w.square().sum(1) for w, _ in model.unpack(theta)], targets)


def apply_group_masks(model: DenseMLP, theta: Tensor, masks: Sequence[Tensor]) -> Tensor:
    """A copy of ``theta`` with the columns whose mask is false set to zero."""
    out = theta.clone()
    for (w, _), keep, (w0, b0, _) in zip(model.unpack(theta), masks, model.slices,
                                         strict=True):
        out[:, w0:b0] = (w * keep[:, None, :].to(w.dtype)).reshape(len(theta), -1)
    return out


def prune_by_energy(model: DenseMLP, theta: Tensor, targets: Sequence[int] | int) -> Tensor:
    """``theta`` with exactly ``T_l`` surviving groups per layer (module docs)."""
    return apply_group_masks(model, theta, energy_masks(model, theta, targets))


def active_groups(model: DenseMLP, theta: Tensor) -> Tensor:
    """``(N,)``: the number of weight columns with a nonzero entry, over all layers."""
    return sum(((w != 0).any(1).sum(1) for w, _ in model.unpack(theta)),
               torch.zeros(theta.shape[0], dtype=torch.long, device=theta.device))


def group_lasso_penalty(model: DenseMLP, theta: Tensor, weight: float) -> Tensor:
    """``(N,)``: ``λ Σ_l √N_l Σ_n ‖W_l[:, n]‖₂``."""
    total = theta.new_zeros(theta.shape[0])
    for (w, _), n_out in zip(model.unpack(theta), model.sizes[1:], strict=True):
        total = total + math.sqrt(n_out) * torch.linalg.vector_norm(w, dim=1).sum(1)
    return weight * total


def group_saliency(model: DenseMLP, theta: Tensor, batches: Sequence[tuple[Tensor, Tensor]],
                   weights: Sequence[float]) -> list[Tensor]:
    """Per layer ``(N, N_{l−1})``: ``|∂L/∂c_{l,n}|`` at ``c = 1`` with
    ``L = Σ_k weights[k] · (mean negative log-likelihood on batches[k])`` (module docs)."""
    param = theta.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        loss = sum(-w * model.log_likelihood(param, x, y).sum() / len(y)
                   for (x, y), w in zip(batches, weights, strict=True))
        (grad,) = torch.autograd.grad(loss, param)
    return [(w * g).sum(1).abs() for (w, _), (g, _)
            in zip(model.unpack(theta.detach()), model.unpack(grad), strict=True)]


def regression_metrics(out: Tensor, y: Tensor) -> dict[str, float]:
    """``test_mse`` and ``test_nmse = ‖ŷ − y‖² / ‖y‖²`` of outputs ``(B, N_L)``."""
    target = y.to(out.dtype).reshape(out.shape)
    error = float((out - target).square().sum())
    energy = float(target.square().sum())
    return {"test_mse": error / target.numel(),
            "test_nmse": error / energy if energy > 0 else float("nan")}


# --------------------------------------------------------------------------- learner


class GroupFedAvg(FedAvg):
    """FedAvg (Adam by default) of a :class:`DenseMLP` as one of the paper's three baselines
    (``params.method``), evaluated pruned to ``params.target_density`` (module docs).

    ``eval_data = (x, y)``: the test set; metrics ``test_nmse``, ``test_mse`` (gaussian) or
    ``accuracy``, ``test_error`` (softmax) of the pruned model, ``test_nmse_dense`` /
    ``test_error_dense`` of the unpruned one, ``active_groups``, ``target_groups``.

    ``device`` (a ``torch.device`` or ``cpu``/``cuda``/``auto``, :func:`~bflnet.runtime.devices.
    resolve_device`): where the models, the clients' data and the test set live (put
    there once) and the local steps, masks and pruning compute, in the learner's
    ``dtype`` (float32). The initial weights and the minibatch draws come from the CPU
    (the same numbers on every device); the host reads the device only once per client
    call (the finiteness check) and per evaluation (the metrics).
    """

    def __init__(self, model: DenseMLP, agent_data: Mapping[Any, tuple[Any, Any]],
                 params: GroupFedAvgParams | None = None, *,
                 eval_data: tuple[Any, Any] | None = None,
                 device: str | torch.device = "cpu", **hyper: Any) -> None:
        params = with_overrides(params if params is not None
                                else GroupFedAvgParams(optimizer="adam", lr=1e-3), hyper)
        if not isinstance(params, GroupFedAvgParams):
            raise ValueError("params: must be GroupFedAvgParams")
        if params.batch_agents:
            raise ValueError("batch_agents: not supported by the group baselines")
        if not isinstance(device, torch.device):
            device = resolve_device(device)
        super().__init__(model, agent_data, params, device=device)
        self.group_params = params
        self.targets: list[int] | int = (
            layer_targets(model.sizes, params.target_density)
            if params.budget_scope == "per-layer"
            else network_budget(model.sizes, params.target_density))
        self.test = None
        if eval_data is not None:
            x, y = eval_data
            self.test = (torch.as_tensor(np.asarray(x), dtype=self.dtype, device=self.device),
                         torch.as_tensor(np.asarray(y), device=self.device))

    def init(self, rng: np.random.Generator | None) -> Tensor:
        """Random weights; with group SNIP, the non-salient groups set to zero."""
        theta = super().init(rng)
        if self.group_params.method != "group-snip":
            return theta
        gen = torch_generator(rng, torch.device("cpu"))
        batches = [self.sampler(agent, gen) for agent in self.data]
        counts = [len(self.data[agent][1]) for agent in self.data]
        weights = [c / sum(counts) for c in counts]
        saliency = group_saliency(self.model, theta, batches, weights)
        return apply_group_masks(self.model, theta, top_masks(saliency, self.targets))

    def _penalty(self, param: Tensor) -> Tensor | None:
        if self.group_params.method != "group-lasso":
            return None
        return group_lasso_penalty(self.model, param, self.group_params.group_lasso).sum()

    def _keep_mask(self, w: Tensor) -> Tensor | None:
        if self.group_params.method != "group-snip":
            return None
        alive = [(weights != 0).any(1) for weights, _ in self.model.unpack(w)]
        return apply_group_masks(self.model, torch.ones_like(w), alive)

    def prune(self, state: Any) -> Tensor:
        """The global model pruned by energy to the targets."""
        theta = check_particles(state, self.shape, self.dtype, self.device, "prune: state")
        return prune_by_energy(self.model, theta, self.targets)

    def _losses(self, theta: Tensor) -> dict[str, float]:
        assert self.test is not None
        x, y = self.test
        out = self.model.forward(theta, x)[0]
        if self.model.likelihood == "gaussian":
            return regression_metrics(out, y)
        accuracy = float((out.argmax(-1) == y).to(torch.float64).mean())
        return {"accuracy": accuracy, "test_error": 1.0 - accuracy}

    def evaluate(self, state: Any) -> dict[str, float]:
        theta = check_particles(state, self.shape, self.dtype, self.device,
                                "evaluate: global state")
        pruned = prune_by_energy(self.model, theta, self.targets)
        metrics = {"active_groups": float(active_groups(self.model, pruned)[0]),
                   "target_groups": float(self.targets if isinstance(self.targets, int)
                                          else sum(self.targets))}
        if self.test is None:
            return metrics
        dense = self._losses(theta)
        key = "test_nmse" if "test_nmse" in dense else "test_error"
        return {**metrics, **self._losses(pruned), f"{key}_dense": dense[key]}
