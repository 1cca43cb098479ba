"""With every fault at rate zero the results are those of the protocols before fault
support existed, byte for byte: the faults cost nothing when off.

The golden tables in tests/data/faults_off/ were written by :func:`runs` with
``faults=False`` on commit 6cdcd5e, the last one before any fault code (node and link
outages, token regeneration, keep_state). Here the same runs get zero-rate faults on every
node and every link (empty traces: never down), ``keep_state=True``, and must print the
same CSV text (floats in full precision).

To regenerate on that commit: ``git worktree add /tmp/old 6cdcd5e`` and run
``PYTHONPATH=/tmp/old/src python tests/simulator/test_faults_off.py tests/data/faults_off``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

GOLDEN = Path(__file__).parent.parent / "data" / "faults_off"


def _network(sim, graph, faults: bool, **kwargs):
    from bflnet.channels import FixedRateChannel
    from bflnet.simulator import FixedStepTime

    extra = {}
    if faults:
        from bflnet.faults.availability import Trace
        never = Trace([])
        pairs = {*graph.edges, *(((k, "server") for k in graph.nodes)
                                 if kwargs.get("server") else ())}
        extra = dict(node_outages=never, link_outages=dict.fromkeys(pairs, never),
                     keep_state=True)
    return sim.build_network(graph, channel=FixedRateChannel(2e5, 0.003, loss_prob=0.2),
                             compute=FixedStepTime(0.002), **kwargs, **extra)


def runs(faults: bool) -> dict[str, str]:
    """CSV text of one small run of each protocol (lossy links, message rows recorded)."""
    from bflnet.data.synthetic import bernoulli_agents
    from bflnet.learners.conjugate.gfvl import GFVL
    from bflnet.learners.gossip.averaging import ConsensusAveraging
    from bflnet.protocols import RandomWalkProtocol, StopRule
    from bflnet.protocols.consensus import ConsensusProtocol
    from bflnet.protocols.graphs.mixing import make_mixing
    from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.protocols.scheduling import RoundRobinSelector
    from bflnet.simulator import Simulation

    out = {}
    graph = nx.cycle_graph(6)
    data = bernoulli_agents(6, 20, 0.3, np.random.default_rng(1))
    sim = Simulation(7, record_messages=True)
    _network(sim, graph, faults)
    out["random_walk"] = sim.run(RandomWalkProtocol(
        GFVL.beta_bernoulli(data, a=2, b=2), MetropolisHastingsWalk(graph),
        StopRule(max_iterations=60))).frame
    sim = Simulation(8, record_messages=True)
    _network(sim, graph, faults, server=True)
    out["parameter_server"] = sim.run(ParameterServerProtocol(
        GFVL.beta_bernoulli(data, a=2, b=2), StopRule(max_iterations=15),
        selector=RoundRobinSelector(2))).frame
    sim = Simulation(9, record_messages=True)
    _network(sim, graph, faults)
    out["consensus"] = sim.run(ConsensusProtocol(
        ConsensusAveraging(), make_mixing("metropolis-hastings", graph),
        StopRule(max_iterations=20))).frame
    return {name: frame.to_csv(index=False) for name, frame in out.items()}


@pytest.fixture(scope="module")
def with_zero_rate_faults() -> dict[str, str]:
    return runs(faults=True)


@pytest.mark.parametrize("name", ["random_walk", "parameter_server", "consensus"])
def test_zero_rate_faults_give_the_tables_of_the_code_without_faults(
        name, with_zero_rate_faults):
    golden = (GOLDEN / f"{name}.csv").read_text()
    assert with_zero_rate_faults[name] == golden
    assert ",message," in golden and len(golden.splitlines()) > 20  # lossy links, messages


if __name__ == "__main__":  # write the golden tables (on commit 6cdcd5e)
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for name, text in runs(faults=False).items():
        (target / f"{name}.csv").write_text(text)
        print(f"wrote {target / name}.csv ({len(text)} characters)")
