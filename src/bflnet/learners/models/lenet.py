"""A LeNet-5-style Bayesian CNN evaluated on all rows of a particle matrix at once.

:class:`BayesianLeNet` is a :class:`bflnet.learners.models.classifiers._Classifier` like
:class:`~bflnet.learners.models.classifiers.BayesianMLP`: ``theta`` is ``(N, d)``, one
parameter vector
per row, the prior is ``N(0, prior_var·I)``, and every method works on all ``N`` rows and
all ``B`` examples with batched tensor ops (no Python loop over either)::

    maps (B, H, W) ─ conv1 c1@5×5 ─ act ─ pool 2 ─ conv2 c2@5×5 ─ act ─ pool 2 ─ flatten
         ─ FC fc1 ─ act ─ FC fc2 ─ act ─ FC n_out ─ softmax

Classic LeNet-5 widths (6, 16, 120, 84) on the 256 × 63 radar maps give ``d = 1 419 146``;
:meth:`BayesianLeNet.cdbfl` is a ≈ 2.7 M variant (``fc1 = 229``, ``d = 2 705 019``) for the
CD-BFL paper's "LeNet with p = 2.7 million parameters", whose exact layer sizes are not
public (``conv2 = 32`` would give 2 827 002, ``fc1 = 230`` 2 716 816).

**Batching over rows** (grouped convolution): the ``N`` rows are stacked along the channel
axis. With a shared ``x`` the first convolution is one ordinary convolution with
``N·c1`` output channels (the input has one channel, so no groups are needed); with one
batch per row it is a grouped convolution (``groups = N``) over the ``N`` maps stacked as
channels. The second convolution is grouped (``groups = N``: row ``n``'s ``c2`` filters see
only row ``n``'s ``c1`` channels), and the FC layers are batched matrix products
(``torch.baddbmm``) of ``(N, B, ·)`` activations with ``(N, in, out)`` weights. This was
timed against ``torch.func.vmap`` of ``torch.func.functional_call`` on a plain
``torch.nn`` LeNet (``bench/lenet_forward_backward.py``: forward + backward on 10 maps of
256 × 63, one CPU thread, a loaded 2-core machine) and was the faster: vmap / grouped =
0.96-1.14 for one row (grouped 57-79 ms), 1.02-1.27 for ten rows (grouped 0.75-0.98 s)
over three runs. vmap's conv2d batching rule lowers to the same grouped convolution, plus overhead.

**Layout of a row** (:attr:`shapes`, in order): ``conv1_w (c1, 1, 5, 5)``, ``conv1_b``,
``conv2_w (c2, c1, 5, 5)``, ``conv2_b`` (PyTorch's ``(out, in, kh, kw)``), then
``fc1_w (c2·h2·w2, fc1)``, ``fc1_b``, ``fc2_w (fc1, fc2)``, ``fc2_b``,
``fc3_w (fc2, n_out)``, ``fc3_b`` (``(in, out)`` as in ``BayesianMLP``; ``nn.Linear``'s
weight is the transpose). The conv features are flattened channel-major, as
``nn.Flatten`` does on ``(c2, h2, w2)``.

**Choices.** Convolutions are "valid" (no padding) with stride 1; ``padding`` zero-pads the
input of the first convolution only (``padding = 2`` turns 28 × 28 Fashion-MNIST into
LeNet-5's 32 × 32 input, ``d = 61 706``; without it 28 × 28 works too, ``d = 44 426``).
Pooling is 2 × 2 with stride 2, flooring odd sizes (PyTorch's and Keras' default); by
default it averages (LeNet-5's subsampling, and the radar group's small LeNet), ``pool =
"max"`` takes the maximum. The activation is ReLU by default (``"tanh"`` optional), applied
after each convolution and the two hidden FC layers; with max pooling and ReLU the
activation is applied after the pool (the same result, on a quarter of the values). The
input needs ``height + 2·padding >= 16`` and ``width + 2·padding >= 16`` (two 5 × 5
convolutions and two pools leave at least one pixel).

>>> model = BayesianLeNet(32, 32)
>>> theta = model.init_particles(3, torch.Generator().manual_seed(0))
>>> theta.shape, model.d
(torch.Size([3, 61706]), 61706)
>>> model.predict_proba(theta, torch.rand(4, 32, 32)).shape
torch.Size([3, 4, 10])
>>> BayesianLeNet().d, BayesianLeNet.cdbfl().d
(1419146, 2705019)
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from bflnet.learners.models.classifiers import Init, _check_sizes, _Classifier
from bflnet.learners.models.pool import avg_pool_2x2

Activation = Literal["relu", "tanh"]
Pool = Literal["avg", "max"]

#: Kernel size of both convolutions; window (and stride) of both pools.
KERNEL, POOL = 5, 2

#: Evaluation (``predict_proba``) runs the convolutions on sub-batches of at most this many
#: first-layer activations (8 MB of float32, about 23 maps of 256 × 63 for one row), which
#: stay in cache: about 40 % faster than one pass over a chunk of 376 maps on one thread.
CACHE_ACTIVATIONS = 2**21

#: Widths of :meth:`BayesianLeNet.cdbfl`: classic LeNet-5 with ``fc1 = 229``, the single
#: width change that brings 256 × 63 inputs closest to the paper's 2.7 M (2 705 019).
CDBFL_WIDTHS = {"conv1": 6, "conv2": 16, "fc1": 229, "fc2": 84}


class BayesianLeNet(_Classifier):
    """LeNet-5-style CNN on ``height × width`` single-channel maps (module docs: layout,
    batching, padding, activation and pooling).

    ``x`` is ``(B, H, W)`` or ``(B, H·W)`` (row-major flattened maps, as the Fashion-MNIST
    loader gives) shared by all rows of ``theta``, or ``(N, B, H, W)`` / ``(N, B, H·W)``,
    one batch per row; ``y`` is ``(B,)`` or ``(N, B)``. ``n_in = H·W``. ``predict_proba``
    runs under ``torch.no_grad`` (detached, no graph over the conv activations) and
    evaluates at most about ``max_activation`` first-layer activations at a time; use
    ``logits`` for a differentiable output.
    """

    def __init__(self, height: int = 256, width: int = 63, n_out: int = 10,
                 prior_var: float = 1.0, *, conv1: int = 6, conv2: int = 16, fc1: int = 120,
                 fc2: int = 84, padding: int = 0, activation: Activation = "relu",
                 pool: Pool = "avg", max_activation: int = 2**25,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
                 init: Init = "scaled") -> None:
        _check_sizes(height=height, width=width, n_out=n_out, conv1=conv1, conv2=conv2,
                     fc1=fc1, fc2=fc2, max_activation=max_activation)
        if isinstance(padding, bool) or not isinstance(padding, int) or padding < 0:
            raise ValueError(f"padding: must be an integer >= 0, got {padding!r}")
        if activation not in ("relu", "tanh"):
            raise ValueError(f"activation: must be 'relu' or 'tanh', got {activation!r}")
        if pool not in ("avg", "max"):
            raise ValueError(f"pool: must be 'avg' or 'max', got {pool!r}")
        # one pixel after pool 2 needs POOL after conv2, hence (POOL + KERNEL - 1)·POOL after
        # conv1, and KERNEL - 1 more at the input: 16
        smallest = (POOL + KERNEL - 1) * POOL + KERNEL - 1
        for name, size in (("height", height), ("width", width)):
            if size + 2 * padding < smallest:
                raise ValueError(f"{name}: input {height}x{width} with padding {padding} is "
                                 f"too small for two {KERNEL}x{KERNEL} convolutions and "
                                 f"{POOL}x{POOL} pools; needs {name} + 2*padding >= "
                                 f"{smallest}, got {size + 2 * padding}")
        self.height, self.width, self.padding = height, width, padding
        self.n_in, self.n_classes = height * width, n_out
        self.widths = {"conv1": conv1, "conv2": conv2, "fc1": fc1, "fc2": fc2}
        self.activation, self.pool = activation, pool
        self.max_activation = max_activation
        # feature-map sizes: after conv1 (c1_hw), pool 1 (p1_hw), conv2 (c2_hw), pool 2
        k = KERNEL - 1
        self.c1_hw = (height + 2 * padding - k, width + 2 * padding - k)
        self.p1_hw = (self.c1_hw[0] // POOL, self.c1_hw[1] // POOL)
        self.c2_hw = (self.p1_hw[0] - k, self.p1_hw[1] - k)
        self.p2_hw = (self.c2_hw[0] // POOL, self.c2_hw[1] // POOL)
        self.n_flat = conv2 * self.p2_hw[0] * self.p2_hw[1]
        self.shapes = {
            "conv1_w": (conv1, 1, KERNEL, KERNEL), "conv1_b": (conv1,),
            "conv2_w": (conv2, conv1, KERNEL, KERNEL), "conv2_b": (conv2,),
            "fc1_w": (self.n_flat, fc1), "fc1_b": (fc1,),
            "fc2_w": (fc1, fc2), "fc2_b": (fc2,),
            "fc3_w": (fc2, n_out), "fc3_b": (n_out,),
        }
        super().__init__(prior_var, dtype, device, init)

    @classmethod
    def cdbfl(cls, height: int = 256, width: int = 63, n_out: int = 10,
              prior_var: float = 1.0, **kwargs: Any) -> BayesianLeNet:
        """The ≈ 2.7 M-parameter LeNet (:data:`CDBFL_WIDTHS`; ``d = 2 705 019`` on
        256 × 63); ``kwargs`` as for the constructor (widths there override)."""
        return cls(height, width, n_out, prior_var, **{**CDBFL_WIDTHS, **kwargs})

    # -- input ----------------------------------------------------------------------------
    def _check_x(self, theta: Tensor, x: Tensor) -> Tensor:
        """``x`` as ``(B, H, W)`` (shared) or ``(N, B, H, W)`` (per row), ``theta``'s dtype."""
        self._check_theta(theta)
        h, w, n = self.height, self.width, theta.shape[0]
        if x.ndim in (2, 3) and x.shape[-1] == self.n_in:            # flattened maps
            x = x.unflatten(-1, (h, w))
        if not (x.shape[-2:] == (h, w) and (x.ndim == 3 or (x.ndim == 4 and x.shape[0] == n))):
            raise ValueError(f"x: expected shape (B, {h}, {w}), (B, {self.n_in}), "
                             f"(N={n}, B, {h}, {w}) or (N={n}, B, {self.n_in}), "
                             f"got {tuple(x.shape)}")
        return x if x.dtype == theta.dtype else x.to(theta.dtype)

    # -- model ----------------------------------------------------------------------------
    def features(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, fc2)`` activations of the last hidden layer (inputs of the output layer)."""
        maps = self._check_x(theta, x)
        return self._features(self.unpack(theta), maps, theta.shape[0])

    def logits(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, n_out)`` logits of every row on every example."""
        maps = self._check_x(theta, x)
        p = self.unpack(theta)
        h = self._features(p, maps, theta.shape[0])
        return torch.baddbmm(p["fc3_b"].unsqueeze(1), h, p["fc3_w"])

    #: The forward methods :meth:`_analytic_grad` differentiates: a subclass redefining
    #: any of them alone gets autograd's gradient (``log_likelihood_grad``, inherited).
    _maths = ("logits", "log_likelihood", "features", "_features", "_conv_flat", "_act",
              "_act_pool")

    def _analytic_grad(self, theta: Tensor, x: Tensor, y: Tensor,
                       grad: dict[str, Tensor]) -> None:
        """Autograd's operations without its ``(N, d)`` concatenation, the fully connected
        layers by hand (:mod:`bflnet.learners.models.lenet_grad`)."""
        from bflnet.learners.models.lenet_grad import lenet_log_likelihood_grad

        lenet_log_likelihood_grad(self, theta, x, y, grad)

    def predict_proba(self, theta: Tensor, x: Tensor) -> Tensor:
        """``(N, B, n_out)`` softmax outputs, under ``torch.no_grad``, in chunks of examples
        of at most ``max_activation`` first-layer activations (at least one example)."""
        maps = self._check_x(theta, x)
        n, b = theta.shape[0], maps.shape[-3]
        per_example = n * self.widths["conv1"] * self.c1_hw[0] * self.c1_hw[1]
        chunk = max(1, self.max_activation // per_example)
        with torch.no_grad():
            p = self.unpack(theta.detach())
            out = []
            for i in range(0, max(b, 1), chunk):      # one pass unless B is large
                part = maps[..., i:i + chunk, :, :]
                h = self._features(p, part, n, per_example)
                out.append(torch.softmax(torch.baddbmm(p["fc3_b"].unsqueeze(1), h,
                                                       p["fc3_w"]), dim=-1))
        return out[0] if len(out) == 1 else torch.cat(out, dim=1)

    def _features(self, p: dict[str, Tensor], maps: Tensor, n: int,
                  per_example: int | None = None) -> Tensor:
        """``(N, B, fc2)``; with ``per_example`` (no autograd), the convolutions run on
        sub-batches of at most :data:`CACHE_ACTIVATIONS` first-layer activations (each
        map's features do not depend on its batch), the FC layers on the whole batch."""
        b = maps.shape[-3]
        step = b if per_example is None else max(1, CACHE_ACTIVATIONS // per_example)
        if step >= b:
            h = self._conv_flat(p, maps, n)
        else:
            h = torch.cat([self._conv_flat(p, maps[..., i:i + step, :, :], n)
                           for i in range(0, b, step)], dim=1)
        h = self._act(torch.baddbmm(p["fc1_b"].unsqueeze(1), h, p["fc1_w"]))
        return self._act(torch.baddbmm(p["fc2_b"].unsqueeze(1), h, p["fc2_w"]))

    def _conv_flat(self, p: dict[str, Tensor], maps: Tensor, n: int) -> Tensor:
        """``(N, B, n_flat)``: the flattened features of both convolutions and pools."""
        c1, c2 = self.widths["conv1"], self.widths["conv2"]
        if maps.ndim == 3:       # shared: (B, 1, H, W) against all N·c1 filters at once
            inp, groups = maps.unsqueeze(1), 1
        else:                    # per row: (B, N, H, W), row n's maps are channel n
            inp, groups = maps.transpose(0, 1), n
        b = inp.shape[0]
        h = F.conv2d(inp, p["conv1_w"].reshape(n * c1, 1, KERNEL, KERNEL),
                     p["conv1_b"].reshape(n * c1), padding=self.padding, groups=groups)
        h = self._act_pool(h)                                      # (B, N·c1, h1, w1)
        h = F.conv2d(h, p["conv2_w"].reshape(n * c2, c1, KERNEL, KERNEL),
                     p["conv2_b"].reshape(n * c2), groups=n)
        h = self._act_pool(h)                                      # (B, N·c2, h2, w2)
        return h.reshape(b, n, self.n_flat).transpose(0, 1)        # (N, B, n_flat)

    def _act(self, h: Tensor) -> Tensor:
        """The activation in place (``h`` is a fresh result no backward needs)."""
        return h.relu_() if self.activation == "relu" else h.tanh_()

    def _act_pool(self, h: Tensor) -> Tensor:
        if self.pool == "avg":  # F.avg_pool2d(·, 2)'s bits, faster (bflnet.learners.models.pool)
            return avg_pool_2x2(self._act(h))
        if self.activation == "relu":  # max and ReLU commute: pool first, 4x fewer values
            return self._act(F.max_pool2d(h, POOL))
        return F.max_pool2d(self._act(h), POOL)

    # -- initialisation and cost ------------------------------------------------------------
    def init_particles(self, n: int, generator: torch.Generator) -> Tensor:
        """``(n, d)`` rows drawn with ``generator``: ``"prior"`` draws ``N(0, prior_var·I)``;
        ``"scaled"`` draws each weight ``N(0, gain² / fan_in)`` and zero biases, with
        ``fan_in`` the inputs of one unit (``in_channels·5·5`` for a convolution),
        ``gain² = 2`` before a ReLU (He), 1 before a tanh and for the output layer (LeCun)."""
        if n < 1:
            raise ValueError(f"n: must be >= 1, got {n}")
        draw = torch.randn(n, self.d, generator=generator, dtype=self.dtype,
                           device=generator.device)
        if self.init == "prior":
            return (draw * math.sqrt(self.prior_var)).to(self.device)
        hidden = 2.0 if self.activation == "relu" else 1.0
        parts = []
        for name, shape in self.shapes.items():
            if name.endswith("_b"):
                std = 0.0
            else:
                fan_in = math.prod(shape[1:]) if name.startswith("conv") else shape[0]
                std = math.sqrt((1.0 if name == "fc3_w" else hidden) / fan_in)
            parts.append(torch.full((math.prod(shape),), std, dtype=self.dtype))
        return (draw * torch.cat(parts).to(draw.device)).to(self.device)

    def macs_per_example(self) -> dict[str, int]:
        """Forward multiply-adds of each layer for one example and one row."""
        c1, c2 = self.widths["conv1"], self.widths["conv2"]
        k2 = KERNEL * KERNEL
        return {
            "conv1": c1 * k2 * self.c1_hw[0] * self.c1_hw[1],
            "conv2": c2 * c1 * k2 * self.c2_hw[0] * self.c2_hw[1],
            "fc1": self.n_flat * self.widths["fc1"],
            "fc2": self.widths["fc1"] * self.widths["fc2"],
            "fc3": self.widths["fc2"] * self.n_classes,
        }

    def flops_per_example(self) -> float:
        """Forward + backward FLOPs (2 per multiply-add) for one example and one row: every
        layer's forward and weight gradient, and the input gradient of every layer but the
        first (the maps need none): ``2·(3·Σ macs − macs[conv1])``. Biases, activations and
        pooling (O(activations), not O(multiply-adds)) are left out."""
        macs = self.macs_per_example()
        return 2.0 * (3 * sum(macs.values()) - macs["conv1"])

    def __repr__(self) -> str:
        w = ", ".join(f"{k}={v}" for k, v in self.widths.items())
        return (f"{type(self).__name__}(d={self.d}, input={self.height}x{self.width}, "
                f"padding={self.padding}, {w}, n_out={self.n_classes}, "
                f"activation={self.activation!r}, pool={self.pool!r}, "
                f"prior_var={self.prior_var}, dtype={self.dtype}, device={self.device})")


__all__ = ["CDBFL_WIDTHS", "BayesianLeNet"]
