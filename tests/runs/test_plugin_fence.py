"""Plugins run behind a fence: whatever a plugin's import, config class, ``footprint()``,
``run`` or learner hooks raise (``sys.exit`` and ``KeyboardInterrupt`` included) or
return of the wrong kind is one line on stderr naming the plugin and the hook, exit code
4, nothing written; from the Python API a ``PluginError`` (a ``RuntimeError``) naming it.
A real Ctrl-C still ends the command as an interrupt, and a plugin slow to import is named
while it loads.

Each case is a tiny plugin distribution written by the test (the helpers of
``test_plugins``), run by the command line in a fresh interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.runs.test_plugins import SRC, bflnet, write_distribution

PACKAGE = "fenceplug"
WHO = "plugin scenario '{name}' (fenceplug.{module}, from fenceplug)"
LEARNER_WHO = "plugin learner '{name}' (fenceplug.learn:{factory}, from fenceplug)"

#: A scenario module; ``{decorator}``, ``{footprint}`` and ``{body}`` make the cases.
SCENARIO = '''
import sys
import time
from dataclasses import dataclass
from typing import ClassVar

from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import Footprint

{prelude}


class Boom(BaseException):
    """Not an Exception: what no ``except Exception`` catches."""


{decorator}
class Config:
    SCENARIO: ClassVar[str] = "{name}"
    n: int = param(2, "rows", ge=1, le=100)

    def __post_init__(self):
        validate(self)
{footprint}

@register("{name}", Config, "A fence case.")
def run(config, *, seed=0, progress=False):
    import pandas as pd

{body}
'''

FOOTPRINT = '''
    def footprint(self):
        return Footprint()
'''
GOOD_RUN = "    return pd.DataFrame({'event': 'run', 'i': range(config.n)})"

#: name -> (module, changes to the template, what the one line must say).
SCENARIO_CASES: dict[str, tuple[str, dict[str, str], str]] = {
    "fp-not-dataclass": ("notdc", {"decorator": ""},
                         "its config class Config is not a dataclass; it must be a frozen "
                         "dataclass with a footprint() method"),
    "fp-no-footprint": ("nofp", {"footprint": ""},
                        "its config class Config has no footprint() method"),
    "fp-footprint-raises": ("fpraise", {"footprint": "\n    def footprint(self):\n"
                                        "        return 1 / 0\n"},
                            "footprint() raised ZeroDivisionError: division by zero"),
    "fp-returns-none": ("none", {"body": "    return None"},
                        "run returned None; it must return a pandas DataFrame"),
    "fp-returns-list": ("list", {"body": "    return [1, 2, 3]"},
                        "run returned list [1, 2, 3]; it must return a pandas DataFrame"),
    "fp-returns-dict": ("dict", {"body": "    return {'a': [1, 2]}"},
                        "run returned dict {'a': [1, 2]}; it must return a pandas DataFrame"),
    "fp-key-error": ("keyerror", {"body": "    return {}['missing']"},
                     "run raised KeyError: 'missing'"),
    "fp-memory-error": ("memory", {"body": "    raise MemoryError('no room')"},
                        "run raised MemoryError: no room"),
    "fp-base-exception": ("base", {"body": "    raise Boom('boom')"},
                          "run raised Boom: boom"),
    "fp-sys-exit": ("exit", {"body": "    sys.exit(3)"}, "run raised SystemExit: 3"),
    "fp-keyboard-interrupt": ("kbi", {"body": "    raise KeyboardInterrupt"},
                              "run raised KeyboardInterrupt"),
    "fp-import-exits": ("importexit", {"prelude": "sys.exit('bye')"},
                        "import raised SystemExit: bye"),
}

#: Scenarios that work: a slow import, a run that waits (for Ctrl-C), a plain one.
GOOD_CASES = {
    "fp-slow-import": ("slow", {"prelude": "time.sleep(1.5)"}),
    "fp-hangs-at-import": ("hang", {"prelude": "time.sleep(60)"}),
    "fp-waits": ("waits", {"body": "    print('running', file=sys.stderr, flush=True)\n"
                                   "    time.sleep(60)\n" + GOOD_RUN}),
    "fp-good": ("good", {}),
}

LEARNER = '''
import numpy as np

from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work


class Mean(GlobalStateLearner):
    combines = Combines.ADDITIVE
    uses_agent_streams = False

    def __init__(self, data, evaluation):
        self.data, self.evaluation = data, evaluation

    def init(self, rng):
        return np.zeros(2)

    def local_update(self, agent, state, agent_state, rng):
        if self.evaluation == "update-str":
            return "not an update"
        x = self.data[agent]
        return Update(np.array([x.sum(), len(x)]), Work(steps=len(x)), agent)

    def merge(self, state, updates):
        return state + sum(u.payload for u in updates)

    def evaluate(self, state):
        mean = float(state[0] / max(state[1], 1.0))
        return {"update-str": {"mean": mean}, "eval-str": "abc",
                "eval-object": Opaque(), "eval-nan": {"mean": float("nan")},
                "eval-column": {"node": 1.0}, "fine": {"mean": mean}}[self.evaluation]


class Opaque:
    def __repr__(self):
        return "<Opaque>"


def _factory(evaluation):
    def make(K, points_per_agent, rng):
        data = {k: 1.0 + rng.standard_normal(points_per_agent) for k in range(K)}
        return Mean(data, evaluation)
    return make


update_str = _factory("update-str")
eval_str = _factory("eval-str")
eval_object = _factory("eval-object")
eval_nan = _factory("eval-nan")
eval_column = _factory("eval-column")
fine = _factory("fine")
'''

#: learner name -> (factory, what the one line must say after the plugin's name).
LEARNER_CASES = {
    "fl-update-str": ("update_str", "local_update returned str 'not an update'; it must "
                      "return a bflnet.learners.base.Update"),
    "fl-eval-str": ("eval_str", "evaluate returned str 'abc'; it must return a mapping of "
                    "str to finite real numbers"),
    "fl-eval-object": ("eval_object", "evaluate returned Opaque <Opaque>; it must return a "
                       "mapping of str to finite real numbers"),
    "fl-eval-nan": ("eval_nan", "evaluate returned dict {'mean': nan} ('mean' is nan); it "
                    "must return a mapping of str to finite real numbers"),
    "fl-eval-column": ("eval_column", "evaluate returned dict {'node': 1.0} ('node' is a "
                       "column the run writes itself)"),
}


def _scenario_source(name: str, changes: dict[str, str]) -> str:
    parts = {"prelude": "", "decorator": "@dataclass(frozen=True)", "footprint": FOOTPRINT,
             "body": GOOD_RUN, **changes}
    return SCENARIO.replace("{name}", name).format(**parts)


@pytest.fixture(scope="module")
def fence_path(tmp_path_factory) -> Path:
    modules = {"learn": LEARNER}
    lines = ["[bflnet.scenarios]"]
    for name, (module, changes, *_) in {**SCENARIO_CASES, **GOOD_CASES}.items():
        modules[module] = _scenario_source(name, changes)
        lines.append(f"{name} = {PACKAGE}.{module}")
    lines.append("[bflnet.learners]")
    lines += [f"{name} = {PACKAGE}.learn:{factory}"
              for name, (factory, _) in {**LEARNER_CASES, "fl-fine": ("fine", "")}.items()]
    return write_distribution(tmp_path_factory.mktemp("fence"), PACKAGE, modules,
                              "\n".join(lines) + "\n")


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("name", list(SCENARIO_CASES))
def test_a_failing_scenario_plugin_is_one_line_exit_4_nothing_written(fence_path, tmp_path,
                                                                       name):
    module, _, message = SCENARIO_CASES[name]
    out = tmp_path / "out" / "table.csv"
    out.parent.mkdir()
    done = bflnet(fence_path, "run", name, "--out", str(out), "--no-progress")
    assert done.returncode == 4, done.stderr
    line = _one_line(done)
    assert line.startswith(f"bflnet: {WHO.format(name=name, module=module)}: "), line
    assert message in line
    assert list(out.parent.iterdir()) == []  # no table, no sidecar, no temporary file


@pytest.mark.parametrize("name, protocol", [
    *((name, "random-walk") for name in LEARNER_CASES),
    # the protocols report a learner's error as a run failure: the plugin's error is kept
    *((name, protocol) for name in ("fl-update-str", "fl-eval-str")
      for protocol in ("parameter-server", "gossip")),
])
def test_a_failing_learner_plugin_is_one_line_exit_4_nothing_written(fence_path, tmp_path,
                                                                      name, protocol):
    factory, message = LEARNER_CASES[name]
    out = tmp_path / "out" / "table.csv"
    out.parent.mkdir()
    done = bflnet(fence_path, "run", "custom-learner", "--set", f"learner={name}",
                  "--set", f"protocol={protocol}", "--set", "K=4", "--set", "rounds=5",
                  "--out", str(out), "--no-progress")
    assert done.returncode == 4, done.stderr
    line = _one_line(done)
    assert line.startswith(f"bflnet: {LEARNER_WHO.format(name=name, factory=factory)}: "), \
        line
    assert message in line
    assert list(out.parent.iterdir()) == []


def test_a_plugin_learner_that_keeps_its_contract_runs(fence_path):
    done = bflnet(fence_path, "run", "custom-learner", "--set", "learner=fl-fine",
                  "--set", "protocol=gossip", "--set", "K=4", "--set", "rounds=5",
                  "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "mean" in done.stdout and "disagreement" in done.stdout


def test_the_users_bad_value_for_a_plugin_scenario_is_the_users_error(fence_path):
    """The config's own ValueError (a --set refused) stays exit code 2, not the plugin's."""
    done = bflnet(fence_path, "run", "fp-good", "--set", "n=0", "--no-progress")
    assert done.returncode == 2
    assert _one_line(done) == "bflnet: error: n: must be an integer >= 1 and <= 100, got 0"


def test_a_plugin_slow_to_import_is_named_while_it_loads(fence_path):
    done = bflnet(fence_path, "run", "fp-slow-import", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == ("bflnet: loading plugin scenario 'fp-slow-import' "
                                           "(fenceplug.slow, from fenceplug) ...")
    # a fast one is not named, and the listing imports none
    assert "loading" not in bflnet(fence_path, "run", "fp-good", "--no-progress").stderr
    listed = bflnet(fence_path, "list")
    assert listed.returncode == 0 and listed.stderr == ""
    assert "fp-slow-import: plugin from fenceplug (fenceplug.slow)" in listed.stdout


def _start(fence_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{fence_path}",
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "bflnet.cli", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("name, first", [
    ("fp-hangs-at-import", "bflnet: loading plugin scenario 'fp-hangs-at-import' "
     "(fenceplug.hang, from fenceplug) ..."),
    ("fp-waits", "running"),
])
def test_a_real_ctrl_c_inside_a_plugin_is_an_interrupt(fence_path, tmp_path, name, first):
    """The user's Ctrl-C while a plugin imports or runs ends the command as an interrupt
    (exit code 130), not as the plugin's KeyboardInterrupt."""
    out = tmp_path / "table.csv"
    process = _start(fence_path, "run", name, "--no-progress", "--out", str(out))
    try:
        assert process.stderr.readline().rstrip("\n") == first
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, rest
    assert rest.splitlines() == ["bflnet: interrupted (SIGINT)"]
    assert time.monotonic() - started < 20
    assert not out.exists()


