"""Every scenario at the largest value its checks accept for each size field (each integer
field, one at a time, the rest default), through the CLI, under a memory limit and a wall
timeout: each run either shows progress within 2 CPU seconds or is refused in one line
(exit 2) that names the field, before it allocates. Never a traceback, a late error, or a
silent hang.

The cases come from the registry, so a new scenario or field is covered. The runs are
forked from one driver process that imported bflnet, NumPy, SciPy, NetworkX, pandas and
torch once (``largest_sizes_driver.py``), so a case costs its own work only; a child is
killed as soon as its progress shows."""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bflnet.runs import resources
from bflnet.runs.registry import get_scenario, scenario_names
from bflnet.validation.params import base_type, field_types

#: Memory a child may allocate beyond what the driver already maps.
LIMIT_BYTES = 3 * 2**30
#: CPU seconds before the first progress output (the must-show: 2 s).
PROGRESS_CPU_S = 2.0
#: Wall seconds a child may stay silent (the machine may be loaded: CPU time decides).
WALL_TIMEOUT_S = 30.0
DRIVER = Path(__file__).with_name("largest_sizes_driver.py")


def numeric_fields(cls: type, kind: type) -> list[dataclasses.Field]:
    """The fields of type ``kind`` (int: the sizes of a run; float) without choices."""
    types_ = field_types(cls)
    return [f for f in dataclasses.fields(cls)  # a group of settings (learner.x) aside
            if f.name in types_ and base_type(types_[f.name])[0] is kind
            and not f.metadata.get("choices")]


def largest(field: dataclasses.Field, kind: type) -> int | str:
    """The largest value the field's declared bounds accept, as typed on the command line
    (a float's ``lt`` bound: the float just below it)."""
    m = field.metadata
    if kind is int:
        return int(m["le"]) if m.get("le") is not None else int(m["lt"]) - 1
    value = m["le"] if m.get("le") is not None else math.nextafter(m["lt"], -math.inf)
    return repr(float(value))


def cases(kind: type = int) -> list[dict]:
    return [{"scenario": name, "field": f.name, "value": largest(f, kind)}
            for name in scenario_names()
            for f in numeric_fields(get_scenario(name).config_cls, kind)]


def run_driver(kind: type) -> list[dict]:
    table = "\n".join(json.dumps(c) for c in cases(kind)) + "\n"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(DRIVER), str(LIMIT_BYTES),
                           str(WALL_TIMEOUT_S)], input=table, capture_output=True,
                          text=True, timeout=1200, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_every_numeric_field_has_both_bounds():
    """The class of late errors: a field with no upper bound lets 1e308 reach the run."""
    missing = []
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        types_ = field_types(cls)
        for f in dataclasses.fields(cls):
            m = f.metadata
            if f.name not in types_:  # a group of settings (learner.x): its own class
                continue
            if base_type(types_[f.name])[0] in (int, float) and not m.get("choices"):
                if m.get("le") is None and m.get("lt") is None:
                    missing.append(f"{name}.{f.name}: no upper bound")
                if m.get("ge") is None and m.get("gt") is None:
                    missing.append(f"{name}.{f.name}: no lower bound")
    assert missing == []


def test_every_scenario_config_has_a_footprint():
    for name in scenario_names():
        scenario = get_scenario(name)
        footprint = scenario.check_resources(scenario.config())  # defaults fit
        assert footprint.memory_bytes > 0 and footprint.work > 0, name


#: A data set this machine does not have, or has in a smaller version (the 5000-image
#: MNIST fallback): the run shows its set-up line, then says so.
DATA_MISSING = re.compile(r"not found|no offline fallback|never downloads data|"
                          r"needs \d+ training images, \S+ has \d+")


def classify(o: dict) -> tuple[str, str | None]:
    """``(outcome, problem)``: outcome ``runs`` (progress shown), ``refused`` (one line,
    exit 2, naming the field), ``no data`` (the data set is not on this machine); problem
    ``None`` or what is wrong."""
    where = f"{o['scenario']} {o['field']}={o['value']}"
    err = o["stderr"]
    final = err.split("\r")[-1]  # after the bars tqdm erased
    if "Traceback" in err:
        return "traceback", f"{where}: traceback: {err[-500:]!r}"
    if o["progress_cpu_s"] is not None and o["progress_cpu_s"] > PROGRESS_CPU_S:
        return "late", f"{where}: first progress after {o['progress_cpu_s']:.2f} CPU s"
    if o["code"] is None or o["code"] == 0:
        if o["progress_cpu_s"] is None and o["code"] is None:
            return "silent", f"{where}: no progress within {WALL_TIMEOUT_S} s: {err[-300:]!r}"
        return "runs", None
    lines = final.splitlines()
    if o["code"] != 2 or len(lines) != 1 or not lines[0].startswith("bflnet: error: "):
        return "failed", f"{where}: exit {o['code']}, not one error line: {err[-500:]!r}"
    if o["progress_cpu_s"] is not None and DATA_MISSING.search(lines[0]):
        return "no data", None
    if not re.search(rf"\b{o['field']}\b", lines[0]):
        return "unnamed", f"{where}: refusal does not name the field: {lines[0][:300]}"
    if o["progress_cpu_s"] is not None:
        return "late", f"{where}: refused only after the run started: {lines[0][:300]}"
    return "refused", None


def check_outcomes(outcomes: list[dict], kind: type) -> None:
    assert len(outcomes) == len(cases(kind)) > 100
    verdicts = [classify(o) for o in outcomes]
    counts = collections.Counter(v[0] for v in verdicts)
    bars = sum(v[0] == "runs" and o["bar_cpu_s"] is not None
               and o["bar_cpu_s"] <= PROGRESS_CPU_S
               for o, v in zip(outcomes, verdicts, strict=True))
    print(f"\n{len(outcomes)} largest-{kind.__name__} cases: {dict(counts)}; the run's own "
          f"first bar within {PROGRESS_CPU_S} CPU s in {bars} of the {counts['runs']} that run")
    assert [v[1] for v in verdicts if v[1]] == []
    assert counts["runs"] > 0 and counts["refused"] > 0
    # beyond the set-up line: each run's own bar (its set-up stage, or its runs or
    # iterations) within the same 2 CPU s
    slow = [f"{o['scenario']} {o['field']}={o['value']}: {o['bar_cpu_s']}"
            for o, v in zip(outcomes, verdicts, strict=True)
            if v[0] == "runs" and o["code"] is None
            and (o["bar_cpu_s"] is None or o["bar_cpu_s"] > PROGRESS_CPU_S)]
    assert slow == []


def test_largest_accepted_sizes_run_or_are_refused_in_one_line():
    """Every integer field (the sizes: agents, runs, iterations, data points, ...); about a
    minute on two loaded cores."""
    check_outcomes(run_driver(int), int)


@pytest.mark.slow
def test_largest_accepted_float_values_run_or_are_refused_in_one_line():
    """Every float field at its largest accepted value (area_m, theta_true, prior_b,
    durations, rates, ...): some 380 cases, two to three minutes on two loaded cores."""
    check_outcomes(run_driver(float), float)


def test_the_limit_the_check_uses_follows_an_address_space_limit(monkeypatch):
    """The resource check compares with the memory this process may still map."""
    import resource
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resources._vm_size_bytes() + 10**9,
                                                          resource.RLIM_INFINITY))
    assert resources.memory_limit_bytes() <= 10**9 + 2**20
