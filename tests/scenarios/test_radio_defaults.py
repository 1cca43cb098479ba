"""One radio: every scenario starts from the shared radio defaults
(:mod:`bflnet.scenarios.shared.radio_defaults`) unless it says why not, and the table of
docs/scenarios.md is those defaults and those reasons, as the code has them."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from bflnet.runs.config import describe_fields
from bflnet.scenarios import get_scenario, scenario_names
from bflnet.scenarios.shared.network_settings import NetworkSettings
from bflnet.scenarios.shared.radio_defaults import RADIO_DEFAULTS, differing_defaults

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "scenarios.md"
START, END = "<!-- radio-defaults:", "<!-- end radio-defaults -->"


def _tables() -> list[list[list[str]]]:
    """The tables between the markers: each a list of rows of cells, backticks dropped."""
    text = DOCS.read_text(encoding="utf-8")
    assert START in text and END in text, "docs/scenarios.md has no radio-defaults passage"
    passage = text.split(START, 1)[1].split(END, 1)[0]
    tables: list[list[list[str]]] = []
    previous = ""
    for line in passage.splitlines():
        if line.startswith("|") and not line.startswith("| ---"):
            if not previous.startswith("|"):
                tables.append([])  # a header row starts a table
            else:
                cells = [c.strip().replace("`", "") for c in line.strip("|").split(" | ")]
                tables[-1].append(cells)
        previous = line if not line.startswith("| ---") else previous
    return tables


def _number(text: str) -> float | None:
    return None if text == "none" else float(text)


def test_the_docs_table_is_the_shared_defaults_and_the_settings_classes_have_them():
    defaults, _ = _tables()
    assert [row[0] for row in defaults] == list(RADIO_DEFAULTS)
    fields = {f.name: f.default for f in dataclasses.fields(NetworkSettings)}
    for name, value, unit, _ in defaults:
        shared = RADIO_DEFAULTS[name]
        assert _number(value) == shared.value, name
        assert unit == (shared.unit if shared.unit != "1" else "—"), name
        assert fields[name] == shared.value, name  # the graph, link and radio settings


def _exceptions() -> set[tuple[str, str, object, str]]:
    """``(scenario, parameter, its default, why)`` of every registered scenario whose
    default of a radio parameter it reads is not the shared one."""
    out = set()
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        for field, (_, own) in differing_defaults(cls).items():
            out.add((name, field, own, cls.RADIO_EXCEPTIONS.get(field, "")))
    return out


def test_every_other_default_is_declared_with_its_reason_and_none_is_stale():
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        differ = differing_defaults(cls)
        assert set(cls.RADIO_EXCEPTIONS) == set(differ), name
        assert all(reason.strip() for reason in cls.RADIO_EXCEPTIONS.values()), name
        notes = {r["name"]: r["note"] for r in describe_fields(cls) if r["note"]}
        assert set(notes) == set(differ), name  # bflnet describe says why
        for field, reason in cls.RADIO_EXCEPTIONS.items():
            assert reason in notes[field] and repr(differ[field][0]) in notes[field]


def test_the_docs_table_of_other_defaults_is_the_scenarios():
    _, others = _tables()
    documented = {(scenario, field, _number(value), why)
                  for scenario, field, value, why in others}
    assert documented == _exceptions()
    # the radio fields the scenarios that place nodes read: one shared default each
    assert {e[1] for e in _exceptions()} == {"latency_s"}


@pytest.fixture(scope="module")
def study_radio() -> dict[str, str]:
    """The radio the d2d-medium study sets on the command line (its script's ``RADIO``)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import reproduce_d2d_medium as script
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    pairs = script.RADIO[1::2]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_d2d_medium_study_pins_the_radio_its_tables_were_made_with(study_radio):
    """The stored tables of docs/wireless-medium.md were made at 0 dBm, exponent 3.5 and
    radius 30 m, then the scenario's defaults: the script sets them explicitly."""
    assert study_radio == {"tx_power_dbm": "0", "path_loss_exponent": "3.5",
                           "radius_m": "30"}
    scenario = get_scenario("d2d-medium")
    config = scenario.config({k: float(v) for k, v in study_radio.items()})
    defaults = scenario.config()
    assert all(getattr(config, k) != getattr(defaults, k) for k in study_radio)
    page = (ROOT / "docs" / "wireless-medium.md").read_text(encoding="utf-8")
    assert "--set tx_power_dbm=0 --set path_loss_exponent=3.5 --set radius_m=30" in page
    assert "0 dBm" in page and "exponent 3.5" in page and "`radius_m` = 30 m" in page
