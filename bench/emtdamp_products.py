"""Benchmark: the first layer's four products of an EM-TDAMP sweep at MNIST's shape,
dense against sparse.

Layer 1 of a 784-128-10 TDAMP sweep multiplies the data ``X̃ = [X; 1ᵀ]`` (``785 × B``,
``B = 100``, per client) four times: ``ν_w X̃²`` and ``Ŵ X̃`` (forward), ``ν_s (X̃²)ᵀ`` and
``ŝ X̃ᵀ + Ŵ ⊙ g`` (backward; ``g`` the gain). MNIST's pixels are about 81 % zero, but the
inputs are centred, so a zero pixel becomes ``−m_i``: the sparse form is
``X̃ = S + m 1ᵀ`` with ``m`` each row's most frequent value (``S`` has MNIST's zeros, and
``X̃² = S ⊙ (S + 2m1ᵀ) + m² 1ᵀ`` the same pattern), and each product is a sparse product
plus a rank-one term. Variants, all ``K = 10`` clients of a round, timed alternately (CPU
time, median of ``--repeat``):

* ``dense``: the sweep's products (``torch.matmul`` batched; the fourth as ``baddbmm`` into
  ``Ŵ ⊙ g`` in float64, product then ``addcmul_`` in float32, as ``damp_mlp`` does; in
  float32 the backward products take ``X̃ᵀ`` and ``X̃²ᵀ`` as contiguous copies, made once
  per minibatch and not timed);
* ``dense, Xᵀ views``: the backward products on transposed views of ``X̃`` and ``X̃²``
  (what float64 does, and float32 did before);
* ``dense, baddbmm``: the fourth product always as ``baddbmm`` (to show its float32 cost);
* ``torch CSR``: one sparse-dense product for the two forward products of every client (a
  block-diagonal CSR matrix of the ``Sᵀ`` and ``(S ⊙ (S + 2m))ᵀ`` blocks) and one for the
  two backward ones, plus the rank-one terms; building the CSR matrices (once per
  minibatch, i.e. per 5 sweeps) is **not** timed;
* ``scipy CSR``: ``scipy.sparse`` products client by client, plus the rank-one terms.

The images are MNIST's (the IDX files if found, else the packaged 5 000-image subset),
centred by their mean, ``K × B`` of them. Prints each variant's time, its ratio to
``dense`` and its largest difference from ``dense`` relative to the largest entry.

    python bench/emtdamp_products.py [--repeat 20] [--dtypes float64,float32]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sps
import torch

from bflnet.data.digits import load_digits

K, B, N_IN, N_OUT = 10, 100, 784, 128
Products = tuple[torch.Tensor, ...]


def mnist_batches(dtype: torch.dtype) -> tuple[torch.Tensor, float]:
    """``(K, 785, B)`` centred MNIST minibatches with the row of ones, and the density of
    MNIST's non-zero pixels in them."""
    digits = load_digits(np.random.default_rng(0), "mnist")
    images = digits.train[0].astype(np.float64)
    density = float((images[:K * B] != 0).mean())
    images = images - images.mean(0)
    x = torch.tensor(images[:K * B].reshape(K, B, N_IN).transpose(0, 2, 1).copy(), dtype=dtype)
    return torch.cat([x, torch.ones(K, 1, B, dtype=dtype)], 1), density


