"""Every registered scenario runs on the set-up that ``make test`` makes (the real data
sets put in place by ``python -m bflnet.data.ensure --all``), with its defaults or, where
those take minutes, with fewer steps only; and its table follows the declared schema.

A new scenario is run with its defaults unless it is named in :data:`SHORT`. A data set
the scenario reads that is missing skips its test with the one-line reason, and fails it
under ``CI=true``.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

from bflnet.data import ensure as ensure_mod
from bflnet.data.vision import ENV_VAR
from bflnet.runs.registry import get_scenario, scenario_names

#: Fewer steps (rounds, iterations, runs, evaluation images) where a default takes more
#: than a few seconds: the data, model and methods stay the defaults'.
SHORT: dict[str, dict[str, object]] = {
    "async-fedavg": {"duration_s": 4.0, "eval_size": 300},
    "cdbfl-local-steps": {"rounds": 3, "burn_in": 1, "eval_every": 3, "eval_size": 200},
    "cdbfl-shift": {"rounds": 3, "burn_in": 1, "eval_every": 3, "eval_size": 50,
                    "shift_size": 50},
    "churn-gfvl": {"runs": 2},
    "cover-time": {"runs": 20},
    "d2d-medium": {"rounds": 3, "burn_in": 1, "eval_every": 3, "eval_size": 100},
    "dsvgd-sparsifiers": {"rounds": 2, "eval_every": 2, "eval_size": 200,
                          "points_per_agent": 100},
    "dsvgd-vs-fedavg": {"rounds": 2, "eval_every": 2, "eval_size": 200, "points_per_agent": 100},
    "emtdamp": {"rounds": 3},
    "emtdamp-boston": {"rounds": 2},
    "emtdamp-mnist": {"rounds": 1, "points_per_agent": 200, "eval_size": 200},
    "forget-svgd": {"pretrain_rounds": 1, "learn_rounds": 2, "unlearn_rounds": 2,
                    "scratch_rounds": 2, "eval_every": 2, "eval_size": 200},
    "gfvl-beta-bernoulli": {"runs": 2},
    "gfvl-beta-exponential": {"runs": 1, "rounds": 100},
    "gfvl-unlearning": {"runs": 1, "learn_rounds": 50, "rounds": 50},
    "mobile-gossip": {"duration_s": 5.0},
    "ota-langevin": {"rounds": 4, "burn_in": 2, "eval_every": 2, "eval_size": 200,
                     "points_per_agent": 50, "snr_db": "20,40"},
    "unlearning-latency": {"runs": 20},
    "wflmc-gaussian": {"runs": 4, "rounds": 20, "burn_in": 10},
}

#: Settings under which columns that the defaults do not have appear (a schema's ``when``).
VARIANTS: list[tuple[str, dict[str, object]]] = [
    ("consensus-averaging", {"record_messages": True, "rounds": 3, "loss_prob": 0.3,
                             "max_attempts": 1}),
    ("consensus-averaging", {"medium": "shared", "channel": "rayleigh", "rounds": 3,
                             "record_messages": True}),
    ("consensus-averaging", {"medium": "shared", "channel": "rayleigh", "rounds": 2,
                             "mac": "aloha", "aloha_p": 0.5, "broadcast": True,
                             "record_messages": True}),
    ("consensus-averaging", {"medium": "shared", "channel": "rayleigh", "rounds": 2,
                             "mac": "none"}),
    ("d2d-medium", {"tasks": "consensus", "rounds": 2}),
    ("mobile-gossip", {"mode": "sync", "record_messages": True, "duration_s": 0.5}),
    ("mobile-gossip", {"record_messages": True, "duration_s": 2.0}),
    ("mobile-gossip", {"medium": "shared", "broadcast": True, "record_messages": True,
                       "duration_s": 2.0}),
    ("mobile-gossip", {"medium": "shared", "channel": "rayleigh", "mac": "aloha",
                       "reception": "per", "duration_s": 2.0}),
    ("churn-gfvl", {"runs": 2, "keep_state": False}),
    ("emtdamp", {"rounds": 2, "task": "fashion-mnist", "points_per_agent": 100, "eval_size": 100}),
    ("async-fedavg", {"duration_s": 3.0, "eval_size": 100, "methods": "fedbuff"}),
    ("async-fedavg", {"duration_s": 3.0, "eval_size": 100, "methods": "sync",
                      "medium": "shared", "mac": "csma", "broadcast": True,
                      "record_messages": True}),
    ("custom-learner", {"protocol": "parameter-server", "rounds": 5}),
    ("custom-learner", {"protocol": "gossip", "rounds": 5}),
]

_FRAMES: dict[str, pd.DataFrame] = {}


def needs_data(name: str) -> None:
    """Skip (fail under ``CI=true``) when a data set ``name`` reads is missing."""
    for dataset in get_scenario(name).datasets:
        found, message = ensure_mod.ensure(dataset, allow_install=False)
        if not found:
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true and a data set of {name} is missing: {message}")
            pytest.skip(message)


@pytest.fixture
def real_data(monkeypatch):
    """The data sets where the set-up put them, not the tests' tiny stand-ins."""
    if os.path.basename(os.environ.get(ENV_VAR, "")).startswith("tiny-fashion"):
        monkeypatch.delenv(ENV_VAR)


