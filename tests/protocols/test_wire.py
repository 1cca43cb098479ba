import numpy as np
import pytest
import torch

from bflnet.protocols.coding import wire
from bflnet.protocols.coding.codecs import RawCodec, StochasticQuantizer, TopKCodec, topk_quantized


def test_without_a_codec_the_array_travels_as_float64_by_reference():
    x = np.arange(5.0)
    payload, bits = wire.encode(None, x, np.random.default_rng(0))
    assert payload is x and bits == 5 * 64
    t = torch.zeros(3, 4)
    assert wire.encode(None, t, np.random.default_rng(0))[1] == 12 * 64


def test_torch_tensors_come_back_as_tensors_of_the_same_dtype():
    t = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float32)
    payload, bits = wire.encode(TopKCodec(k=2), t, np.random.default_rng(0))
    out = wire.decode(TopKCodec(k=2), payload, t)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([[1.0, -2.0, 0.0]]))
    assert bits == payload.bits


def test_numpy_arrays_stay_numpy():
    x = np.array([0.25, 0.5])
    payload, _ = wire.encode(RawCodec(32), x, np.random.default_rng(0))
    assert np.array_equal(wire.decode(RawCodec(32), payload, x), x)


# ---------------------------------------------------------------------- structured payloads

CODECS = {
    "none": None,
    "raw32": RawCodec(32),
    "topk": TopKCodec(k=2),
    "quantize": StochasticQuantizer(4),
    "topk-quantize": topk_quantized(k=2, n_bits=5),
}


def _bits(codec, x, rng):
    return wire.encode(codec, x, rng)[1]


@pytest.mark.parametrize("name", sorted(CODECS))
def test_a_dict_payload_costs_the_sum_of_its_arrays_bits(name):
    codec = CODECS[name]
    rng = np.random.default_rng(0)
    parts = {"mean": rng.standard_normal((3, 5)), "var": rng.random(7),
             "bias": torch.tensor([[0.5, -1.0, 2.0]])}
    payload, bits = wire.encode(codec, parts, np.random.default_rng(1))
    assert set(payload) == set(parts)
    assert bits == sum(_bits(codec, v, np.random.default_rng(1)) for v in parts.values())
    assert bits > 64  # not one 64-bit number, as np.size(dict) would count
    decoded = wire.decode(codec, payload, parts)
    assert set(decoded) == set(parts) and isinstance(decoded["bias"], torch.Tensor)
    assert decoded["var"].shape == (7,)


def test_a_tuple_payload_and_one_codec_per_part():
    rng = np.random.default_rng(0)
    mean, var = rng.standard_normal(10), rng.random(10)
    codecs = {"mean": RawCodec(32), "var": TopKCodec(k=3)}
    payload, bits = wire.encode(codecs, {"mean": mean, "var": var}, rng)
    assert bits == 10 * 32 + TopKCodec(k=3).bits_for((10,))
    out = wire.decode(codecs, payload, {"mean": mean, "var": var})
    assert np.array_equal(out["mean"], mean.astype(np.float32))
    assert np.count_nonzero(out["var"]) == 3
    payload, bits = wire.encode((None, RawCodec(32)), (mean, var), rng)
    assert bits == 10 * 64 + 10 * 32 and isinstance(payload, tuple)
    assert wire.payload_bits_float64((mean, {"v": var})) == 20 * 64


@pytest.mark.parametrize(("codec", "payload", "message"), [
    ({"mean": None}, {"var": np.zeros(2)}, "codec: no codec for part 'var'"),
    ((None,), (np.zeros(2), np.zeros(2)), "codec: 1 codecs for a tuple payload of 2 parts"),
    ({"mean": None}, np.zeros(2), "codec: a dict of codecs needs a structured payload"),
])
def test_codec_structure_mismatches_are_one_line_errors(codec, payload, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        wire.encode(codec, payload, np.random.default_rng(0))


def test_which_codecs_draw():
    """A protocol makes no random stream for a codec that never draws."""
    from bflnet.protocols.coding.codecs import (
        ComposedCodec,
        RawCodec,
        StochasticQuantizer,
        TopKCodec,
    )
    from bflnet.protocols.coding.wire import draws

    quantiser = StochasticQuantizer(n_bits=4)
    assert not draws(None) and not draws(RawCodec(32)) and not draws(TopKCodec(k=1))
    assert draws(quantiser) and draws(ComposedCodec(TopKCodec(k=1), quantiser))
    assert draws((None, quantiser)) and not draws({"a": RawCodec(64), "b": None})
    for codec in (RawCodec(32), TopKCodec(k=2)):  # and indeed they do not
        rng = np.random.default_rng(0)
        before = rng.bit_generator.state
        codec.encode(np.arange(6.0), rng)
        assert rng.bit_generator.state == before
