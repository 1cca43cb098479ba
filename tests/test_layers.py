"""One-way layers: the learners never import the simulator, the protocols or SimPy; the
analysis never imports the scenarios."""

import subprocess
import sys

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def __init__(self, names): self.names = names
    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + '.') for n in self.names):
            raise ImportError('blocked import of ' + name)
        return None
sys.meta_path.insert(0, Block(BLOCKED))
"""


def _run(blocked, code):
    script = f"BLOCKED = {blocked!r}\n" + BLOCK + code
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)


def test_learners_import_without_simpy_or_the_simulator():
    code = """
import bflnet.learners
from bflnet.learners import GFVL, DSVGD, FedAvg, ConsensusAveraging, Update, Work
import bflnet.learners.particles.svgd, bflnet.learners.models.classifiers
import bflnet.learners.evaluation
import bflnet.learners.models.torch_utils, bflnet.learners.conjugate.expfam
assert 'simpy' not in sys.modules
print('ok')
"""
    result = _run(["simpy", "bflnet.simulator", "bflnet.protocols", "bflnet.scenarios",
                   "bflnet.channels"], code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_importing_the_learner_interfaces_loads_neither_torch_nor_scipy():
    code = """
from bflnet.learners import GlobalStateLearner, Update
from bflnet.learners.base import ConsensusLearner, Work
assert 'torch' not in sys.modules and 'scipy' not in sys.modules, sorted(sys.modules)
print('ok')
"""
    result = _run([], code)
    assert result.returncode == 0, result.stderr


def test_the_simulator_is_usable_without_torch():
    code = """
import networkx as nx
from bflnet.learners.gossip.averaging import ConsensusAveraging
from bflnet.protocols import ConsensusProtocol, StopRule
from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
from bflnet.simulator import Simulation
sim = Simulation(1)
graph = nx.cycle_graph(4)
sim.build_network(graph)
result = sim.run(ConsensusProtocol(ConsensusAveraging(), metropolis_hastings_weights(graph),
                                   StopRule(max_iterations=3)))
assert len(result.frame) == 4 and set(result.agent_states) == {0, 1, 2, 3}
print('ok')
"""
    result = _run(["torch"], code)
    assert result.returncode == 0, result.stderr
