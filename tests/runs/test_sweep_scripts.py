"""The Python sweep examples of the README and the Python API page run as they are shown:
as a script without an ``if __name__ == "__main__"`` guard, and from standard input
(``python - < script.py``, no file for a worker to import), on a smaller grid."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "docs" / "python-api.md")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
#: Smaller settings than the page's: (pattern, replacement).
SMALLER = ((r"seeds=\d+", "seeds=2"), (r"rounds=\d+", "rounds=10"),
           (r"\bK=\d+", "K=6"))


def sweep_examples() -> list[tuple[str, str]]:
    """``(page: block number, code)`` of every Python block that runs a sweep."""
    examples = []
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        examples += [(f"{page.name}:{i}", code) for i, code in enumerate(blocks)
                     if "sweep(" in code]
    return examples


EXAMPLES = sweep_examples()


def test_the_pages_show_a_python_sweep_without_a_guard():
    assert any(name.startswith("python-api.md") for name, _ in EXAMPLES)
    for name, code in EXAMPLES:
        assert "__main__" not in code, name


@pytest.mark.parametrize("how", ["script", "stdin"])
@pytest.mark.parametrize(("name", "code"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_a_python_sweep_runs_as_a_script_and_from_stdin(name, code, how, tmp_path):
    for pattern, replacement in SMALLER:
        code = re.sub(pattern, replacement, code)
    script = tmp_path / "example.py"
    script.write_text(code)
    if how == "script":
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=ENV,
                              capture_output=True, text=True, timeout=120)
    else:
        with script.open() as stdin:
            done = subprocess.run([sys.executable, "-"], stdin=stdin, cwd=tmp_path, env=ENV,
                                  capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Nanny" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()  # the plot's own warnings (and their source lines) aside
    said = [s for i, s in enumerate(lines) if "Warning: " not in s
            and not (i and "Warning: " in lines[i - 1] and s.startswith(" "))]
    assert len(said) <= 2, done.stderr
    tables = list(tmp_path.glob("sweeps/*/table.parquet"))
    assert tables, "no sweep table written"
