"""The layout as a contract: the import contracts of ``.importlinter`` hold (and catch a
wrong import), no module imports itself through a cycle, and no folder of the package
holds more than 15 modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "bflnet"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / ".importlinter"),
                           "--no-cache"], capture_output=True, text=True, env=env,
                          timeout=300, cwd=src.parent)


def test_the_import_contracts_hold():
    result = _lint_imports(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def test_a_wrong_import_breaks_a_contract(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "bflnet", ignore=shutil.ignore_patterns("__pycache__"))
    base = src / "bflnet" / "learners" / "base.py"
    base.write_text(base.read_text() + "\nfrom bflnet.simulator import simulation  # wrong\n")
    result = _lint_imports(src)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bflnet.learners.base -> bflnet.simulator.simulation" in result.stdout


def test_no_import_cycles():
    graph = grimp.build_graph("bflnet", cache_dir=None)
    edges = nx.DiGraph((m, d) for m in graph.modules
                       for d in graph.find_modules_directly_imported_by(m))
    cycles = [sorted(c) for c in nx.strongly_connected_components(edges) if len(c) > 1]
    assert cycles == []


def test_no_folder_holds_more_than_15_modules():
    crowded = {str(d.relative_to(PACKAGE.parent)): n for d in [PACKAGE, *PACKAGE.rglob("*")]
               if d.is_dir() and d.name != "__pycache__"
               and (n := len(list(d.glob("*.py")))) > 15}
    assert crowded == {}