def variants(x: torch.Tensor) -> dict[str, Callable[[], Products]]:
    """The four products in each variant, on random operands of the sweep's shapes."""
    gen = torch.Generator().manual_seed(0)
    kind = {"dtype": x.dtype, "generator": gen}
    w, v = torch.randn(K, N_OUT, N_IN + 1, **kind), torch.rand(K, N_OUT, N_IN + 1, **kind)
    s_hat, s_var = torch.randn(K, N_OUT, B, **kind), torch.rand(K, N_OUT, B, **kind)
    gain = torch.rand(K, N_OUT, N_IN + 1, **kind)
    x2 = x * x
    x_t = x.mT.contiguous()  # once per minibatch in damp_mlp._input_transposes
    x2_t = x_t * x_t
    m = torch.mode(x, dim=-1).values  # (K, 785): each row's background value
    s = x - m[..., None]
    t = s * (s + 2 * m[..., None])
    m2 = m * m

    def dense() -> Products:
        if x.dtype == torch.float64:
            third, fourth = (torch.matmul(s_var, x2.mT),
                             torch.mul(w, gain).baddbmm_(s_hat, x.mT))
        else:
            third, fourth = (torch.matmul(s_var, x2_t),
                             torch.matmul(s_hat, x_t).addcmul_(w, gain))
        return torch.matmul(v, x2), torch.matmul(w, x), third, fourth

    def dense_views() -> Products:
        fourth = (torch.mul(w, gain).baddbmm_(s_hat, x.mT) if x.dtype == torch.float64
                  else torch.matmul(s_hat, x.mT).addcmul_(w, gain))
        return torch.matmul(v, x2), torch.matmul(w, x), torch.matmul(s_var, x2.mT), fourth

    def dense_baddbmm() -> Products:
        return (torch.matmul(v, x2), torch.matmul(w, x), torch.matmul(s_var, x2.mT),
                torch.mul(w, gain).baddbmm_(s_hat, x.mT))

    forward = torch.block_diag(*[b for k in range(K) for b in (t[k].T, s[k].T)]).to_sparse_csr()
    backward = torch.block_diag(*[b for k in range(K) for b in (t[k], s[k])]).to_sparse_csr()

    def torch_csr() -> Products:
        rhs = torch.stack([v, w], 1).mT.reshape(2 * K * (N_IN + 1), N_OUT)
        out = torch.sparse.mm(forward, rhs).view(K, 2, B, N_OUT)
        first = out[:, 0].mT + v @ m2[..., None]
        second = out[:, 1].mT + w @ m[..., None]
        rhs = torch.stack([s_var, s_hat], 1).mT.reshape(2 * K * B, N_OUT)
        out = torch.sparse.mm(backward, rhs).view(K, 2, N_IN + 1, N_OUT)
        third = out[:, 0].mT + s_var.sum(-1, keepdim=True) * m2[:, None, :]
        fourth = (out[:, 1].mT + s_hat.sum(-1, keepdim=True) * m[:, None, :]).addcmul_(w, gain)
        return first, second, third, fourth

    s_rows = [sps.csr_matrix(s[k].numpy()) for k in range(K)]
    t_rows = [sps.csr_matrix(t[k].numpy()) for k in range(K)]
    s_cols = [sps.csr_matrix(s[k].T.numpy()) for k in range(K)]
    t_cols = [sps.csr_matrix(t[k].T.numpy()) for k in range(K)]

    def scipy_csr() -> Products:
        vn, wn, svn, shn = v.numpy(), w.numpy(), s_var.numpy(), s_hat.numpy()

        def each(mats: list, ops: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.stack([(mats[k] @ ops[k].T).T for k in range(K)]))

        return (each(t_cols, vn) + v @ m2[..., None], each(s_cols, wn) + w @ m[..., None],
                each(t_rows, svn) + s_var.sum(-1, keepdim=True) * m2[:, None, :],
                each(s_rows, shn).add_(s_hat.sum(-1, keepdim=True) * m[:, None, :])
                .addcmul_(w, gain))

    return {"dense": dense, "dense, Xᵀ views": dense_views, "dense, baddbmm": dense_baddbmm,
            "torch CSR": torch_csr, "scipy CSR": scipy_csr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtypes", default="float64,float32")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.dtypes.split(","):
        x, density = mnist_batches(getattr(torch, name))
        cases = variants(x)
        reference = cases["dense"]()
        times: dict[str, list[float]] = {case: [] for case in cases}
        for fn in cases.values():
            fn()
        for _ in range(args.repeat):
            for case, fn in cases.items():
                start = time.process_time()
                fn()
                times[case].append(time.process_time() - start)
        base = statistics.median(times["dense"])
        print(f"{name}: K = {K} clients x (128 x 785 x {B}), MNIST pixels non-zero: "
              f"{density:.1%}; CPU ms per sweep's four products (median of {args.repeat})")
        for case, fn in cases.items():
            diff = max(float((a - b).abs().max() / b.abs().max())
                       for a, b in zip(fn(), reference, strict=True))
            med = statistics.median(times[case])
            print(f"  {case:>16}: {1e3 * med:7.2f} ms  ({med / base:.2f} x dense; "
                  f"max rel diff {diff:.1e})")


if __name__ == "__main__":
    main()
