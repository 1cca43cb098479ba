"""Fast start-up: ``bflnet list`` and ``bflnet describe`` load no heavy package (the
scenario modules keep numpy, pandas, NetworkX, SimPy and torch inside their functions),
and the registry's list of scenario modules is complete. The time itself is measured by
bench/startup.py, not here."""

import subprocess
import sys
from pathlib import Path

import pytest

import bflnet.scenarios
from bflnet.runs.registry import SCENARIO_MODULES, scenario_names

HEAVY = ("numpy", "pandas", "networkx", "scipy", "torch", "simpy", "matplotlib", "pyarrow")


def loaded_after(args: list[str]) -> list[str]:
    code = ("import sys, contextlib, io\n"
            "from bflnet.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): assert main({args!r}) == 0\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return [m for m in out.stdout.strip().split(",") if m]


@pytest.mark.parametrize("args", [["list"], ["describe", "forget-svgd"],
                                  ["describe", "cdbfl-local-steps"], ["--help"]])
def test_list_and_describe_load_no_heavy_package(args):
    assert loaded_after(args) == []


def test_every_module_that_registers_a_scenario_is_listed():
    folder = Path(bflnet.scenarios.__file__).parent
    registering = {p.relative_to(folder).with_suffix("").as_posix().replace("/", ".")
                   for p in folder.rglob("*.py") if "\n@register(" in p.read_text()}
    assert registering == set(SCENARIO_MODULES)
    assert len(scenario_names()) >= len(SCENARIO_MODULES)


def test_list_does_not_even_load_the_command_line_parser():
    """``bflnet list`` as typed is answered without Typer (and pydantic)."""
    code = ("import sys, contextlib, io\n"
            "from bflnet.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(['list']) == 0\n"
            "print(','.join(m for m in ('typer', 'pydantic', 'click') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    assert out.stdout.strip() == ""


def test_the_fast_list_prints_what_the_typer_command_prints(capsys):
    from bflnet.cli import app as cli_app
    from bflnet.cli import main as cli
    assert cli.main(["list"]) == 0
    fast = capsys.readouterr().out
    assert cli_app.main(["list"]) == 0
    assert capsys.readouterr().out == fast
    assert "gfvl-beta-bernoulli (default): " in fast
    assert len(fast.split("\n\n")[0].splitlines()) == len(scenario_names())  # then learners
