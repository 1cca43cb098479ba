"""The cover-time numbers of docs/reproductions/studies.md are read from the tables that
the documented commands make (seed 0, 2000 runs): a re-run that changes one fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bflnet

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reproductions" / "studies.md"


def _runs(graph: str, K: int) -> object:
    table = bflnet.run("cover-time", seed=0, graph=graph, K=K, runs=2000)
    return table[table["event"] == "run"]


def _row(graph: str) -> list[str]:
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == graph:
            return cells
    raise AssertionError(f"no row for {graph} in {PAGE.name}")


@pytest.mark.parametrize("graph", ["complete", "ring", "star"])
def test_the_k10_table_is_the_tables(graph):
    runs = _runs(graph, 10)
    slots, exact, bounds, seconds, bits = _row(graph)[1:6]
    mean, sem = runs["cover_iterations"].mean(), runs["cover_iterations"].sem()
    assert slots == f"{mean:.2f} ± {sem:.2f}"
    assert exact.split()[0] == f"{runs['exact_cover_iterations'].iloc[0]:.2f}"
    lower, upper = runs["matthews_lower"].iloc[0], runs["matthews_upper"].iloc[0]
    assert bounds == f"{lower:.2f}, {upper:.2f}"
    assert seconds == f"{runs['cover_time_s'].mean():.3f}"
    assert bits.replace(" ", "") == f"{runs['cover_bits'].mean():.0f}"


def test_the_ring_of_20_sentence_is_the_tables():
    runs = _runs("ring", 20)
    text = " ".join(PAGE.read_text().split())
    found = re.search(r"A ring of K = 20 .*? takes ([\d.]+) ± ([\d.]+) slots \(Matthews' "
                      r"bounds ([\d.]+) and ([\d.]+);", text)
    assert found, "the ring-of-20 sentence moved: update this test"
    mean, sem = runs["cover_iterations"].mean(), runs["cover_iterations"].sem()
    assert found.groups() == (f"{mean:.2f}", f"{sem:.2f}",
                              f"{runs['matthews_lower'].iloc[0]:.2f}",
                              f"{runs['matthews_upper'].iloc[0]:.2f}")
