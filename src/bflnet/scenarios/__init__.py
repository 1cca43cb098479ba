"""Scenarios: validated configs, the registry of named experiments, and the CLI."""

from bflnet.scenarios import (
    cdbfl_local_steps,  # noqa: F401  (registers the scenario)
    consensus_averaging,  # noqa: F401  (registers the scenario)
    cover_time,  # noqa: F401  (registers the scenario)
    dsvgd_sparsifiers,  # noqa: F401  (registers the scenario)
    dsvgd_vs_fedavg,  # noqa: F401  (registers the scenario)
    forget_svgd,  # noqa: F401  (registers the scenario)
    gfvl_beta_bernoulli,  # noqa: F401  (registers the scenario)
    gfvl_beta_exponential,  # noqa: F401  (registers the scenario)
    gfvl_unlearning,  # noqa: F401  (registers the scenario)
    unlearning_latency,  # noqa: F401  (registers the scenario)
)
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
