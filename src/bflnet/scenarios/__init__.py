"""Scenarios: validated configs, the registry of named experiments, and the CLI. The
scenario modules register themselves when the registry is first asked for a scenario."""

from bflnet.scenarios.registry import (
    DEFAULT_SCENARIO,
    Scenario,
    get_scenario,
    register,
    run_scenario,
    scenario_names,
)

__all__ = ["DEFAULT_SCENARIO", "Scenario", "get_scenario", "register", "run_scenario",
           "scenario_names"]
