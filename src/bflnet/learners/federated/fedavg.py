"""FedAvg (McMahan et al. 2017): the frequentist baseline of the compressed-DSVGD letter.

The **global state** is one parameter vector as a ``(1, d)`` tensor, so the codecs and bit
formulas of the particle learners apply with ``n_rows = 1``. The scheduled agent runs
``local_steps`` steps of SGD (optionally with momentum) or Adam, each on a fresh minibatch
of ``M = min(batch_size, N_k)`` examples, minimising the average negative log-likelihood
plus an optional L2 penalty,

    f_k(w) = −(1/M) Σ_{b∈batch} log p(y_b | x_b, w) + (weight_decay/2) ‖w‖²,

(with ``weight_decay = 1/(N·prior_var)`` the fixed point of full-batch FedAvg on equal-size
agents is the MAP), and sends ``Δw = w_local − w`` (``Update.payload``). ``merge`` returns
``w + mean(Δw)`` over the updates that arrived (decoded by the protocol's codec): the plain
mean, not weighted by ``N_k``. The optimiser state starts afresh at every local update.

**Batched agents** (``batch_agents``, on by default): when several agents compute in the
same round a protocol calls :meth:`FedAvg.local_update_batch`, which runs their local
updates as one ``(K, d)`` stack of models. Plain SGD on a model with a hand-written step
(:meth:`BayesianMLP.sgd_stack <bflnet.learners.models.classifiers.BayesianMLP.sgd_stack>`) runs
through :class:`~bflnet.learners.models.mlp_sgd.MLPSGDStack`: no autograd, no gradient buffer,
the weights in the step's own layout for the whole update, and on CPU one chunk of agents
at a time (one agent of the 784-100-10 MLP: its weights stay in the core's cache through
its steps; on other devices all agents per batched kernel). Momentum, Adam and other
models take per step one batched forward and backward (the model's hand-written
``log_likelihood_grad``; a model without one runs the agents one by one) and one
optimiser step over the stack (SGD, momentum and Adam act element by element, so each
row follows its own agent's update). Each agent draws its minibatches from its own
stream as :meth:`FedAvg.local_update` does (the same draws); the results equal the
sequential ones up to float rounding (other GEMM kernels and order of operations).
``batch_agents=False`` keeps the one-by-one autograd path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.learners.hyper import OPTIMIZERS, FedAvgParams
from bflnet.learners.models.torch_utils import (
    MinibatchSampler,
    apply_mean_delta,
    as_agent_data,
    check_particles,
    predictive_evaluation,
    torch_generator,
)
from bflnet.validation.params import with_overrides

__all__ = ["OPTIMIZERS", "FedAvg", "FedAvgParams"]


class FedAvg(GlobalStateLearner):
    """Federated averaging of local SGD/Adam steps (module docs give the objective).

    >>> from bflnet.learners.models.toy_models import GaussianMeanModel
    >>> data = {0: (torch.full((4, 1), 1.0), torch.zeros(4)),
    ...         1: (torch.full((4, 1), 3.0), torch.zeros(4))}
    >>> learner = FedAvg(GaussianMeanModel(d=1), data, local_steps=5, lr=0.1)
    >>> w = learner.init(np.random.default_rng(0))
    >>> rngs = {k: np.random.default_rng(k) for k in (0, 1)}
    >>> for _ in range(50):
    ...     w = learner.merge(w, [learner.local_update(k, w, None, rngs[k]) for k in (0, 1)])
    >>> round(float(w), 3)                 # the MLE: the mean of all observations
    2.0
    """

    #: How the state combines the agents' contributions: the model is the
    #: average of the agents' models.
    combines = Combines.AVERAGED
    #: Several updates merge as ``w + mean(Δw)``: an over-the-air uplink may hand it a
    #: noisy mean (``merge_mean``).
    merges_mean = True

    def __init__(self, model: Any, agent_data: Mapping[Any, tuple[Any, Any]],
                 params: FedAvgParams | None = None, *,
                 eval_data: tuple[Any, Any] | None = None, eval_per_class: bool = False,
                 initial_params: Tensor | None = None, dtype: torch.dtype = torch.float32,
                 device: str | torch.device | None = None, **hyper: Any) -> None:
        self.model = model
        self.params = with_overrides(params if params is not None else FedAvgParams(), hyper)
        p = self.params
        self.local_steps, self.lr, self.batch_size = p.local_steps, p.lr, p.batch_size
        self.optimizer, self.momentum = p.optimizer, p.momentum
        self.weight_decay = p.weight_decay
        self.dtype = dtype
        self.device = torch.device(device if device is not None
                                   else getattr(model, "device", "cpu"))
        self.d = int(model.d)
        self.shape = (1, self.d)
        self.data = as_agent_data(agent_data, dtype, self.device)
        self.sampler = MinibatchSampler(self.data, self.batch_size)
        self.eval_data = eval_data
        self.eval_per_class = bool(eval_per_class)
        self.initial_params = None if initial_params is None else check_particles(
            torch.as_tensor(initial_params).reshape(1, -1), self.shape, dtype, self.device,
            "initial_params").clone()

    @property
    def agents(self) -> list[Any]:
        """Agents with data, in ``agent_data`` order."""
        return list(self.data)

    def init(self, rng: np.random.Generator | None) -> Tensor:
        """``w^(0)``: ``model.init_particles(1)`` (or ``initial_params``), ``(1, d)``, drawn
        from ``rng``."""
        if self.initial_params is not None:
            return self.initial_params.clone()
        gen = torch_generator(rng, torch.device("cpu"))
        return check_particles(self.model.init_particles(1, gen), self.shape, self.dtype,
                               self.device, "model.init_particles")

    def local_update(self, agent: Any, state: Any, agent_state: Any,
                     rng: np.random.Generator | None) -> Update:
        """``local_steps`` optimiser steps from ``w`` on minibatches drawn from the agent's
        stream ``rng``; payload ``Δw`` ``(1, d)``. The agent keeps no state (the optimiser
        starts afresh)."""
        if agent not in self.data:
            raise ValueError(f"agent: no data for agent {agent!r}")
        where = f"FedAvg (agent {agent!r})"
        w = check_particles(state, self.shape, self.dtype, self.device,
                            f"{where}: downloaded global state")
        param = w.clone().requires_grad_(True)
        opt = self._optimizer(param)
        m = self.sampler.size(agent)
        gen = torch_generator(rng, torch.device("cpu"))
        first_bad = torch.full((), -1, dtype=torch.long, device=self.device)
        keep = self._keep_mask(w)
        with torch.enable_grad():
            for step in range(self.local_steps):
                x, y = self.sampler(agent, gen)
                loss = -self.model.log_likelihood(param, x, y).sum() / m
                if self.weight_decay:
                    loss = loss + 0.5 * self.weight_decay * param.square().sum()
                penalty = self._penalty(param)
                if penalty is not None:
                    loss = loss + penalty
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if keep is not None:
                    with torch.no_grad():
                        param.mul_(keep)
                first_bad = torch.where((first_bad < 0) & ~torch.isfinite(loss.detach()),
                                        torch.full_like(first_bad, step), first_bad)
        new = param.detach()
        if int(first_bad) >= 0 or not bool(torch.isfinite(new).all()):
            at = f"local step {int(first_bad) + 1}" if int(first_bad) >= 0 else "the end"
            raise ValueError(f"{where}: non-finite loss or parameters at {at} of "
                             f"{self.local_steps}")
        return Update(new - w, Work(steps=self.local_steps, flops=self._flops(m)), agent)

    def _penalty(self, param: Tensor) -> Tensor | None:
        """An extra term of the local objective (subclasses; none here)."""
        return None

    def _keep_mask(self, w: Tensor) -> Tensor | None:
        """A ``(1, d)`` 0/1 mask applied after every local step (subclasses; none here)."""
        return None

    @property
    def batches_agents(self) -> bool:
        """Whether protocols should call :meth:`local_update_batch` for agents that compute
        in the same round (``batch_agents``)."""
        return bool(self.params.batch_agents)

    def local_update_batch(self, agents: Sequence[Any], state: Any,
                           agent_states: Sequence[Any],
                           rngs: Sequence[np.random.Generator | None]) -> list[Update]:
        """:meth:`local_update` for each of ``agents`` from the same downloaded ``w``, as
        one stack of models (module docs); agents whose minibatch sizes differ run as one
        stack per size. A model without ``log_likelihood_grad`` runs the agents one by
        one. Returns the updates in ``agents`` order."""
        unknown = [a for a in agents if a not in self.data]
        if unknown:
            raise ValueError(f"agents: no data for agents {unknown!r}")
        if not (len(agent_states) == len(rngs) == len(agents)):
            raise ValueError("agent_states, rngs: need one per agent")
        if not callable(getattr(self.model, "log_likelihood_grad", None)):
            return [self.local_update(agent, state, agent_state, rng)
                    for agent, agent_state, rng in zip(agents, agent_states, rngs, strict=True)]
        w = check_particles(state, self.shape, self.dtype, self.device,
                            "FedAvg (batched agents): downloaded global state")
        gens = [torch_generator(rng, torch.device("cpu")) for rng in rngs]
        by_size: dict[int, list[int]] = {}
        for i, agent in enumerate(agents):
            by_size.setdefault(self.sampler.size(agent), []).append(i)
        out: list[Update | None] = [None] * len(agents)
        for m, rows in by_size.items():
            new = self._stacked_steps(w, [agents[i] for i in rows], [gens[i] for i in rows], m)
            flops = self._flops(m)
            for row, i in enumerate(rows):
                out[i] = Update(new[row:row + 1] - w, Work(steps=self.local_steps, flops=flops),
                                agents[i])
        return [u for u in out if u is not None]

    def _stacked_steps(self, w: Tensor, agents: list[Any], gens: list[torch.Generator],
                       m: int) -> Tensor:
        """``local_steps`` optimiser steps of the ``(len(agents), d)`` stack from ``w``."""
        # each agent's minibatches of the whole update, from its own stream (the same
        # draws as step by step: the streams are independent)
        steps = self.local_steps
        idx = [self.sampler.many_indices(agent, gen, steps)
               for agent, gen in zip(agents, gens, strict=True)]
        xs = [self.data[a][0] for a in agents]
        # the labels of every step at once: (k, steps, m)
        labels = torch.stack([self.data[a][1][i] for a, i in zip(agents, idx, strict=True)])
        plain_sgd = self.optimizer == "sgd" and not self.momentum
        can_fuse = getattr(self.model, "has_sgd_step", None)
        if plain_sgd and callable(can_fuse) and can_fuse():
            new = self._fused_sgd_steps(w, xs, idx, labels, m)
        else:
            new = self._gradient_steps(w, xs, idx, labels, m)
        if not bool(torch.isfinite(new.sum(dim=1)).all()):  # (a finite sum: finite entries)
            bad = ~torch.isfinite(new).all(dim=1)
            if bool(bad.any()):
                which = [a for a, b in zip(agents, bad.tolist(), strict=True) if b]
                raise ValueError(f"FedAvg (agents {which!r}): non-finite parameters after "
                                 f"{self.local_steps} local steps")
        return new

    def _fused_sgd_steps(self, w: Tensor, xs: list[Tensor], idx: list[Tensor],
                         labels: Tensor, m: int) -> Tensor:
        """Plain SGD through the model's :meth:`sgd_stack` (``θ ← (1 − lr·wd) θ + (lr/m)
        ∇ Σ log p`` per step, in place, no gradient buffer), a chunk of agents at a time:
        on CPU as many as keep their weights and minibatch in a core's cache (one agent
        of the 784-100-10 MLP: its weights stay hot through its steps), elsewhere all."""
        k = len(xs)
        stack = self.model.sgd_stack(w.expand(k, -1))
        chunk = stack.chunk_rows(m)
        indices = torch.stack(idx)           # (k, steps, m)
        labels = labels.long()
        step, decay = self.lr / m, 1.0 - self.lr * self.weight_decay
        for start in range(0, k, chunk):
            rows = slice(start, min(start + chunk, k))
            stack.sgd_steps(rows, xs[rows], indices[rows], labels[rows], step, decay)
        return stack.theta()

    def _gradient_steps(self, w: Tensor, xs: list[Tensor], idx: list[Tensor],
                        labels: Tensor, m: int) -> Tensor:
        """The stack's steps through the model's ``log_likelihood_grad`` and a torch
        optimiser over the stack (momentum, Adam, or a model without :meth:`sgd_stack`)."""
        k = len(xs)
        param = w.expand(k, -1).clone().requires_grad_(True)
        plain_sgd = self.optimizer == "sgd" and not self.momentum
        opt = None if plain_sgd else self._optimizer(param)
        grad_fn = self.model.log_likelihood_grad
        x = torch.empty((k, m, *xs[0].shape[1:]), dtype=xs[0].dtype, device=self.device)
        grad = torch.empty_like(param)
        decay = 1.0 - self.lr * self.weight_decay
        for step in range(self.local_steps):
            for row in range(k):
                torch.index_select(xs[row], 0, idx[row][step], out=x[row])
            with torch.no_grad():
                grad_fn(param.detach(), x, labels[:, step], out=grad)  # ∇ Σ_batch log p
                if opt is None:  # w ← (1 − lr·wd) w + (lr/m) ∇ Σ log p, one pass
                    if self.weight_decay:
                        param.mul_(decay)
                    param.add_(grad, alpha=self.lr / m)
                    continue
                grad.mul_(-1.0 / m)
                if self.weight_decay:
                    grad.add_(param.detach(), alpha=self.weight_decay)
            param.grad = grad
            opt.step()
        return param.detach()

    def _optimizer(self, param: Tensor) -> torch.optim.Optimizer:
        if self.optimizer == "sgd":
            return torch.optim.SGD([param], lr=self.lr, momentum=self.momentum)
        return torch.optim.Adam([param], lr=self.lr)

    def _flops(self, m: int) -> float:
        flops_fn = getattr(self.model, "flops_per_example", None)
        return self.local_steps * m * (float(flops_fn()) if callable(flops_fn) else 0.0)

    def merge(self, state: Any, updates: Sequence[Update]) -> Tensor:
        """``w + mean(Δw)`` over the updates that arrived."""
        w = check_particles(state, self.shape, self.dtype, self.device,
                            "FedAvg merge: global state")
        if not updates:
            return w
        return apply_mean_delta(w, updates, "FedAvg merge", "parameters")

    def merge_weighted(self, state: Any, updates: Sequence[Update],
                       weights: Sequence[float]) -> Tensor:
        """``w + (1/n) Σ_i weights[i] Δw_i`` over the ``n`` updates (FedBuff's server step
        with server learning rate 1: staleness weights scale each delta, the sum is
        divided by the buffer size)."""
        w = check_particles(state, self.shape, self.dtype, self.device,
                            "FedAvg merge: global state")
        if not updates:
            return w
        return apply_mean_delta(w, updates, "FedAvg merge", "parameters", weights)

    def evaluate(self, state: Any) -> dict[str, float]:
        """Predictive metrics of the single model on ``eval_data`` (accuracy, ece, nll,
        brier, and ``acc_class_<c>`` with ``eval_per_class``); ``{}`` without it."""
        if self.eval_data is None:
            return {}
        w = check_particles(state, self.shape, self.dtype, self.device,
                            "FedAvg evaluate: global state")
        return predictive_evaluation(self.model, w, self.eval_data, self.eval_per_class)
