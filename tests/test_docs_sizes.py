"""The docs stay a reference: a README a newcomer reads in five minutes, one current table
per benchmark, and no page that has grown into a diary."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_readme_the_benchmarks_and_every_page_keep_their_size():
    assert _lines(ROOT / "README.md") <= 250
    assert _lines(ROOT / "docs" / "benchmarks.md") <= 400
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "docs").rglob("*.md")
            if (n := _lines(p)) > 500}
    assert long == {}
