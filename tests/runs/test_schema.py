"""Every scenario declares its output columns under one convention, and `bflnet describe
NAME --columns` prints them; `bflnet --version`. (That each table has exactly the declared
columns, on the declared rows, is checked by tests/scenarios/test_every_scenario_runs.py.)"""

from __future__ import annotations

import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario, scenario_names
from bflnet.runs.schema import UNITS, Column, Schema, col

NAMES = scenario_names()


@pytest.mark.parametrize("name", NAMES)
def test_one_convention_for_every_scenario(name):
    schema = get_scenario(name).columns
    assert isinstance(schema, Schema), f"{name}: no COLUMNS declared"
    event = schema.column("event")
    assert event.events == () and not event.when  # every row has an event
    for c in schema.columns:
        assert c.unit in UNITS and c.meaning and c.meaning == c.meaning.strip()
        if c.unit == "s":  # a time stamp is time_s, any other duration ends in _s
            assert c.name == "time_s" or c.name.endswith("_s"), c.name
        if c.name.endswith("_s") or c.name == "time_s":
            assert c.unit == "s", c.name
        if c.unit == "bits":  # cum_bits*, or an amount of bits named so
            assert c.name.startswith(("cum_bits", "bits")) or c.name.endswith("_bits"), c.name
        if c.name.startswith("cum_bits") or c.name.endswith("_bits"):
            assert c.unit == "bits", c.name
    if "time_s" in schema.names():
        assert schema.column("time_s").unit == "s"
        assert "cum_bits" in schema.names()  # a row stamped in time is stamped in bits


@pytest.mark.parametrize("name", NAMES)
def test_describe_columns_lists_every_column(name, capsys):
    assert main(["describe", name, "--columns"]) == 0
    out = capsys.readouterr().out
    schema = get_scenario(name).columns
    lines = out.splitlines()
    for c in schema.columns:
        line = next(x for x in lines if x.split()[:1] == [c.name])
        assert c.unit in line and c.meaning in line
        assert ("[all]" in line) if not c.events else f"[{', '.join(c.events)}]" in line


def test_gfvl_unlearning_gives_its_latency_in_iterations_seconds_and_bits(capsys):
    names = get_scenario("gfvl-unlearning").columns.names()
    assert {"event", "unlearned_at", "unlearned_at_time_s", "unlearned_at_bits"} <= set(names)


def test_a_schema_refuses_unknown_units_and_twice_declared_columns():
    with pytest.raises(ValueError, match="unit must be one of"):
        col("x", "furlongs", "distance")
    with pytest.raises(ValueError, match="declared twice: x"):
        Schema.of(col("x", "1", "a"), col("x", "1", "b"))
    c = Column("x", "s", "a").on("round").only_when("mode=sync")
    assert c.events == ("round",) and c.when == "mode=sync"


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bflnet {bflnet.__version__}"
