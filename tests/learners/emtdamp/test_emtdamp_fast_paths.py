"""Module A's cheaper forms give the numbers of the plain ones: clips by clamping (as
``torch.where``), the ``erfcx`` tail by flat index copies (as boolean indexing), and the
``A → B`` shift as product then add outside float64 (as ``baddbmm``, within rounding;
that batched clients keep their bits in both dtypes is tested in test_emtdamp_batched),
clip counts without a boolean mask (as the comparisons), the minibatch gathered by rows
(as by columns), and a private state with layer 1's contiguous transposes (as the plain
state, bit for bit)."""

import math

import pytest
import torch

from bflnet.learners.emtdamp import damp_mlp
from bflnet.learners.emtdamp.moments import _erfcx, _erfcx_pair


def _values(dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 40, 50, generator=gen, dtype=dtype) * 4
    x[0, 0, :4] = torch.tensor([math.inf, -math.inf, 0.0, -0.0], dtype=dtype)
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_clips_clamp_like_where_and_count_per_problem(dtype):
    x = _values(dtype)
    clips: dict = {}
    floored = damp_mlp._floor(clips, "f", x, 0.5)
    capped = damp_mlp._cap(clips, "c", x, 0.5)
    assert torch.equal(floored, torch.where(x < 0.5, 0.5, x))
    assert torch.equal(capped, torch.where(x > 0.5, 0.5, x))
    assert torch.equal(clips["f"], (x < 0.5).sum((-2, -1)))
    assert torch.equal(clips["c"], (x > 0.5).sum((-2, -1)))
    finite = x.nan_to_num(posinf=7.0, neginf=-7.0)
    one: dict = {}
    out = damp_mlp._floor_finite(one, "g", "v", finite[1].clone(), 0.5, 1)  # (in place)
    assert torch.equal(out, torch.where(finite[1] < 0.5, 0.5, finite[1]))
    assert one["g"] == int((finite[1] < 0.5).sum())
    nan = torch.tensor([[1.0, math.nan]], dtype=dtype)
    assert torch.isnan(damp_mlp._floor({}, "n", nan, 0.5)[0, 1])  # as where: NaN stays


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_erfcx_tail_by_index_copies_is_erfcx(dtype):
    x = torch.linspace(-3, 9, 64 * 128, dtype=dtype).reshape(64, 128)  # >= 4096: the product
    reference = torch.special.erfc(x) * torch.exp(x * x)
    tail = x > 3.0
    reference[tail] = torch.special.erfcx(x[tail])  # the boolean-indexing form
    assert torch.equal(_erfcx(x), reference)
    assert torch.equal(_erfcx(x.T), reference.T)  # a transposed tensor: boolean indexing
    pair = _erfcx_pair(x)
    assert torch.equal(pair[0][x >= 0], reference[x >= 0])
    torch.testing.assert_close(pair[0], torch.special.erfcx(x), rtol=1e-5 if dtype ==
                               torch.float32 else 1e-12, atol=0)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_shift_product_then_add_outside_float64(batch):
    gen = torch.Generator().manual_seed(1)
    shapes = ((*batch, 6, 9), (*batch, 6, 9), (*batch, 6, 5), (*batch, 9, 5))
    w, gain, a, b = (torch.randn(*s, generator=gen, dtype=torch.float64) for s in shapes)
    exact = damp_mlp._mul_addmm(w, gain, a, b.mT)
    assert torch.equal(exact, damp_mlp._addmm(torch.mul(w, gain), a, b.mT))  # float64 bits
    single = damp_mlp._mul_addmm(*(t.float() for t in (w, gain, a)), b.mT.float())
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), w * gain + a @ b.mT, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bound", [0.5, 0.0, 1e-6])
def test_counts_without_a_mask_are_the_comparisons(dtype, bound):
    x = _values(dtype)
    x[1, 0, :3] = torch.tensor([bound, -bound, torch.finfo(dtype).tiny / 4], dtype=dtype)
    with_nan = x.clone()
    with_nan[2, 5, 5] = math.nan  # NaN: counted by neither comparison (the mask path)
    for values in (x, with_nan):
        for below in (True, False):
            clips: dict = {}
            damp_mlp._count_beyond(clips, "k", values, bound, below=below)
            damp_mlp._count_beyond(clips, "k", values, bound, below=below)
            mask = values < bound if below else values > bound
            assert torch.equal(clips["k"], 2 * mask.sum((-2, -1)))


def test_minibatch_gather_by_rows_is_the_column_gather():
    from bflnet.learners.emtdamp.tdamp_client import _take

    gen = torch.Generator().manual_seed(2)
    rows = [torch.randn(60, 7, generator=gen) for _ in range(3)]  # (I, N_0) examples
    views = [r.T for r in rows]  # (N_0, I), columns contiguous: the learner's layout
    plain = [r.T.contiguous() for r in rows]
    index = [torch.randperm(60, generator=gen)[:11] for _ in rows]
    expected = torch.stack([d[:, i] for d, i in zip(plain, index, strict=True)])
    assert torch.equal(_take(views, index), expected)
    assert torch.equal(_take(plain, index), expected)
    assert torch.equal(_take(views, [slice(5, 16)] * 3), torch.stack([d[:, 5:16] for d in plain]))
    labels = [torch.arange(60) * (k + 1) for k in range(3)]
    assert torch.equal(_take(labels, index),
                       torch.stack([y[i] for y, i in zip(labels, index, strict=True)]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_private_state_and_float32_input_transposes_keep_the_bits(dtype, monkeypatch):
    """A private state (damped arrays overwritten) and layer 1's contiguous transposes
    give the numbers of the plain state with transposed views, bit for bit."""
    gen = torch.Generator().manual_seed(3)
    priors = [damp_mlp.LayerPrior(*(t.to(dtype) for t in p))
              for p in damp_mlp.random_layer_priors([784, 128, 10], gen, activity=0.7)]
    x = (torch.rand(784, 100, generator=gen) * (torch.rand(784, 100, generator=gen) < 0.2))
    x = (x - x.mean(1, keepdim=True)).to(dtype)
    x[:40] = 0.0  # never-lit pixels: layer 1's 1/ν_q floor fires
    labels = torch.randint(0, 10, (100,), generator=gen)
    settings = damp_mlp.DampSettings(damping=0.5)

    def run(private: bool) -> tuple[damp_mlp.DampState, dict]:
        state = damp_mlp.init_state(priors, 100)
        state.private = private
        clips: dict = {}
        node = damp_mlp.probit_output(labels, 1.0)
        for _ in range(4):
            damp_mlp.damp_sweep(state, x, priors, node, settings, clips)
        return state, clips

    fast, fast_clips = run(True)
    monkeypatch.setattr(damp_mlp, "_input_transposes",
                        lambda state, i: (state.u_mean[i].mT, state.u_square[i].mT))
    plain, plain_clips = run(False)
    assert fast_clips == plain_clips and fast_clips["layer1/q_var_cap"] > 0
    for name in ("weight_mean", "weight_var", "s_hat", "s_var", "q_precision", "q_shift"):
        for a, b in zip(getattr(fast, name), getattr(plain, name), strict=True):
            assert torch.equal(a, b), name
    assert torch.equal(fast.z_mean, plain.z_mean) and torch.equal(fast.z_var, plain.z_var)
