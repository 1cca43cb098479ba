"""Scenarios and learners from other distributions, registered through the
``bflnet.scenarios`` and ``bflnet.learners`` entry points: listed without being imported,
run and described from the command line; a broken plugin is one line naming it.

The plugin distribution is written to a temporary folder (a package and its
``.dist-info`` with ``entry_points.txt``) put on ``PYTHONPATH`` of a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

SCENARIO = '''
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import Footprint


@dataclass(frozen=True)
class HelloConfig:
    SCENARIO: ClassVar[str] = "plug-hello"
    n: int = param(2, "rows", ge=1, le=100)

    def __post_init__(self):
        validate(self)

    def footprint(self):
        return Footprint()


@register("plug-hello", HelloConfig, "A plugin's scenario: n rows of squares.")
def run(config, *, seed=0, progress=False):
    return pd.DataFrame({"event": "run", "i": range(config.n),
                         "square": [i * i for i in range(config.n)]})


NOT_A_SCENARIO = 42
'''

LEARNER = '''
from bflnet.learners.conjugate.gaussian_mean import GaussianMean


def make(K, points_per_agent, rng):
    data = {k: 2.0 + rng.standard_normal(points_per_agent) for k in range(K)}
    return GaussianMean(data, noise_var=1.0)


def not_a_learner(K, points_per_agent, rng):
    return "a string"
'''

ENTRY_POINTS = '''
[bflnet.scenarios]
plug-hello = myplug.scen
plug-broken = myplug.missing_module
plug-wrong = myplug.scen:NOT_A_SCENARIO
consensus-averaging = myplug.scen

[bflnet.learners]
plug-mean = myplug.learn:make
plug-bad = myplug.learn:not_a_learner
'''


def write_distribution(root: Path, package: str, modules: dict[str, str],
                       entry_points: str) -> Path:
    """A plugin distribution under ``root``: package ``package`` with ``modules`` (name ->
    source) and its ``.dist-info`` declaring ``entry_points``; returns ``root``, the folder
    to put on the path."""
    (root / package).mkdir()
    (root / package / "__init__.py").write_text("")
    for name, source in modules.items():
        (root / package / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return root


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    return write_distribution(tmp_path_factory.mktemp("plugin"), "myplug",
                              {"scen": SCENARIO, "learn": LEARNER}, ENTRY_POINTS)


def bflnet(plugin_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{plugin_path}",
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_list_shows_plugins_without_importing_them(plugin_path):
    code = ("import sys; from bflnet.cli.main import main; main(['list']); "
            "print('imported' if 'myplug' in sys.modules else 'not imported')")
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{plugin_path}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "plug-hello: plugin from myplug (myplug.scen); bflnet describe plug-hello" in out
    assert "  plug-mean: plugin from myplug (myplug.learn:make)" in out
    assert "  gaussian-mean: " in out
    assert out.strip().endswith("not imported")
    # the clash with a built-in: one warning line naming the plugin; the built-in stays
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warnings == ["bflnet: warning: plugin scenario 'consensus-averaging' "
                        "(myplug.scen, from myplug) is ignored: a built-in scenario has "
                        "that name"]
    assert out.count("consensus-averaging: Gossip averaging") == 1


def test_a_plugin_scenario_runs_and_is_described(plugin_path, tmp_path):
    out = tmp_path / "hello.csv"
    done = bflnet(plugin_path, "run", "plug-hello", "--set", "n=4", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines()[-1] == "run,3,9"
    done = bflnet(plugin_path, "describe", "plug-hello")
    assert done.returncode == 0 and "A plugin's scenario" in done.stdout
    assert "n  default 2" in done.stdout


def test_a_plugin_learner_runs_under_every_protocol(plugin_path):
    for protocol in ("random-walk", "parameter-server", "gossip"):
        done = bflnet(plugin_path, "run", "custom-learner", "--set", "learner=plug-mean",
                      "--set", f"protocol={protocol}", "--set", "K=4", "--set", "rounds=30",
                      "--no-progress")
        assert done.returncode == 0, done.stderr
        assert "posterior_mean" in done.stdout


@pytest.mark.parametrize("args, code, message", [
    (["describe", "plug-broken"], 4, "plugin scenario 'plug-broken' (myplug.missing_module, "
     "from myplug): import raised ModuleNotFoundError: No module named "
     "'myplug.missing_module'"),
    (["run", "plug-wrong"], 4, "plugin scenario 'plug-wrong' (myplug.scen:NOT_A_SCENARIO, "
     "from myplug): registers no scenario 'plug-wrong'"),
    (["run", "custom-learner", "--set", "learner=plug-bad"], 4, "plugin learner 'plug-bad' "
     "(myplug.learn:not_a_learner, from myplug): factory returned str 'a string'; it must "
     "return a bflnet.learners.base.GlobalStateLearner"),
    (["run", "custom-learner", "--set", "learner=nope"], 2, "learner: must be one of "
     "gaussian-mean, plug-bad, plug-mean"),
])
def test_a_bad_plugin_is_one_line_naming_it(plugin_path, args, code, message):
    """A plugin's fault: exit code 4; the user's (an unknown name): 2."""
    done = bflnet(plugin_path, *args, "--no-progress") if args[0] == "run" else \
        bflnet(plugin_path, *args)
    assert done.returncode == code
    # (the clash of this plugin distribution's "consensus-averaging" warns on every call)
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and "'consensus-averaging'" not in line]
    assert len(lines) == 1 and message in lines[0], done.stderr
