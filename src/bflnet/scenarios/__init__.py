"""Scenarios: the named experiments, one subpackage per family (``gfvl``, ``dsvgd``,
``cdbfl``, ``emtdamp``, ``gossip``, ``ota``, ``studies``, ``custom``), and ``shared``: what
two families share. Each scenario module registers itself with the registry
(:mod:`bflnet.runs.registry`) when the registry is first asked for a scenario.

``bflnet.scenarios.register`` and the other registry names are kept here for plugins;
they are imported lazily, on first use.
"""

from __future__ import annotations

from bflnet.lazy import lazy_exports

_HOMES = {name: "bflnet.runs.registry" for name in (
    "DEFAULT_SCENARIO", "Scenario", "get_scenario", "register", "run_scenario",
    "scenario_names")}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
