"""Straggler compute models: log-normal times from each node's own stream, trace playback,
their validation, and how a network hands them streams and fresh per-run state."""

import doctest
import math

import networkx as nx
import numpy as np
import pytest

from bflnet.simulator import Simulation, compute
from bflnet.simulator.compute import (
    FixedStepTime,
    LogNormalTime,
    NodeTrace,
    TraceTime,
    Work,
    read_compute_trace,
)
from bflnet.simulator.rng import RngStreams

BAD_REALS = [float("nan"), float("inf"), -float("inf"), -1.0, 1e308, True, "1"]


def test_log_normal_median_and_spread_over_many_draws():
    model = LogNormalTime(0.2, sigma=0.8)
    rng = np.random.default_rng(1)
    logs = np.log([model.duration(Work(steps=3), rng) for _ in range(4000)])
    # log duration ~ N(log(3 * 0.2), 0.8^2); standard errors ~0.013 (mean), ~0.009 (sd)
    assert abs(logs.mean() - math.log(0.6)) < 0.06
    assert abs(logs.std() - 0.8) < 0.05


def test_log_normal_units_per_step_flop_or_update():
    work = Work(steps=4, flops=1e6)
    z = float(np.random.default_rng(7).standard_normal())
    factor = 0.5 * math.exp(0.3 * z)
    for per, units in (("step", 4), ("flop", 1e6), ("update", 1)):
        got = LogNormalTime(0.5, 0.3, per).duration(work, np.random.default_rng(7))
        assert got == pytest.approx(units * factor, rel=1e-12)
    assert LogNormalTime(0.1, 0.0).duration(Work(steps=3), np.random.default_rng(0)) \
        == pytest.approx(0.3)


@pytest.mark.parametrize("field", ["median_s", "sigma"])
@pytest.mark.parametrize("value", BAD_REALS)
def test_bad_log_normal_settings_name_the_field(field, value):
    kwargs = {"median_s": 0.1, "sigma": 0.5, field: value}
    with pytest.raises(ValueError, match=f"^{field}: must be a finite number") as info:
        LogNormalTime(**kwargs)
    assert "\n" not in str(info.value)


def test_log_normal_rejects_a_zero_median_an_unknown_unit_and_a_missing_stream():
    with pytest.raises(ValueError, match="^median_s: must be a finite number in"):
        LogNormalTime(0.0)
    with pytest.raises(ValueError, match="^per: must be one of step, flop, update"):
        LogNormalTime(0.1, per="epoch")
    with pytest.raises(ValueError, match="needs the node's stream"):
        LogNormalTime(0.1).duration(Work(steps=1))


def test_network_hands_each_node_its_own_compute_stream():
    def durations(seed, graph):
        sim = Simulation(seed)
        net = sim.build_network(graph, compute=LogNormalTime(1.0, sigma=1.0, per="update"))
        return [net.nodes[0].compute_time(Work()) for _ in range(3)]

    expected_rng = RngStreams(4).numpy("compute.0")
    expected = [math.exp(float(expected_rng.standard_normal())) for _ in range(3)]
    assert durations(4, nx.empty_graph(2)) == pytest.approx(expected, rel=1e-15)
    # node 0's draws do not depend on the other nodes
    assert durations(4, nx.empty_graph(5)) == durations(4, nx.empty_graph(2))
    assert durations(5, nx.empty_graph(2)) != durations(4, nx.empty_graph(2))


def test_a_deterministic_model_gets_no_stream():
    sim = Simulation(0)
    net = sim.build_network(nx.empty_graph(2), compute=FixedStepTime(0.5))
    assert net.nodes[0].compute_stream is None
    assert net.nodes[0].compute_time(Work(steps=2)) == 1.0


def test_trace_plays_back_per_node_and_cycles():
    trace = TraceTime({"0": [1.0, 2.5], "1": [4.0]})
    node0, node1 = trace.for_node(0), trace.for_node(1)
    assert [node0.duration(Work(steps=9)) for _ in range(5)] == [1.0, 2.5, 1.0, 2.5, 1.0]
    assert [node1.duration(Work()) for _ in range(2)] == [4.0, 4.0]


def test_trace_without_cycling_or_without_the_node_fails_in_one_line():
    once = TraceTime({"0": [1.0]}, cycle=False).for_node(0)
    assert once.duration(Work()) == 1.0
    with pytest.raises(ValueError, match=r"^compute trace: node 0 has used all its 1 "
                                         r"durations \(cycle=False\)$"):
        once.duration(Work())
    with pytest.raises(ValueError, match="^compute trace: no durations for node 'server'$"):
        TraceTime({"0": [1.0]}).for_node("server").duration(Work())


@pytest.mark.parametrize("value", BAD_REALS)
def test_bad_trace_durations_name_the_entry(value):
    with pytest.raises(ValueError, match=r"^durations\['3'\]\[1\]: must be a finite number"):
        TraceTime({"3": [1.0, value]})


def test_a_trace_starts_afresh_in_every_run_on_a_rebound_network():
    trace = TraceTime({"0": [1.0, 2.0, 3.0], "1": [5.0]})
    first = Simulation(0)
    net = first.build_network(nx.empty_graph(2), compute=trace)
    assert [net.nodes[0].compute_time(Work()) for _ in range(2)] == [1.0, 2.0]
    Simulation(1).use_network(net)
    assert isinstance(net.nodes[0].compute, NodeTrace)
    assert net.nodes[0].compute_time(Work()) == 1.0


def test_read_compute_trace(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("node,duration\n0,1.5\n1,0.25\n0,2\n")
    trace = read_compute_trace(path, cycle=False)
    assert trace.durations == {"0": (1.5, 2.0), "1": (0.25,)}
    assert trace.cycle is False


@pytest.mark.parametrize(("text", "message"), [
    ("agent,duration\n0,1\n", "the header must start with node,duration, got agent,duration"),
    ("", "the header must start with node,duration, got nothing"),
    ("node,duration\n", "no rows"),
    ("node,duration\n,1\n", "line 2: node is empty"),
    ("node,duration\n0,soon\n", "line 2: duration must be a number of seconds, got 'soon'"),
    ("node,duration\n0,1\n0,nan\n", "line 3: duration: must be a finite number"),
    ("node,duration\n0,inf\n", "line 2: duration: must be a finite number"),
    ("node,duration\n0,-1\n", "line 2: duration: must be a finite number"),
    ("node,duration\n0,1e308\n", "line 2: duration: must be a finite number"),
])
def test_bad_compute_trace_files_give_one_line_errors(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_compute_trace(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_compute_trace_file(tmp_path):
    with pytest.raises(ValueError, match="^compute trace: no such file"):
        read_compute_trace(tmp_path / "nope.csv")


def test_a_factory_that_returns_no_compute_model_is_refused():
    with pytest.raises(ValueError, match="^compute: must be a ComputeModel"):
        Simulation(0).build_network(nx.empty_graph(2), compute=lambda node: 0.5)


def test_doctests():
    result = doctest.testmod(compute)
    assert result.failed == 0 and result.attempted >= 6
