"""Benchmark: one DSVGD local SVGD step vs the matrix products of the same step.

Times one local SVGD iteration of :class:`bflnet.learners.particles.dsvgd.DSVGD` on the letter's
Fashion-MNIST model (784-100-10 MLP, ``d = 79 510``), ``N_p`` particles and a minibatch of
``B`` examples, amortised over a ``DSVGD.local_update`` of ``--iters`` iterations (so the
minibatch sampling, buffer set-up, finiteness checks and payload are included; the
distillation is switched off). Two cases: an agent's *first* visit (one KDE term, q) and a
*steady* visit (three KDE terms: q, the local particles t̃_k and the reference r_k).

Two references, both the matrix products alone (inputs and outputs preallocated unless
said otherwise), each timed in the same rounds as the step:

* **all the step's products** (the ratio the target ``<= 1.5`` applies to): the MLP's
  forward + backward products below ("natural") plus the products one
  :func:`bflnet.learners.particles.svgd.run_svgd` iteration issues, at its shapes and in its
  memory layout, for ``n_kde`` KDE sets (1 first visit, 3 steady): the distance GEMM
  ``N_p × (n_kde·N_p + N_p) × d`` and φ as one product per particle set accumulated into
  one ``N_p × d`` output (``n_kde + 2`` products ``N_p × N_p × d``: the KDE sets, the
  particles, the scores), i.e. the combination GEMM ``N_p × (n_kde·N_p + 2 N_p) × d``
  split by set as run_svgd does it;
* **the MLP's products only**: ``H = X W1``, ``O = relu(H) W2``, ``dW2 = relu(H)ᵀ dO``,
  ``dH = dO W2ᵀ``, ``dW1 = Xᵀ dH`` for ``N_p × B`` examples as batched ``torch.matmul``
  calls ("natural", allocating their outputs as autograd does) and with preallocated
  outputs ("prealloc", a lower bound). This reading leaves out the SVGD kernel and KDE
  terms' own GEMMs (``(2 n_kde + 3) N_p² d`` multiply-adds, 40 M for one KDE set and
  72 M for three, next to the MLP's 160 M), so it measures that extra maths as overhead.

Warm-up rounds first, then the median over ``--repeat`` rounds, each round timing every
case once in turn (the ratios are medians of the per-round ratios, robust to load on a
shared machine); one thread by default. The step uses the score DSVGD picks: the
model's hand-written ``log_likelihood_grad`` into a reused buffer when it has one
(:class:`bflnet.learners.models.classifiers.BayesianMLP` does), autograd otherwise (the inline MLP).
``--profile`` then times the parts: the model's likelihood gradient both via autograd
and hand-written (when the model has it), run_svgd without a score, its products, and
an AdaGrad step. ``--inline-model`` uses a local copy of the MLP instead of
:class:`bflnet.learners.models.classifiers.BayesianMLP`.

    python bench/dsvgd_step.py [--particles 10] [--batch 100] [--iters 20] [--repeat 15]
                               [--threads 1] [--profile] [--inline-model]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from bflnet.learners.particles.dsvgd import DSVGD
from bflnet.learners.particles.svgd import AdaGrad, KDETerm, run_svgd

try:
    from bflnet.learners.models.classifiers import BayesianMLP
except ImportError:  # pragma: no cover - the models module is written separately
    BayesianMLP = None

N_IN, N_HIDDEN, N_OUT = 784, 100, 10


class InlineMLP:
    """The same 784-100-10 ReLU MLP, batched over particles (used if models is missing)."""

    n_classes = N_OUT

    def __init__(self) -> None:
        self.d = N_IN * N_HIDDEN + N_HIDDEN + N_HIDDEN * N_OUT + N_OUT

    def _unpack(self, theta: torch.Tensor) -> list[torch.Tensor]:
        sizes = [N_IN * N_HIDDEN, N_HIDDEN, N_HIDDEN * N_OUT, N_OUT]
        w1, b1, w2, b2 = theta.split(sizes, dim=1)
        n = theta.shape[0]
        return [w1.view(n, N_IN, N_HIDDEN), b1.unsqueeze(1), w2.view(n, N_HIDDEN, N_OUT),
                b2.unsqueeze(1)]

    def log_likelihood(self, theta: torch.Tensor, x: torch.Tensor,
                       y: torch.Tensor) -> torch.Tensor:
        w1, b1, w2, b2 = self._unpack(theta)
        h = torch.relu(torch.matmul(x, w1) + b1)
        logp = torch.log_softmax(torch.matmul(h, w2) + b2, dim=-1)
        return logp.gather(2, y.expand(theta.shape[0], -1).unsqueeze(2)).squeeze(2).sum(1)

    def init_particles(self, n: int, generator: torch.Generator) -> torch.Tensor:
        return 0.03 * torch.randn(n, self.d, generator=generator)

    def flops_per_example(self) -> float:
        return 6.0 * (N_IN * N_HIDDEN + N_HIDDEN * N_OUT)


def median_time(fn: Callable[[], object], repeat: int, warmup: int = 0) -> float:
    """Median wall-clock seconds of ``fn()`` after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(fns: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each round times every ``fn`` once in turn (each returns seconds), so that load
    changes on a shared machine hit all of them alike; per-round lists."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            out[name].append(fn())
    return out


def matmul_reference(n: int, b: int, gen: torch.Generator, prealloc: bool) -> Callable[[], None]:
    """Forward + backward matrix products of the MLP for ``n`` particles × ``b`` examples."""
    x = torch.randn(b, N_IN, generator=gen)
    w1 = 0.03 * torch.randn(n, N_IN, N_HIDDEN, generator=gen)
    w2 = 0.1 * torch.randn(n, N_HIDDEN, N_OUT, generator=gen)
    d_out = torch.randn(n, b, N_OUT, generator=gen)
    xt = x.T
    if not prealloc:
        def run() -> None:
            h = torch.matmul(x, w1)
            torch.matmul(h, w2)
            torch.matmul(h.transpose(1, 2), d_out)
            dh = torch.matmul(d_out, w2.transpose(1, 2))
            torch.matmul(xt, dh)
        return run
    h = torch.empty(n, b, N_HIDDEN)
    o = torch.empty(n, b, N_OUT)
    dw2 = torch.empty(n, N_HIDDEN, N_OUT)
    dh = torch.empty(n, b, N_HIDDEN)
    dw1 = torch.empty(n, N_IN, N_HIDDEN)
    xb = x.expand(n, b, N_IN)
    xtb = xt.expand(n, N_IN, b)

    def run_prealloc() -> None:
        torch.bmm(xb, w1, out=h)
        torch.bmm(h, w2, out=o)
        torch.bmm(h.transpose(1, 2), d_out, out=dw2)
        torch.bmm(d_out, w2.transpose(1, 2), out=dh)
        torch.bmm(xtb, dh, out=dw1)
    return run_prealloc


def svgd_products(n: int, d: int, n_kde: int, gen: torch.Generator) -> Callable[[], None]:
    """The matrix products of one :func:`run_svgd` iteration with a score and ``n_kde``
    KDE sets of ``n`` particles, at its shapes: the distance GEMM of the particles
    ``X = ZX[-n:]`` against ``ZX = [KDE sets; X]`` and φ as one product per set
    (``torch.mm`` then ``addmm_``) from column blocks of the coefficient matrix."""
    r = n_kde * n
    zx = torch.randn(r + n, d, generator=gen)
    score = torch.randn(n, d, generator=gen)
    coef = torch.randn(n, r + 2 * n, generator=gen)
    cross, phi = torch.empty(n, r + n), torch.empty(n, d)
    x = zx[r:]
    blocks = [(lo, lo + n) for lo in range(0, r + n, n)]

    def run() -> None:
        torch.mm(x, zx.T, out=cross)
        (lo, hi), *rest = blocks
        torch.mm(coef[:, lo:hi], zx[lo:hi], out=phi)
        for lo, hi in rest:
            phi.addmm_(coef[:, lo:hi], zx[lo:hi])
        phi.addmm_(coef[:, r + n:], score)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=10)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--iters", type=int, default=20, help="SVGD iterations per timing")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also time the parts")
    parser.add_argument("--inline-model", action="store_true",
                        help="use the inline MLP (torch.split unpacking) even if models exists")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n, b, iters = args.particles, args.batch, args.iters

    use_inline = args.inline_model or BayesianMLP is None
    model = InlineMLP() if use_inline else BayesianMLP()
    print(f"model: {type(model).__name__} 784-100-10 (d = {model.d})"
          + (" - bflnet.learners.models.classifiers.BayesianMLP missing, inline copy"
             if BayesianMLP is None else ""))
    print(f"N_p = {n}, batch = {b}, threads = {torch.get_num_threads()}, "
          f"median of {args.repeat} after {args.warmup} warm-up runs")
    gen = torch.Generator().manual_seed(0)
    n_data = 6000
    x = torch.randn(n_data, N_IN, generator=gen)
    y = torch.randint(0, N_OUT, (n_data,), generator=gen)

    def learner() -> DSVGD:
        return DSVGD(model, {0: (x, y)}, n, local_steps=iters, step_size=1e-3,
                     batch_size=b, distill_iters=0)

    first = learner()
    theta0 = first.init(np.random.default_rng(0))
    fresh = first.init_agent(0, np.random.default_rng(1))     # the agent's first visit
    steady = learner()
    visit1 = steady.local_update(0, theta0, fresh, np.random.default_rng(1))
    theta1 = steady.merge(theta0, [visit1])
    factor = visit1.agent_state                               # its state on later visits
    rng = np.random.default_rng(2)
    natural = matmul_reference(n, b, gen, prealloc=False)
    prealloc = matmul_reference(n, b, gen, prealloc=True)
    svgd1, svgd3 = svgd_products(n, model.d, 1, gen), svgd_products(n, model.d, 3, gen)

    def all1() -> None:
        natural()
        svgd1()

    def all3() -> None:
        natural()
        svgd3()

    fns = {
        "natural": lambda: median_time(natural, 5),
        "prealloc": lambda: median_time(prealloc, 5),
        "all1": lambda: median_time(all1, 5),
        "all3": lambda: median_time(all3, 5),
        "first": lambda: median_time(lambda: first.local_update(0, theta0, fresh, rng), 1) / iters,
        "steady": lambda: median_time(lambda: steady.local_update(0, theta1, factor, rng),
                                     1) / iters,
    }
    interleaved(fns, args.warmup)
    times = interleaved(fns, args.repeat)
    med = {name: statistics.median(ts) for name, ts in times.items()}

    def ratio(key: str, ref: str) -> float:
        return statistics.median(a / b for a, b in zip(times[key], times[ref], strict=True))

    print(f"products alone: all of the step's {1e3 * med['all1']:7.3f} ms (first visit), "
          f"{1e3 * med['all3']:7.3f} ms (steady visit); "
          f"the MLP's only {1e3 * med['natural']:7.3f} ms (preallocated "
          f"{1e3 * med['prealloc']:.3f} ms)")
    for key, ref, name in (("first", "all1", "first visit (1 KDE) "),
                           ("steady", "all3", "steady visit (3 KDE)")):
        print(f"DSVGD step, {name}: {1e3 * med[key]:7.3f} ms   "
              f"vs all its products {ratio(key, ref):5.2f} (target <= 1.5)   "
              f"vs the MLP's products only {ratio(key, 'natural'):5.2f} "
              f"(preallocated {ratio(key, 'prealloc'):5.2f})")

    if args.profile:
        xb, yb = x[:b], y[:b]
        theta = theta1.detach().clone()

        def likelihood_grad() -> None:
            t = theta.detach().requires_grad_(True)
            torch.autograd.grad(model.log_likelihood(t, xb, yb).sum(), t)

        grad_fn = getattr(model, "log_likelihood_grad", None)
        grad_out = torch.empty_like(theta)

        f = factor
        terms = [KDETerm(theta1, 1.0), KDETerm(f.local, -1.0), KDETerm(f.reference, 1.0)]
        lik = {"autograd": likelihood_grad}
        if callable(grad_fn):
            lik["hand"] = lambda: grad_fn(theta, xb, yb, out=grad_out)
        # interleaved like the step, so that the hand/autograd ratio sees the same load
        lik_fns = {key: (lambda fn=fn: median_time(fn, 5)) for key, fn in lik.items()}
        interleaved(lik_fns, args.warmup)
        lik_times = interleaved(lik_fns, args.repeat)
        t_lik = {key: statistics.median(ts) for key, ts in lik_times.items()}
        t_kde3 = median_time(lambda: run_svgd(theta, iters, kde_terms=terms, step_size=1e-3),
                             args.repeat, args.warmup) / iters
        t_kde1 = median_time(lambda: run_svgd(theta, iters, kde_terms=terms[:1],
                                              step_size=1e-3), args.repeat, args.warmup) / iters
        t_prod1 = median_time(svgd1, 5 * args.repeat, args.warmup)
        t_prod3 = median_time(svgd3, 5 * args.repeat, args.warmup)
        opt, phi = AdaGrad(1e-3), torch.randn(n, model.d, generator=gen)
        opt.step_(theta, phi)  # the first step sets up the accumulator
        t_ada = median_time(lambda: opt.step_(theta, phi), 5 * args.repeat, args.warmup)
        print("profile (ms per SVGD step):")
        rows = [
            ("likelihood forward+backward via autograd",
             f"{1e3 * t_lik['autograd']:7.3f}  (the MLP's products alone "
             f"{1e3 * med['natural']:.3f})"),
        ]
        if "hand" in t_lik:
            hand_ratio = statistics.median(
                a / b for a, b in zip(lik_times["hand"], lik_times["autograd"], strict=True))
            rows.append(("  hand-written (log_likelihood_grad, out=)",
                         f"{1e3 * t_lik['hand']:7.3f}  (hand / autograd {hand_ratio:.2f}; "
                         "the step uses this)"))
        rows += [
            ("run_svgd without a score",
             f"{1e3 * t_kde1:7.3f} (1 KDE)  {1e3 * t_kde3:7.3f} (3 KDE)"),
            ("run_svgd's products, with a score",
             f"{1e3 * t_prod1:7.3f} (1 KDE)  {1e3 * t_prod3:7.3f} (3 KDE)"),
            (f"one AdaGrad step over {n} x {model.d}", f"{1e3 * t_ada:7.3f}"),
        ]
        for label, value in rows:
            print(f"  {label:<42} {value}")

if __name__ == "__main__":
    main()
