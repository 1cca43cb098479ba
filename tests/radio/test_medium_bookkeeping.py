"""The medium's running totals against a brute-force SINR: every reception of random
overlapping unicasts and broadcasts decided as a sweep over all transmissions would."""

import networkx as nx
import numpy as np

from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec
from bflnet.simulator import Simulation


def brute_force(txs, starts, ends, medium, i):
    """{receiver: received} of ``txs[i]``, from every transmission's drawn powers."""
    tx = txs[i]
    outcome = {}
    overlapping = [txs[j] for j in np.flatnonzero((starts < tx.end) & (ends > tx.start))]
    for r in tx.receivers:
        if any(o.sender == r for o in overlapping):
            outcome[r] = False  # half-duplex
            continue
        others = [o for o in overlapping if o is not tx and o.sender != r and r in o.near]
        instants = [tx.start] + [o.start for o in others if o.start > tx.start]
        peak = max(sum(o.power[np.searchsorted(o.near, r)] for o in others
                       if o.start <= t < o.end) for t in instants)
        signal = tx.power[np.searchsorted(tx.near, r)]
        outcome[r] = bool(signal >= medium.threshold * (medium.noise + peak))
    return outcome


def test_every_reception_is_the_brute_force_sinr_over_its_whole_packet():
    K = 10
    rng = np.random.default_rng(4)
    g = nx.empty_graph(K)
    for k in g:
        g.nodes[k]["pos"] = tuple(rng.uniform(0.0, 80.0, 2))
    spec = RadioSpec(tx_power_dbm=-10.0, bandwidth_hz=1e6, noise_figure_db=7.0,
                     coding_rate=1.0, sinr_threshold_db=3.0,
                     pathloss=LogDistance(3.0, 1.0, 40.0, shadowing_db=4.0),
                     fading="rayleigh", interference_range_m=60.0)
    sim = Simulation(2)
    net = sim.build_network(g, medium=SharedMediumSpec(spec))
    medium, env = net.air.medium, sim.env
    txs = []

    def node(k):
        draws = np.random.default_rng(100 + k)
        heard = [int(n) for n in medium.near(k) if n != k]
        while True:
            yield env.timeout(draws.exponential(2e-3))
            if not heard:
                return
            size = 1 if draws.random() < 0.6 else int(draws.integers(2, len(heard) + 1))
            receivers = draws.choice(heard, size=min(size, len(heard)), replace=False)
            airtime = draws.uniform(0.5e-3, 2e-3)
            tx = medium.start(k, receivers.tolist(), airtime, 100)
            txs.append(tx)
            yield env.timeout(airtime)
            medium.finish(tx)

    for k in range(K):
        env.process(node(k))
    env.run(until=1.0)
    decided = [i for i, tx in enumerate(txs) if tx.outcome is not None]
    assert len(decided) > 1000
    starts = np.array([tx.start for tx in txs])
    ends = np.array([tx.end for tx in txs])
    receptions = collisions = 0
    for i in decided:
        expected = brute_force(txs, starts, ends, medium, i)
        assert txs[i].outcome == expected, i
        receptions += len(expected)
        collisions += sum(c == "collision" for c in txs[i].causes.values())
    # a test worth its name: many receptions, a good share lost to interference
    assert receptions > 2000 and collisions > 0.05 * receptions
