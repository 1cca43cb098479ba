"""How a result was made: the record stored with every result file.

A run's record names the scenario, its full validated config, the seed and the bflnet
version; a sweep table's record names the scenario, the grid, the fixed parameters and the
seeds; either may name the state directory its runs started from (``load_state``). Both
are plain JSON values, so :mod:`bflnet.runs.output` can store them and ``bflnet rerun``
can make the same file again from them.

>>> from bflnet.scenarios import get_scenario
>>> config = get_scenario("consensus-averaging").config({"K": 4})
>>> record = run_record("consensus-averaging", config, seed=3)
>>> record["kind"], record["seed"], record["config"]["K"], record["config"]["rate_bps"]
('run', 3, 4, 1000000.0)
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

import bflnet
from bflnet.runs.config import field_types
from bflnet.validation.params import group_fields

RUN = "run"
SWEEP = "sweep"


def version() -> str:
    """The running bflnet's version, as stored in result files."""
    return bflnet.__version__


def _is_float_field(tp: Any) -> bool:
    return tp is float or float in typing.get_args(tp)


def _fields(config: Any, prefix: str = "") -> dict[str, Any]:
    out = {}
    for name, tp in field_types(type(config)).items():
        value = getattr(config, name)
        if _is_float_field(tp) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out[prefix + name] = value
    return out


def unrecorded_fields(cls: type) -> frozenset[str]:
    """The fields of config class ``cls`` its records leave out: refused fields the run
    never reads, which ``cls.unrecorded_fields()`` names (none if it has no such
    method). They are at their defaults in every config, so the record still gives the
    whole config."""
    names = getattr(cls, "unrecorded_fields", None)
    return frozenset(names()) if callable(names) else frozenset()


def canonical_config(config: Any) -> dict[str, Any]:
    """The config's fields as a dict, integers in float fields written as floats; the
    settings of a group (:func:`bflnet.validation.params.group`) each under its dotted
    name (``learner.noise_var``), as ``--set`` takes them; without the fields the config
    does not record (:func:`unrecorded_fields`)."""
    omit = unrecorded_fields(type(config))
    out = {k: v for k, v in _fields(config).items() if k not in omit}
    for prefix, name in group_fields(type(config)).items():
        settings = getattr(config, name)
        if settings is not None:
            out.update(_fields(settings, f"{prefix}."))
    return out


def run_record(scenario: str, config: Any, seed: int,
               load_state: str | None = None) -> dict[str, Any]:
    """The record of one run: ``config`` is a config object or its canonical dict;
    ``load_state``, the state directory the run started from (``--load-state``), if any."""
    fields = dict(config) if isinstance(config, Mapping) else canonical_config(config)
    record = {"bflnet": version(), "kind": RUN, "scenario": scenario, "seed": seed,
              "config": fields}
    if load_state is not None:
        record["load_state"] = load_state
    return record


def sweep_record(scenario: str, grid: Mapping[str, Sequence[Any]], fixed: Mapping[str, Any],
                 seeds: Sequence[int], load_state: str | None = None) -> dict[str, Any]:
    """The record of a sweep table: what ``sweep(scenario, grid, seeds, fixed=...,
    load_state=...)`` takes (``load_state`` only if the runs started from saved states)."""
    record = {"bflnet": version(), "kind": SWEEP, "scenario": scenario,
              "grid": {k: list(v) for k, v in grid.items()}, "fixed": dict(fixed),
              "seeds": list(seeds)}
    if load_state is not None:
        record["load_state"] = load_state
    return record
