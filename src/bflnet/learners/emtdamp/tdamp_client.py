"""Client TDAMP (Algorithm 1): minibatches, Module A sweeps, Module B prior, PasP updates.

For each of ``tau_max`` passes over the local data and each minibatch: Module A
(:mod:`.damp_mlp`) runs ``sweeps`` forward/backward DAMP iterations from flat messages,
calling Module B (:mod:`.group_sparse`) for the weights' prior inside every backward
sweep; then PasP (eq. 27) replaces the prior by the minibatch posterior raised to ``λ``
(:func:`pasp_update`) and the next minibatch starts again from flat ``A → B``, ``ŝ`` and
backward messages, so no evidence is counted twice (docs/em-tdamp.md, Sec. 6.5). The
result is the local posterior ``φ^k`` per layer in the server's layout and ``σ^k``
(eq. 19 or eq. 22) from the output posteriors of the last pass.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
from torch import Tensor

from .damp_mlp import (
    DampSettings,
    LayerPrior,
    _backward_sweep,
    _check_priors,
    _init_dense_state,
    dense_prior,
    forward_sweep,
    gaussian_output,
    layer_prior,
    probit_output,
)
from .group_sparse import (
    DenseGroupPosterior,
    DenseGroupPrior,
    GroupSparseMessages,
    dense_group_prior,
)
from .heap import keep_freed_memory
from .server_em import classification_noise_statistics, regression_noise_statistic

__all__ = ["ClientResult", "pasp_update", "tdamp_client"]

Likelihood = Literal["gaussian", "probit"]


class ClientResult(NamedTuple):
    """``posterior``: ``φ^k``, one :class:`LayerPrior` per layer (group activities and slabs,
    the server's ``(G, M)`` layout); ``z_mean``, ``z_var``: ``(N_L, I_k)`` output
    posteriors from the last pass; ``noise_statistic``: ``σ^k`` (eq. 19, a float) or
    ``(μ_k, E_k)`` (eq. 22); ``clips``: summed clip counts; ``minibatches``: processed."""

    posterior: list[LayerPrior]
    z_mean: Tensor
    z_var: Tensor
    noise_statistic: float | tuple[float, float]
    clips: dict[str, int]
    minibatches: int


def pasp_update(
    weights: GroupSparseMessages, biases: GroupSparseMessages, power: float = 1.0
) -> LayerPrior:
    """Eq. 27: the new prior ``p(θ|D^r)^λ`` from Module B's posterior of one layer (6.23).

    The slab's natural parameters are multiplied by ``λ`` (variance ``v/λ``, same mean) and
    so is the group log-odds; ``λ = 1`` (the paper's choice) copies the posterior.
    """
    if not 0.0 < power <= 1.0:
        raise ValueError(f"power: must be in (0, 1], got {power!r}")

    def activity(p: Tensor) -> Tensor:
        return p if power == 1.0 else torch.sigmoid(power * torch.logit(p))

    return LayerPrior(
        activity(weights.posterior_activity), weights.posterior_mean,
        weights.posterior_var / power,
        activity(biases.posterior_activity), biases.posterior_mean,
        biases.posterior_var / power,
    )


def _pasp_parts(
    posterior: DenseGroupPosterior, power: float
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """:func:`pasp_update` in Module A's layout: activities, slab mean and variance of
    ``p(θ|D^r)^λ`` from Module B's posterior."""
    if power == 1.0:
        return posterior.weight_activity, posterior.bias_activity, posterior.mean, posterior.var

    def activity(p: Tensor) -> Tensor:
        return torch.sigmoid(power * torch.logit(p))

    return (activity(posterior.weight_activity), activity(posterior.bias_activity),
            posterior.mean, posterior.var / power)


def _dense_pasp(posterior: DenseGroupPosterior, power: float) -> DenseGroupPrior:
    """The next minibatch's prior; with ``λ = 1`` the posterior's marginals are its
    moments, so they are reused."""
    marginals = (posterior.marginal_mean, posterior.marginal_var) if power == 1.0 else None
    return dense_group_prior(*_pasp_parts(posterior, power), marginals)


def _batches(count: int, size: int, generator: torch.Generator | None) -> list[Tensor | slice]:
    """Minibatch indices: contiguous slices, or index tensors of a shuffled order."""
    if generator is None:
        return [slice(start, min(start + size, count)) for start in range(0, count, size)]
    return list(torch.split(torch.randperm(count, generator=generator), size))


def tdamp_client(
    inputs: Tensor,
    targets: Tensor,
    priors: list[LayerPrior],
    noise_var: float,
    *,
    likelihood: Likelihood = "gaussian",
    batch_size: int = 100,
    tau_max: int = 1,
    sweeps: int = 1,
    power: float = 1.0,
    settings: DampSettings | None = None,
    generator: torch.Generator | None = None,
    start: list[Tensor] | None = None,
) -> ClientResult:
    """Algorithm 1 on the local data ``inputs`` (``(N_0, I_k)``) and ``targets``
    (``(N_L, I_k)`` for ``"gaussian"``, ``(I_k,)`` class indices for ``"probit"``), from
    the server's prior ``priors`` (``ψ``) and noise variance ``noise_var`` (``v``).

    ``tau_max`` passes over the data (Algorithm 1's outer loop), ``sweeps`` DAMP
    iterations per minibatch, PasP power ``power`` (``λ``). Minibatches are contiguous
    unless a ``generator`` shuffles them each pass. Between minibatches the priors stay in
    Module A's layout (:func:`~.damp_mlp.dense_prior`). ``start``: Module A's weight
    estimates ``(N_l, N_{l−1} + 1)`` for the first sweep of the first minibatch (default:
    the prior's marginal means), a starting point that does not enter the prior.
    """
    if inputs.dim() != 2:
        raise ValueError(f"inputs: must be (N_0, I_k), got shape {tuple(inputs.shape)}")
    count = inputs.shape[1]
    if likelihood == "gaussian":
        if targets.dim() != 2 or targets.shape[1] != count:
            raise ValueError(f"targets: must be (N_L, {count}) for a gaussian likelihood")
    elif likelihood == "probit":
        if targets.shape != (count,):
            raise ValueError(f"targets: must be ({count},) class indices for a probit likelihood")
    else:
        raise ValueError(f"likelihood: must be 'gaussian' or 'probit', got {likelihood!r}")
    if batch_size < 1 or tau_max < 1 or sweeps < 1:
        raise ValueError("batch_size: batch_size, tau_max and sweeps must all be >= 1")
    if not 0.0 < power <= 1.0:
        raise ValueError(f"power: must be in (0, 1], got {power!r}")
    settings = settings or DampSettings()
    keep_freed_memory()
    n_out = priors[-1].weight_mean.shape[1]
    z_mean = torch.zeros(n_out, count, dtype=inputs.dtype)
    z_var = torch.zeros_like(z_mean)
    clips: dict[str, int] = {}
    minibatches = 0
    posterior: list[DenseGroupPosterior] | None = None  # of the last minibatch
    for _ in range(tau_max):
        for index in _batches(count, batch_size, generator):
            batch_inputs = inputs[:, index]
            batch_targets = targets[:, index] if likelihood == "gaussian" else targets[index]
            node = (
                gaussian_output(batch_targets, noise_var)
                if likelihood == "gaussian"
                else probit_output(batch_targets, noise_var)
            )
            if posterior is None:
                _check_priors(priors, batch_inputs)
                dense = [dense_prior(p) for p in priors]
            else:  # PasP (eq. 27): the last minibatch's posterior becomes the prior
                dense = [_dense_pasp(p, power) for p in posterior]
            state = _init_dense_state(dense, batch_inputs.shape[1])
            if start is not None and minibatches == 0:
                if [tuple(w.shape) for w in start] != [tuple(w.shape)
                                                       for w in state.weight_mean]:
                    raise ValueError("start: must hold one (N_l, N_{l-1} + 1) tensor per layer")
                state.weight_mean = [w.to(inputs.dtype) for w in start]
            batch_clips: dict[str, int] = {}
            for _ in range(sweeps):
                forward_sweep(state, batch_inputs, settings, batch_clips)
                _backward_sweep(state, dense, node, settings, batch_clips)
            for key, value in batch_clips.items():
                clips[key] = clips.get(key, 0) + value
            # Module B's posterior from the last backward sweep's A → B messages (eq. 26)
            # becomes the next prior (PasP); the next minibatch starts from a fresh (flat)
            # state, which is the extrinsic reset.
            posterior = state.posterior
            assert state.z_mean is not None and state.z_var is not None
            z_mean[:, index], z_var[:, index] = state.z_mean, state.z_var
            minibatches += 1
    statistic: float | tuple[float, float] = (
        regression_noise_statistic(targets, z_mean, z_var)
        if likelihood == "gaussian"
        else classification_noise_statistics(targets, z_mean, z_var)
    )
    if posterior is not None:
        priors = [layer_prior(*_pasp_parts(p, power)) for p in posterior]
    return ClientResult(priors, z_mean, z_var, statistic, clips, minibatches)
