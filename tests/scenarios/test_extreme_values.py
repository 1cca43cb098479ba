"""The extreme values of the probe of d2d-medium, custom-learner and ota-langevin, through
the command line: each refused in one line (exit code 2, nothing written) or run
correctly; custom-learner's memory estimate bounds what its runs use, so a size that does
not fit is refused before anything is allocated; a Langevin chain that is no longer finite
says why."""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bflnet
from bflnet.learners.langevin.fald import FALD
from bflnet.runs.registry import get_scenario

SRC = str(Path(bflnet.__file__).resolve().parents[1])
TIMEOUT_S = 300


def cli(argv: list[str], cwd: Path, memory_bytes: int | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``bflnet ARGV`` in a fresh interpreter (under an address-space limit if given)."""
    def limit() -> None:
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(cwd),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", *argv], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=TIMEOUT_S, preexec_fn=limit)


def refused(done: subprocess.CompletedProcess[str], text: str, cwd: Path) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith(f"bflnet: error: {text}"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not (cwd / "t.csv").exists() and not (cwd / "t.csv.json").exists()


D2D = ["run", "d2d-medium", "--set", "tasks=consensus", "--no-progress", "--out", "t.csv"]


@pytest.mark.parametrize(("settings", "text"), [
    (["radius_m=5e-324"], "radius_m: must be a finite number >= 0.001 and <= 1e+07, got "
                          "5e-324"),
    (["aloha_p=5e-324"], "aloha_p: must be a finite number >= 1e-09 and <= 1, got 5e-324"),
    (["aloha_p=5e-324", "K=4096", "macs=aloha"], "aloha_p: must be a finite number >= 1e-09"),
    (["bandwidth_hz=5e-324", "macs=csma"], "bandwidth_hz: must be a finite number >= 1 and "
                                           "<= 1e+12, got 5e-324"),
    (["coding_rate=5e-324", "macs=csma"], "coding_rate: must be a finite number >= 0.001"),
    (["radius_m=0.001", "degree=10000"], "radius_m: radius_m * sqrt(pi K / degree) = "),
])
def test_d2d_medium_extremes_are_refused_in_one_line(settings, text, tmp_path):
    argv = [*D2D, *(x for s in settings for x in ("--set", s))]
    refused(cli(argv, tmp_path), text, tmp_path)


def test_d2d_medium_runs_at_the_smallest_bandwidth_rate_and_aloha_p(tmp_path):
    """CSMA at the narrowest bandwidth and the smallest coding rate (packets of 64 000
    s), ALOHA at the smallest transmit probability: the runs finish, every time finite."""
    done = cli([*D2D, "--set", "macs=csma,aloha", "--set", "bandwidth_hz=1", "--set",
                "coding_rate=0.001", "--set", "aloha_p=1e-9", "--set", "rounds=3",
                "--set", "K=4"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "t.csv")
    assert set(frame["mac"]) == {"csma", "aloha"}
    numbers = frame.select_dtypes("number").to_numpy(float)
    assert not np.isinf(numbers).any() and frame["time_s"].max() > 64_000


def test_ota_langevin_tiny_step_size_is_refused_in_one_line(tmp_path):
    refused(cli(["run", "ota-langevin", "--set", "step_size=5e-324", "--no-progress",
                 "--out", "t.csv"], tmp_path),
            "step_size: must be a finite number >= 1e-12 and <= 1, got 5e-324", tmp_path)


# --- custom-learner: a memory estimate for every protocol -----------------------------------

#: An address space in which a million agents fit under no protocol.
SMALL_MEMORY = 3 * 2**30


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS semantics")
@pytest.mark.parametrize("protocol", ["random-walk", "parameter-server", "gossip"])
def test_a_million_agents_are_refused_before_the_run_under_every_protocol(protocol,
                                                                         tmp_path):
    done = cli(["run", "custom-learner", "--set", "K=1000000", "--set",
                f"protocol={protocol}", "--no-progress", "--out", "t.csv"], tmp_path,
               memory_bytes=SMALL_MEMORY)
    refused(done, "K", tmp_path)
    assert "the run needs about" in done.stderr and "memory" in done.stderr
    assert f"{protocol}: the 1e+06 agents' states and records" in done.stderr


#: Run in a fresh interpreter (after one tiny run there imported everything): the peak
#: resident memory (``VmHWM`` after resetting it) of the measured run over its start.
CHILD = """
import json, sys
from bflnet.scenarios import run_scenario

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

tiny, overrides = json.loads(sys.argv[1]), json.loads(sys.argv[2])
run_scenario("custom-learner", tiny, seed=0)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
start = status("VmRSS:")
run_scenario("custom-learner", overrides, seed=0)
print(json.dumps(status("VmHWM:") - start))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("protocol", ["random-walk", "parameter-server", "gossip"])
def test_custom_learners_estimate_bounds_its_peak_memory(protocol):
    # gossip's rounds cost far more per agent than the others': fewer agents keep it quick
    # while its states and records still dwarf the interpreter's own allocations
    K = 6_000 if protocol == "gossip" else 20_000
    overrides = {"K": K, "graph": "torus", "protocol": protocol, "rounds": 2}
    tiny = {**overrides, "K": 9}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(tiny),
                           json.dumps(overrides)], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    peak = int(done.stdout.strip().splitlines()[-1])
    estimate = get_scenario("custom-learner").config(overrides).footprint().memory_bytes
    print(f"{protocol}: peak {peak / 1e6:.0f} MB, estimate {estimate / 1e6:.0f} MB")
    assert 0.4 * estimate <= peak <= estimate


# --- a Langevin chain that is no longer finite says why --------------------------------------

def _fald(step_size: float) -> FALD:
    def grad(theta: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return 1e3 * theta  # a steep quadratic: a step above 2e-3 diverges

    return FALD([grad, grad], step_size=step_size)


def test_a_runaway_chain_is_named_as_one():
    fald = _fald(0.5)
    rng = np.random.default_rng(0)
    theta = np.ones(3)
    with pytest.raises(ValueError) as caught:
        for _ in range(200):
            theta, _ = fald.merge(theta, fald.local_updates(theta, [rng, rng]).mean(axis=0),
                                  0.0, rng)
    message = str(caught.value)
    assert message.startswith("FALD: the sample is no longer finite: the chain grew without "
                              "bound") and "step_size is too large" in message
    assert "\n" not in message


def test_a_non_finite_update_is_named_as_such():
    fald = _fald(1e-6)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^FALD: the sample is no longer finite: this "
                                         "round's mean update is not finite") as caught:
        fald.merge(np.ones(3), np.array([0.0, math.nan, 0.0]), 0.0, rng)
    assert "step_size" not in str(caught.value)
