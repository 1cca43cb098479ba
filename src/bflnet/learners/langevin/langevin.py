"""What the decentralised Langevin learners (DSGLD, CD-BFL, CF-FL) share: each node's local
objective f_k (eq. 3 of the CD-BFL paper), the running posterior predictive of the
post-burn-in samples, and the network metrics.

**Local objective** (eq. 3 of the CD-BFL paper): node k of K holding E_k examples minimises

    f_k(θ) = −(E_k / M) Σ_{b ∈ batch} log p(y_b | x_b, θ) − (1/K) log p₀(θ),

a fresh minibatch of M = min(batch_size, E_k) examples per step, so that Σ_k f_k is an
unbiased estimate of the negative log posterior (up to a constant) and the network-averaged
Langevin chain targets p(θ | D) (DSGLD's scaling).

**Posterior predictive.** A node keeps the running sum of its samples' predictive
probabilities on each evaluation set, one sample every ``thin`` rounds after the
``burn_in`` rounds (never the samples themselves): the average is the Monte-Carlo
posterior predictive. Before any sample is kept, the node's current sample is used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import ConsensusLearner
from bflnet.learners.hyper import LangevinParams
from bflnet.learners.langevin.chunked import column_chunks, gaussian_prior_step
from bflnet.learners.models.torch_utils import MinibatchSampler, as_agent_data, torch_generator
from bflnet.validation.params import with_overrides

#: The name of the evaluation set whose metrics carry no prefix.
MAIN = "eval"


class LocalObjective:
    """Node ``k``'s f_k and its gradient; ``grad`` is batched over the rows of ``theta``."""

    #: Whether the Gaussian prior's arithmetic may run in NumPy on the CPU (the same
    #: bits as torch's chain; False forces torch's, for tests).
    numpy_chain = True

    def __init__(self, model: Any, node_data: Mapping[Any, tuple[Any, Any]], batch_size: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        self.model = model
        self.data = as_agent_data(node_data, dtype, device)
        self.sampler = MinibatchSampler(self.data, batch_size)
        self.n_nodes = len(self.data)
        self._lik_grad = getattr(model, "log_likelihood_grad", None)
        # Models with an isotropic Gaussian prior say so with ``prior_var`` (and
        # ``prior_mean``, 0 if absent); others get the prior's gradient by autograd.
        self._gaussian_prior = isinstance(getattr(model, "prior_var", None), float)

    def examples(self, node: Any) -> int:
        """E_k."""
        return int(self.data[node][0].shape[0])

    def grad(self, node: Any, theta: Tensor, generator: torch.Generator) -> Tensor:
        """``(N, d)``: ∇f_k at each row of ``theta`` on one fresh minibatch."""
        return self._apply(node, theta, generator, None)

    def descend(self, node: Any, theta: Tensor, generator: torch.Generator,
                lr: float) -> Tensor:
        """``theta − lr·∇f_k(theta)`` (a fresh tensor): the same operations as
        ``theta − grad(...).mul_(lr)``, run chunk by chunk (the same bits)."""
        return self._apply(node, theta, generator, lr)

    def _apply(self, node: Any, theta: Tensor, generator: torch.Generator,
               lr: float | None) -> Tensor:
        """∇f_k (then with ``lr`` ``theta − lr·∇f_k`` in place) on one fresh minibatch."""
        x, y = self.sampler(node, generator)
        scale = self.examples(node) / x.shape[0]
        theta = theta.detach()
        if callable(self._lik_grad):
            lik = self._lik_grad(theta, x, y)
        else:
            with torch.enable_grad():
                t = theta.clone().requires_grad_(True)
                (lik,) = torch.autograd.grad(self.model.log_likelihood(t, x, y).sum(), t)
        if lik is theta or lik.requires_grad:  # not a fresh tensor of the model's
            lik = lik.detach().clone()
        if not self._gaussian_prior:
            with torch.enable_grad():
                t = theta.clone().requires_grad_(True)
                (prior,) = torch.autograd.grad(self.model.log_prior(t).sum(), t)
            lik.mul_(-scale).sub_(prior.div_(self.n_nodes))
            if lr is not None:
                torch.sub(theta, lik.mul_(lr), out=lik)
            return lik
        # N(prior_mean, prior_var I): the gradient by hand, (−scale·lik) − ((mean − θ)/var)/K
        # (then θ − lr·g) over cache-sized column chunks (:mod:`bflnet.learners.langevin.chunked`),
        # by NumPy on the CPU (the same bits, less overhead), else by torch
        mean, var = getattr(self.model, "prior_mean", 0.0), self.model.prior_var
        if self.numpy_chain and gaussian_prior_step(theta, lik, scale, mean, var,
                                                    self.n_nodes, lr):
            return lik
        for t, g in column_chunks(theta, lik):
            g.mul_(-scale).sub_(torch.rsub(t, mean).div_(var).div_(self.n_nodes))
            if lr is not None:
                torch.sub(t, g.mul_(lr), out=g)
        return lik

    def minibatch_stack(self, nodes: Sequence[Any], generators: Sequence[torch.Generator]
                        ) -> tuple[Tensor, Tensor, float]:
        """``(x, y, E_k / M)``: ``x`` ``(len(nodes), M, ...)`` and ``y`` ``(len(nodes), M)``,
        row ``i`` the next minibatch of ``nodes[i]`` drawn from ``generators[i]`` (the
        draws of :meth:`grad`). The nodes must share the minibatch size M and the number
        of examples E_k (one scale)."""
        sizes = {(self.sampler.size(node), self.examples(node)) for node in nodes}
        if len(sizes) != 1:
            raise ValueError("nodes: must share the minibatch size and the number of "
                             f"examples, got (M, E_k) = {sorted(sizes)}")
        ((m, examples),) = sizes
        first_x, first_y = self.data[nodes[0]]
        x = first_x.new_empty((len(nodes), m, *first_x.shape[1:]))
        y = first_y.new_empty((len(nodes), m))
        for row, (node, gen) in enumerate(zip(nodes, generators, strict=True)):
            idx = self.sampler.indices(node, gen)
            torch.index_select(self.data[node][0], 0, idx, out=x[row])
            torch.index_select(self.data[node][1], 0, idx, out=y[row])
        return x, y, examples / m

    def grad_stack(self, nodes: Sequence[Any], theta: Tensor,
                   generators: Sequence[torch.Generator], out: Tensor) -> Tensor:
        """``out`` ``(len(nodes), d)``: row ``i`` is :meth:`grad` of node ``nodes[i]`` at
        ``theta[i]`` on its minibatch of :meth:`minibatch_stack`, all rows at once: one
        batched call of the model's ``log_likelihood_grad`` (which must take ``x`` of
        shape ``(N, B, ...)`` and ``out``). Equal to :meth:`grad` row by row up to float
        rounding (batched products may sum in another order)."""
        x, y, scale = self.minibatch_stack(nodes, generators)
        theta = theta.detach()
        if self._gaussian_prior:
            prior = torch.rsub(theta, getattr(self.model, "prior_mean", 0.0))
            prior.div_(self.model.prior_var)
        else:
            with torch.enable_grad():
                t = theta.clone().requires_grad_(True)
                (prior,) = torch.autograd.grad(self.model.log_prior(t).sum(), t)
        lik = self._lik_grad(theta, x, y, out=out)
        if lik is not out:
            out.copy_(lik)
        return out.mul_(-scale).sub_(prior.div_(self.n_nodes))

    def sgd_form(self) -> bool:
        """Whether a step ``θ ← θ − a ∇f_k(θ)`` is the model's fused
        ``sgd_step(θ, x, y, a · E_k / M, 1 − a / (K · prior_var))`` (a hand-written
        ``sgd_step`` and a Gaussian prior of mean 0)."""
        can = getattr(self.model, "has_sgd_step", None)
        return (self._gaussian_prior and getattr(self.model, "prior_mean", 0.0) == 0
                and callable(can) and bool(can()))


def check_eval_sets(eval_sets: Mapping[str, tuple[Any, Any]] | None, dtype: torch.dtype,
                    device: torch.device) -> dict[str, tuple[Tensor, Tensor]]:
    """Evaluation sets as tensors (``{}`` for none)."""
    if not eval_sets:
        return {}
    out = {}
    for name, (x, y) in eval_sets.items():
        xt = torch.as_tensor(x, device=device)
        xt = xt.to(dtype) if xt.is_floating_point() else xt
        yt = torch.as_tensor(y, device=device)
        if xt.shape[:1] != yt.shape[:1] or xt.shape[0] < 1:
            raise ValueError(f"eval_sets: {name!r} needs x, y with the same number (>= 1) of "
                             f"rows, got {tuple(xt.shape)} and {tuple(yt.shape)}")
        out[str(name)] = (xt, yt)
    return out


def predictive_probs(model: Any, theta: Tensor, x: Tensor, batch: int = 512) -> Tensor:
    """``(B, C)`` predictive probabilities of one sample ``theta`` ``(1, d)`` on ``x``."""
    with torch.no_grad():
        return torch.cat([model.predict_proba(theta, x[i:i + batch])[0]
                          for i in range(0, x.shape[0], batch)])


def accumulate(model: Any, sums: dict[str, Tensor] | None, theta: Tensor,
               eval_sets: Mapping[str, tuple[Tensor, Tensor]]) -> dict[str, Tensor]:
    """``sums`` plus the predictive probabilities of ``theta`` on every evaluation set."""
    new = {name: predictive_probs(model, theta, x) for name, (x, _) in eval_sets.items()}
    if sums is None:
        return new
    return {name: sums[name] + p for name, p in new.items()}


def node_predictive(model: Any, theta: Tensor, sums: dict[str, Tensor] | None, count: int,
                    name: str, x: Tensor) -> Tensor:
    """A node's posterior predictive on set ``name``: the average of its kept samples'
    probabilities, or its current sample's while none is kept."""
    if sums is not None and count > 0:
        return sums[name] / count
    return predictive_probs(model, theta, x)


def network_metrics(model: Any, nodes: Mapping[Any, Any],
                    eval_sets: Mapping[str, tuple[Tensor, Tensor]]) -> dict[str, float]:
    """``consensus_error`` (RMS distance of the nodes' samples to their mean) and, per
    evaluation set, the nodes' mean ``accuracy``, ``ece`` and ``nll`` of their posterior
    predictives (``<set>_accuracy`` ... for sets other than ``"eval"``), and
    ``kept_samples``."""
    from bflnet.learners.calibration import accuracy, ece, nll

    thetas = torch.cat([n.theta for n in nodes.values()])
    spread = (thetas - thetas.mean(0, keepdim=True)).square().sum(1).mean().sqrt()
    out = {"consensus_error": float(spread)}
    # a non-finite sample makes the spread non-finite: the full check only then
    if not math.isfinite(out["consensus_error"]) and not torch.isfinite(thetas).all():
        bad = [k for k, n in nodes.items() if not bool(torch.isfinite(n.theta).all())]
        raise ValueError(f"theta: non-finite samples at nodes {bad}")
    for name, (x, y) in eval_sets.items():
        acc = ec = nl = 0.0
        for n in nodes.values():
            probs = node_predictive(model, n.theta, n.sums, n.kept, name, x)
            acc += float(accuracy(probs, y))
            ec += float(ece(probs, y))
            nl += float(nll(probs, y))
        prefix = "" if name == MAIN else f"{name}_"
        k = len(nodes)
        out.update({f"{prefix}accuracy": acc / k, f"{prefix}ece": ec / k,
                    f"{prefix}nll": nl / k})
    if eval_sets:
        out["kept_samples"] = float(next(iter(nodes.values())).kept)
    return out


def keeps(round_: int, burn_in: int, thin: int) -> bool:
    """Whether the sample after round ``round_`` (1-based) enters the predictive."""
    return round_ > burn_in and (round_ - burn_in - 1) % thin == 0


class LangevinLearner(ConsensusLearner):
    """What DSGLD and CD-BFL share: the hyper-parameters (``PARAMS``, or keyword overrides
    of its defaults), each node's local objective, the evaluation sets, the noise scale
    √(2η·temperature), and one common initial draw for every node."""

    PARAMS: ClassVar[type] = LangevinParams

    def __init__(self, model: Any, node_data: Mapping[Any, tuple[Any, Any]],
                 params: Any = None, *,
                 eval_sets: Mapping[str, tuple[Any, Any]] | None = None,
                 dtype: torch.dtype = torch.float32, **hyper: Any) -> None:
        self.model = model
        self.params = with_overrides(params if params is not None else self.PARAMS(), hyper)
        self.dtype = dtype
        self.device = torch.device(getattr(model, "device", "cpu"))
        self.objective = LocalObjective(model, node_data, self.params.batch_size, dtype,
                                        self.device)
        self.eval_sets = check_eval_sets(eval_sets, dtype, self.device)
        self.noise_scale = math.sqrt(2.0 * self.params.lr * self.params.temperature)

    def init(self, rng: np.random.Generator) -> Tensor:
        return self.model.init_particles(1, torch_generator(rng, torch.device("cpu")))

    def common_start(self, node: Any, common: Tensor) -> Tensor:
        """Node ``node``'s copy of the common initial draw (an error if it has no data)."""
        if node not in self.objective.data:
            raise ValueError(f"node_data: no data for node {node!r}")
        return common.to(self.dtype).clone()
