"""Every scenario's categorical parameters (those with choices, the protocol among them)
sweep into one table, each column of one type.

For each scenario and each such field, the sweep over every choice the scenario accepts
is planned (validated, typed, one config per choice). Then tiny runs that together take
every accepted choice of every field run on the sweep's own worker processes
(``execute_run`` on a :class:`~bflnet.runtime.worker_pool.WorkerPool`, as a local sweep
runs them), and the sweep's assembly (:func:`bflnet.runs.sweep.assemble`) puts all of a
scenario's runs into one table, written as Parquet like a sweep's. To keep this cheap it
is not one sweep per field: a run takes many fields' choices at once (run j takes each
field's j-th choice where the combination is valid), so a scenario needs about as many
runs as its longest list of choices, and one table holds all of them (a stronger check
than a sweep of one field at a time). A combination that fails is run again one field at
a time.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bflnet.data import ensure as ensure_mod
from bflnet.runs.column_types import as_text, kinds
from bflnet.runs.output import write_parquet
from bflnet.runs.provenance import canonical_config
from bflnet.runs.registry import get_scenario, scenario_names
from bflnet.runs.sweep import Run, assemble, config_hash, plan_sweep, sweep_paths
from bflnet.runtime.worker_pool import WorkerPool

#: The smallest settings each scenario runs with in a fraction of a second (every
#: registered scenario needs an entry: a new one's defaults may take minutes).
TINY: dict[str, dict[str, Any]] = {
    "async-fedavg": {"K": 3, "duration_s": 1.0, "eval_size": 20, "points_per_agent": 20,
                     "hidden": 4, "local_steps": 1, "methods": "sync,fedbuff"},
    "cdbfl-local-steps": {"K": 3, "rounds": 2, "burn_in": 1, "eval_every": 2,
                          "eval_size": 10, "points_per_agent": 10, "hidden": 4,
                          "batch_size": 2, "local_steps_values": "1", "mtu_bits": 10**7},
    "cdbfl-shift": {"K": 3, "rounds": 2, "burn_in": 1, "eval_every": 2, "eval_size": 10,
                    "shift_size": 10, "points_per_agent": 10, "hidden": 4, "batch_size": 2,
                    "local_steps": 1, "methods": "cd-bfl,cf-fl", "test_days": "1",
                    "mtu_bits": 10**7},
    "churn-gfvl": {"runs": 1, "rounds": 20, "K": 4},
    "consensus-averaging": {"K": 4, "rounds": 3},
    "cover-time": {"runs": 2, "K": 4},
    "custom-learner": {"K": 4, "rounds": 3},
    "d2d-medium": {"K": 3, "rounds": 2, "burn_in": 1, "eval_every": 2, "eval_size": 10,
                   "points_per_agent": 10, "hidden": 4, "batch_size": 2, "local_steps": 1,
                   "macs": "links", "mtu_bits": 10**7},
    "dsvgd-sparsifiers": {"K": 3, "rounds": 1, "eval_every": 1, "eval_size": 20,
                          "points_per_agent": 10, "hidden": 4, "particles": 2,
                          "local_steps": 1},
    "dsvgd-vs-fedavg": {"K": 3, "rounds": 1, "eval_every": 1, "eval_size": 20,
                        "points_per_agent": 10, "hidden": 4, "particles": "2",
                        "local_steps": 1, "rate_multiples": "1"},
    "emtdamp": {"K": 3, "rounds": 1},
    "emtdamp-boston": {"K": 3, "rounds": 1, "data": "synthetic", "methods": "emtdamp,fedavg"},
    "emtdamp-mnist": {"K": 3, "rounds": 1, "points_per_agent": 20, "eval_size": 20,
                      "methods": "emtdamp"},
    "forget-svgd": {"K": 3, "pretrain_rounds": 1, "learn_rounds": 1, "unlearn_rounds": 1,
                    "scratch_rounds": 1, "eval_every": 1, "eval_size": 20, "particles": 2,
                    "local_steps": 1, "points_per_agent": 10, "hidden": 16},
    "gfvl-beta-bernoulli": {"runs": 1},
    "gfvl-beta-exponential": {"runs": 1, "rounds": 20},
    "gfvl-unlearning": {"runs": 1, "learn_rounds": 10, "rounds": 10},
    "mobile-gossip": {"K": 4, "duration_s": 0.5},
    "ota-langevin": {"K": 3, "rounds": 2, "burn_in": 1, "eval_every": 1, "eval_size": 20,
                     "points_per_agent": 10, "hidden": 4, "snr_db": "20"},
    "unlearning-latency": {"runs": 2},
    "wflmc-gaussian": {"runs": 2, "rounds": 4, "burn_in": 2, "snr_db": "20"},
}
#: Settings a field's other choices need (each applied where the scenario has it).
FIELD_CONTEXT: dict[str, dict[str, Any]] = {
    "mac": {"medium": "shared"}, "reception": {"medium": "shared"},
    "layout": {"medium": "shared"}, "unlearn_schedule": {"unlearning": "iterative"},
    "mixing": {"mode": "sync"},  # mobile-gossip: only its synchronous mode mixes
}
#: Settings one choice needs (to be valid, or to run here on the tiny data).
CHOICE_CONTEXT: dict[tuple[str, Any], dict[str, Any]] = {
    ("mixing", "uniform"): {"graph": "complete"},
    ("task", "fashion-mnist"): {"points_per_agent": 20, "eval_size": 20},
    ("sparsity_mode", "paper"): {"initial_activity": 0.5},
    # over the air: only FedAvg's mean merge takes it (DSVGD is refused)
    ("uplink", "aircomp"): {"methods": "fedavg"}, ("uplink", "digital"): {"methods": "fedavg"},
}
#: The scenarios bflnet ships (a plugin's, if one is installed, is its own to test).
BUILT_IN = [name for name in scenario_names()
            if get_scenario(name).run_fn.__module__.startswith("bflnet.")]
#: Choices no run here can take: what they need, which this machine may lack.
NEEDS: dict[tuple[str, Any], str] = {
    ("graph", "file"): "a graph file", ("device", "cuda"): "a CUDA device",
    ("data", "radar-files"): "radar recordings on disk",
}


def categorical_fields(cls: type) -> list[str]:
    return [f.name for f in fields(cls) if len((f.metadata or {}).get("choices") or ()) >= 2]


def _context(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings the choices in ``settings`` need, where scenario ``name`` has them."""
    known = {f.name for f in fields(get_scenario(name).config_cls)}
    extra: dict[str, Any] = {}
    for key, value in settings.items():
        extra.update(FIELD_CONTEXT.get(key, {}))
        extra.update(CHOICE_CONTEXT.get((key, value), {}))
    return {k: v for k, v in extra.items() if k in known and k not in settings}


