"""The CD-BFL reproduction's over-confidence summary, against a hand computation."""

import runpy
import sys
from pathlib import Path

import pandas as pd
import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def test_overconfidence_is_the_signed_ece_and_the_shares_of_examples_and_bins():
    sys.path.insert(0, str(SCRIPTS))
    try:
        module = runpy.run_path(str(SCRIPTS / "reproduce_cdbfl.py"), run_name="not_main")
    finally:
        sys.path.remove(str(SCRIPTS))
    rows = pd.DataFrame({
        "run_id": ["a", "a", "a", "b"],
        "event": ["reliability"] * 4,
        "count": [3.0, 1.0, 0.0, 2.0],
        "bin_confidence": [0.9, 0.5, float("nan"), 0.6],
        "bin_accuracy": [0.6, 0.7, float("nan"), 0.8],
    })
    out = module["overconfidence"](rows)
    # run a: (3·0.3 + 1·(−0.2)) / 4; 3 of 4 examples and 1 of 2 non-empty bins over-confident
    assert out.loc["a"].tolist() == pytest.approx([0.175, 0.75, 0.5])
    assert out.loc["b"].tolist() == pytest.approx([-0.2, 0.0, 0.0])