# --- the Python API ------------------------------------------------------------------------


@pytest.fixture()
def on_path(fence_path, monkeypatch):
    """The test's plugins importable in this process, and forgotten afterwards (the
    registry and the module cache), so that later tests see the built-in registry."""
    from bflnet.runs import registry

    monkeypatch.syspath_prepend(str(fence_path))
    registry.scenario_names()  # the built-in scenarios registered first
    modules = set(sys.modules)
    yield
    for name in set(registry._REGISTRY) - registry._BUILT_IN:
        del registry._REGISTRY[name]
    for name in set(sys.modules) - modules:  # the plugins' own modules only
        if str(getattr(sys.modules[name], "__file__", "")).startswith(str(fence_path)):
            del sys.modules[name]


@pytest.mark.parametrize("name", ["fp-key-error", "fp-returns-dict", "fp-sys-exit",
                                  "fp-base-exception", "fp-not-dataclass"])
def test_the_api_raises_a_plugin_error_naming_the_plugin(on_path, name):
    import bflnet
    from bflnet.validation.errors import PluginError

    module, _, message = SCENARIO_CASES[name]
    with pytest.raises(PluginError) as caught:
        bflnet.run(name)
    assert isinstance(caught.value, RuntimeError)
    assert str(caught.value).startswith(f"{WHO.format(name=name, module=module)}: ")
    assert message in str(caught.value)
    with pytest.raises(PluginError, match="^" + WHO.format(name=name, module=module)
                       .replace("(", r"\(").replace(")", r"\)")):
        bflnet.run(name)  # again: the same error, not a half-registered scenario


