"""Benchmark: gathering EM-TDAMP's shuffled minibatches, examples stored as rows or columns.

Every minibatch of a TDAMP pass takes ``B = 100`` random examples of each client's
``(N_0, I_k)`` inputs (``N_0 = 784``) and stacks them as ``(K, N_0, B)``
(``tdamp_client._take``). With the inputs stored as ``(N_0, I_k)`` (columns strided),
each value of the minibatch is a separate cache line of a ``784 × I_k`` array; the
learner now keeps them as the ``(N_0, I_k)`` view of an ``(I_k, N_0)`` array, so that an
example's 784 values are contiguous and ``_take`` gathers whole rows. The cost grows with
``I_k`` (the arrays leave the caches): at MNIST's 6 000 images per client (60 000 in a
round of ``K = 10``) it is a few per cent of a round. Random values (the gather does not
look at them); CPU time per minibatch, median of ``--repeat`` passes, both layouts
alternately in one process; the gathered minibatches are checked equal.

    python bench/emtdamp_gather.py [--points 6000] [--clients 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bflnet.learners.emtdamp.tdamp_client import _batches, _take

N_IN, BATCH = 784, 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=6000, help="images per client")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    rows = [torch.rand(args.points, N_IN, generator=gen) for _ in range(args.clients)]
    layouts = {"columns (N_0, I) array": [r.T.contiguous() for r in rows],
               "rows (I, N_0) array": [r.T for r in rows]}
    times: dict[str, list[float]] = {name: [] for name in layouts}
    for _ in range(args.repeat + 1):  # the first pass warms up
        orders = [_batches(args.points, BATCH, gen) for _ in range(args.clients)]
        for name, data in layouts.items():
            start = time.process_time()
            for index in zip(*orders, strict=True):
                _take(data, index)
            times[name].append((time.process_time() - start) / len(orders[0]))
        first = next(zip(*orders, strict=True))
        reference = _take(layouts["columns (N_0, I) array"], first)
        assert torch.equal(_take(layouts["rows (I, N_0) array"], first), reference)
    base = statistics.median(times["columns (N_0, I) array"][1:])
    print(f"K = {args.clients} clients x {args.points} images of {N_IN} values, minibatch "
          f"{BATCH}; CPU ms per minibatch (median of {args.repeat} passes)")
    for name, values in times.items():
        med = statistics.median(values[1:])
        print(f"  {name:>24}: {1e3 * med:7.2f} ms  ({med / base:.2f} x columns)")


if __name__ == "__main__":
    main()
