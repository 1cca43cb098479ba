"""A message on a radio driven by a process (``Link.send``) and by event callbacks
(``Transceiver.send_then``, the consensus protocol's path) gives the same rows: the same
events, in the same order."""

import networkx as nx
import pytest

from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec, make_mac
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

SPEC = RadioSpec(tx_power_dbm=-12.7, bandwidth_hz=1e6, noise_figure_db=7.0, coding_rate=1.0,
                 sinr_threshold_db=0.0, pathloss=LogDistance(3.0, 1.0, 40.0),
                 fading="rayleigh", latency_s=1e-4)


def rows(mac: str, callbacks: bool) -> list[dict]:
    g = nx.random_geometric_graph(12, 0.45, seed=4)
    pos = {k: (60.0 * x, 60.0 * y) for k, (x, y) in nx.get_node_attributes(g, "pos").items()}
    nx.set_node_attributes(g, pos, "pos")
    sim = Simulation(5, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(SPEC, make_mac(mac)),
                            mtu_bits=4000, max_attempts=4)
    env = sim.env
    for k in g:  # every node: three messages to each neighbour, 2.5 packets each
        todo = [j for j in sorted(g[k]) for _ in range(3)]
        if callbacks:
            env.process(_start(env, _Chain(env, net, k, todo).step))
        else:
            def body(k=k, todo=todo):
                for j in todo:
                    yield from net.links[(k, j)].send(Message(k, j, "x", None, 10_000),
                                                      deliver=False)
            env.process(body())
    env.run()
    return sim.recorder.rows


class _Chain:
    """One node's messages, each handed to its radio when the last ended (callbacks)."""

    def __init__(self, env, net, k, todo):
        self.env, self.net, self.k, self.todo = env, net, k, todo

    def step(self, sending=None):
        k, todo = self.k, self.todo
        if sending is not None:
            link = self.net.links[(k, todo.pop(0))]
            link.settle(10_000, (sending.start, self.env.now, sending.attempts,
                                 sending.on_air, sending.arrived()), "x")
        if todo:
            link = self.net.links[(k, todo[0])]
            link.radio.send_then([todo[0]], 10_000, acknowledged=True,
                                 max_attempts=link.max_attempts, then=self.step)


def _start(env, step):
    step()
    yield env.timeout(0)


@pytest.mark.parametrize("mac", ["none", "tdma", "csma", "aloha"])
def test_callbacks_and_process_give_the_same_rows(mac):
    by_process, by_callbacks = rows(mac, False), rows(mac, True)
    assert len(by_process) > 100
    assert by_callbacks == by_process
