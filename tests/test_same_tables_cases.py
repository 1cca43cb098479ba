"""scripts/same_tables.py covers every registered scenario, with settings that are valid and
fit this process (so that a change that moves a scenario's table cannot go unseen by it)."""

import importlib.util
from pathlib import Path

import pytest

from bflnet.runs.registry import get_scenario, scenario_names

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "same_tables.py"


def load_cases() -> dict[str, tuple[str, dict]]:
    """The script's ``CASES`` (loading it runs nothing: its ``main`` is guarded)."""
    spec = importlib.util.spec_from_file_location("same_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


CASES = load_cases()


def test_every_registered_scenario_has_a_case():
    covered = {scenario for scenario, _ in CASES.values()}
    assert set(scenario_names()) - covered == set()
    assert covered - set(scenario_names()) == set()


@pytest.mark.parametrize("case", list(CASES))
def test_the_case_is_a_valid_config_that_fits(case):
    scenario, overrides = CASES[case]
    runner = get_scenario(scenario)
    footprint = runner.check_resources(runner.config(overrides))  # raises if not
    assert footprint.parts, case
