"""The log-likelihood gradient of :class:`bflnet.learners.models.lenet.BayesianLeNet` without a
graph over the whole parameter vector: the same operations autograd runs, written into
the ``(N, d)`` output.

Autograd's route (``log_likelihood(theta).sum()`` differentiated w.r.t. the flat
``theta``) computes every parameter block's gradient in a fresh tensor and concatenates
them into a fresh ``(N, d)`` one (two passes over 11 MB at d = 2.7 M), and its fully
connected weight gradients are ``torch.bmm(aᵀ, g)`` products whose thin inner dimension
(the B examples of a minibatch) runs slowly in torch's CPU BLAS for the wide first layer
(about 5 × a NumPy ``matmul`` of the same operands here, 1.5 × torch's own product in
the transposed orientation). This module runs:

* the convolutional part (both convolutions, activations and pools) under autograd, with
  leaves for the four convolution blocks only (kilobytes), so its backward is autograd's
  own ``convolution_backward`` and pooling backward;
* the fully connected part and the loss by hand with the aten backward functions autograd
  calls (``_log_softmax_backward_data``, ``threshold_backward`` / ``tanh_backward``, the
  ``bmm`` products and the bias sums), each weight gradient written straight into its
  block of the output.

The result equals autograd's bit for bit where the two BLAS libraries agree (checked in
the tests against the autograd route); :func:`weight_grad` says which product runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.models.numpy_blas import openblas_threads

__all__ = ["lenet_log_likelihood_grad", "weight_grad"]

#: Output widths from which :func:`weight_grad` leaves torch's ``bmm`` for a faster route
#: (the wide first FC layer: n_flat × fc1 = 11 MB): on CPU NumPy's ``matmul`` when its
#: OpenBLAS runs one thread, else ``bmm`` in the transposed orientation over blocks of
#: :data:`BLOCK` rows. Both agree bit for bit with ``torch.bmm`` in our checks; narrow
#: products stay in torch (at an output width of 10 the libraries round differently).
FAST_MIN_WIDTH = 32
#: Rows of the weight gradient per transposed block (229 × 256 floats stay in cache).
BLOCK = 256


def weight_grad(a: Tensor, g: Tensor, out: Tensor) -> None:
    """``out[n] = a[n]ᵀ g[n]`` for ``a`` ``(N, B, in)``, ``g`` ``(N, B, out)``, ``out``
    ``(N, in, out)`` (a view of the gradient buffer): ``torch.bmm(a.transpose(1, 2), g)``
    as autograd computes it, by a faster route for wide outputs (:data:`FAST_MIN_WIDTH`):
    torch's CPU BLAS runs this thin product (B = 10 examples) about 5 × slower than
    NumPy's and about 1.5 × slower than its own transposed product."""
    if out.shape[-1] < FAST_MIN_WIDTH:
        out.copy_(torch.bmm(a.transpose(1, 2), g))
        return
    rows_ok = out.stride(-1) == 1 and out.stride(-2) == out.shape[-1]
    if (rows_ok and out.device.type == "cpu" and out.dtype in (torch.float32, torch.float64)
            and openblas_threads() == 1):
        an, gn, on = a.numpy(), g.numpy(), out.numpy()
        # one BLAS call per model: the same bits as NumPy's stacked matmul, which ran
        # 1.1x (float32) to 1.7x (float64) slower on these shapes
        for n in range(out.shape[0]):
            np.matmul(an[n].T, gn[n], out=on[n])
        return
    gt = g.transpose(1, 2)
    block = torch.empty((out.shape[0], out.shape[2], min(BLOCK, out.shape[1])),
                        dtype=out.dtype, device=out.device)
    for i in range(0, out.shape[1], BLOCK):
        part = a[:, :, i:i + BLOCK]
        tb = block[:, :, :part.shape[2]]
        torch.bmm(gt, part, out=tb)
        out[:, i:i + BLOCK].copy_(tb.transpose(1, 2))


def _act_backward(model: Any, grad: Tensor, result: Tensor) -> Tensor:
    """The backward of ``model._act`` (in place) given its output, as autograd runs it."""
    if model.activation == "relu":
        return torch.ops.aten.threshold_backward(grad, result, 0)
    return torch.ops.aten.tanh_backward(grad, result)


def _linear_backward(g: Tensor, a: Tensor, w: Tensor, grad_w: Tensor, grad_b: Tensor,
                     need_input: bool = True) -> Tensor | None:
    """Gradients of ``baddbmm(b.unsqueeze(1), a, w)`` given ``g``: the weight's and bias'
    into ``grad_w`` and ``grad_b``; returns the input's (if ``need_input``)."""
    grad_in = torch.bmm(g, w.transpose(1, 2)) if need_input else None
    weight_grad(a, g, grad_w)
    torch.sum(g, dim=1, out=grad_b)
    return grad_in


def lenet_log_likelihood_grad(model: Any, theta: Tensor, maps: Tensor, y: Tensor,
                              grad: dict[str, Tensor]) -> None:
    """Write ``∇_θ Σ_b log softmax(logits)[y_b]`` into ``grad`` (views of the ``(N, d)``
    output as ``model.unpack`` gives); ``maps`` as ``model._check_x`` returns them."""
    from bflnet.learners.models.classifiers import _label_index

    n = theta.shape[0]
    p = model.unpack(theta)
    conv = {name: p[name].detach().requires_grad_(True)
            for name in ("conv1_w", "conv1_b", "conv2_w", "conv2_b")}
    with torch.enable_grad():
        feats = model._conv_flat(conv, maps, n)                       # (N, B, n_flat)
    f = feats.detach()
    with torch.no_grad():
        h1 = model._act(torch.baddbmm(p["fc1_b"].unsqueeze(1), f, p["fc1_w"]))
        h2 = model._act(torch.baddbmm(p["fc2_b"].unsqueeze(1), h1, p["fc2_w"]))
        logits = torch.baddbmm(p["fc3_b"].unsqueeze(1), h2, p["fc3_w"])
        b = logits.shape[1]
        logp = torch.log_softmax(logits, dim=-1)
        index = _label_index(y, n, b)
        picked = torch.zeros_like(logp).scatter_add_(2, index, logp.new_ones(n, b, 1))
        g = torch._log_softmax_backward_data(picked, logp, -1, logits.dtype)
        g = _linear_backward(g, h2, p["fc3_w"], grad["fc3_w"], grad["fc3_b"])
        g = _linear_backward(_act_backward(model, g, h2), h1, p["fc2_w"], grad["fc2_w"],
                             grad["fc2_b"])
        g = _linear_backward(_act_backward(model, g, h1), f, p["fc1_w"], grad["fc1_w"],
                             grad["fc1_b"])
    names = list(conv)
    got = torch.autograd.grad(feats, [conv[k] for k in names], g)
    with torch.no_grad():
        for name, value in zip(names, got, strict=True):
            grad[name].copy_(value)
