"""The random walk's cover time under node churn against an independent simulation of the
same process.

The independent simulation below shares no code with the simulator: plain Python over
the same rules as the random-walk protocol with node outages (RandomWalkProtocol's
docstring), with its own on/off draws and its own Metropolis-Hastings matrix:

* every node alternates exponential up and down times (stationary start);
* the holder computes for ``c`` seconds; if it is down at any moment of that time its
  update is lost: ``timeout`` after the crash the node that handed it the token (or the
  holder itself) regenerates the token once it is up, and decides where it goes without
  computing;
* a walk decision draws the next node from the MH matrix; staying puts the holder to
  compute again; a hop is a packet of ``h`` seconds with up to ``cap`` ARQ attempts: an
  attempt started while the sender or the receiver is down is lost, an outage that begins
  during an attempt cuts the message there, and a message cut or lost to an outage makes
  the holder decide again;
* an update that completes is one iteration; the cover iteration is the first at which
  every node has completed one, the cover time that iteration's end.

Both give distributions over seeds; the test compares their means (a z-test at 4
standard errors) and their distributions (two-sample Kolmogorov-Smirnov, p > 1e-3).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from bflnet.channels import FixedRateChannel
from bflnet.data.synthetic import bernoulli_agents
from bflnet.faults.availability import OnOff
from bflnet.learners.conjugate.gfvl import GFVL
from bflnet.protocols import RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import FixedStepTime, Simulation

DOWN_FRACTION, MEAN_DOWN_S = 0.2, 0.05
COMPUTE_S, RATE_BPS, LATENCY_S, TOKEN_BITS = 0.01, 1e5, 0.002, 128
HOP_S = TOKEN_BITS / RATE_BPS + LATENCY_S
TIMEOUT_S, ARQ_CAP = 0.05, 8
RUNS = 300


class OnOffNode:
    """A node's alternating exponential up/down times from a stationary start."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.mean_up = MEAN_DOWN_S * (1 - DOWN_FRACTION) / DOWN_FRACTION
        self.up = rng.random() >= DOWN_FRACTION  # the state at time 0
        self.changes = [self._stay(self.up)]  # flip times, extended on demand

    def _stay(self, up: bool) -> float:
        return float(self.rng.exponential(self.mean_up if up else MEAN_DOWN_S))

    def _extend(self, t: float) -> None:
        while self.changes[-1] <= t:
            up_now = self.up == (len(self.changes) % 2 == 0)  # state after the last flip
            self.changes.append(self.changes[-1] + self._stay(up_now))

    def is_up(self, t: float) -> bool:
        self._extend(t)
        flips = sum(1 for c in self.changes if c <= t)
        return self.up == (flips % 2 == 0)

    def next_change(self, t: float) -> float:
        self._extend(t)
        return next(c for c in self.changes if c > t)


def mh_matrix(graph: nx.Graph) -> np.ndarray:
    """P_ij = min(1/d_i, 1/d_j) for neighbours, the rest on the diagonal."""
    nodes = sorted(graph.nodes)
    matrix = np.zeros((len(nodes), len(nodes)))
    for i in nodes:
        for j in graph.neighbors(i):
            matrix[i, j] = min(1 / graph.degree(i), 1 / graph.degree(j))
        matrix[i, i] = 1 - matrix[i].sum()
    return matrix


def independent_cover(graph: nx.Graph, start: int, rng: np.random.Generator
                      ) -> tuple[int, float]:
    """(cover iteration, cover time) of one run of the process in the module docs."""
    matrix = mh_matrix(graph)
    k = len(matrix)
    nodes = [OnOffNode(np.random.default_rng(rng.integers(2**63))) for _ in range(k)]
    t, holder, previous, seen, iterations = 0.0, start, None, set(), 0
    compute = True
    while True:
        if compute:
            node = nodes[holder]
            if node.is_up(t) and node.next_change(t) > t + COMPUTE_S:
                t += COMPUTE_S
                iterations += 1
                seen.add(holder)
                if len(seen) == k:
                    return iterations, t
            else:  # crash: the update is lost, the token regenerated
                t = (t if not node.is_up(t) else node.next_change(t)) + TIMEOUT_S
                keeper = previous if previous is not None else holder
                while not nodes[keeper].is_up(t):
                    t = nodes[keeper].next_change(t)
                holder, previous = keeper, None
        compute = True
        while True:  # walk decisions until the token moves or stays
            nxt = int(rng.choice(k, p=matrix[holder]))
            if nxt == holder:
                break
            a, b, tries, moved = nodes[holder], nodes[nxt], 0, False
            while True:
                up = a.is_up(t) and b.is_up(t)
                if up:
                    change = min(a.next_change(t), b.next_change(t))
                    if t + HOP_S > change:
                        t = change  # cut mid-air
                        break
                    t += HOP_S
                    moved = True
                    break
                t += HOP_S  # an attempt lost to the outage
                tries += 1
                if tries >= ARQ_CAP:
                    break
            if moved:
                previous, holder = holder, nxt
                break


def simulator_cover(graph: nx.Graph, start: int, seed: int) -> tuple[int, float]:
    """(cover iteration, cover time) of conjugate G-FVL under the random-walk protocol."""
    k = graph.number_of_nodes()
    learner = GFVL.beta_bernoulli(bernoulli_agents(k, 10, 0.3, np.random.default_rng(seed)),
                                  a=2, b=2)
    sim = Simulation(seed)
    sim.build_network(graph, channel=FixedRateChannel(RATE_BPS, LATENCY_S),
                      compute=FixedStepTime(COMPUTE_S), max_attempts=ARQ_CAP,
                      node_outages=OnOff.with_downtime(DOWN_FRACTION, MEAN_DOWN_S,
                                                       stationary=True))
    protocol = RandomWalkProtocol(learner, MetropolisHastingsWalk(graph),
                                  StopRule(cover=True, max_iterations=10_000),
                                  token_timeout_s=TIMEOUT_S, start=start)
    frame = sim.run(protocol).frame
    last = frame[frame.event == "iteration"].iloc[-1]
    assert len(set(protocol.visits)) == k and last["kl"] < 1e-10  # exact at cover
    return int(last["iteration"]), float(last["time_s"])


def test_the_independent_process_has_the_configured_down_fraction():
    node = OnOffNode(np.random.default_rng(0))
    grid = np.linspace(0, 500, 20_001)
    assert np.mean([not node.is_up(t) for t in grid]) == pytest.approx(DOWN_FRACTION, abs=0.03)


@pytest.mark.parametrize("graph", [nx.cycle_graph(6), nx.path_graph(5)],
                         ids=["ring-6", "path-5"])
def test_cover_time_under_churn_matches_an_independent_simulation(graph):
    protocol = np.array([simulator_cover(graph, 0, seed) for seed in range(RUNS)])
    rng = np.random.default_rng(12345)
    reference = np.array([independent_cover(graph, 0, rng) for _ in range(RUNS)])
    for column, name in ((0, "iterations"), (1, "seconds")):
        a, b = protocol[:, column], reference[:, column]
        z = (a.mean() - b.mean()) / math.sqrt(a.var(ddof=1) / RUNS + b.var(ddof=1) / RUNS)
        ks = stats.ks_2samp(a, b)
        print(f"{name}: protocol {a.mean():.3f}, independent {b.mean():.3f}, z = {z:+.2f}, "
              f"KS p = {ks.pvalue:.3f}")
        assert abs(z) < 4, name
        assert ks.pvalue > 1e-3, name
    # churn costs time: the cover takes longer than without outages' compute + hops alone
    assert protocol[:, 1].mean() > protocol[:, 0].mean() * COMPUTE_S
