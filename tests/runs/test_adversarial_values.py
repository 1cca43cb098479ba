"""Every scenario parameter survives adversarial values: each value, given as
``--set field=value``, gives a valid config or a one-line ``ValueError`` that names the
field, quickly and without a large allocation; never another exception (a bug: exit 3).

The extremes of every numeric field (its smallest and largest allowed values, and
``5e-324``, the smallest positive float, which a bound ``> 0`` would let through) are
checked where the field is read (a context of settings that reads it: a MAC, a channel,
a topology, ...): a valid config whose resource estimate is computed, or a one-line
refusal. For the scenarios whose fields were last bounded (``EXTREME_RUNS``), each float
field's extremes also run, with short settings: a table without an infinite value, or a
one-line error.

The cases are generated from the registry, so a newly registered scenario is covered."""

from __future__ import annotations

import dataclasses
import math
import signal
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest

import bflnet.scenarios  # noqa: F401  (registers the scenarios)
from bflnet.cli.main import main
from bflnet.runs import config as config_module
from bflnet.runs.config import ValidationBug, make_config, parse_value
from bflnet.runs.registry import get_scenario, scenario_names
from bflnet.validation.errors import SimulationError
from bflnet.validation.params import base_type, field_types

#: The smallest positive float: a bound ``> 0`` lets it through.
SMALLEST = 5e-324

