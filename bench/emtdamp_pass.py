"""Benchmark: one TDAMP minibatch pass vs the matrix products of the same pass.

The pass is :func:`bflnet.learners.emtdamp.tdamp_client.tdamp_client` on one minibatch
(784-128-10, probit-product likelihood, batch ``B = 100``, one DAMP sweep): Module A's
forward and backward sweeps, Module B inside the backward sweep, PasP and ``σ^k``,
including the argument and finiteness checks. Two references, inputs preallocated, float64
like the pass:

* **the pass's products** (the ratio the target ``<= 3`` applies to): the 12 GEMMs one
  sweep issues (layer 1, ``ν_u = 0``: ``ν_w X̃²``, ``Ŵ X̃``, ``ν_s (X̃²)ᵀ``, ``ŝ X̃ᵀ``;
  layer 2: ``ν_w Û²``, ``Ŵ² ν_u``, ``ν_w ν_u``, ``Ŵ Û``, ``(Ŵ²)ᵀ ν_s``, ``ν_wᵀ ν_s``,
  ``Ŵᵀ ŝ``, ``ν_s (Û²)ᵀ``, ``ν_s ν_uᵀ``, ``ŝ Ûᵀ``; eqs. 6.11-6.18);
* **an SGD step's products**: forward ``W X``, backward ``dW = δ Xᵀ``, ``δ_in = Wᵀ δ`` per
  layer (5 GEMMs), for scale.

Median over ``--repeat`` rounds after warm-up, each round timing every case once.

Measured (docs/em-tdamp/module-a.md, Sec. 6.6, Benchmark; 2 cores shared with other jobs, medians
of 8 runs): pass 9.8 ms, its products 2.8 ms, ratio 3.45 (3.36-3.48; target not met),
8.4× the SGD products; the code before the speed-up, run alternately, 27.7 ms and 7.9.
``BFLNET_MALLOC_TUNING=0`` (glibc's default heap trimming, :mod:`bflnet.learners.emtdamp.heap`)
gives 4.4.

    python bench/emtdamp_pass.py [--batch 100] [--repeat 30] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from bflnet.learners.emtdamp.damp_mlp import DampSettings, random_layer_priors
from bflnet.learners.emtdamp.tdamp_client import tdamp_client

SIZES = (784, 128, 10)


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    f64 = torch.float64
    n0, n1, n2 = SIZES
    batch = args.batch
    x = torch.rand(n0, batch, generator=gen, dtype=f64)
    labels = torch.randint(0, n2, (batch,), generator=gen)
    priors = random_layer_priors(list(SIZES), gen, activity=0.5)
    settings = DampSettings(damping=0.5)

    def tdamp_pass() -> None:
        tdamp_client(x, labels, priors, 1.0, likelihood="probit", batch_size=batch,
                     settings=settings)

    def r(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=gen, dtype=f64)

    x1, w1, s1 = r(n0 + 1, batch), r(n1, n0 + 1), r(n1, batch)
    u2, w2, s2, uv2 = r(n1 + 1, batch), r(n2, n1 + 1), r(n2, batch), r(n1 + 1, batch)
    o1, g1, o2, g2, b2 = (torch.empty(n1, batch, dtype=f64), torch.empty(n1, n0 + 1, dtype=f64),
                          torch.empty(n2, batch, dtype=f64), torch.empty(n2, n1 + 1, dtype=f64),
                          torch.empty(n1, batch, dtype=f64))

    def damp_products() -> None:
        for _ in range(2):  # layer 1: forward ν_p and p̄
            torch.matmul(w1, x1, out=o1)
        for _ in range(2):  # layer 1: backward ν_q and q̂
            torch.matmul(s1, x1.T, out=g1)
        for _ in range(4):  # layer 2: forward ν̄_p, ν_p, p̄
            torch.matmul(w2, u2, out=o2)
        for _ in range(3):  # layer 2: backward to u (r)
            torch.matmul(w2[:, :-1].T, s2, out=b2)
        for _ in range(3):  # layer 2: backward to W (q)
            torch.matmul(s2, uv2.T, out=g2)

    def sgd_products() -> None:
        torch.matmul(w1, x1, out=o1)
        torch.matmul(w2, u2, out=o2)
        torch.matmul(s2, u2.T, out=g2)
        torch.matmul(w2[:, :-1].T, s2, out=b2)
        torch.matmul(s1, x1.T, out=g1)

    cases = {"tdamp pass": tdamp_pass, "its products": damp_products,
             "sgd products": sgd_products}
    for _ in range(3):
        for fn in cases.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    ratios = []
    for _ in range(args.repeat):
        row = {name: _timed(fn) for name, fn in cases.items()}
        for name, value in row.items():
            times[name].append(value)
        ratios.append(row["tdamp pass"] / row["its products"])
    for name, values in times.items():
        print(f"{name:>14}: {1e3 * statistics.median(values):8.3f} ms")
    print(f"ratio pass / its products: {statistics.median(ratios):.2f} (target <= 3)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"ratio pass / SGD products: {medians['tdamp pass'] / medians['sgd products']:.2f}")


if __name__ == "__main__":
    main()
