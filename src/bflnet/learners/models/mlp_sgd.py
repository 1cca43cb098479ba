"""Plain SGD on a stack of one-hidden-layer MLPs, in a layout made for the step.

:class:`MLPSGDStack` holds ``N`` copies of a
:class:`~bflnet.learners.models.classifiers.BayesianMLP`'s
parameters (the rows of an ``(N, d)`` particle tensor) for the length of a local update,
laid out for the hand-written SGD step rather than in the particle layout::

    W1ᵀ (N, H, n_in)   b1 (N, H, 1)   W2ᵀ (N, C, H)   b2 (N, C, 1)     (contiguous copies)

and steps any run of its rows in place, each row on its own minibatch (FedAvg's batched
agents). One step, everything feature-major (hidden units or classes along the rows,
examples along the columns)::

    hᵀ = relu(W1ᵀ xᵀ + b1)                 (N, H, B)
    gᵀ = onehot(y)ᵀ − softmax(W2ᵀ hᵀ + b2)   (N, C, B)   softmax along the C classes
    dhᵀ = (W2 gᵀ) ⊙ 1[h > 0]                (N, H, B)
    W2ᵀ ← decay · W2ᵀ + step · gᵀ h          b2 ← decay · b2 + step · Σ_b gᵀ
    W1ᵀ ← decay · W1ᵀ + step · dhᵀ x         b1 ← decay · b1 + step · Σ_b dhᵀ

i.e. ``θ ← decay · θ + step · ∇_θ Σ_b log p(y_b | x_b, θ)``, the gradient of
:meth:`BayesianMLP.log_likelihood_grad` (plain SGD on the mean loss: ``step = lr / B``,
``decay = 1 − lr · weight_decay``; the code keeps ``−gᵀ``, the loss's gradient, and
steps with ``−step``). Why this layout: the two large products of a step (``W1ᵀ xᵀ`` and
``dhᵀ x``, ``H × n_in × B`` each) are most of its time, and with ``W1ᵀ`` contiguous the
second one is written into the weights by the GEMM itself (``beta = decay``: no gradient
buffer, no separate update pass), in the GEMM's fastest shape on CPU (784-100-10, B = 100,
one thread: ≈ 170 µs against ≈ 205 µs for ``xᵀ dh`` into the ``(n_in, H)`` block of the
particle layout); the bias sums are products with a ones vector that update the biases
too; the softmax runs along the classes of a class-major block (a softmax along a last
dimension of ~10 costs ~10× one along the examples) and the ReLU's mask is
``threshold_backward`` in place (no bool-to-float copy). No autograd graph is built.

Results equal the particle-layout gradient step up to float rounding (other summation
orders inside the GEMMs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import Tensor


class BayesianMLP(Protocol):
    """What the stack reads of its model (:class:`bflnet.learners.models.classifiers.
    BayesianMLP`, which imports this module, so only these are named here)."""

    d: int

    def has_sgd_step(self) -> bool: ...

    def _check_theta(self, theta: Tensor) -> None: ...

    def unpack(self, theta: Tensor) -> Any: ...

#: ``dh ⊙ 1[h > 0]`` written into ``grad_input`` (autograd's own ReLU backward).
threshold_backward = torch.ops.aten.threshold_backward.grad_input


#: The working set (weights, minibatch, step buffers) of the rows stepped together on CPU
#: (:meth:`MLPSGDStack.chunk_rows`): about a core's L2 cache (1 MiB on this project's test
#: machine, 1-2 MiB on current x86 cores), so that a row's weights stay in it from one step
#: to the next (measured: the 784-100-10 MLP's round ≈ 5 % faster one agent at a time than
#: ten agents per batched product).
CPU_CHUNK_BYTES = 1 << 20


class MLPSGDStack:
    """``N`` MLPs' parameters in the step's layout (module docs), copied from ``theta``
    ``(N, d)`` (the particle layout of ``model``), which is left untouched; :meth:`theta`
    writes them back."""

    def __init__(self, model: BayesianMLP, theta: Tensor) -> None:
        if not model.has_sgd_step():
            raise ValueError(f"{type(model).__name__}: redefines the forward maths; use "
                             "log_likelihood_grad")
        model._check_theta(theta)
        self.model = model
        p = model.unpack(theta.detach())
        with torch.no_grad():
            self.w1 = p["W1"].transpose(1, 2).contiguous()   # (N, H, n_in)
            self.b1 = p["b1"].unsqueeze(2).clone()            # (N, H, 1)
            self.w2 = p["W2"].transpose(1, 2).contiguous()   # (N, C, H)
            self.b2 = p["b2"].unsqueeze(2).clone()            # (N, C, 1)
        self.n = theta.shape[0]
        self._plans: dict[tuple[Any, ...], _Plan] = {}

    @property
    def dtype(self) -> torch.dtype:
        """The parameters' dtype (``theta``'s)."""
        return self.w1.dtype

    @property
    def device(self) -> torch.device:
        """The parameters' device (``theta``'s)."""
        return self.w1.device

    def chunk_rows(self, b: int) -> int:
        """How many rows to step together on minibatches of ``b`` examples: on CPU as many
        as keep their weights and step buffers within :data:`CPU_CHUNK_BYTES` (at least
        one; the 784-100-10 MLP at ``b = 100`` takes ≈ 0.75 MB a row, so one), elsewhere
        all of them (one batched kernel per operation)."""
        if self.device.type != "cpu":
            return self.n
        hidden, classes, n_in = self.w1.shape[1], self.w2.shape[1], self.w1.shape[2]
        per_row = self.w1.element_size() * (self.model.d + b * (n_in + 2 * hidden + classes))
        return max(1, min(self.n, CPU_CHUNK_BYTES // per_row))

    def _plan(self, rows: slice, b: int) -> _Plan:
        """The views and buffers of a step of ``rows`` on ``b`` examples (kept for the next
        call)."""
        key = (rows.start, rows.stop, rows.step, b)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan(self.w1[rows], self.b1[rows], self.w2[rows],
                                            self.b2[rows], b)
        return plan

    def step(self, rows: slice, x: Tensor, y: Tensor, step: float,
             decay: float = 1.0) -> None:
        """One in-place step ``θ ← decay · θ + step · ∇_θ Σ_b log p(y_b | x_b, θ)`` of the
        stack's ``rows`` (a slice of ``n`` rows), row ``i`` on its minibatch ``x[i]``
        ``(n, B, n_in)`` with the labels ``y[i]`` (``(n, B)`` or ``(n, 1, B)``, int64)."""
        n, n_in = len(range(self.n)[rows]), self.w1.shape[2]
        if x.ndim != 3 or x.shape[0] != n or x.shape[2] != n_in or x.dtype != self.dtype:
            raise ValueError(f"x: expected shape ({n}, B, {n_in}) of dtype {self.dtype}, "
                             f"got {tuple(x.shape)} of {x.dtype}")
        b = x.shape[1]
        if y.shape not in ((n, b), (n, 1, b)) or y.dtype != torch.int64:
            raise ValueError(f"y: expected int64 labels of shape ({n}, {b}), got "
                             f"{tuple(y.shape)} of {y.dtype}")
        with torch.no_grad():
            self._plan(rows, b).step(x, x.transpose(1, 2), y.reshape(n, 1, b), step, decay)

    def sgd_steps(self, rows: slice, sources: Sequence[Tensor], indices: Tensor,
                  labels: Tensor, step: float, decay: float = 1.0) -> None:
        """``S`` steps (:meth:`step`) of the stack's ``rows`` (``n`` of them), row ``i`` at
        step ``s`` on the rows ``indices[i, s]`` ``(B,)`` of its data ``sources[i]``
        ``(N_i, n_in)`` with the labels ``labels[i, s]``: ``indices`` and ``labels`` are
        ``(n, S, B)`` int64. Each minibatch is gathered into one reused buffer."""
        n, n_in = len(range(self.n)[rows]), self.w1.shape[2]
        if indices.ndim != 3 or indices.shape[0] != n or labels.shape != indices.shape \
                or indices.dtype != torch.int64 or labels.dtype != torch.int64:
            raise ValueError(f"indices, labels: expected two int64 tensors of shape ({n}, S, "
                             f"B), got {tuple(indices.shape)} of {indices.dtype} and "
                             f"{tuple(labels.shape)} of {labels.dtype}")
        bad = [i for i, src in enumerate(sources) if src.ndim != 2 or src.shape[1] != n_in
               or src.dtype != self.dtype or src.device != self.device]
        if len(sources) != n or bad:
            raise ValueError(f"sources: expected {n} tensors (N_i, {n_in}) of dtype "
                             f"{self.dtype} on {self.device}; wrong: rows {bad}")
        steps, b = indices.shape[1], indices.shape[2]
        plan = self._plan(rows, b)
        x = torch.empty((n, b, n_in), dtype=self.dtype, device=self.device)
        xt, slots = x.transpose(1, 2), x.unbind(0)
        picks = [row.unbind(0) for row in indices]          # picks[i][s]: (B,)
        targets = labels.unsqueeze(2).unbind(1)             # targets[s]: (n, 1, B)
        gathers = list(zip(sources, picks, slots, strict=True))
        with torch.no_grad():
            for s in range(steps):
                for src, pick, slot in gathers:
                    torch.index_select(src, 0, pick[s], out=slot)
                plan.step(x, xt, targets[s], step, decay)

    def theta(self, out: Tensor | None = None) -> Tensor:
        """The ``(N, d)`` parameters in the particle layout (into ``out`` when given)."""
        if out is None:
            out = torch.empty((self.n, self.model.d), dtype=self.dtype, device=self.device)
        p = self.model.unpack(out)
        with torch.no_grad():
            p["W1"].copy_(self.w1.transpose(1, 2))
            p["b1"].copy_(self.b1.squeeze(2))
            p["W2"].copy_(self.w2.transpose(1, 2))
            p["b2"].copy_(self.b2.squeeze(2))
        return out


class _Plan:
    """The blocks of some rows of a stack, their transposed views and the buffers of a step
    on ``b`` examples, made once for all the steps."""

    def __init__(self, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, b: int) -> None:
        n, hidden, classes = w1.shape[0], w1.shape[1], w2.shape[1]
        kw = {"dtype": w1.dtype, "device": w1.device}
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2
        self.w2t = w2.transpose(1, 2)                                  # (n, H, C)
        self.h = torch.empty((n, hidden, b), **kw)                     # hᵀ
        self.ht = self.h.transpose(1, 2)
        self.logits = torch.empty((n, classes, b), **kw)
        self.dh = torch.empty((n, hidden, b), **kw)
        self.minus_one = torch.full((), -1.0, **kw).expand(n, 1, b)
        self.ones = torch.ones((n, b, 1), **kw)

    def step(self, x: Tensor, xt: Tensor, y: Tensor, step: float, decay: float) -> None:
        """The step (module docs) on ``x`` ``(n, b, n_in)`` (``xt`` its transposed view)
        and the labels ``y`` ``(n, 1, b)``; call under ``torch.no_grad()``."""
        h, dh = self.h, self.dh
        torch.baddbmm(self.b1, self.w1, xt, out=h).relu_()                    # hᵀ
        torch.baddbmm(self.b2, self.w2, h, out=self.logits)
        # gᵀ = softmax − onehot(y): the gradient of the loss −log p at the logits
        g = torch.softmax(self.logits, dim=1)
        g.scatter_add_(1, y, self.minus_one)
        torch.bmm(self.w2t, g, out=dh)
        threshold_backward(dh, h, 0.0, grad_input=dh)                          # ⊙ 1[h > 0]
        # every parameter of the rows is read above; now the in-place updates
        # (θ ← decay · θ − step · ∇ loss; the bias sums as products with ones)
        self.w2.baddbmm_(g, self.ht, beta=decay, alpha=-step)
        self.b2.baddbmm_(g, self.ones, beta=decay, alpha=-step)
        self.w1.baddbmm_(dh, x, beta=decay, alpha=-step)
        self.b1.baddbmm_(dh, self.ones, beta=decay, alpha=-step)


__all__ = ["MLPSGDStack"]