ADVERSARIAL = [
    "", " ", "-1", "0", "-0", "+5", "1", "3.0", "1.5", "0.0001", "1e-320", "5e-324", "1e3",
    "1_000",
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


# --- the extremes of every numeric field, where it is read ----------------------------------

#: Settings that make a field read (tried in turn until the config reads the field): the
#: medium and its MACs, the channels, the topologies, the scenarios' own switches. A
#: context a scenario does not have (an unknown parameter, a value it refuses) is skipped.
CONTEXTS: list[dict[str, Any]] = [
    {}, {"medium": "shared", "mac": "csma"}, {"medium": "shared", "mac": "aloha"},
    {"medium": "shared", "mac": "tdma"}, {"channel": "rayleigh"}, {"channel": "rician"},
    {"channel": "gilbert-elliott"}, {"channel": "fixed", "loss_prob": 0.1},
    {"graph": "random-geometric"}, {"graph": "erdos-renyi"}, {"placement": "distance"},
    {"protocol": "gossip"}, {"medium": "shared", "channel": "rician"},
    {"medium": "shared", "mac": "csma", "reception": "per"},
    {"macs": "aloha"}, {"macs": "tdma"}, {"macs": "links"},
    {"tasks": "cdbfl", "macs": "csma", "hidden": 2, "points_per_agent": 5, "eval_size": 20,
     "burn_in": 0, "eval_every": 1, "local_steps": 1},
]


def extremes(cls: type, field: str) -> list[float | int]:
    """The smallest and largest values ``field`` allows (a strict bound's nearest float
    inside it) and, for a float field, :data:`SMALLEST`."""
    f = next(x for x in dataclasses.fields(cls) if x.name == field)
    base, _ = base_type(field_types(cls)[field])
    meta = f.metadata
    if base not in (int, float) or meta.get("choices"):
        return []
    out: list[float | int] = [SMALLEST] if base is float else []
    if meta.get("ge") is not None:
        out.append(base(meta["ge"]))
    if meta.get("gt") is not None:
        out.append(math.nextafter(meta["gt"], math.inf) if base is float else int(meta["gt"]) + 1)
    if meta.get("le") is not None:
        out.append(base(meta["le"]))
    if meta.get("lt") is not None:
        out.append(math.nextafter(meta["lt"], -math.inf) if base is float else int(meta["lt"]) - 1)
    return list(dict.fromkeys(out))


def _unread(message: str, field: str, context: dict[str, Any]) -> bool:
    """Whether a refusal says the field is not read (or refuses the context itself)."""
    return (message.startswith((f"{field}: not used", f"{field}: only read with",
                                "unknown parameter"))
            or any(message.startswith(f"{key}:") for key in context if key != field))


def configure(name: str, field: str, value: Any, base: dict[str, Any]) -> Any:
    """The config of ``field = value`` (over ``base``) in the first context that reads the
    field, or the ``ValueError`` refusing it (the field's own refusal, "not read", if no
    context reads it)."""
    cls = get_scenario(name).config_cls
    first: ValueError | None = None
    for context in CONTEXTS:
        try:
            return make_config(cls, {**base, **context, field: value})
        except ValueError as exc:
            if not _unread(str(exc), field, context):
                return exc
            if first is None and str(exc).startswith(f"{field}:"):
                first = exc
    assert first is not None, (name, field, value)
    return first


def one_line_naming_a_field(exc: BaseException) -> None:
    """A one-line message that starts with the fields it is about: ``a, b: ...``."""
    message = str(exc)
    assert message and "\n" not in message, message
    names = [part.strip() for part in message.split(":", 1)[0].split(",")]
    assert all(n.isidentifier() for n in names), message


@pytest.mark.parametrize("name", scenario_names())
def test_every_numeric_fields_extremes_validate_where_read(name):
    """Each extreme of each numeric field, in a context that reads it: a config whose
    footprint is estimated (or refused) in one line, or a one-line refusal naming the
    field; within the time and memory of the adversarial cases."""
    scenario = get_scenario(name)
    cls = scenario.config_cls
    tried = 0
    for f in dataclasses.fields(cls):
        if f.name not in field_types(cls):  # a group of settings (learner.x): its own class
            continue
        for value in extremes(cls, f.name):
            start = time.process_time()
            outcome = configure(name, f.name, value, {})
            if isinstance(outcome, ValueError):
                one_line_naming_a_field(outcome)
            else:
                try:
                    scenario.check_resources(outcome)  # the estimate's own arithmetic
                except ValueError as exc:  # too large for this machine: one line
                    one_line_naming_a_field(exc)
            assert time.process_time() - start < 5 * MAX_CPU_S, (name, f.name, value)
            tried += 1
    assert tried > 0


def test_the_smallest_positive_float_is_an_extreme_of_every_float_field():
    for name in scenario_names():
        cls = get_scenario(name).config_cls
        types_ = field_types(cls)  # a group of settings (learner.x) aside: its own class
        for f in dataclasses.fields(cls):
            if f.name in types_ and base_type(types_[f.name])[0] is float \
                    and not f.metadata.get("choices"):
                assert SMALLEST in extremes(cls, f.name), (name, f.name)
    assert "5e-324" in ADVERSARIAL


#: The scenarios whose every float field's extremes also run, and their short settings.
EXTREME_RUNS: dict[str, dict[str, Any]] = {
    "d2d-medium": {"tasks": "consensus", "macs": "csma", "broadcasts": "false,true",
                   "rounds": 2, "K": 4},
    "custom-learner": {"rounds": 3, "K": 4},
    "wflmc-gaussian": {"K": 2, "points_per_agent": 5, "runs": 2, "rounds": 3, "burn_in": 1,
                       "snr_db": "10", "dim": 2},
    "ota-langevin": {"K": 2, "points_per_agent": 10, "hidden": 2, "batch_size": 5,
                     "rounds": 2, "burn_in": 1, "eval_every": 1, "eval_size": 20,
                     "snr_db": "10", "methods": "wfald,digital,ota-fedavg"},
}
#: Seconds a short run may take (a hang fails the test, not the suite).
RUN_TIMEOUT_S = 30


class _Hang(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Hang


def run_outcome(name: str, config: Any) -> str:
    """``ok`` (a table without an infinite value) or ``refused`` (a one-line error)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(RUN_TIMEOUT_S)
    try:
        frame = get_scenario(name).run(config, seed=0)
    except (ValueError, SimulationError) as exc:
        assert "\n" not in str(exc), exc
        return "refused"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    numbers = frame.select_dtypes("number")
    infinite = [c for c in numbers.columns if np.isinf(numbers[c].to_numpy(float)).any()]
    assert len(frame) > 0 and not infinite, (name, infinite)
    return "ok"


@pytest.mark.usefixtures("use_tiny_fashion")
@pytest.mark.parametrize("name", list(EXTREME_RUNS))
def test_every_float_fields_extremes_run_or_are_refused_in_one_line(name):
    cls = get_scenario(name).config_cls
    outcomes = {}
    for f in dataclasses.fields(cls):
        if f.name not in field_types(cls) or base_type(field_types(cls)[f.name])[0] is not float:
            continue
        for value in extremes(cls, f.name):
            config = configure(name, f.name, value, EXTREME_RUNS[name])
            if isinstance(config, ValueError):
                one_line_naming_a_field(config)
                outcomes[(f.name, value)] = "refused"
                continue
            outcomes[(f.name, value)] = run_outcome(name, config)
    ran = [case for case, outcome in outcomes.items() if outcome == "ok"]
    assert ran and any(value == SMALLEST for _, value in ran), outcomes
