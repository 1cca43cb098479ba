"""Benchmark: one forward + backward of the Bayesian LeNet over ``n`` parameter rows.

Times ``∇_θ Σ_rows log p(y | x, θ_row)``, an ``(n, d)`` gradient, on a minibatch of ``B``
radar maps of 256 × 63 shared by the rows, for :class:`bflnet.learners.models.lenet.BayesianLeNet`
(classic LeNet-5 widths, ``d = 1 419 146``) and ``n = 1`` and ``n = 10`` rows, with two
implementations of the batching over rows:

* **(a) grouped**: the model itself (``model.log_likelihood_grad``): the rows stacked as
  channels, the second convolution grouped (``groups = n``), the FC layers as ``baddbmm``,
  autograd's gradient w.r.t. ``theta``;
* **(b) vmap**: ``torch.func.vmap`` over the rows of ``torch.func.functional_call`` on a
  plain ``torch.nn`` LeNet (``nn.Conv2d``/``nn.Linear``) whose parameters are the model's
  unpacked rows, the same loss, autograd's gradient w.r.t. ``theta``;

and, for information, **(a) with oneDNN off** (``torch.backends.mkldnn.flags(enabled=
False)`` around (a): PyTorch's own convolution, which runs a grouped convolution group by
group in C++). The gradients of (b) and (a, oneDNN off) are checked against (a).

Warm-up rounds first, then ``--repeat`` rounds, each timing every case once in turn (load
changes on a shared machine hit all alike); medians in ms per call, and the ratio (b) / (a)
as the median of the per-round ratios. One torch thread by default, CPU.

    python bench/lenet_forward_backward.py [--batch 10] [--rows 1 10] [--repeat 9]
                                           [--warmup 2] [--threads 1] [--pool avg]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from bflnet.learners.models.lenet import BayesianLeNet

HEIGHT, WIDTH, N_OUT = 256, 63, 10


def reference_net(model: BayesianLeNet) -> tuple[nn.Module, dict[str, Callable[[dict], Tensor]]]:
    """A ``torch.nn`` LeNet with the model's layers, and how to get each of its parameters
    from the model's unpacked rows (``nn.Linear`` stores the transposed weight)."""
    w = model.widths
    act = nn.ReLU if model.activation == "relu" else nn.Tanh
    pool = nn.AvgPool2d if model.pool == "avg" else nn.MaxPool2d
    net = nn.Sequential(
        nn.Conv2d(1, w["conv1"], 5, padding=model.padding), act(), pool(2),
        nn.Conv2d(w["conv1"], w["conv2"], 5), act(), pool(2), nn.Flatten(),
        nn.Linear(model.n_flat, w["fc1"]), act(), nn.Linear(w["fc1"], w["fc2"]), act(),
        nn.Linear(w["fc2"], model.n_classes),
    ).to(device="meta")   # structure only: functional_call supplies every parameter
    source = {"0": "conv1", "3": "conv2", "7": "fc1", "9": "fc2", "11": "fc3"}
    getters: dict[str, Callable[[dict], Tensor]] = {}
    for layer, name in source.items():
        linear = name.startswith("fc")
        getters[f"{layer}.weight"] = (lambda p, k=f"{name}_w", t=linear:
                                      p[k].transpose(-1, -2) if t else p[k])
        getters[f"{layer}.bias"] = lambda p, k=f"{name}_b": p[k]
    return net, getters


def vmap_grad(model: BayesianLeNet) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    """Implementation (b): ``(n, d)`` gradient of the summed log-likelihood via vmap."""
    net, getters = reference_net(model)

    def one_row(params: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(net, params, (x.unsqueeze(1),))          # (B, C)

    batched = vmap(one_row, in_dims=(0, None))

    def grad(theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        with torch.enable_grad():
            t = theta.detach().requires_grad_(True)
            p = model.unpack(t)
            logits = batched({k: get(p) for k, get in getters.items()}, x)   # (n, B, C)
            logp = torch.log_softmax(logits, dim=-1)
            ll = logp.gather(2, y.expand(t.shape[0], -1).unsqueeze(2)).sum()
            (g,) = torch.autograd.grad(ll, t)
        return g
    return grad


def grouped_no_onednn(model: BayesianLeNet) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    def grad(theta: Tensor, x: Tensor, y: Tensor) -> Tensor:
        with torch.backends.mkldnn.flags(enabled=False):
            return model.log_likelihood_grad(theta, x, y)
    return grad


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pool", choices=["avg", "max"], default="avg")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model = BayesianLeNet(HEIGHT, WIDTH, N_OUT, pool=args.pool)
    impls = {"(a) grouped": model.log_likelihood_grad, "(b) vmap": vmap_grad(model),
             "(a) oneDNN off": grouped_no_onednn(model)}
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(args.batch, HEIGHT, WIDTH, generator=gen)
    y = torch.randint(0, N_OUT, (args.batch,), generator=gen)
    print(f"BayesianLeNet {HEIGHT}x{WIDTH}, widths {model.widths}, {model.activation} + "
          f"{model.pool} pool, d = {model.d:,}; forward + backward (n, d) gradient on "
          f"B = {args.batch} maps; threads = {torch.get_num_threads()}, median of "
          f"{args.repeat} rounds after {args.warmup} warm-up")
    print(f"  {model.flops_per_example() / 1e6:.1f} MFLOP per example and row")
    for n in args.rows:
        theta = model.init_particles(n, gen)
        ref = impls["(a) grouped"](theta, x, y)
        diffs = {name: float((fn(theta, x, y) - ref).abs().max())
                 for name, fn in impls.items() if name != "(a) grouped"}
        times: dict[str, list[float]] = {name: [] for name in impls}
        for r in range(args.warmup + args.repeat):
            for name, fn in impls.items():
                t = seconds(lambda fn=fn, theta=theta: fn(theta, x, y))
                if r >= args.warmup:
                    times[name].append(t)
        med = {name: statistics.median(ts) for name, ts in times.items()}
        gflops = model.flops_per_example() * n * args.batch / 1e9
        print(f"n = {n:2d} rows (|grad| max {float(ref.abs().max()):.3g}):")
        for name, t in med.items():
            extra = ""
            if name != "(a) grouped":
                ratio = statistics.median(
                    a / b for a, b in zip(times[name], times["(a) grouped"], strict=True))
                extra = f"   / (a) = {ratio:5.2f}   max |grad - grad (a)| = {diffs[name]:.2g}"
            print(f"  {name:<15} {1e3 * t:8.1f} ms   {gflops / t:5.2f} GFLOP/s{extra}")


if __name__ == "__main__":
    main()
