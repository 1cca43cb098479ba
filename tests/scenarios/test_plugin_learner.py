"""A plugin learner written only from the docs: the module of docs/plugins.md ("Writing a
learner", Bayesian linear regression with its own ``noise_var`` setting) is shipped as an
installed distribution and run by the command line. Under the random walk, the parameter
server and gossip it reaches the exact posterior (closed form, computed here from the
same data), with ``learner.noise_var`` set from the command line, recorded in the result
file (a rerun reproduces it) and swept."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.runs.test_plugins import bflnet, write_distribution

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
ENTRY_POINTS = "[bflnet.learners]\nlinreg = my_package.linreg:make\n"
K, POINTS = 6, 10
#: How the metrics the module reports name the posterior's moments.
MOMENTS = ("w0", "w1", "w0_var", "w1_var", "w01_cov")


def documented_module() -> str:
    """The first Python block under the docs' "Writing a learner" heading."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Writing a learner\n", 1)
    assert len(section) == 2, "docs/plugins.md has no 'Writing a learner' section"
    block = re.search(r"```python\n(.*?)```", section[1], re.S)
    assert block is not None, "the 'Writing a learner' section has no Python block"
    return block.group(1)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The documented module, installed as distribution ``my_package``; and the module
    itself, imported here to rebuild the learners' data."""
    root = write_distribution(tmp_path_factory.mktemp("linreg"), "my_package",
                              {"linreg": documented_module()}, ENTRY_POINTS)
    sys.path.insert(0, str(root))
    try:
        from my_package import linreg
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("my_package", None)
    sys.modules.pop("my_package.linreg", None)
    return root, linreg


def exact_posterior(linreg, noise_var: float, seed: int = 0, k: int = K) -> dict[str, float]:
    """The closed form from the data the scenario's factory call makes (its stream
    ``data``): precision = I/prior_var + XᵀX/noise_var, mean = cov · Xᵀy/noise_var."""
    from bflnet.simulator import Simulation

    settings = linreg.Settings(noise_var=noise_var)
    learner = linreg.make(k, POINTS, Simulation(seed, name="custom-learner").streams.numpy(
        "data"), settings)
    x = np.vstack([learner.data[a][0] for a in range(k)])
    y = np.concatenate([learner.data[a][1] for a in range(k)])
    cov = np.linalg.inv(np.eye(2) / settings.prior_var + x.T @ x / noise_var)
    mean = cov @ x.T @ y / noise_var
    return {"w0": mean[0], "w1": mean[1], "w0_var": cov[0, 0], "w1_var": cov[1, 1],
            "w01_cov": cov[0, 1]}


