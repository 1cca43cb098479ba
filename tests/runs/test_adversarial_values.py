"""Every scenario parameter survives adversarial values: each value, given as
``--set field=value``, gives a valid config or a one-line ``ValueError`` that names the
field, quickly and without a large allocation; never another exception (a bug: exit 3).

The cases are generated from the registry, so a newly registered scenario is covered."""

from __future__ import annotations

import dataclasses
import time
import tracemalloc

import pytest

import bflnet.scenarios  # noqa: F401  (registers the scenarios)
from bflnet.cli.main import main
from bflnet.runs import config as config_module
from bflnet.runs.config import ValidationBug, make_config, parse_value
from bflnet.runs.registry import get_scenario, scenario_names

ADVERSARIAL = [
    "", " ", "-1", "0", "-0", "+5", "1", "3.0", "1.5", "0.0001", "1e-320", "1e3", "1_000",
    "1e9", "10000000000", "1e308", "-1e308", "1e400", "9" * 400, "-" + "9" * 400, "inf",
    "-inf", "nan", "0x10", "[1, 2]", "a,b", "0.5,1", "1,10", "2,5,10", "x" * 10_000, "\x00",
    "none", "true", "ring",
]
#: CPU seconds and traced bytes a case may take (the issue: under 1 s, a few MB).
MAX_CPU_S = 1.0
MAX_TRACED_BYTES = 20_000_000


def cases() -> list[tuple[str, str, str]]:
    out = []
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        # values valid for another field of the same scenario
        others = sorted({str(v) for v in defaults.values() if v is not None})[:6]
        for field in defaults:
            for value in dict.fromkeys(ADVERSARIAL + others):
                out.append((name, field, value))
    return out


CASES = cases()


def check(name: str, field: str, value: str) -> str:
    """'ok' or 'error', after checking the error's shape and the time and memory spent."""
    cls = get_scenario(name).config_cls
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.process_time()
    try:
        make_config(cls, {field: parse_value(cls, field, value)})
        outcome = "ok"
    except ValueError as exc:
        message = str(exc)
        assert "\n" not in message, (name, field, value[:30], message)
        assert field in message, (name, field, value[:30], message)
        outcome = "error"
    finally:
        cpu = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1] - base
    assert cpu < MAX_CPU_S, (name, field, value[:30], cpu)
    assert peak < MAX_TRACED_BYTES, (name, field, value[:30], peak)
    return outcome


@pytest.mark.parametrize("name", scenario_names())
def test_every_field_survives_adversarial_values(name):
    mine = [c for c in CASES if c[0] == name]
    tracemalloc.start()
    try:
        outcomes = [check(*case) for case in mine]   # a ValidationBug fails the test here
    finally:
        tracemalloc.stop()
    assert len(outcomes) == len(mine) > 0
    assert "error" in outcomes and "ok" in outcomes   # the table exercises both paths


def test_the_case_table_covers_every_scenario_and_field():
    for name in scenario_names():
        fields = {f.name for f in dataclasses.fields(get_scenario(name).config_cls)}
        assert {c[1] for c in CASES if c[0] == name} == fields
    assert len(CASES) > 5000


@pytest.mark.parametrize(("name", "setting"), [
    ("dsvgd-sparsifiers", "rate_multiple=inf"),
    ("dsvgd-sparsifiers", "rate_multiple=1e308"),
    ("dsvgd-vs-fedavg", "rate_multiples=inf"),
    ("dsvgd-vs-fedavg", "rate_multiples=1e308"),
    ("forget-svgd", "rate_multiples=1e308"),
    ("dsvgd-sparsifiers", "hidden=1e308"),
    ("dsvgd-vs-fedavg", "hidden=1e308"),
    ("dsvgd-vs-fedavg", "hidden=10000000000"),
    ("dsvgd-sparsifiers", "hidden=10000000000"),
    ("forget-svgd", "hidden=10000000000"),
    ("dsvgd-sparsifiers", "particles=" + "9" * 400),
    ("dsvgd-vs-fedavg", "particles=" + "9" * 400),
    ("dsvgd-sparsifiers", "sharing_fraction=1e-320"),
])
def test_the_reported_values_give_one_line_errors_through_the_cli(name, setting, capsys):
    assert main(["run", name, "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bflnet: error: ") and err.count("\n") == 1


def test_valid_but_slow_hidden_sizes_run_within_memory_or_are_refused(capsys):
    """hidden=1e6 passes the type bounds but not this machine's memory (2K + 8 copies of
    10 particles of d = 795 million float32): refused before the run, with the estimate."""
    assert main(["run", "dsvgd-sparsifiers", "--set", "hidden=1000000"]) == 2
    err = capsys.readouterr().err
    assert "hidden, particles, K: the run needs about" in err and "memory" in err


def test_an_exception_other_than_valueerror_is_reported_as_a_bug(monkeypatch, capsys):
    cls = get_scenario("consensus-averaging").config_cls

    def broken(self):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(cls, "__post_init__", broken)
    with pytest.raises(ValidationBug, match="bug in bflnet: validating consensus-averaging"):
        make_config(cls, {"rounds": 5})
    assert main(["run", "consensus-averaging", "--set", "rounds=5"]) == 3
    err = capsys.readouterr().err
    assert "bug in bflnet" in err and "TypeError" in err and err.count("\n") == 1
    assert config_module.ValidationBug is ValidationBug
