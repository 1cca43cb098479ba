"""The examples in the channel docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "bflnet.channels",
    "bflnet.channels.base",
    "bflnet.validation.checks",
    "bflnet.channels.ideal",
    "bflnet.channels.fixed",
    "bflnet.channels.gilbert_elliott",
    "bflnet.channels.fading",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
