"""Client TDAMP (Algorithm 1): minibatches, Module A sweeps, Module B prior, PasP updates.

For each of ``tau_max`` passes over the local data and each minibatch: Module A
(:mod:`.damp_mlp`) runs ``sweeps`` forward/backward DAMP iterations from flat messages,
calling Module B (:mod:`.group_sparse`) for the weights' prior inside every backward
sweep; then PasP (eq. 27) replaces the prior by the minibatch posterior raised to ``λ``
(:func:`pasp_update`) and the next minibatch starts again from flat ``A → B``, ``ŝ`` and
backward messages, so no evidence is counted twice (docs/em-tdamp.md, Sec. 6.5). The
result is the local posterior ``φ^k`` per layer in the server's layout and ``σ^k``
(eq. 19 or eq. 22) from the output posteriors of the last pass.

:func:`tdamp_clients` runs several clients of a round at once (Module A's state and
priors with a leading client dimension, :mod:`.damp_mlp`): each client's minibatch
``j`` is processed together with the others', and every client's result is bit for bit
the one :func:`tdamp_client` gives for it alone.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
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
    flush_checks,
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
    element_log_evidence_ratio,
)
from .heap import keep_freed_memory
from .moments import client_sigmoid
from .server_em import classification_noise_statistics, regression_noise_statistic

__all__ = ["Cancelled", "ClientResult", "pasp_update", "tdamp_client", "tdamp_clients"]

Likelihood = Literal["gaussian", "probit"]


class Cancelled(Exception):
    """:func:`tdamp_clients` stopped between minibatches because its ``cancel`` was set."""


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
        return client_sigmoid(power * torch.logit(p), core=1)

    return (activity(posterior.weight_activity), activity(posterior.bias_activity),
            posterior.mean, posterior.var / power)


def _dense_pasp(posterior: DenseGroupPosterior, power: float) -> DenseGroupPrior:
    """The next minibatch's prior; with ``λ = 1`` the posterior's marginals are its
    moments, so they are reused."""
    marginals = (posterior.marginal_mean, posterior.marginal_var) if power == 1.0 else None
    return dense_group_prior(*_pasp_parts(posterior, power), marginals)


def _activity(activity: Tensor, mean: Tensor, var: Tensor, post_mean: Tensor,
              post_var: Tensor) -> Tensor:
    """Eq. 26's ``ρ^post = σ(logit ρ + Σ_m ℓ_m)`` for the Gaussian message that turns the
    slab ``(mean, var)`` into ``(post_mean, post_var)`` (precision ``1/v_post − 1/v``,
    floored at 0; shift ``μ_post/v_post − μ/v``); ``ρ`` = 0 or 1 stays."""
    precision = torch.clamp(1.0 / post_var - 1.0 / var, min=0.0)
    shift = post_mean / post_var - mean / var
    evidence = element_log_evidence_ratio(mean, var, precision, shift).sum(-1)
    return client_sigmoid(torch.logit(activity) + evidence, core=1)


def round_activity(prior: LayerPrior, posterior: LayerPrior) -> LayerPrior:
    """``activity_update="round"``: the client's posterior activities from eq. 26 applied
    once to the round's accumulated ``A → B`` messages. Under PasP with ``λ = 1`` and the
    activities held, each minibatch multiplies the slab by its message (3.4), so the
    product of the round's messages is the slab's natural-parameter change from ``prior``
    (the round's) to ``posterior``; the slab of ``posterior`` is kept."""
    kind = {"dtype": posterior.weight_mean.dtype, "device": posterior.weight_mean.device}
    prior = LayerPrior(*(t.to(**kind) for t in prior))
    weight = _activity(prior.weight_activity, prior.weight_mean, prior.weight_var,
                       posterior.weight_mean, posterior.weight_var)
    bias = _activity(prior.bias_activity, prior.bias_mean, prior.bias_var,
                     posterior.bias_mean, posterior.bias_var)
    return posterior._replace(weight_activity=weight, bias_activity=bias)


def _batches(count: int, size: int, generator: torch.Generator | None) -> list[Tensor | slice]:
    """Minibatch indices: contiguous slices, or index tensors of a shuffled order."""
    if generator is None:
        return [slice(start, min(start + size, count)) for start in range(0, count, size)]
    return list(torch.split(torch.randperm(count, generator=generator), size))


def _check_client(inputs: Tensor, targets: Tensor, likelihood: str) -> int:
    """The client's example count, after checking its data's shapes."""
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
    return count


def _batched(prior: DenseGroupPrior, clients: int) -> DenseGroupPrior:
    """The same prior for every client: each tensor repeated along a new first dimension."""
    return prior._replace(**{name: value.unsqueeze(0).repeat(clients, *(1,) * value.dim())
                             for name, value in prior._asdict().items()
                             if isinstance(value, Tensor)})


def _take(data: Sequence[Tensor], index: Sequence[Tensor | slice]) -> Tensor:
    """Every client's minibatch of ``data`` (columns ``index[k]`` of the last dimension)
    stacked along a new first dimension. A matrix stored with its columns contiguous (the
    ``(N_0, I)`` view of ``(I, N_0)`` examples, as the learner keeps them) is gathered by
    whole rows of the array below (one example's values at a time), then transposed into
    place; otherwise by ``index_select`` (5 x faster than ``d[..., i]``). The same values
    either way."""
    first, at = data[0], index[0]
    size = at.numel() if isinstance(at, Tensor) else len(range(first.shape[-1])[at])
    out = torch.empty(len(data), *first.shape[:-1], size, dtype=first.dtype,
                      device=first.device)
    for part, d, i in zip(out, data, index, strict=True):
        if isinstance(i, slice):
            part.copy_(d[..., i])
        elif d.dim() == 2 and d.stride(0) == 1 and d.shape[0] > 1:
            part.copy_(d.T.index_select(0, i).T)
        else:
            torch.index_select(d, -1, i, out=part)
    return out


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
    the prior's marginal means), a starting point that does not enter the prior. The
    computation runs in the data's dtype and on its device (the priors are moved there).
    """
    return tdamp_clients([inputs], [targets], priors, noise_var, likelihood=likelihood,
                         batch_size=batch_size, tau_max=tau_max, sweeps=sweeps, power=power,
                         settings=settings, generators=[generator], start=start)[0]


def client_generators(inputs: Sequence[Tensor], targets: Sequence[Tensor],
                      generators: Sequence[torch.Generator | None] | None
                      ) -> list[torch.Generator | None]:
    """One generator (or ``None``) per client, after checking that there is at least one
    client and one targets per client; one-line errors naming the argument."""
    clients = len(inputs)
    if clients < 1 or len(targets) != clients:
        raise ValueError("inputs: need at least one client, and one targets per client")
    gens = list(generators) if generators is not None else [None] * clients
    if len(gens) != clients:
        raise ValueError("generators: need one per client")
    return gens


def tdamp_clients(
    inputs: Sequence[Tensor],
    targets: Sequence[Tensor],
    priors: list[LayerPrior],
    noise_var: float,
    *,
    likelihood: Likelihood = "gaussian",
    batch_size: int = 100,
    tau_max: int = 1,
    sweeps: int = 1,
    power: float = 1.0,
    settings: DampSettings | None = None,
    generators: Sequence[torch.Generator | None] | None = None,
    start: list[Tensor] | None = None,
    cancel: threading.Event | None = None,
) -> list[ClientResult]:
    """:func:`tdamp_client` for several clients with the same number of examples, from the
    same prior, computed together (module docs): one :class:`ClientResult` per client, in
    order, each equal bit for bit to that client's :func:`tdamp_client`. ``generators``:
    one per client (``None``: contiguous minibatches). ``cancel``: checked before each
    minibatch; once set, :class:`Cancelled` is raised (for clients run on other threads,
    :mod:`.parallel`)."""
    gens = client_generators(inputs, targets, generators)
    clients = len(inputs)
    counts = {_check_client(x, y, likelihood) for x, y in zip(inputs, targets, strict=True)}
    if len(counts) != 1:
        raise ValueError("inputs: every client must hold the same number of examples")
    count = counts.pop()
    if batch_size < 1 or tau_max < 1 or sweeps < 1:
        raise ValueError("batch_size: batch_size, tau_max and sweeps must all be >= 1")
    if not 0.0 < power <= 1.0:
        raise ValueError(f"power: must be in (0, 1], got {power!r}")
    settings = settings or DampSettings()
    keep_freed_memory()
    kind = {"dtype": inputs[0].dtype, "device": inputs[0].device}
    n_out = priors[-1].weight_mean.shape[1]
    z_mean = torch.zeros(clients, n_out, count, **kind)
    z_var = torch.zeros_like(z_mean)
    clips: dict[str, Tensor | int] = {}
    minibatches = 0
    posterior: list[DenseGroupPosterior] | None = None  # of the last minibatch
    for _ in range(tau_max):
        orders = [_batches(count, batch_size, g) for g in gens]
        for index in zip(*orders, strict=True):
            if cancel is not None and cancel.is_set():
                raise Cancelled("tdamp_clients: cancelled")
            index = [i if isinstance(i, slice) else i.to(kind["device"]) for i in index]
            batch_inputs = _take(inputs, index)
            batch_targets = _take(targets, index)
            node = (
                gaussian_output(batch_targets, noise_var)
                if likelihood == "gaussian"
                else probit_output(batch_targets, noise_var)
            )
            if posterior is None:
                _check_priors(priors, batch_inputs[0])
                dense = [_batched(dense_prior(LayerPrior(*(t.to(**kind) for t in p))), clients)
                         for p in priors]
            else:  # PasP (eq. 27): the last minibatch's posterior becomes the prior
                dense = [_dense_pasp(p, power) for p in posterior]
            state = _init_dense_state(dense, batch_inputs.shape[-1])
            state.private = True  # never handed out: its damped arrays are overwritten
            if start is not None and minibatches == 0:
                if [tuple(w.shape) for w in start] != [tuple(w.shape[1:])
                                                       for w in state.weight_mean]:
                    raise ValueError("start: must hold one (N_l, N_{l-1} + 1) tensor per layer")
                state.weight_mean = [w.to(**kind).expand(clients, *w.shape).clone()
                                     for w in start]
            batch_clips: dict[str, int] = {}
            for _ in range(sweeps):
                forward_sweep(state, batch_inputs, settings, batch_clips)
                _backward_sweep(state, dense, node, settings, batch_clips)
            flush_checks(state)
            for key, value in batch_clips.items():
                clips[key] = clips.get(key, 0) + value
            # Module B's posterior from the last backward sweep's A → B messages (eq. 26)
            # becomes the next prior (PasP); the next minibatch starts from a fresh (flat)
            # state, which is the extrinsic reset.
            posterior = state.posterior
            assert state.z_mean is not None and state.z_var is not None
            if all(isinstance(i, slice) for i in index):
                z_mean[..., index[0]], z_var[..., index[0]] = state.z_mean, state.z_var
            else:
                for k, i in enumerate(index):
                    z_mean[k][:, i], z_var[k][:, i] = state.z_mean[k], state.z_var[k]
            minibatches += 1
    counted = {key: (value.tolist() if isinstance(value, Tensor) else [int(value)] * clients)
               for key, value in clips.items()}
    results = []
    for k in range(clients):
        statistic: float | tuple[float, float] = (
            regression_noise_statistic(targets[k], z_mean[k], z_var[k])
            if likelihood == "gaussian"
            else classification_noise_statistics(targets[k], z_mean[k], z_var[k])
        )
        own = priors
        if posterior is not None:
            own = [layer_prior(*(t[k] for t in _pasp_parts(p, power))) for p in posterior]
            if settings.hold_activity:
                own = [round_activity(p, o) for p, o in zip(priors, own, strict=True)]
        results.append(ClientResult(own, z_mean[k], z_var[k], statistic,
                                    {key: int(v[k]) for key, v in counted.items()},
                                    minibatches))
    return results