def frame_of(name: str) -> pd.DataFrame:
    """The table of ``name`` under its (short) defaults, computed once."""
    if name not in _FRAMES:
        needs_data(name)
        scenario = get_scenario(name)
        _FRAMES[name] = scenario.run(scenario.config(SHORT.get(name)), seed=0)
    return _FRAMES[name]


def test_short_settings_name_registered_scenarios_and_only_shorten():
    assert set(SHORT) <= set(scenario_names())
    for name, overrides in SHORT.items():
        get_scenario(name).config(overrides)  # valid


@pytest.mark.parametrize("name", scenario_names())
def test_defaults_run(name, real_data):
    frame = frame_of(name)
    assert len(frame) > 0
    assert "event" in frame.columns and frame["event"].notna().all()


@pytest.mark.parametrize(("name", "prefix", "real"), [
    ("emtdamp-boston", "", "boston_housing.csv"),
    ("emtdamp-mnist", "mnist", "mnist"),
])
def test_the_em_tdamp_comparisons_read_real_data(name, prefix, real, real_data):
    sources = set(frame_of(name)["data_source"])
    assert len(sources) == 1
    source = sources.pop()
    assert not source.startswith("synthetic") and source.startswith(prefix) and real in source


@pytest.mark.parametrize("name", scenario_names())
def test_the_table_follows_the_declared_schema(name, real_data):
    check_schema(name, frame_of(name))


@pytest.mark.parametrize(("name", "overrides"), VARIANTS)
def test_columns_of_other_settings_are_declared_too(name, overrides, real_data):
    needs_data(name)
    scenario = get_scenario(name)
    frame = scenario.run(scenario.config(overrides), seed=0)
    check_schema(name, frame)
    optional = {c.name for c in scenario.columns.columns if c.when}
    assert optional & set(frame.columns)  # the variant shows some optional column


def check_schema(name: str, frame: pd.DataFrame) -> None:
    """``frame`` has exactly the declared columns (those declared ``when`` only under some
    settings may be absent), each carried only by its declared ``event`` rows."""
    schema = get_scenario(name).columns
    assert schema is not None, f"{name}: declare SCHEMA (bflnet.runs.schema)"
    undeclared = [c for c in frame.columns if c not in schema.names()]
    assert not undeclared, f"{name}: columns not in its schema: {undeclared}"
    absent = [c.name for c in schema.columns if not c.when and c.name not in frame.columns]
    assert not absent, f"{name}: declared columns missing from the table: {absent}"
    for column in schema.columns:
        if column.events and column.name in frame.columns:
            carried = set(frame.loc[frame[column.name].notna(), "event"])
            assert carried <= set(column.events), (
                f"{name}: {column.name} is carried by {sorted(carried)} rows, declared "
                f"{column.events}")
