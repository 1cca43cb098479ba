"""Scenarios: validated configs, the registry of named experiments, and the CLI. The
scenario modules register themselves when the registry is first asked for a scenario.

Names are imported lazily, so that ``python -m bflnet.scenarios.cli`` reaches the command
line's entry point (which installs the Ctrl-C and SIGTERM handlers) before anything else
of bflnet is loaded."""

from __future__ import annotations

from bflnet.lazy import lazy_exports

_HOMES = {name: "registry" for name in (
    "DEFAULT_SCENARIO", "Scenario", "get_scenario", "register", "run_scenario",
    "scenario_names")}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
