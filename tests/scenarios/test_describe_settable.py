"""``bflnet describe`` lists as parameters exactly what ``--set`` accepts, for every
registered scenario: each listed parameter takes a valid value other than its default
(under some settings of the scenario: ``edge_prob`` with ``graph=erdos-renyi``), and each
field listed apart as decided by the scenario is refused, whatever the other settings, in
one line naming it. The configs are built as ``--set`` builds them (``parse_overrides``,
then the config's own checks); nothing runs.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bflnet.learners import catalog
from bflnet.runs.config import (
    describe_fields,
    describe_groups,
    make_config,
    parse_overrides,
    refused_fields,
)
from bflnet.scenarios import get_scenario, scenario_names
from bflnet.validation.params import base_type, field_types
from bflnet.validation.renames import current_name

#: A second built-in learner for the test (the same factory under another name): without
#: a plugin, ``learner`` has no valid value but its default.
TWIN = "gaussian-mean-twin"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("describe")
    graph = folder / "ring.txt"
    graph.write_text("0 1\n1 2\n2 3\n3 4\n4 5\n5 0\n")
    boston = folder / "boston.csv"
    boston.write_text("1,2,3,4,5,6,7,8,9,10,11,12,13,14\n")
    return {"graph_file": str(graph), "radar_dir": str(folder), "boston_csv": str(boston)}


@pytest.fixture(autouse=True)
def twin_learner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(catalog.BUILT_IN, TWIN, catalog.BUILT_IN["gaussian-mean"])


#: Valid values of the string fields whose values are not a choice list or a comma list
#: of the default's items (a file or folder: from the fixture).
SPECIAL: dict[str, list[str]] = {"baseline": ["0"], "forget": ["0", "0,1"],
                                 "sharing_fractions": ["0.25", "1"], "learner": [TWIN],
                                 "data_rate": ["auto", "54"]}
#: Settings under which some field is read: the network's graphs, channels, media and
#: MACs; a scenario's own switches (every other choice and flag is tried alone too).
CONTEXTS: list[dict[str, str]] = [
    {"graph": "erdos-renyi"}, {"graph": "random-geometric"},
    {"graph": "file", "graph_file": "FILE"}, {"channel": "gilbert-elliott"},
    {"channel": "rayleigh"}, {"channel": "rician"}, {"loss_prob": "0.1"},
    {"medium": "shared"}, {"medium": "shared", "channel": "rayleigh"},
    {"medium": "shared", "mac": "aloha"}, {"medium": "shared", "mac": "tdma"},
    {"medium": "shared", "mac": "tdma", "speeds": "0"}, {"medium": "shared", "mac": "none"},
    {"medium": "shared", "mac": "tdma", "tdma_schedule": "sinr"},
    {"medium": "shared", "mac": "tdma", "tdma_schedule": "sinr", "speeds": "0"},
    {"medium": "shared", "reception": "per"}, {"medium": "shared", "graph": "ring"},
    # the SINR threshold decides packets (a PHY preset's default reception is mcs)
    {"medium": "shared", "reception": "threshold"},
    {"medium": "shared", "methods": "sync", "reception": "threshold"},
    {"medium": "shared", "phy": "80211a"},
    {"medium": "shared", "methods": "sync"}, {"initial_activity": "0.5"},
    {"data": "radar-files", "radar_dir": "FILE"},
    {"coherence_time_s": "0.01"},
    {"medium": "shared", "channel": "rayleigh", "coherence_time_s": "0.01"},
    {"medium": "shared", "methods": "sync", "channel": "rayleigh", "coherence_time_s": "0.01"},
    # the parameter server's air uplink, with methods that run on it
    {"uplink": "aircomp", "methods": "sync,deadline"}, {"uplink": "aircomp", "methods": "fedavg"},
]


def _valid(f: dataclasses.Field, x: float, base: type) -> bool:
    m = f.metadata
    return ((m.get("ge") is None or x >= m["ge"]) and (m.get("gt") is None or x > m["gt"])
            and (m.get("le") is None or x <= m["le"]) and (m.get("lt") is None or x < m["lt"])
            and (base is not int or float(x).is_integer()) and x != f.default)


def candidates(cls: type, name: str, files: dict[str, str]) -> list[str]:
    """Values other than the default, as ``--set`` spells them, that the field's
    declaration allows (the first few: they are tried in order)."""
    f = next(x for x in dataclasses.fields(cls) if x.name == name)
    base, _ = base_type(field_types(cls)[name])
    default = f.default
    if name in files:
        return [files[name]]
    if name in SPECIAL:
        return SPECIAL[name]
    if f.metadata.get("choices"):
        return [str(c).lower() if isinstance(c, bool) else str(c)
                for c in f.metadata["choices"] if c != default]
    if base is bool:
        return [str(not default).lower()]
    if base is str:
        items = str(default or "").split(",")
        return [items[0], ",".join(items[:2])] if len(items) > 1 else []
    m = f.metadata
    low = next((m[k] for k in ("ge", "gt") if m.get(k) is not None), None)
    high = next((m[k] for k in ("le", "lt") if m.get(k) is not None), None)
    numbers = [default + 1, default * 2, default / 2, default - 1] if default is not None \
        else []
    numbers += [x for x in (low, 1, 2, 0.5, 10, high) if x is not None]
    if low is not None and high is not None:
        numbers.append((low + high) / 2)
    out = []
    for x in numbers:
        if _valid(f, x, base):
            text = str(int(x)) if base is int else repr(float(x))
            if text not in out:
                out.append(text)
    return out[:4]


def _in_class(cls: type, context: dict[str, str], files: dict[str, str]) -> dict[str, str] | None:
    """``context`` for ``cls`` (``graph`` as ``graphs`` where a list of topologies decides,
    file names from the fixture), or ``None`` if it names a field ``cls`` lacks."""
    names = set(field_types(cls))
    out = {}
    for key, value in context.items():
        if key == "graph" and "graphs" in names:
            key = "graphs"
        if key not in names:
            return None
        out[key] = files[key] if value == "FILE" else value
    return out


def build(cls: type, settings: dict[str, str]) -> str | None:
    """``None`` if ``--set`` builds the config from ``settings``, else its error."""
    try:
        make_config(cls, parse_overrides(cls, [f"{k}={v}" for k, v in settings.items()]))
    except ValueError as exc:
        return str(exc)
    return None


def contexts(cls: type, files: dict[str, str]) -> list[dict[str, str]]:
    """The settings of :data:`CONTEXTS` and every other value of each choice, flag and
    comma list, alone, that build a config."""
    found = [c for c in (_in_class(cls, c, files) for c in CONTEXTS) if c is not None]
    for name, tp in field_types(cls).items():
        f = next(x for x in dataclasses.fields(cls) if x.name == name)
        if f.metadata.get("choices") or base_type(tp)[0] is bool or \
                (isinstance(f.default, str) and "," in f.default):
            found.extend({name: value} for value in candidates(cls, name, files))
    return [{}, *(c for c in found if build(cls, c) is None)]


def accepted(cls: type, name: str, values: list[str], settings: list[dict[str, str]],
             extra: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Each ``settings`` plus ``name=value`` that builds (lazily); a setting that holds
    ``name`` already (``radar_dir`` with ``data=radar-files``) as it is."""
    for context in settings:
        if name in context:
            yield context
            continue
        for value in values:
            trial = {**context, **(extra or {}), name: value}
            if build(cls, trial) is None:
                yield trial


