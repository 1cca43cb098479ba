"""Every module's doctests run (the examples in the docstrings are executed, not just
read): one test per module whose source holds an example."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def modules_with_examples() -> list[str]:
    """Dotted names of the package's modules whose source holds a ``>>>`` example."""
    out = []
    for path in sorted((SRC / "bflnet").rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = path.with_suffix("").relative_to(SRC).parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


MODULES = modules_with_examples()


def test_the_collection_finds_the_over_the_air_modules():
    for name in ("bflnet.learners.langevin.fald", "bflnet.radio.aircomp",
                 "bflnet.radio.digital_uplink"):
        assert name in MODULES
    assert len(MODULES) > 40


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests_pass(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False,
                             verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} failed"