@pytest.mark.parametrize("name", ["fl-update-str", "fl-eval-object"])
def test_the_api_raises_a_plugin_error_for_a_learner(on_path, name):
    import bflnet
    from bflnet.validation.errors import PluginError

    factory, message = LEARNER_CASES[name]
    with pytest.raises(PluginError) as caught:
        bflnet.run("custom-learner", learner=name, K=4, rounds=3)
    assert str(caught.value) == (f"{LEARNER_WHO.format(name=name, factory=factory)}: "
                                 f"{message}")


def test_the_api_lets_keyboard_interrupt_through_under_pythons_own_handler(on_path):
    """Without the command line's handlers the user's Ctrl-C is a KeyboardInterrupt too:
    it stops the call, as Ctrl-C would."""
    import bflnet

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("Python's own SIGINT handler is not in place")
    with pytest.raises(KeyboardInterrupt):
        bflnet.run("fp-keyboard-interrupt")


# --- what a plugin registers, checked once imported ------------------------------------------


def _registered(config_source: str, **fields):
    """A Scenario as a plugin would register it, its config class from ``config_source``."""
    import dataclasses
    from typing import ClassVar  # noqa: F401 - used by the sources

    from bflnet.runs.config import param, validate  # noqa: F401
    from bflnet.runs.registry import Scenario
    from bflnet.runs.resources import Footprint  # noqa: F401

    namespace = {**globals(), **locals()}
    exec(config_source, namespace)
    scenario = Scenario("fp-x", namespace["Config"], lambda config, **kw: None, "A case.")
    return dataclasses.replace(scenario, **fields)


