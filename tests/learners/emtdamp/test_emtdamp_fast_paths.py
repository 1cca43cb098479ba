"""Module A's cheaper forms give the numbers of the plain ones: clips by clamping (as
``torch.where``), the ``erfcx`` tail by flat index copies (as boolean indexing), and the
``A → B`` shift as product then add outside float64 (as ``baddbmm``, within rounding;
that batched clients keep their bits in both dtypes is tested in test_emtdamp_batched)."""

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
    out = damp_mlp._floor_finite(one, "g", "v", finite[1], 0.5, 1)
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