def run_cli(root: Path, out: Path, *args: str) -> pd.DataFrame:
    done = bflnet(root, "run", "custom-learner", "--set", "learner=linreg", "--set",
                  f"K={K}", "--set", f"points_per_agent={POINTS}", *args, "--out",
                  str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    return pd.read_csv(out)


@pytest.mark.parametrize("protocol, rounds", [
    ("random-walk", 80), ("parameter-server", 2 * K), ("gossip", 150)])
def test_the_documented_learner_is_exact_under_every_protocol(plugin, tmp_path, protocol,
                                                              rounds):
    root, linreg = plugin
    frame = run_cli(root, tmp_path / "run.csv", "--set", f"protocol={protocol}", "--set",
                    f"rounds={rounds}", "--set", "learner.noise_var=0.1")
    exact = exact_posterior(linreg, 0.1)
    assert exact_posterior(linreg, 0.25)["w0_var"] != pytest.approx(exact["w0_var"])
    last = frame[frame.event.isin(("iteration", "round"))].iloc[-1]
    for name in MOMENTS:
        if protocol != "gossip":
            assert last[name] == pytest.approx(exact[name], rel=1e-9, abs=1e-12), name
            continue
        # every node's own value lies in [max - spread, max]: all within tolerance
        low, high = last[f"{name}_max"] - last[f"{name}_spread"], last[f"{name}_max"]
        assert exact[name] - 1e-9 <= low <= high <= exact[name] + 1e-9, name
        assert last[name] == pytest.approx(exact[name], rel=1e-9, abs=1e-12), name
    assert last["kl"] < 1e-9
    record = json.loads((tmp_path / "run.csv.json").read_text())
    assert record["config"]["learner.noise_var"] == 0.1
    assert record["config"]["learner.prior_var"] == 1.0
    if protocol == "gossip":
        # honest gossip: the nodes' mean state is exact after one round, no node is yet
        first = frame[frame.event == "round"].iloc[0]
        assert first["kl_at_mean"] < 1e-9 < first["kl"] <= first["kl_max"]
        assert first["disagreement"] > 0
    if protocol == "parameter-server":  # the record makes the same file again
        done = bflnet(root, "rerun", str(tmp_path / "run.csv"), "--no-progress")
        assert done.returncode == 0, done.stderr
        assert "reproduces" in done.stderr


def test_its_setting_is_swept_and_described(plugin, tmp_path):
    root, linreg = plugin
    out = tmp_path / "sweep"
    done = bflnet(root, "sweep", "custom-learner", "--set", "learner=linreg", "--set",
                  "protocol=parameter-server", "--set", f"K={K}", "--set",
                  f"points_per_agent={POINTS}", "--set", f"rounds={K}", "--grid",
                  "learner.noise_var=0.1,1", "--out", str(out), "--workers", "1",
                  "--no-progress")
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(out / "table.parquet")
    assert table["learner.noise_var"].dtype == np.float64
    last = table[table.event == "iteration"].groupby("learner.noise_var").last()
    assert sorted(last.index) == [0.1, 1.0]
    for noise_var in (0.1, 1.0):
        exact = exact_posterior(linreg, noise_var)
        for name in MOMENTS:
            assert last.loc[noise_var, name] == pytest.approx(exact[name], rel=1e-9), name
    described = bflnet(root, "describe", "custom-learner")
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    at = lines.index("  linreg:")
    assert lines[at + 1].split()[:3] == ["learner.noise_var", "default", "0.25;"]
    assert "variance of the noise on y" in lines[at + 1]
    assert lines[at + 2].split()[0] == "learner.prior_var"


@pytest.mark.parametrize("setting, message", [
    ("learner.noise_var=0", "learner.noise_var: must be a finite number > 0 and <= "
     "1e+06, got 0.0"),
    ("learner.noise_var=abc", "learner.noise_var: must be a finite number > 0 and <= "
     "1e+06, got 'abc'"),
    ("learner.nope=1", "learner.nope: unknown setting of learner 'linreg'; allowed: "
     "learner.noise_var, learner.prior_var"),
])
def test_a_bad_setting_is_one_line_exit_2_nothing_written(plugin, tmp_path, setting,
                                                          message):
    root, _ = plugin
    done = bflnet(root, "run", "custom-learner", "--set", "learner=linreg", "--set",
                  setting, "--out", str(tmp_path / "run.csv"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"bflnet: error: {message}"]
    assert list(tmp_path.iterdir()) == []


BROKEN = """
from dataclasses import dataclass

from bflnet.learners.conjugate.gaussian_mean import GaussianMean
from bflnet.validation.params import param


@dataclass(frozen=True)
class Good:
    noise_var: float = param(1.0, "noise", gt=0)


@dataclass
class Loose:
    noise_var: float = param(1.0, "noise", gt=0)


def _learner(K, points_per_agent, rng):
    return GaussianMean({k: rng.standard_normal(points_per_agent) for k in range(K)})


def old(K, points_per_agent, rng):
    return _learner(K, points_per_agent, rng)


def unannotated(K, points_per_agent, rng, settings):
    return _learner(K, points_per_agent, rng)


def loose(K, points_per_agent, rng, settings: Loose):
    return _learner(K, points_per_agent, rng)


def unresolved(K, points_per_agent, rng, settings: "Missing"):  # noqa: F821
    return _learner(K, points_per_agent, rng)


def refusing(K, points_per_agent, rng, settings: Good):
    raise ValueError("never called")


class Undeclared(GaussianMean):
    combines = None


def undeclared(K, points_per_agent, rng):
    return Undeclared({k: rng.standard_normal(points_per_agent) for k in range(K)})
"""
BROKEN_ENTRY_POINTS = """[bflnet.learners]
ls-old = lsplug.learn:old
ls-unannotated = lsplug.learn:unannotated
ls-loose = lsplug.learn:loose
ls-unresolved = lsplug.learn:unresolved
ls-good = lsplug.learn:refusing
ls-undeclared = lsplug.learn:undeclared
"""
WHO = "plugin learner '{name}' (lsplug.learn:{factory}, from lsplug)"


@pytest.fixture
def broken(tmp_path, monkeypatch):
    root = write_distribution(tmp_path, "lsplug", {"learn": BROKEN}, BROKEN_ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(root))
    yield
    for name in [m for m in sys.modules if m == "lsplug" or m.startswith("lsplug.")]:
        del sys.modules[name]


@pytest.mark.parametrize("name, factory, why", [
    ("ls-unannotated", "unannotated", "its factory's settings parameter has no annotation; "
     "annotate it with the settings class (settings: Settings)"),
    ("ls-loose", "loose", "its settings class: Loose is not frozen "
     "(@dataclass(frozen=True)); it must be a frozen dataclass of "
     "bflnet.validation.params.param fields"),
    ("ls-unresolved", "unresolved", "the annotation 'Missing' of its factory's settings "
     "parameter does not resolve (NameError: name 'Missing' is not defined)"),
])
def test_a_settings_class_that_is_not_one_is_one_plugin_error(broken, name, factory, why):
    from bflnet.runs.registry import get_scenario
    from bflnet.validation.errors import PluginError

    with pytest.raises(PluginError) as caught:
        get_scenario("custom-learner").config({"learner": name})
    assert str(caught.value) == f"{WHO.format(name=name, factory=factory)}: {why}"


def test_old_factories_have_no_settings_and_new_ones_are_typed(broken):
    from bflnet.runs.provenance import canonical_config
    from bflnet.runs.registry import get_scenario

    scenario = get_scenario("custom-learner")
    config = scenario.config({"learner": "ls-old"})
    assert config.learner_settings is None
    assert not any(key.startswith("learner.") for key in canonical_config(config))
    with pytest.raises(ValueError, match=r"^learner.noise_var: learner 'ls-old' has no "
                       r"settings$"):
        scenario.config({"learner": "ls-old", "learner.noise_var": "0.5"})
    typed = scenario.config({"learner": "ls-good", "learner.noise_var": "2"})
    assert canonical_config(typed)["learner.noise_var"] == 2.0
    assert scenario.config({"learner": "ls-good", "learner.noise_var": 2}) == typed
    assert scenario.config({"learner": "ls-good",
                            "learner_settings": {"noise_var": 2.0}}) == typed


def test_a_learner_that_declares_nothing_is_refused_by_gossip_in_one_line(broken, capsys,
                                                                          tmp_path):
    from bflnet.cli.main import main

    base = ["run", "custom-learner", "--set", "learner=ls-undeclared", "--set", "K=4",
            "--set", "rounds=8", "--no-progress"]
    assert main([*base, "--set", "protocol=random-walk"]) == 0  # the walk needs none
    capsys.readouterr()
    out = tmp_path / "gossip.csv"
    assert main([*base, "--set", "protocol=gossip", "--out", str(out)]) == 2
    who = WHO.format(name="ls-undeclared", factory="undeclared")
    assert capsys.readouterr().err.splitlines() == [
        f"bflnet: error: gossip: {who} declares nothing (no combines attribute); mixing the "
        f"nodes' copies of its state needs combines = Combines.ADDITIVE or "
        f"Combines.AVERAGED (bflnet.learners.base.Combines)"]
    assert not out.exists()
