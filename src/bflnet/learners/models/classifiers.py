"""Torch classifiers evaluated on a whole particle set at once.

A particle set is one ``(N, d)`` tensor ``theta``; every method works on all ``N`` particles
and all examples of a batch with batched tensor ops (no Python loop over either). Particles
are independent, so per-particle gradients come straight from autograd::

    theta = particles.detach().requires_grad_()
    (model.log_likelihood(theta, x, y) + model.log_prior(theta)).sum().backward()
    theta.grad          # (N, d): row n is ∇ log p(y | x, θ_n) p(θ_n)

``x`` is either shared by all particles, ``(B, n_in)``, or one batch per particle,
``(N, B, n_in)`` (``y`` then ``(B,)`` or ``(N, B)``).

The classifiers here also have an optional, faster route to the likelihood part of that
gradient, ``log_likelihood_grad(theta, x, y, out=None)``: the ``(N, d)`` gradient of
``log_likelihood(theta, x, y).sum()`` written out by hand as batched matrix products,
optionally into a preallocated ``(N, d)`` buffer ``out`` (no autograd graph, no fresh
``(N, d)`` tensor). It is not part of :class:`ParticleModel`; learners check for it
(e.g. :class:`bflnet.learners.particles.dsvgd.DSVGD`) and use autograd otherwise.

>>> model = LogisticRegression(n_in=3, n_out=2, prior_var=1.0)
>>> theta = model.init_particles(5, torch.Generator().manual_seed(0))
>>> theta.shape, model.d
(torch.Size([5, 8]), 8)
>>> model.predict_proba(theta, torch.ones(4, 3)).shape
torch.Size([5, 4, 2])
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from bflnet.learners.models.mlp_sgd import MLPSGDStack

Init = Literal["scaled", "prior"]


#: Class counts up to which :meth:`_Classifier.predict_proba` takes the transposed softmax.
SMALL_SOFTMAX_CLASSES = 4


@runtime_checkable
class ParticleModel(Protocol):
    """What SVGD-type learners need from a model; ``theta`` is always ``(N, d)``."""

    d: int
    n_classes: int

    def log_prior(self, theta: Tensor) -> Tensor:
        """``(N,)`` log prior density of each particle."""
        ...

    def log_likelihood(self, theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``(N,)``: Σ over the batch of ``log p(y_b | x_b, θ_n)``."""
        ...

    def logits(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, C)`` pre-softmax outputs."""
        ...

    def predict_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, C)`` class probabilities of every particle."""
        ...

    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` initial particles drawn with ``generator``."""
        ...

    def flops_per_example(self) -> float:
        """Forward + backward FLOPs for one example and one particle."""
        ...


class _Classifier:
    """Shared maths of softmax classifiers with a Gaussian prior ``N(0, prior_var·I)``."""

    n_in: int
    n_classes: int
    d: int
    shapes: dict[str, tuple[int, ...]]

    def __init__(self, prior_var: float, dtype: torch.dtype, device: str | torch.device,
                 init: Init) -> None:
        if not (math.isfinite(prior_var) and prior_var > 0):
            raise ValueError(f"prior_var: must be finite and > 0, got {prior_var!r}")
        if not dtype.is_floating_point:
            raise ValueError(f"dtype: must be a floating-point dtype, got {dtype}")
        if init not in ("scaled", "prior"):
            raise ValueError(f"init: must be 'scaled' or 'prior', got {init!r}")
        self.prior_var = float(prior_var)
        self.dtype = dtype
        self.device = torch.device(device)
        self.init = init
        self.d = sum(math.prod(s) for s in self.shapes.values())

    # -- parameter layout -------------------------------------------------------------
    def unpack(self, theta: Tensor) -> dict[str, Tensor]:
        """Views of ``theta`` ``(N, d)`` as the named parameters, each ``(N, *shape)``."""
        self._check_theta(theta)
        sizes = [math.prod(shape) for shape in self.shapes.values()]
        # torch.split: its backward concatenates, where slicing would zero-fill a full
        # (N, d) gradient per parameter block.
        pieces = torch.split(theta, sizes, dim=1)
        return {name: piece.unflatten(1, shape)
                for (name, shape), piece in zip(self.shapes.items(), pieces, strict=True)}

    def pack(self, params: dict[str, Tensor]) -> Tensor:
        """Inverse of :meth:`unpack`: ``(N, d)`` from the named ``(N, *shape)`` parameters."""
        return torch.cat([params[name].flatten(1) for name in self.shapes], dim=1)

    # -- validation ---------------------------------------------------------------------
    def _check_theta(self, theta: Tensor) -> None:
        if theta.ndim != 2 or theta.shape[1] != self.d:
            raise ValueError(f"theta: expected shape (N, d={self.d}) for "
                             f"{type(self).__name__}, got {tuple(theta.shape)}")

    def _check_x(self, theta: Tensor, x: Tensor) -> Tensor:
        self._check_theta(theta)
        ok = x.shape[-1:] == (self.n_in,) and (
            x.ndim == 2 or (x.ndim == 3 and x.shape[0] == theta.shape[0]))
        if not ok:
            raise ValueError(f"x: expected shape (B, {self.n_in}) or (N={theta.shape[0]}, B, "
                             f"{self.n_in}), got {tuple(x.shape)}")
        return x if x.dtype == theta.dtype else x.to(theta.dtype)

    # -- model ----------------------------------------------------------------------------
    def logits(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, C)`` logits of every particle on every example."""
        raise NotImplementedError

    def log_prior(self, theta: Tensor) -> Tensor:
        """``(N,)``: ``log N(θ_n; 0, prior_var·I)``."""
        self._check_theta(theta)
        return (-0.5 / self.prior_var) * theta.square().sum(dim=1) \
            - 0.5 * self.d * math.log(2 * math.pi * self.prior_var)

    def log_likelihood(self, theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``(N,)``: Σ_b ``log softmax(logits)[y_b]`` (= −cross-entropy · B)."""
        logits = self.logits(theta, x)
        n, b = logits.shape[:2]
        index = _label_index(y, n, b)
        logp = torch.log_softmax(logits, dim=-1)
        return logp.gather(2, index).squeeze(2).sum(dim=1)

    # -- hand-written likelihood gradient ---------------------------------------------
    def log_likelihood_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                            out: Tensor | None = None) -> Tensor:
        """``(N, d)``: ``∇_θ log_likelihood(theta, x, y).sum()``, row ``n`` the gradient of
        particle ``n``'s log-likelihood, in ``out`` when given (a preallocated ``(N, d)``
        tensor of ``theta``'s dtype and device, filled in place and returned).

        Subclasses write the gradient by hand (:meth:`_analytic_grad`); a subclass that
        redefines the forward maths (the methods named in ``_maths``) without redefining
        the gradient gets autograd's instead, so the result always matches
        :meth:`log_likelihood`. No autograd graph is built (the result does not require
        grad)."""
        self._check_theta(theta)
        if out is not None and (out.shape != theta.shape or out.dtype != theta.dtype
                                or out.device != theta.device):
            raise ValueError(f"out: expected a {tuple(theta.shape)} tensor of dtype "
                             f"{theta.dtype} on {theta.device}, got {tuple(out.shape)}, "
                             f"{out.dtype} on {out.device}")
        if not self._inherits_maths():
            return self._autograd_grad(theta, x, y, out)
        theta = theta.detach()
        x = self._check_x(theta, x).detach()
        if out is None:
            out = torch.empty(theta.shape, dtype=theta.dtype, device=theta.device)
        with torch.no_grad():
            self._analytic_grad(theta, x, y, self.unpack(out))
        return out

    _maths: tuple[str, ...] = ("logits", "log_likelihood")
    """The forward methods :meth:`_analytic_grad` differentiates."""

    def _analytic_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                       grad: dict[str, Tensor]) -> None:
        """Write the gradient into ``grad`` (views of ``out``, as :meth:`unpack` gives);
        ``x`` is checked and in ``theta``'s dtype."""
        raise NotImplementedError

    def _inherits_maths(self) -> bool:
        """Whether :meth:`_analytic_grad` and the forward methods it differentiates come
        from the same class (no subclass redefined the forward alone)."""
        mro = type(self).__mro__
        owner = next(c for c in mro if "_analytic_grad" in vars(c))
        return all(next(c for c in mro if name in vars(c)) in owner.__mro__
                   for name in self._maths)

    def _autograd_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                       out: Tensor | None) -> Tensor:
        with torch.enable_grad():
            t = theta.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.log_likelihood(t, x, y).sum(), t)
        return grad if out is None else out.copy_(grad)

    @staticmethod
    def _output_grad(logits: Tensor, y: Tensor) -> Tensor:
        """``(N, B, C)``: ``∂ Σ_b log softmax(logits)[y_b] / ∂ logits = onehot(y) − softmax``."""
        n, b = logits.shape[:2]
        index = _label_index(y, n, b)
        dlogits = torch.softmax(logits, dim=-1).neg_()
        return dlogits.scatter_add_(2, index, logits.new_ones(()).expand(n, b, 1))

    def predict_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, C)`` softmax outputs. With at most ``SMALL_SOFTMAX_CLASSES`` classes the
        softmax runs over the classes of a ``(N, C, B)`` copy: torch's softmax along a
        last dimension of 2 costs ~10× the arithmetic (43 ms against 4 ms for 6 × 116 203
        × 2 logits); results differ from the direct softmax by at most a few ulp."""
        logits = self.logits(theta, x)
        if logits.shape[-1] > SMALL_SOFTMAX_CLASSES:
            return torch.softmax(logits, dim=-1)
        return torch.softmax(logits.transpose(-1, -2).contiguous(), dim=-2).transpose(-1, -2)

    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` particles: ``"prior"`` draws ``N(0, prior_var·I)``; ``"scaled"`` draws
        weights ``N(0, 1/(fan_in + 1))`` and zero biases (Liu & Wang's SVGD BNN init)."""
        if n < 1:
            raise ValueError(f"n: must be >= 1, got {n}")
        draw = torch.randn(n, self.d, generator=generator, dtype=self.dtype,
                           device=generator.device)
        if self.init == "prior":
            scale = torch.full((self.d,), math.sqrt(self.prior_var), dtype=self.dtype)
        else:
            scale = torch.cat([torch.full((math.prod(s),),
                                          (1.0 / math.sqrt(s[0] + 1)) if len(s) == 2 else 0.0,
                                          dtype=self.dtype)
                               for s in self.shapes.values()])
        return (draw * scale.to(draw.device)).to(self.device)

    def __repr__(self) -> str:
        dims = ", ".join(f"{k}={tuple(v)}" for k, v in self.shapes.items())
        return (f"{type(self).__name__}(d={self.d}, {dims}, prior_var={self.prior_var}, "
                f"dtype={self.dtype}, device={self.device})")


class LogisticRegression(_Classifier):
    """Softmax regression ``p(y | x, θ) = softmax(x W + b)``; ``θ = [W (n_in×n_out), b]``.

    On frozen features it is the last layer of a network, e.g. the letter's unlearning
    set-up: ``LogisticRegression(100, 10)`` (``d = 1010``) on ``BayesianMLP.features``.
    """

    def __init__(self, n_in: int, n_out: int, prior_var: float = 1.0, *,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
                 init: Init = "scaled") -> None:
        _check_sizes(n_in=n_in, n_out=n_out)
        self.n_in, self.n_classes = n_in, n_out
        self.shapes = {"W": (n_in, n_out), "b": (n_out,)}
        super().__init__(prior_var, dtype, device, init)

    def logits(self, theta: Tensor, x: Tensor) -> Tensor:
        x = self._check_x(theta, x)
        p = self.unpack(theta)
        if x.ndim == 2:
            return torch.einsum("bi,nic->nbc", x, p["W"]) + p["b"].unsqueeze(1)
        return torch.baddbmm(p["b"].unsqueeze(1), x, p["W"])

    def predict_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, C)`` softmax outputs. With at most ``SMALL_SOFTMAX_CLASSES`` classes and
        a shared ``x`` ``(B, n_in)`` the logits come out class-major, ``(N·C, B) = Wᵀ xᵀ +
        b`` in one ``addmm`` (no copy of the ``(N, B, C)`` logits), and the softmax runs
        over the classes of that layout; the result is its ``(N, B, C)`` view. Equal to
        the direct softmax up to a few ulp."""
        if self.n_classes > SMALL_SOFTMAX_CLASSES or x.ndim != 2:
            return super().predict_proba(theta, x)
        return self._class_major_proba(theta, x).transpose(1, 2)

    def mean_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(B, C)``: :meth:`predict_proba` averaged over the particles (the posterior
        predictive of one chunk), the mean taken in the class-major layout."""
        if self.n_classes > SMALL_SOFTMAX_CLASSES or x.ndim != 2:
            return self.predict_proba(theta, x).mean(dim=0)
        return self._class_major_proba(theta, x).mean(dim=0).T

    def _class_major_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, C, B)`` softmax outputs from the ``(N·C, B)`` logits ``Wᵀ xᵀ + b``."""
        x = self._check_x(theta, x)
        n, c, k = theta.shape[0], self.n_classes, self.n_in * self.n_classes
        weights = theta[:, :k].reshape(n, self.n_in, c).transpose(1, 2).reshape(n * c, -1)
        logits = torch.addmm(theta[:, k:].reshape(n * c, 1), weights, x.T)
        return torch.softmax(logits.view(n, c, -1), dim=1)

    def _analytic_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                       grad: dict[str, Tensor]) -> None:
        """``dlogits = onehot(y) − softmax``; ``dW = xᵀ dlogits``, ``db = Σ_b dlogits``."""
        dlogits = self._output_grad(self.logits(theta, x), y)
        xt = x.T.expand(theta.shape[0], -1, -1) if x.ndim == 2 else x.transpose(1, 2)
        torch.bmm(xt, dlogits, out=grad["W"])
        torch.sum(dlogits, dim=1, out=grad["b"])

    def log_likelihood_grad_numpy(self, theta: np.ndarray, x: np.ndarray,
                                  y: np.ndarray) -> np.ndarray:
        """:meth:`log_likelihood_grad` in NumPy for a shared minibatch ``x`` ``(B, n_in)``
        (small particle sets, :mod:`bflnet.learners.particles.svgd_small`): the logits of all
        particles as one ``(B, n_in) × (n_in, N·C)`` product, ``dW = xᵀ dlogits`` as
        another. ``y``: the labels ``(B,)``, or their one-hot rows ``(B, C)`` (floats)."""
        n, c, k = theta.shape[0], self.n_classes, self.n_in * self.n_classes
        weights = theta[:, :k].reshape(n, self.n_in, c).transpose(1, 0, 2).reshape(self.n_in,
                                                                                 n * c)
        flat = x @ weights
        flat += theta[:, k:].reshape(1, n * c)
        logits = flat.reshape(-1, n, c)
        cols = [logits[:, :, j] for j in range(c)]
        if c <= SMALL_SOFTMAX_CLASSES:  # elementwise over the classes' columns
            top = functools.reduce(np.maximum, cols)
            logits -= top[:, :, None]
            np.exp(logits, out=logits)
            total = functools.reduce(np.add, cols)
        else:
            logits -= logits.max(axis=2, keepdims=True)
            np.exp(logits, out=logits)
            total = logits.sum(axis=2)
        logits /= -total[:, :, None]  # − softmax
        if y.ndim == 2:
            logits += y[:, None, :]
        else:
            logits[np.arange(len(y)), :, y] += 1.0
        out = np.empty_like(theta)
        out[:, :k] = (x.T @ flat).reshape(self.n_in, n, c).transpose(1, 0, 2).reshape(n, k)
        out[:, k:] = logits.sum(axis=0)
        return out

    def activation_width(self) -> int:
        """Activations per example and particle: the classes."""
        return self.n_classes

    def flops_per_example(self) -> float:
        """≈ 3 × the forward multiply-adds (backward costs about twice the forward)."""
        return 3.0 * 2.0 * self.n_in * self.n_classes


class BayesianMLP(_Classifier):
    """One hidden ReLU layer and a softmax output: ``softmax(relu(x W1 + b1) W2 + b2)``.

    ``θ = [W1 (n_in×n_hidden), b1, W2 (n_hidden×n_out), b2]``; the letter's Fashion-MNIST
    model is the default 784-100-10 (``d = 79 510``).
    """

    def __init__(self, n_in: int = 784, n_hidden: int = 100, n_out: int = 10,
                 prior_var: float = 1.0, *, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", init: Init = "scaled") -> None:
        _check_sizes(n_in=n_in, n_hidden=n_hidden, n_out=n_out)
        self.n_in, self.n_hidden, self.n_classes = n_in, n_hidden, n_out
        self.shapes = {"W1": (n_in, n_hidden), "b1": (n_hidden,),
                       "W2": (n_hidden, n_out), "b2": (n_out,)}
        super().__init__(prior_var, dtype, device, init)

    def features(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, n_hidden)`` hidden-layer activations (inputs of the last layer)."""
        x = self._check_x(theta, x)
        p = self.unpack(theta)
        if x.ndim == 2:  # one GEMM (B, n_in) x (n_in, N·H) for all particles
            pre = torch.einsum("bi,nih->nbh", x, p["W1"]) + p["b1"].unsqueeze(1)
        else:
            pre = torch.baddbmm(p["b1"].unsqueeze(1), x, p["W1"])
        return torch.relu(pre)

    def logits(self, theta: Tensor, x: Tensor) -> Tensor:
        h = self.features(theta, x)
        p = self.unpack(theta)
        return torch.baddbmm(p["b2"].unsqueeze(1), h, p["W2"])

    _maths = ("features", "logits", "log_likelihood")

    def _analytic_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                       grad: dict[str, Tensor]) -> None:
        """Backpropagation by hand, each product batched over the particles::

            dlogits = onehot(y) − softmax           dW2 = hᵀ dlogits,  db2 = Σ_b dlogits
            dh = (dlogits W2ᵀ) ⊙ 1[h > 0]           dW1 = xᵀ dh,       db1 = Σ_b dh

        All of ``theta`` is read before ``grad`` is written. ``grad["W1"]`` is the
        ``(N, n_in, n_hidden)`` view of the gradient's W1 block (row stride ``n_hidden``,
        particle stride ``d``),
        which ``bmm`` writes in place. A shared ``x`` (2-D) enters both ``bmm`` calls
        expanded over the particles (stride 0), not copied; :meth:`features`' ``einsum``
        would copy W1 into an ``(n_in, N·n_hidden)`` layout first."""
        p = self.unpack(theta)
        n = theta.shape[0]
        xs = x.expand(n, -1, -1) if x.ndim == 2 else x
        h = torch.baddbmm(p["b1"].unsqueeze(1), xs, p["W1"]).relu_()
        dlogits = self._output_grad(torch.baddbmm(p["b2"].unsqueeze(1), h, p["W2"]), y)
        dh = torch.bmm(dlogits, p["W2"].transpose(1, 2)).mul_(h > 0)
        torch.bmm(h.transpose(1, 2), dlogits, out=grad["W2"])
        torch.sum(dlogits, dim=1, out=grad["b2"])
        torch.bmm(xs.transpose(1, 2), dh, out=grad["W1"])
        torch.sum(dh, dim=1, out=grad["b1"])

    def has_sgd_step(self) -> bool:
        """Whether :meth:`sgd_step` applies (no subclass redefined the forward maths)."""
        return self._inherits_maths()

    def sgd_step(self, theta: Tensor, x: Tensor, y: Tensor, step: float,
                 decay: float = 1.0) -> None:
        """One in-place step ``θ ← decay · θ + step · ∇_θ Σ_b log p(y_b | x_b, θ)`` of each
        row of ``theta`` ``(N, d)`` on its own minibatch ``x`` ``(N, B, n_in)``, ``y``
        ``(N, B)`` (batched agents' plain SGD: ``step = lr / B``). The same gradient as
        :meth:`log_likelihood_grad`, laid out for speed: the logits class-major
        ``(N, C, B)`` (a softmax along a last dimension of ~10 classes costs ~10× one
        along the examples), the ReLU's mask by ``threshold_backward`` (no bool-to-float
        copy), and each block updated from its own gradient (no ``(N, d)`` gradient
        buffer). Results equal ``θ + step · log_likelihood_grad``
        up to float rounding (other summation orders). Only where :meth:`has_sgd_step`.
        For many steps without other changes of ``theta`` in between, :meth:`sgd_stack`
        is faster (W1 kept transposed, its update written by its product)."""
        if not self.has_sgd_step():
            raise ValueError(f"{type(self).__name__}: redefines the forward maths; use "
                             "log_likelihood_grad")
        x = self._check_x(theta, x)
        if x.ndim != 3:
            raise ValueError(f"x: expected shape (N, B, {self.n_in}), got {tuple(x.shape)}")
        with torch.no_grad():
            p = self.unpack(theta)
            w1, b1, w2, b2 = p["W1"], p["b1"], p["W2"], p["b2"]
            n, b = x.shape[:2]
            h = torch.baddbmm(b1.unsqueeze(1), x, w1).relu_()              # (N, B, H)
            w2t = w2.transpose(1, 2)                                          # (N, C, H)
            dlt = torch.softmax(torch.baddbmm(b2.unsqueeze(2), w2t, h.transpose(1, 2)),
                                dim=1).neg_()                                 # −softmax (N, C, B)
            index = _label_index(y, n, b).transpose(1, 2)                     # (N, 1, B)
            dlt.scatter_add_(1, index, dlt.new_ones(()).expand(n, 1, b))      # onehot − softmax
            dh = torch.ops.aten.threshold_backward(
                torch.bmm(dlt.transpose(1, 2), w2t), h, 0.0)                  # (N, B, H)
            # every block of theta is read above; now the in-place updates
            if decay != 1.0:
                theta.mul_(decay)
            w2.add_(torch.bmm(dlt, h).transpose(1, 2), alpha=step)
            b2.add_(dlt.sum(dim=2), alpha=step)
            w1.add_(torch.bmm(x.transpose(1, 2), dh), alpha=step)
            b1.add_(dh.sum(dim=1), alpha=step)

    def sgd_stack(self, theta: Tensor) -> MLPSGDStack:
        """The rows of ``theta`` ``(N, d)`` as a
        :class:`~bflnet.learners.models.mlp_sgd.MLPSGDStack`
        (a copy in the layout of the hand-written SGD step). Only where
        :meth:`has_sgd_step`."""
        from bflnet.learners.models.mlp_sgd import MLPSGDStack

        return MLPSGDStack(self, theta)

    def activation_width(self) -> int:
        """The widest layer's activations per example and particle."""
        return max(self.n_hidden, self.n_classes)

    def flops_per_example(self) -> float:
        """≈ 3 × the forward multiply-adds (backward costs about twice the forward)."""
        return 3.0 * 2.0 * (self.n_in * self.n_hidden + self.n_hidden * self.n_classes)


def _label_index(y: Tensor, n: int, b: int) -> Tensor:
    """``(n, b, 1)`` int64 class indices from ``y`` ``(b,)`` or ``(n, b)`` (checked)."""
    if y.shape not in ((b,), (n, b)):
        raise ValueError(f"y: expected shape ({b},) or ({n}, {b}) to match x, "
                         f"got {tuple(y.shape)}")
    if y.dtype != torch.int64:
        y = y.long()
    return y.expand(n, b).unsqueeze(2)


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")


__all__ = ["BayesianMLP", "LogisticRegression", "ParticleModel"]
