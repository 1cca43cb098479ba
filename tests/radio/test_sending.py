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


def test_aloha_defer_row_of_an_interrupted_wait_is_still_written_when_the_wait_ends():
    """The Sending writes ALOHA's defer row as it resumes from its wait; a process
    interrupted during that wait gets it written when the wait ends, as a callback of the
    wait would, and the radio goes to the next message."""
    import contextlib

    import simpy

    g = nx.Graph([(0, 1)])
    nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (10.0, 0.0)}, "pos")
    sim = Simulation(2, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(SPEC, make_mac("aloha", p=0.01)),
                            mtu_bits=4000)
    env, link = sim.env, net.links[(0, 1)]

    def first():
        with contextlib.suppress(simpy.Interrupt):
            yield from link.send(Message(0, 1, "x", None, 1000), deliver=False)

    def second():
        yield env.timeout(2e-9)
        yield from link.send(Message(0, 1, "y", None, 1000), deliver=False)

    proc = env.process(first())
    env.process(second())

    def stop():
        yield env.timeout(1e-9)
        proc.interrupt("stop")

    env.process(stop())
    env.run()
    rows = sim.recorder.rows
    defers = [r for r in rows if r["event"] == "mac" and r.get("kind") == "defer"]
    tx = [r for r in rows if r["event"] == "tx"]
    slot = net.air.slot_s
    # the interrupted attempt's row, at its slot (not at the interrupt); the next message
    # took the radio at the interrupt and transmitted
    assert defers and defers[0]["attempt"] == 1 and defers[0]["time_s"] > 1e-9
    assert defers[0]["time_s"] == pytest.approx(defers[0]["deferrals"] * slot, rel=1e-9)
    assert [r["node"] for r in tx] == [0]
    assert tx[0]["start_s"] >= 2e-9