@pytest.mark.parametrize("scenario", scenario_names())
def test_describe_lists_as_parameters_exactly_what_set_accepts(scenario, files):
    cls = get_scenario(scenario).config_cls
    rows = describe_fields(cls)
    listed = {r["name"] for r in rows if r["decided"] is None}
    decided = {r["name"]: r["decided"] for r in rows if r["decided"] is not None}
    assert listed | set(decided) == set(field_types(cls))  # every name --set takes
    assert decided == refused_fields(cls)
    settings = contexts(cls, files)
    refused = []
    for name in sorted(listed):
        values = candidates(cls, name, files)
        assert values, f"{scenario}: no valid non-default value of {name} to try"
        if next(accepted(cls, name, values, settings), None) is None:
            refused.append(name)
    assert refused == [], f"{scenario}: describe lists {refused}, --set refuses them"
    for name, reason in decided.items():
        assert reason.strip(), name
        value = candidates(cls, name, files)[0]
        error = build(cls, {name: value})  # one line naming the field and what decides
        assert error == f"{name}: not used by {scenario}; {reason}", error
        for context in settings[1:]:
            assert name in context or build(cls, {**context, name: value}) is not None, (
                f"{scenario}: describe lists {name} as decided, --set takes {name}={value} "
                f"with {context}")


@pytest.mark.parametrize("scenario", scenario_names())
def test_old_names_and_group_settings_are_listed_and_accepted(scenario, files):
    """An old name ``--set`` still takes names a listed parameter; every setting of a
    group (``learner.NAME``) describe lists is accepted with its learner."""
    cls = get_scenario(scenario).config_cls
    listed = {r["name"] for r in describe_fields(cls) if r["decided"] is None}
    for old in getattr(cls, "RENAMED", {}):
        assert current_name(cls, old) in listed, old
    for prefix, choice, rows in describe_groups(cls):
        assert not isinstance(rows, str), (choice, rows)
        chosen = {} if build(cls, {prefix: choice}) is not None else {prefix: choice}
        assert chosen or choice == "gaussian-mean" or prefix != "learner", choice
        for row in rows:
            setting = row["name"].split(".", 1)[1]
            settings_cls = _settings_class(cls, prefix, choice)
            values = candidates(settings_cls, setting, files)
            trial = next(accepted(cls, row["name"], values, [{}], extra=chosen), None)
            assert trial is not None, f"{scenario}: {row['name']} of {choice} is refused"


def _settings_class(cls: type, prefix: str, choice: str) -> Any:
    found = cls.group_choices(prefix)[choice]
    assert isinstance(found, type), found
    return found


def test_describe_prints_the_decided_fields_apart_with_what_replaces_them():
    """``bflnet describe d2d-medium``: ``mac``, ``medium`` and ``broadcast`` are not among
    the parameters but in the section of fields the scenario decides, naming ``macs`` and
    ``broadcasts``; ``latency_s`` says why its default is not the shared one."""
    done = subprocess.run([sys.executable, "-m", "bflnet.cli", "describe", "d2d-medium"],
                          capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    parameters, _, decided = done.stdout.partition("\ndecided by d2d-medium, not parameters")
    assert decided, done.stdout
    names = [line.split()[0] for line in parameters.splitlines() if line.startswith("  ")]
    assert {"macs", "broadcasts", "tx_power_dbm", "latency_s"} <= set(names)
    assert not {"mac", "medium", "broadcast", "graph", "area_m", "edge_prob"} & set(names)
    lines = decided.splitlines()
    assert any(line.startswith("  mac: macs decides") for line in lines), decided
    assert any(line.startswith("  medium: macs decides") for line in lines), decided
    assert any(line.startswith("  broadcast: broadcasts decides") for line in lines), decided
    latency = next(line for line in parameters.splitlines() if line.startswith("  latency_s"))
    assert "differs from the shared radio default 0.005" in latency
