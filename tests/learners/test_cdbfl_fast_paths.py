"""The CD-BFL / DSGLD / CF-FL fast paths give the same bits as the plain ones: the LeNet
gradient without autograd's concatenation, the 2 x 2 average pooling as strided adds, and
the d-sized arithmetic over column chunks."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bflnet.learners.langevin import chunked
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.learners.langevin.cffl import CFFL
from bflnet.learners.langevin.chunked import column_chunks
from bflnet.learners.langevin.dsgld import DSGLD
from bflnet.learners.models import lenet_grad
from bflnet.learners.models.lenet import BayesianLeNet
from bflnet.learners.models.lenet_grad import weight_grad
from bflnet.learners.models.numpy_blas import openblas_threads
from bflnet.learners.models.pool import avg_pool_2x2
from bflnet.protocols import ConsensusProtocol, StopRule
from bflnet.protocols.coding.codecs import RawCodec, TopKCodec
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.simulator import Simulation

SMALL = {"conv1": 3, "conv2": 4, "fc1": 7, "fc2": 6}


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def problem(model: BayesianLeNet, rows: int, per_row: bool, seed: int = 0):
    g = gen(seed)
    theta = model.init_particles(rows, g) + 0.05 * torch.randn(rows, model.d, generator=g,
                                                                dtype=model.dtype)
    lead = (rows, 6) if per_row else (6,)
    x = torch.rand(*lead, model.n_in, generator=g, dtype=model.dtype)
    return theta, x, torch.randint(0, model.n_classes, lead, generator=g)


@pytest.mark.parametrize("opts", [
    {}, {"activation": "tanh"}, {"pool": "max"}, {"activation": "tanh", "pool": "max"},
    {"padding": 2}, {"dtype": torch.float32},
])
@pytest.mark.parametrize("rows, per_row", [(1, False), (3, False), (2, True)])
def test_lenet_gradient_is_autograds_bit_for_bit(opts, rows, per_row):
    # narrow FC layers: every product runs in torch, as autograd's does
    model = BayesianLeNet(34, 30, 5, **{**SMALL, "dtype": torch.float64, **opts})
    theta, x, y = problem(model, rows, per_row)
    out = torch.full((rows, model.d), float("nan"), dtype=model.dtype)
    grad = model.log_likelihood_grad(theta, x, y, out=out)
    assert grad is out and not grad.requires_grad
    assert torch.equal(grad, model._autograd_grad(theta, x, y, None))


def test_lenet_gradient_with_a_wide_first_fc_layer_matches_autograd():
    # fc1 = 40 >= FAST_MIN_WIDTH: its weight gradient takes NumPy's or the blocked route
    model = BayesianLeNet(34, 30, 5, **{**SMALL, "fc1": 40}, dtype=torch.float32)
    theta, x, y = problem(model, 2, True)
    ref = model._autograd_grad(theta, x, y, None)
    torch.testing.assert_close(model.log_likelihood_grad(theta, x, y), ref,
                               rtol=1e-6, atol=1e-7 * float(ref.abs().max()))


def test_a_subclass_redefining_the_forward_gets_autograd():
    class Doubled(BayesianLeNet):
        def _act(self, h):
            return super()._act(h) * 2.0

    model = Doubled(34, 30, 5, **SMALL, dtype=torch.float64)
    assert not model._inherits_maths()
    theta, x, y = problem(model, 1, False)
    assert torch.equal(model.log_likelihood_grad(theta, x, y),
                       model._autograd_grad(theta, x, y, None))


@pytest.mark.parametrize("blas_threads", [1, 2, None])
@pytest.mark.parametrize("n, b, width, dtype", [
    (1, 10, 229, torch.float32), (3, 4, 40, torch.float64), (2, 5, 10, torch.float32)])
def test_weight_grad_is_the_batched_product(n, b, width, dtype, blas_threads, monkeypatch):
    # NumPy's route with a one-thread OpenBLAS, else torch's transposed blocks (here of
    # 16 rows: 50 = 3 x 16 + 2)
    monkeypatch.setattr(lenet_grad, "openblas_threads", lambda: blas_threads)
    monkeypatch.setattr(lenet_grad, "BLOCK", 16)
    g = gen(3)
    a = torch.randn(b, n, 50, generator=g, dtype=dtype).transpose(0, 1)  # (N, B, in) view
    grad = torch.randn(n, b, width, generator=g, dtype=dtype)
    flat = torch.zeros(n, 7 + 50 * width, dtype=dtype)
    out = flat[:, 7:].view(n, 50, width)
    weight_grad(a, grad, out)
    torch.testing.assert_close(out, torch.bmm(a.transpose(1, 2), grad))
    assert torch.equal(flat[:, :7], torch.zeros(n, 7, dtype=dtype))


def test_openblas_threads_is_a_count_or_unknown():
    value = openblas_threads()
    assert value is None or (isinstance(value, int) and value >= 1)


@pytest.mark.parametrize("shape", [(3, 2, 7, 5), (2, 4, 6, 9), (1, 1, 2, 2), (2, 6, 252, 59)])
def test_avg_pool_2x2_is_avg_pool2d_bit_for_bit_forward_and_backward(shape):
    z = torch.randn(*shape, generator=gen(1)).relu().requires_grad_(True)
    ours, ref = avg_pool_2x2(z), F.avg_pool2d(z, 2)
    assert torch.equal(ours, ref)
    g = torch.randn(ref.shape, generator=gen(2))
    (a,), (b,) = torch.autograd.grad(ours, z, g), torch.autograd.grad(ref, z, g)
    assert torch.equal(a, b) and torch.equal(a.signbit(), b.signbit())


def test_avg_pool_2x2_gradcheck_and_errors():
    z = torch.rand(2, 3, 5, 7, dtype=torch.float64, generator=gen(0), requires_grad=True)
    assert torch.autograd.gradcheck(avg_pool_2x2, (z,))
    with pytest.raises(ValueError, match="^z: needs height and width >= 2"):
        avg_pool_2x2(torch.zeros(1, 1, 1, 5))


def test_column_chunks_cover_every_column_once():
    a, b = torch.arange(23.0).reshape(1, 23), torch.zeros(1, 23)
    pieces = list(column_chunks(a, b, chunk=5))
    assert [p[0].shape[1] for p in pieces] == [5, 5, 5, 5, 3]
    for x, y in pieces:
        y.add_(x)
    assert torch.equal(a, b)
    # a non-contiguous operand: one piece, the whole width
    assert len(list(column_chunks(a, torch.zeros(1, 46)[:, ::2], chunk=5))) == 1
    with pytest.raises(ValueError, match="^tensors: need the same last dimension"):
        next(column_chunks(a, torch.zeros(1, 4)))
    with pytest.raises(ValueError, match="^chunk: must be >= 1"):
        next(column_chunks(a, chunk=0))


def run(cls, chunk: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(chunked, "CHUNK", chunk)
    model = BayesianLeNet(34, 30, 5, **SMALL, dtype=torch.float32)
    rng = np.random.default_rng(0)
    x = rng.random((40, model.n_in), dtype=np.float32)
    y = rng.integers(0, 5, 40)
    data = {k: (x[10 * k:10 * k + 10], y[10 * k:10 * k + 10]) for k in range(4)}
    kwargs = {"lr": 1e-3, "batch_size": 4, "burn_in": 2, "thin": 1,
              "eval_sets": {"eval": (x, y)}}
    if cls is DSGLD:
        learner, codec = DSGLD(model, data, **kwargs), RawCodec(32)
    else:
        learner, codec = cls(model, data, local_steps=3, **kwargs), TopKCodec(k=50)
    graph = nx.complete_graph(4)
    sim = Simulation(5)
    sim.build_network(graph)
    result = sim.run(ConsensusProtocol(learner, metropolis_hastings_weights(graph),
                                       StopRule(max_iterations=4), codec=codec))
    return result.frame, torch.cat([s.theta for s in result.agent_states.values()])


@pytest.mark.parametrize("cls", [CDBFL, CFFL, DSGLD])
def test_chunked_updates_give_the_same_bits_as_one_piece(cls, monkeypatch):
    frame, theta = run(cls, 10**9, monkeypatch)     # one chunk: the whole vector
    frame_c, theta_c = run(cls, 37, monkeypatch)     # many odd-sized chunks
    assert torch.equal(theta, theta_c)
    wall = [c for c in frame.columns if "wall" in c]
    assert frame.drop(columns=wall).equals(frame_c.drop(columns=wall))


def tricky(n: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Values with signed zeros, tiny and large magnitudes."""
    x = torch.randn(n, generator=gen(seed), dtype=dtype) * 3
    x[::7] = 0.0
    x[3::11] = -0.0
    x[5::13] *= 1e-38
    x[6::17] *= 1e30
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mean, var", [(0.0, 1.0), (0.3, 2.5), (0, 1), (-0.0, 1.0), (0.0, 2.0)])
@pytest.mark.parametrize("lr", [None, 1e-4, 0.37])
def test_numpy_prior_step_is_torchs_chain_bit_for_bit(dtype, mean, var, lr, monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK", 37)            # many odd-sized chunks
    theta = tricky(1000, 1, dtype).reshape(2, 500)
    lik = tricky(1000, 2, dtype).reshape(2, 500)
    ref = lik.clone()
    ref.mul_(-5.0).sub_(torch.rsub(theta, mean).div_(var).div_(10))
    if lr is not None:
        torch.sub(theta, ref.mul_(lr), out=ref)
    got = lik.clone()
    assert chunked.gaussian_prior_step(theta, got, 5.0, mean, var, 10, lr)
    assert torch.equal(got, ref) and torch.equal(got.signbit(), ref.signbit())


def test_numpy_prior_step_overflows_and_nans_silently_as_torch_does():
    import warnings

    theta = torch.tensor([[3e38, float("nan"), -3e38, 1.0]])
    lik = torch.tensor([[3e38, 1.0, float("inf"), float("nan")]])
    ref = lik.clone().mul_(-5.0).sub_(torch.rsub(theta, 0.0).div_(1.0).div_(10))
    got = lik.clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert chunked.gaussian_prior_step(theta, got, 5.0, 0.0, 1.0, 10, None)
    assert torch.equal(got.nan_to_num(7.0), ref.nan_to_num(7.0))


def test_numpy_prior_step_declines_what_numpy_cannot_run():
    theta, lik = torch.zeros(2, 8), torch.ones(2, 8)
    assert not chunked.gaussian_prior_step(theta, lik[:, ::2].clone().t(), 1.0, 0.0, 1.0,
                                           2, None)                   # non-contiguous
    assert not chunked.gaussian_prior_step(theta.half(), lik.half(), 1.0, 0.0, 1.0, 2, None)
    assert not chunked.gaussian_prior_step(theta, lik, 1.0, torch.tensor(0.0), 1.0, 2, None)
    assert not chunked.gaussian_prior_step(theta, lik.double(), 1.0, 0.0, 1.0, 2, None)
    assert torch.equal(lik, torch.ones(2, 8))


def test_support_and_sparse_addition_match_the_dense_addition(monkeypatch):
    from bflnet.learners.langevin import sparse_mix

    delta = torch.zeros(1, 400)
    delta[0, [3, 50, 51, 399]] = torch.tensor([1.5, -2.0, float("nan"), 1e-40])
    delta[0, 7] = -0.0                                   # a zero: not in the support
    idx = sparse_mix.support(delta)
    assert idx.tolist() == [3, 50, 51, 399]
    x = tricky(400, 4).abs().reshape(1, 400)             # no -0.0 (the module's condition)
    x[0, ::9] = 0.0
    for weight in (None, 0.1, 1 / 3):
        dense = x + (delta if weight is None else torch.mul(delta, weight))
        sparse = x.clone()
        sparse_mix.add_on_support(sparse, delta, idx, weight)
        assert torch.equal(sparse.nan_to_num(7.0), dense.nan_to_num(7.0))
        assert torch.equal(sparse.signbit(), dense.signbit())
    monkeypatch.setattr(sparse_mix, "SPARSE_SHARE", 0.005)  # 4 of 400 > 0.5 %: dense
    assert sparse_mix.support(delta) is None


@pytest.mark.parametrize("cls", [CDBFL, CFFL])
def test_sparse_mixing_and_numpy_steps_give_the_plain_paths_bits(cls, monkeypatch):
    from bflnet.learners.langevin import langevin, sparse_mix
    frame, theta = run(cls, 10**9, monkeypatch)          # sparse mixing, NumPy steps
    monkeypatch.setattr(sparse_mix, "SPARSE_SHARE", 0.0)   # every increment dense
    monkeypatch.setattr(langevin.LocalObjective, "numpy_chain", False)
    frame_d, theta_d = run(cls, 10**9, monkeypatch)
    assert torch.equal(theta, theta_d)
    wall = [c for c in frame.columns if "wall" in c]
    assert frame.drop(columns=wall).equals(frame_d.drop(columns=wall))


def test_cdbfl_mixes_sparsely_the_increments_it_saw_sent():
    model = BayesianLeNet(34, 30, 5, **SMALL, dtype=torch.float32)
    rng = np.random.default_rng(0)
    x = rng.random((20, model.n_in), dtype=np.float32)
    learner = CDBFL(model, {0: (x[:10], np.zeros(10, int)), 1: (x[10:], np.ones(10, int))})
    state = learner.init_node(0, rng, learner.init(rng))
    sparse = torch.zeros(1, model.d)
    sparse[0, :5] = 1.0
    learner.sent(0, state, sparse)
    assert learner._support(sparse) is not None
    assert learner._support(sparse.clone()) is None          # another object: dense path
    assert learner._support(torch.ones(1, model.d)) is None


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_network_metrics_names_the_nodes_with_non_finite_samples(bad):
    from types import SimpleNamespace

    from bflnet.learners.langevin.langevin import network_metrics

    nodes = {k: SimpleNamespace(theta=torch.full((1, 4), float(k)), sums=None, kept=0)
             for k in range(3)}
    assert network_metrics(None, nodes, {})["consensus_error"] > 0
    nodes[2].theta[0, 1] = bad
    with pytest.raises(ValueError, match=r"^theta: non-finite samples at nodes \[2\]"):
        network_metrics(None, nodes, {})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_add", [True, False])
def test_numpy_weighted_sum_is_torchs_chain_bit_for_bit(dtype, with_add, monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK", 37)
    xs = [tricky(500, seed, dtype).reshape(1, 500) for seed in range(5)]
    xs[2][0, 9] = float("nan")
    weights = [0.1, 1 / 3, 2 / 7, 1, 0.2857142857142857]
    add = tricky(500, 9, dtype).reshape(1, 500) if with_add else None
    ref = torch.mul(xs[0], weights[0])
    for x, w in zip(xs[1:], weights[1:], strict=True):
        ref.add_(torch.mul(x, w))
    if add is not None:
        ref.add_(add)
    got = torch.empty_like(ref)
    assert chunked.weighted_sum(got, list(zip(xs, weights, strict=True)), add)
    assert torch.equal(got.nan_to_num(7.0), ref.nan_to_num(7.0))
    assert torch.equal(got.signbit(), ref.signbit())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("noisy", [True, False])
def test_numpy_consensus_step_is_torchs_chain_bit_for_bit(dtype, noisy, monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK", 37)
    s, v, half, noise = (tricky(500, seed, dtype).reshape(1, 500) for seed in range(4))
    zeta, scale = 0.03, 0.014142135623730951
    ref = torch.add(half, torch.sub(s, v).mul_(zeta))
    if noisy:
        ref.add_(torch.mul(noise, scale))
    got = torch.empty_like(ref)
    assert chunked.consensus_step(got, s, v, half, noise if noisy else None, zeta, scale)
    assert torch.equal(got, ref) and torch.equal(got.signbit(), ref.signbit())


def test_numpy_mixing_declines_what_numpy_cannot_run(monkeypatch):
    x, out = torch.ones(1, 8), torch.empty(1, 8)
    assert not chunked.weighted_sum(out, [(x[:, ::2].t(), 0.5)])          # non-contiguous
    assert not chunked.weighted_sum(out, [(x.double(), 0.5)])             # mixed dtypes
    assert not chunked.weighted_sum(out, [(x, np.float64(0.5))])          # not weak
    assert not chunked.weighted_sum(out, [])
    assert not chunked.consensus_step(out, x, x, x, None, torch.tensor(0.5), 0.0)
    monkeypatch.setattr(chunked, "NUMPY_MIX", False)
    assert not chunked.weighted_sum(out, [(x, 0.5)])
    assert not chunked.consensus_step(out, x, x, x, None, 0.5, 0.0)


def test_numpy_sparse_addition_is_torchs(monkeypatch):
    from bflnet.learners.langevin import sparse_mix

    delta = torch.zeros(1, 400)
    delta[0, 1::11] = tricky(400, 5)[:37]                 # 10 % or less nonzero
    delta[0, 12] = float("nan")
    idx = sparse_mix.support(delta)
    assert idx is not None and idx.numel() > 20
    x = tricky(400, 6).abs().reshape(1, 400)
    for weight in (None, 0.1, 1 / 3, 2):
        fast = x.clone()
        sparse_mix.add_on_support(fast, delta, idx, weight)
        monkeypatch.setattr(chunked, "NUMPY_MIX", False)
        plain = x.clone()
        sparse_mix.add_on_support(plain, delta, idx, weight)
        monkeypatch.setattr(chunked, "NUMPY_MIX", True)
        assert torch.equal(fast.nan_to_num(7.0), plain.nan_to_num(7.0))
        assert torch.equal(fast.signbit(), plain.signbit())


@pytest.mark.parametrize("cls", [CDBFL, CFFL, DSGLD])
def test_numpy_mixing_gives_torchs_bits_in_a_run(cls, monkeypatch):
    frame, theta = run(cls, 37, monkeypatch)               # NumPy mixing, odd chunks
    monkeypatch.setattr(chunked, "NUMPY_MIX", False)         # torch's chains
    frame_t, theta_t = run(cls, 37, monkeypatch)
    assert torch.equal(theta, theta_t)
    wall = [c for c in frame.columns if "wall" in c]
    assert frame.drop(columns=wall).equals(frame_t.drop(columns=wall))
