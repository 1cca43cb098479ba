"""Putting learner payloads on the wire: encode with a codec, count bits, decode on receipt.

A payload is an array (numpy or torch) or a tuple or dict of arrays (a structured payload,
e.g. means and variances per layer). A codec spec is ``None`` (every array travels as is,
counted as float64), one :class:`Codec` applied to every array, or a tuple / dict of
codecs (or ``None``) with the payload's own structure. The bits of a structured payload
are the sum over its arrays; the sender can decode its own payload to know exactly what
its receivers will use (:func:`decode`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bflnet.protocols.coding.codec_base import Codec, Encoded

CodecSpec = Codec | None | tuple[Any, ...] | Mapping[str, Any]


def _is_tensor(x: Any) -> bool:
    """Whether ``x`` is a torch tensor (checked without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def payload_bits_float64(x: Any) -> int:
    """Bits of ``x`` (an array or a tuple / dict of arrays) sent uncompressed as float64."""
    if type(x) is np.ndarray:  # the common case first: this is on every hop's path
        return 64 * x.size
    if isinstance(x, Mapping):
        return sum(payload_bits_float64(v) for v in x.values())
    if isinstance(x, tuple):
        return sum(payload_bits_float64(v) for v in x)
    size = x.numel() if _is_tensor(x) else np.size(x)
    return 64 * int(size)


def draws(codec: CodecSpec) -> bool:
    """Whether encoding with ``codec`` may draw random numbers (no codec never does)."""
    if codec is None:
        return False
    if isinstance(codec, Mapping):
        return any(draws(c) for c in codec.values())
    if isinstance(codec, tuple):
        return any(draws(c) for c in codec)
    return bool(getattr(codec, "draws", True))


def _part_codec(codec: CodecSpec, key: Any, structure: str) -> CodecSpec:
    """The codec of part ``key`` of a structured payload."""
    if isinstance(codec, Mapping):
        if key not in codec:
            raise ValueError(f"codec: no codec for part {key!r} of the {structure} payload; "
                             f"codecs given for {sorted(map(str, codec))}")
        return codec[key]
    if isinstance(codec, tuple):
        if not isinstance(key, int) or key >= len(codec):
            raise ValueError(f"codec: {len(codec)} codecs for a {structure} payload with "
                             f"part {key!r}")
        return codec[key]
    return codec


def encode(codec: CodecSpec, x: Any, rng: np.random.Generator) -> tuple[Any, int]:
    """``(payload, bits)`` for ``x``; without a codec ``x`` travels as is, as float64."""
    if codec is None and type(x) is np.ndarray:
        return x, 64 * x.size
    if isinstance(x, Mapping):
        parts = {k: encode(_part_codec(codec, k, "dict"), v, rng) for k, v in x.items()}
        return {k: p for k, (p, _) in parts.items()}, sum(b for _, b in parts.values())
    if isinstance(x, tuple):
        if isinstance(codec, tuple) and len(codec) != len(x):
            raise ValueError(f"codec: {len(codec)} codecs for a tuple payload of {len(x)} parts")
        tparts = [encode(_part_codec(codec, i, "tuple"), v, rng) for i, v in enumerate(x)]
        return tuple(p for p, _ in tparts), sum(b for _, b in tparts)
    if isinstance(codec, Mapping | tuple):
        raise ValueError(f"codec: a {type(codec).__name__} of codecs needs a structured "
                         f"payload, got a single array")
    if codec is None:
        return x, payload_bits_float64(x)
    if _is_tensor(x):
        x = x.detach().cpu().numpy()
    encoded = codec.encode(x, rng)
    return encoded, encoded.bits


def decode(codec: CodecSpec, payload: Any, like: Any) -> Any:
    """What the receiver uses (the structure of ``like``); each part is restored as a torch
    tensor where ``like``'s part was one."""
    if codec is None and type(like) is np.ndarray:
        return payload
    if isinstance(like, Mapping):
        return {k: decode(_part_codec(codec, k, "dict"), payload[k], v) for k, v in like.items()}
    if isinstance(like, tuple):
        return tuple(decode(_part_codec(codec, i, "tuple"), payload[i], v)
                     for i, v in enumerate(like))
    if codec is None:
        return payload
    assert isinstance(payload, Encoded)
    out = codec.decode(payload)
    if _is_tensor(like):
        import torch

        return torch.as_tensor(out, dtype=like.dtype, device=like.device)
    return out
