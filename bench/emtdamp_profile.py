"""Profile: where one EM-TDAMP round's CPU time goes, by operator and by source line.

Runs one round of ``bench/emtdamp_round.py`` (784-128-10, probit, batch 100, K clients of
``--points`` MNIST images) after a warm-up round, with every torch call timed (CPU time,
``time.process_time`` around the call, through a ``TorchFunctionMode``) and attributed to
the library line that made it. Prints the round's CPU time without the timer, the
operators' share by tensor shape (the first tensor argument: ``K x 128 x 785`` are the
first layer's weights, ``K x 128 x 100`` the hidden layer's nodes, ``K x 10 x 100`` the
output layer's) and the heaviest lines. The timer adds a few microseconds per call, so
the small operations' share is overstated; the proportions of the large ones are what
this is for.

    python bench/emtdamp_profile.py [--points 200] [--tau-max 2] [--dtype float32] [--lines 30]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

sys.path.insert(0, str(Path(__file__).parent))
from emtdamp_round import make_round, mnist_tiled


class OperatorTimer(TorchFunctionMode):
    """CPU seconds and calls per ``(library line, operator, shape)``."""

    def __init__(self) -> None:
        super().__init__()
        self.stats: dict[tuple[str, str, str], list[float]] = collections.defaultdict(
            lambda: [0.0, 0])
        self.depth = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.depth:
            return func(*args, **kwargs)
        self.depth += 1
        try:
            start = time.process_time()
            out = func(*args, **kwargs)
            spent = time.process_time() - start
        finally:
            self.depth -= 1
        frame = sys._getframe(1)
        while frame is not None and "bflnet" not in frame.f_code.co_filename:
            frame = frame.f_back
        where = (f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
                 if frame is not None else "?")
        shape = next(("x".join(map(str, a.shape)) for a in args
                      if isinstance(a, torch.Tensor)), "")
        entry = self.stats[(where, getattr(func, "__name__", str(func)), shape)]
        entry[0] += spent
        entry[1] += 1
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tau-max", type=int, default=2)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--lines", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    one_round = make_round(args.dtype, mnist_tiled(args.clients, args.points), args.tau_max)
    one_round()
    start = time.process_time()
    one_round()
    plain = time.process_time() - start
    timer = OperatorTimer()
    with timer:
        one_round()
    total = sum(t for t, _ in timer.stats.values())
    print(f"K = {args.clients} x {args.points} images, tau_max = {args.tau_max}, "
          f"{args.dtype}: round {plain:.3f} s CPU without the timer; operators "
          f"{total:.3f} s with it")
    for title, key in (("by shape", lambda k: k[2]),
                       ("by operator and shape", lambda k: f"{k[1]} {k[2]}"),
                       ("by line", lambda k: k[0])):
        groups: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
        for k, (spent, calls) in timer.stats.items():
            groups[key(k)][0] += spent
            groups[key(k)][1] += calls
        print(f"-- {title}")
        for name, (spent, calls) in sorted(groups.items(), key=lambda kv: -kv[1][0])[
                :args.lines]:
            print(f"  {100 * spent / total:5.1f} %  {1e3 * spent:8.1f} ms  {calls:6d} calls  "
                  f"{name}")


if __name__ == "__main__":
    main()