GOOD_CONFIG = '''
@dataclasses.dataclass(frozen=True)
class Config:
    n: int = param(2, "rows", ge=1, le=100)

    def __post_init__(self):
        validate(self)

    def footprint(self):
        return Footprint()
'''


@pytest.mark.parametrize("source, fields, message", [
    (GOOD_CONFIG.replace("(frozen=True)", ""), {}, "its config class Config is not frozen"),
    (GOOD_CONFIG.replace('param(2, "rows", ge=1, le=100)', "(1,)").replace("n: int",
                                                                           "n: tuple"),
     {}, "field 'n' of its config class Config is of type tuple; allowed: int, float, str, "
     "bool (or X | None)"),
    (GOOD_CONFIG.replace(' = param(2, "rows", ge=1, le=100)', ""), {},
     "field 'n' of its config class Config has no default"),
    (GOOD_CONFIG.replace("n: int", "n: 'Missing'"), {},
     "the field types of its config class Config do not resolve: NameError"),
    (GOOD_CONFIG.replace("param(2,", "param(0,"), {},
     "config Config() with its defaults raised ValueError: n: must be an integer >= 1"),
    (GOOD_CONFIG, {"run_fn": 42}, "its run function is an int"),
    (GOOD_CONFIG, {"description": None}, "its description is a NoneType, not a string"),
    (GOOD_CONFIG, {"columns": ["a"]}, "its columns are a list, not a Schema"),
    (GOOD_CONFIG, {"datasets": ("no-such-data",)}, "data set 'no-such-data' is unknown"),
    (GOOD_CONFIG, {"state_free": ("nope",)}, "its state_free must be a tuple of its config's "
     "field names"),
])
def test_what_a_plugin_registers_is_checked_before_use(source, fields, message):
    from bflnet.runs.plugin_scenario import checked
    from bflnet.validation.errors import PluginError

    with pytest.raises(PluginError) as caught:
        checked("plugin scenario 'fp-x' (p.m, from p)", _registered(source, **fields))
    assert str(caught.value).startswith("plugin scenario 'fp-x' (p.m, from p): ")
    assert message in str(caught.value)


def test_a_footprint_of_the_wrong_kind_is_refused():
    from bflnet.runs.plugin_scenario import checked
    from bflnet.validation.errors import PluginError

    scenario = checked("plugin scenario 'fp-x' (p.m, from p)", _registered(
        GOOD_CONFIG.replace("return Footprint()", "return {'bytes': 1}")))
    with pytest.raises(PluginError, match=r"footprint\(\) returned dict \{'bytes': 1\}; it "
                       r"must return a bflnet.runs.resources.Footprint"):
        scenario.check_resources(scenario.config())
