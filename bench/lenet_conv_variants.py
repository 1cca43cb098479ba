"""Benchmark: the CD-BFL LeNet's convolutions (256 × 63 maps, batch 10, one thread) and the
alternatives tried for them, each timed in this process (CPU milliseconds per call).

* the second convolution's input gradient as a forward convolution of the padded output
  gradient with the flipped, transposed filters;
* the first convolution on the five shifted row bands stacked as channels (1 × 5 kernel);
* the convolutional part of a gradient under bfloat16 autocast.

The alternatives give other bits; their largest relative difference is printed too.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from bflnet.learners.models.lenet import BayesianLeNet


def cpu_ms(fn: Callable[[], object], calls: int) -> float:
    """CPU milliseconds per call of ``fn`` (after one warm-up call)."""
    fn()
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1e3


def rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(10, 1, 256, 63, generator=gen)
    w1, b1 = torch.randn(6, 1, 5, 5, generator=gen), torch.randn(6, generator=gen)
    h1 = torch.rand(10, 6, 126, 29, generator=gen)
    w2, b2 = torch.randn(16, 6, 5, 5, generator=gen), torch.randn(16, generator=gen)
    go1 = torch.randn(10, 6, 252, 59, generator=gen)
    go2 = torch.randn(10, 16, 122, 25, generator=gen)
    backward = torch.ops.aten.convolution_backward

    def conv_backward(grad, inp, w, mask):
        return backward(grad, inp, w, [w.shape[0]], [1, 1], [0, 0], [1, 1], False, [0, 0],
                        1, mask)

    bands = torch.cat([x[:, :, i:i + 252, :] for i in range(5)], 1)
    w1_bands = w1.reshape(6, 5, 1, 5)
    w2_flipped = w2.flip(2, 3).transpose(0, 1)
    model = BayesianLeNet.cdbfl()
    theta = model.init_particles(1, gen)
    maps = model._check_x(theta, torch.rand(10, 256, 63, generator=gen))

    def conv_part(bf16: bool) -> None:
        p = model.unpack(theta)
        leaves = {k: p[k].detach().requires_grad_(True)
                  for k in ("conv1_w", "conv1_b", "conv2_w", "conv2_b")}
        with torch.enable_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            feats = model._conv_flat(leaves, maps, 1)
        torch.autograd.grad(feats, list(leaves.values()), torch.ones_like(feats))

    input_grad = conv_backward(go2, h1, w2, [True, False, False])[0]
    by_forward = rel_diff(F.conv2d(go2, w2_flipped, padding=4), input_grad)
    by_bands = rel_diff(F.conv2d(bands, w1_bands, b1), F.conv2d(x, w1, b1))
    print("other bits, largest relative difference: conv2 input gradient "
          f"{by_forward:.1e}, conv1 by bands {by_bands:.1e}")
    rows = [
        ("conv1 forward", lambda: F.conv2d(x, w1, b1)),
        ("conv1 forward, row bands (with the bands' copy)",
         lambda: F.conv2d(torch.cat([x[:, :, i:i + 252, :] for i in range(5)], 1), w1_bands, b1)),
        ("conv1 weight gradient", lambda: conv_backward(go1, x, w1, [False, True, True])),
        ("conv1 weight gradient, row bands", lambda: conv_backward(go1, bands, w1_bands,
                                                                   [False, True, True])),
        ("conv2 forward", lambda: F.conv2d(h1, w2, b2)),
        ("conv2 weight gradient", lambda: conv_backward(go2, h1, w2, [False, True, True])),
        ("conv2 input gradient", lambda: conv_backward(go2, h1, w2, [True, False, False])),
        ("conv2 input gradient, forward conv", lambda: F.conv2d(go2, w2_flipped, padding=4)),
        ("convolutional part of a gradient, float32", lambda: conv_part(False)),
        ("convolutional part of a gradient, bf16 autocast", lambda: conv_part(True)),
    ]
    for _ in range(args.repeat):
        for name, fn in rows:
            print(f"  {name:50s} {cpu_ms(fn, args.calls):7.2f} ms")


if __name__ == "__main__":
    main()
