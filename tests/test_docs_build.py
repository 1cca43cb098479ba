"""The documentation builds strictly: `mkdocs build --strict` (broken links between pages,
pages missing from the navigation, docstrings the API reference cannot render) succeeds
on the repository's docs, and fails on a copy with a link to a missing page; every
relative link of the README (outside the docs directory, so not checked by mkdocs)
points to a file that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Generous: the build takes a few seconds (the API reference most of it).
TIMEOUT_S = 300


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``python -m mkdocs build --strict`` of the project at ``root`` into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_the_docs_build_strictly(tmp_path):
    result = build(ROOT, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").is_file()
    # the API reference was generated from the docstrings
    api = (tmp_path / "site" / "api" / "simulator" / "index.html").read_text()
    assert 'id="bflnet.simulator.simulation.Simulation"' in api


def test_a_link_to_a_missing_page_fails_the_build(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "src").symlink_to(ROOT / "src")
    page = copy / "docs" / "cli.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "no-such-page.md" in output, output


def test_the_readme_links_point_to_files_that_exist():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links into docs/"
    missing = [t for t in local if t and not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
    assert any(t.startswith("docs/") and t.endswith(".md") for t in local)
