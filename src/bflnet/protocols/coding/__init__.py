"""Codecs (top-k variants, stochastic quantiser, raw) with exact bit counts, and the wire
that counts every part of a payload."""