def settle(name: str, overrides: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """``overrides`` without the tiny settings the config refuses with them (a setting read
    only under other choices, e.g. ``hidden`` with ``model=lenet``); the config's
    ``ValueError`` if a setting in ``keep`` (or not a tiny one) is refused."""
    scenario = get_scenario(name)
    while True:
        try:
            scenario.check_resources(scenario.config(overrides))
            return overrides
        except ValueError as exc:
            refused = str(exc).split(":", 1)[0]
            if refused in keep or refused not in TINY[name] or refused not in overrides:
                raise
            overrides = {k: v for k, v in overrides.items() if k != refused}


def _valid(name: str, overrides: dict[str, Any], keep: set[str]) -> dict[str, Any] | None:
    try:
        return settle(name, overrides, keep)
    except ValueError:
        return None


def accepted_choices(name: str) -> dict[str, dict[Any, dict[str, Any]]]:
    """Each categorical field's choices the scenario accepts, each with the overrides it
    runs with (the tiny settings, its context), for the fields with two or more; a refused
    choice must be refused for the field itself or its context (not used by the scenario,
    or only with other settings)."""
    scenario = get_scenario(name)
    out = {}
    for key in categorical_fields(scenario.config_cls):
        spec = next(f for f in fields(scenario.config_cls) if f.name == key)
        ok = {}
        for choice in spec.metadata["choices"]:
            if (key, choice) in NEEDS:
                continue
            context = _context(name, {key: choice})
            try:
                ok[choice] = settle(name, {**TINY[name], **context, key: choice},
                                    {key, *context})
            except ValueError as exc:
                refused = str(exc).split(":", 1)[0]
                assert refused in {key, *context}, f"{name} {key}={choice}: {exc}"
        if len(ok) >= 2:
            out[key] = ok
    return out


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_categorical_field_is_swept_by_one_plan(name):
    """The sweep over a field's accepted choices is valid, one config each: one sweep, or,
    where choices need settings the others refuse, one sweep per set of settings."""
    assert name in TINY, f"{name}: give it tiny settings in TINY"
    for key, choices in accepted_choices(name).items():
        groups: dict[str, tuple[dict[str, Any], list[Any]]] = {}
        merged = {k: v for o in choices.values() for k, v in o.items() if k != key}
        try:
            groups["all"] = (merged, list(choices))
            plan_sweep(name, {key: list(choices)}, 1, fixed=merged)
        except ValueError:
            groups.clear()
            for choice, overrides in choices.items():
                fixed = {k: v for k, v in overrides.items() if k != key}
                groups.setdefault(repr(sorted(fixed.items())), (fixed, []))[1].append(choice)
        for fixed, values in groups.values():
            plan = plan_sweep(name, {key: values}, 1, fixed=fixed)
            assert [run.params[key] for run in plan.runs] == values


# --- the runs ------------------------------------------------------------------------------


def covering_runs(name: str, choices: dict[str, dict[Any, dict[str, Any]]]
                  ) -> list[dict[str, Any]]:
    """Overrides of a few runs that together take every accepted choice (see the module's
    docstring); the first run is the tiny defaults."""
    base = TINY[name]
    default = canonical_config(get_scenario(name).config(base))
    todo = {(k, c) for k, values in choices.items() for c in values if c != default[k]}
    runs = [dict(base)]
    for j in range(1, max((len(v) for v in choices.values()), default=1)):
        overrides, chosen = dict(base), set()
        for key, values in choices.items():
            choice = list(values)[j % len(values)]
            if (key, choice) not in todo:
                continue
            trial = {**overrides, key: choice}
            context = _context(name, trial)
            trial = _valid(name, {**trial, **context}, {*chosen, key, *context})
            if trial is not None:
                overrides = trial
                chosen |= {key, *context}
        taken = {(k, overrides[k]) for k in choices if k in overrides}
        if taken & todo:
            todo -= taken
            runs.append(overrides)
    for key, choice in sorted(todo, key=str):  # what no combination could take
        runs.append(choices[key][choice])
    return runs


def _task(name: str, overrides: dict[str, Any]) -> tuple[Any, ...]:
    config = canonical_config(get_scenario(name).config(overrides))
    return (name, config, 0, 1, None)


def _missing_data(name: str) -> str | None:
    for dataset in get_scenario(name).datasets:
        found, message = ensure_mod.ensure(dataset, allow_install=False)
        if not found:
            return message
    return None


@pytest.fixture(scope="module")
def runs(use_tiny_fashion) -> dict[str, list[tuple[dict[str, Any], pd.DataFrame]]]:
    """Every scenario's covering runs, on two worker processes: ``{name: [(overrides,
    table), ...]}``; a combination that fails is run again one field at a time."""
    wanted = {name: accepted_choices(name) for name in BUILT_IN
              if name in TINY and _missing_data(name) is None}
    points = {(name, i): overrides for name, choices in wanted.items()
              for i, overrides in enumerate(covering_runs(name, choices))}
    results: dict[str, list[tuple[dict[str, Any], pd.DataFrame]]] = {n: [] for n in wanted}
    failed: dict[tuple[str, Any], str] = {}
    with WorkerPool(2, env=dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")) \
            as pool:
        while points:
            tasks = [(key, "bflnet.runs.sweep", "execute_run", _task(key[0], overrides))
                     for key, overrides in points.items()]
            again = {}
            for key, status, outcome in pool.map(tasks):
                name, overrides = key[0], points[key]
                if status == "ok" and outcome["status"] == "ok":
                    results[name].append((overrides, outcome["frame"]))
                    continue
                error = outcome if status != "ok" else outcome["error"]
                changed = {k: v for k, v in overrides.items()
                           if k in wanted[name] and v != TINY[name].get(k)}
                if isinstance(key[1], int) and len(changed) > 1:  # one field at a time
                    for k, v in changed.items():
                        again[(name, f"{k}={v}")] = wanted[name][k][v]
                else:
                    failed[key] = f"{overrides}: {error}"
            points = again
    assert not failed, failed
    return results


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_categorical_choice_sweeps_into_one_table(name, runs, tmp_path):
    if name not in runs:
        reason = _missing_data(name)
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and a data set of {name} is missing: {reason}")
        pytest.skip(reason)
    choices = accepted_choices(name)
    done = runs[name]
    taken = {(k, o[k]) for o, _ in done for k in choices if k in o}
    default = canonical_config(get_scenario(name).config(TINY[name]))
    taken |= {(k, default[k]) for k in choices}
    assert taken >= {(k, c) for k, values in choices.items() for c in values}
    # the runs as a sweep's parts, put together by the sweep's assembly
    paths = sweep_paths(tmp_path / "sweep")
    paths.runs.mkdir(parents=True)
    keys = list(choices)
    plan = []
    for overrides, frame in done:
        config = canonical_config(get_scenario(name).config(overrides))
        run = Run({k: config[k] for k in keys}, 0, config_hash(name, config))
        write_parquet(frame, paths.part(run.run_id))
        plan.append(run)
    table = assemble(plan, keys, paths)
    write_parquet(table, tmp_path / "table.parquet")  # fails on a column of mixed types
    back = pq.read_table(tmp_path / "table.parquet").to_pandas()
    assert len(back) == sum(len(frame) for _, frame in done)
    for column in back.columns:
        assert len(kinds(back[column])) <= 1, column
    # each run's rows come back: its values, as text in a column made text
    start = 0
    for run, (_, frame) in zip(plan, done, strict=True):
        rows = table.iloc[start:start + len(frame)].reset_index(drop=True)
        start += len(frame)
        assert set(rows["run_id"].str.split("/").str[0]) == {run.run_id}
        for column in frame.columns:
            if column in (*keys, "seed", "run_id") or f"run_{column}" in rows:
                continue  # a swept or sweep column (see test_sweep.py for these)
            made_text = kinds(table[column]) == {"text"} != kinds(frame[column])
            expected = frame[column].map(as_text) if made_text else frame[column]
            assert same_values(rows[column], expected), f"{name}: {column}"


def same_values(a: pd.Series, b: pd.Series) -> bool:
    """Equal values (missing where the other is missing; NaN, None and NA alike)."""
    missing = a.isna().to_numpy()
    if not (missing == b.isna().to_numpy()).all():
        return False
    return list(a[~missing]) == list(b.reset_index(drop=True)[~missing])


def test_a_new_scenario_needs_tiny_settings():
    assert set(TINY) == set(BUILT_IN)
    for name, overrides in TINY.items():
        get_scenario(name).config(overrides)  # valid as they are
