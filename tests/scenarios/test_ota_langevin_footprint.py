"""ota-langevin's memory estimate against what a run allocates, in the manner of
test_largest_sizes: each method alone at a size where the round's buffers dominate (K = 32
devices, d ≈ 400 000), run in a fresh interpreter (after one tiny run there imported
everything), its peak resident memory over the run (``VmHWM`` after resetting it)
compared with ``footprint()``. The estimate is an upper bound that matches: within it, and
the ideal-link methods no longer charged the over-the-air buffers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bflnet.runs.registry import get_scenario
from bflnet.scenarios.ota.ota_langevin import IDEAL, METHODS

pytestmark = [pytest.mark.usefixtures("use_tiny_fashion"),
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="reads /proc/self/status")]

SIZE = {"K": 32, "points_per_agent": 40, "hidden": 500, "batch_size": 20, "rounds": 1,
        "burn_in": 0, "eval_every": 1, "eval_size": 50, "snr_db": "30"}
#: The data set's part of the estimate is Fashion-MNIST's; the tests load a tiny set.
DATA_PART = "Fashion-MNIST"


#: Run in a fresh interpreter, so that the peak does not depend on which tests ran before
#: in this process (memory they freed but the allocator kept would be reused unseen): one
#: tiny run first imports everything (torch alone adds some 300 MB), then the peak resident
#: memory (``VmHWM`` after resetting it) of the measured run over the memory at its start.
CHILD = """
import json, sys
from bflnet.scenarios import run_scenario

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

tiny, overrides = json.loads(sys.argv[1]), json.loads(sys.argv[2])
run_scenario("ota-langevin", tiny, seed=0)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current resident memory
start = status("VmRSS:")
run_scenario("ota-langevin", overrides, seed=0)
print(json.dumps(status("VmHWM:") - start))
"""


def peak_bytes(overrides: dict) -> int:
    """The peak resident memory a run of ``overrides`` adds, in a fresh interpreter."""
    tiny = {**SIZE, "K": 2, "hidden": 2, "methods": ",".join(METHODS)}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(tiny), json.dumps(overrides)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.strip().splitlines()[-1])


def estimate_bytes(overrides: dict) -> tuple[float, float]:
    """The estimate without the data set's part, and its round-buffer part."""
    scenario = get_scenario("ota-langevin")
    parts = scenario.config(overrides).footprint().parts
    rest = sum(p.bytes for p in parts if not p.what.startswith(DATA_PART))
    rounds = next(p.bytes for p in parts if p.what.startswith("the devices' changes"))
    return rest, rounds


@pytest.mark.parametrize("method", METHODS)
def test_each_methods_estimate_bounds_and_matches_its_peak_memory(method):
    overrides = {**SIZE, "methods": method}
    estimate, _ = estimate_bytes(overrides)
    peak = peak_bytes(overrides)
    print(f"{method}: peak {peak / 1e6:.0f} MB, estimate {estimate / 1e6:.0f} MB "
          f"({peak / estimate:.2f})")
    assert 0.7 * estimate <= peak <= estimate


def test_ideal_links_are_charged_less_than_the_air_and_a_run_its_largest_method():
    def rounds(methods: str) -> float:
        return estimate_bytes({**SIZE, "methods": methods})[1]

    # each ideal-link method below its over-the-air counterpart, digital the largest
    assert rounds("fald") < rounds("wfald") < rounds("digital")
    assert rounds("fedavg") < rounds("ota-fedavg") < rounds("digital")
    assert set(IDEAL) == {"fald", "fedavg"}
    assert rounds("fald,digital,wfald") == rounds("digital")
