"""reception="per": packets lost with the packet error rate of their SINR (uncoded BPSK)."""

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec, packet_error_rate
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

BITS = 200


def placed(positions, edges):
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": p}) for k, p in enumerate(positions))
    g.add_edges_from(edges)
    return g


def test_per_is_one_minus_the_bpsk_bit_success_to_the_bits():
    for snr_db in (-5.0, 0.0, 5.0, 8.0):
        g = 10 ** (snr_db / 10)
        ber = 0.5 * math.erfc(math.sqrt(g))
        assert packet_error_rate(g, BITS) == pytest.approx(1 - (1 - ber) ** BITS, rel=1e-9)
    assert packet_error_rate(0.0, 1) == pytest.approx(0.5)
    assert packet_error_rate(1e6, 10**6) == 0.0


def send_together(spec, positions, edges, n, seed=1):
    """``n`` packets 0 -> 1 and, at the same instants, 2 -> 3 (when there is a node 2)."""
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(placed(positions, edges), medium=SharedMediumSpec(spec),
                            max_attempts=1, mtu_bits=BITS)
    ok = []

    def body(src, dst, out):
        for i in range(n):
            yield sim.env.timeout(i * 0.01 - sim.env.now)
            d = yield from net.links[(src, dst)].send(Message(src, dst, "x", None, BITS),
                                                      deliver=False)
            if out is not None:
                out.append(d.delivered)

    for src, dst in edges:
        sim.env.process(body(src, dst, ok if src == 0 else None))
    sim.env.run()
    return ok, sim.recorder.to_frame(), net


def test_success_rate_and_causes_match_the_per_of_the_sinr_and_of_the_snr():
    spec = RadioSpec(tx_power_dbm=-30.2, bandwidth_hz=1e6, noise_figure_db=7.0,
                     coding_rate=1.0, pathloss=LogDistance(3.0, 1.0, 40.0), fading="none",
                     reception="per")
    # receiver 1 at 10 m from 0; interferer 2 at 22.7 m from 1, sending to 3 at once
    positions = [(0.0, 0.0), (10.0, 0.0), (32.7, 0.0), (32.7, 10.0)]
    n = 3000
    ok, frame, net = send_together(spec, positions, [(0, 1), (2, 3)], n)
    medium = net.air.medium
    s = spec.tx_mw * spec.pathloss.gain(10.0)
    i = spec.tx_mw * spec.pathloss.gain(22.7)
    per_sinr = packet_error_rate(s / (medium.noise + i), BITS)
    per_snr = packet_error_rate(s / medium.noise, BITS)
    assert 0.1 < per_snr < per_sinr - 0.1 < 0.8  # both causes worth testing
    p = 1 - per_sinr
    assert abs(np.mean(ok) - p) < 4 * math.sqrt(p * (1 - p) / n)
    lost = frame[(frame.event == "mac") & (frame.kind == "collision") & (frame.node == 0)]
    q = per_sinr - per_snr  # lost, though the same draw passes at the SNR alone
    assert abs(len(lost) / n - q) < 4 * math.sqrt(q * (1 - q) / n)
    assert (lost.cause == "collision").all()


def test_bad_reception_is_a_one_line_error():
    with pytest.raises(ValueError, match="reception: must be one of threshold, per") as info:
        RadioSpec(reception="soft")
    assert "\n" not in str(info.value)
