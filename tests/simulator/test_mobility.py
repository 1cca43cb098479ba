"""Random waypoint mobility and the live graph: positions stay in the area, speeds in their
range, each node draws from its own stream, the edges are the pairs within range at every
update, each change is a row, and the network's links and fading distances follow."""

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.channels import FixedRateChannel, RayleighChannel
from bflnet.faults.availability import OnOff
from bflnet.faults.mobility import RandomWaypoint
from bflnet.protocols.graphs.topologies import random_geometric
from bflnet.simulator import Simulation
from bflnet.simulator.live_graph import LiveGraph, Mobility
from bflnet.simulator.rng import RngStreams

AREA = 100.0


def motion(spec, k, seed, start=None):
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, spec.area_m, (k, 2)) if start is None else start
    return spec.motion(start, [np.random.default_rng([seed, i]) for i in range(k)])


def test_positions_stay_in_the_area_and_steps_respect_the_top_speed():
    spec = RandomWaypoint(AREA, 2.0, 10.0, pause_s=0.5)
    for seed in range(5):
        m = motion(spec, 30, seed)
        prev = m.positions(0.0)
        for t in np.arange(0.25, 60.0, 0.25):
            xy = m.positions(float(t))
            assert ((xy >= 0) & (xy <= AREA)).all()
            step = np.linalg.norm(xy - prev, axis=1)
            assert (step <= 10.0 * 0.25 + 1e-9).all()
            prev = xy


def test_leg_speeds_are_uniform_in_the_range_over_seeds():
    spec = RandomWaypoint(AREA, 1.0, 3.0)
    speeds = []
    for seed in range(40):
        m = motion(spec, 10, seed)
        for t in np.arange(1.0, 200.0, 1.0):
            m.positions(float(t))
            speeds.append(m.speed.copy())
    legs = np.unique(np.concatenate(speeds))  # one value per leg
    assert legs.min() >= 1.0 and legs.max() <= 3.0
    assert len(legs) > 500
    # uniform on [1, 3]: mean 2, sd 1/sqrt(3); the mean of n legs within 5 standard errors
    assert abs(legs.mean() - 2.0) < 5 / np.sqrt(3 * len(legs))


def test_a_node_moves_at_its_leg_speed_between_waypoints():
    spec = RandomWaypoint(AREA, 4.0, 4.0, pause_s=0.0)
    m = motion(spec, 1, 3)
    a = m.positions(0.0)
    b = m.positions(0.5)
    if m.legs[0] == 1:  # still on the first leg
        assert np.linalg.norm(b - a) == pytest.approx(2.0)


def test_zero_speed_never_moves():
    spec = RandomWaypoint(AREA, 0.0, 0.0)
    m = motion(spec, 5, 0)
    start = m.positions(0.0)
    assert np.array_equal(m.positions(1e6), start)


def test_each_node_draws_from_its_own_stream_only():
    spec = RandomWaypoint(AREA, 1.0, 5.0, 1.0)
    start = np.random.default_rng(9).uniform(0, AREA, (6, 2))
    few = motion(spec, 3, 1, start[:3])
    many = motion(spec, 6, 1, start)
    for t in (3.0, 50.0, 400.0):
        assert np.array_equal(few.positions(t), many.positions(t)[:3])


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"area_m": float("nan")}, "area_m"),
    ({"area_m": -1.0}, "area_m"),
    ({"area_m": 1e300}, "area_m"),
    ({"speed_min": float("inf")}, "speed_min"),
    ({"speed_min": -1.0}, "speed_min"),
    ({"speed_max": 0.5}, "speed_max"),
    ({"speed_min": 0.0}, "speed_min"),
    ({"pause_s": float("nan")}, "pause_s"),
    ({"pause_s": -2.0}, "pause_s"),
])
def test_bad_random_waypoint_settings_are_one_line_errors(kwargs, field):
    args = {"area_m": AREA, "speed_min": 1.0, "speed_max": 2.0, **kwargs}
    with pytest.raises(ValueError, match=f"^{field}:") as info:
        RandomWaypoint(**args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"radius_m": 0.0}, "radius_m"), ({"radius_m": float("inf")}, "radius_m"),
    ({"update_s": -1.0}, "update_s"), ({"update_s": float("nan")}, "update_s"),
    ({"model": "rwp"}, "model")])
def test_bad_mobility_settings_are_one_line_errors(kwargs, field):
    args = {"model": RandomWaypoint(AREA, 1.0, 2.0), "radius_m": 30.0, "update_s": 0.1,
            **kwargs}
    with pytest.raises(ValueError, match=f"^{field}:"):
        Mobility(**args)


def within(positions, radius):
    d = np.linalg.norm(positions[:, None] - positions[None], axis=2)
    u, v = np.nonzero(np.triu(d <= radius, k=1))
    return set(zip(u.tolist(), v.tolist(), strict=True))


def test_the_live_edges_are_the_pairs_within_range_at_every_update():
    graph = random_geometric(25, 30.0, AREA, np.random.default_rng(2))
    spec = Mobility(RandomWaypoint(AREA, 3.0, 8.0, 0.5), 30.0, 0.2)
    live = LiveGraph(graph, spec, RngStreams(4))
    edges = {tuple(e) for e in zip(*(a.tolist() for a in live.edges()), strict=True)}
    changes = 0
    for n in range(1, 150):
        added, removed = live.update(n * 0.2)
        new = within(live.positions, 30.0)
        assert {tuple(p) for p in added.tolist()} == new - edges
        assert {tuple(p) for p in removed.tolist()} == edges - new
        edges = new
        assert {tuple(sorted(e)) for e in live.graph.edges} == edges
        for k in range(25):
            assert set(live.neighbours[k]) == live.adjacency[k] == set(live.graph.adj[k])
            assert list(live.neighbours[k]) == sorted(live.neighbours[k])
        changes += len(added) + len(removed)
    assert changes > 20 and live.version > 10


def test_a_graph_without_positions_or_with_other_edges_is_refused():
    spec = Mobility(RandomWaypoint(AREA, 1.0, 2.0), 30.0, 0.1)
    with pytest.raises(ValueError, match="^mobility: needs a graph whose nodes carry"):
        Simulation(0).build_network(nx.cycle_graph(5), mobility=spec)
    graph = random_geometric(10, 40.0, AREA, np.random.default_rng(0))
    with pytest.raises(ValueError, match="^mobility: the graph's edges must be"):
        Simulation(0).build_network(graph, mobility=Mobility(spec.model, 20.0, 0.1))
    with pytest.raises(ValueError, match="^link_outages: not supported with mobility"):
        Simulation(0).build_network(graph, mobility=Mobility(spec.model, 40.0, 0.1),
                                    link_outages=OnOff(1.0, 1.0))
    with pytest.raises(ValueError, match="^mobility: must be a Mobility"):
        Simulation(0).build_network(graph, mobility=spec.model)


def run_idle(graph, spec, until, channel=None, seed=0):
    sim = Simulation(seed)
    net = sim.build_network(graph, mobility=spec, channel=channel)
    net.start_fault_records()
    sim.env.run(until=until)
    return sim, net


def test_each_change_is_a_fault_row_and_new_pairs_get_links():
    graph = random_geometric(15, 30.0, AREA, np.random.default_rng(1))
    spec = Mobility(RandomWaypoint(AREA, 5.0, 10.0), 30.0, 0.5)
    sim, net = run_idle(graph, spec, 30.0)
    frame = sim.recorder.to_frame()
    assert set(frame.event) == {"fault"} and set(frame.kind) == {"link_up", "link_down"}
    assert (frame.cause == "mobility").all()
    assert frame.time_s.is_monotonic_increasing
    assert np.allclose(frame.time_s / 0.5, np.round(frame.time_s / 0.5))
    # replaying the rows on the start graph gives the live graph
    edges = {tuple(sorted(e)) for e in graph.edges}
    for row in frame.itertuples():
        pair = (int(row.node), int(row.peer))
        if row.kind == "link_up":
            assert pair not in edges
            edges.add(pair)
        else:
            edges.remove(pair)
    assert edges == {tuple(sorted(e)) for e in net.live.graph.edges}
    for u, v in edges:
        assert (u, v) in net.links and (v, u) in net.links
    assert len(net.links) > 2 * graph.number_of_edges()


def test_fading_links_use_the_live_distance():
    graph = random_geometric(12, 40.0, AREA, np.random.default_rng(3))
    template = RayleighChannel(1e6, 60.0, coding_rate=2.0)

    def per_link(src, dst):
        return template.with_distance(math.dist(graph.nodes[src]["pos"],
                                                graph.nodes[dst]["pos"]))

    spec = Mobility(RandomWaypoint(AREA, 2.0, 6.0), 40.0, 0.25)
    _, net = run_idle(graph, spec, 20.0, channel=per_link)
    live = net.live
    for u, v in zip(*(a.tolist() for a in live.edges()), strict=True):
        for link in (net.links[(u, v)], net.links[(v, u)]):
            assert link.channel.distance_m == pytest.approx(max(live.distance(u, v), 1e-3))
    fixed = FixedRateChannel(1e6)
    assert fixed.with_distance(5.0) is fixed and not fixed.distance_dependent


def test_a_rebound_network_moves_as_one_built_afresh():
    graph = random_geometric(12, 35.0, AREA, np.random.default_rng(5))
    spec = Mobility(RandomWaypoint(AREA, 3.0, 9.0), 35.0, 0.5)
    fresh, _ = run_idle(graph, spec, 25.0, seed=7)
    _, net = run_idle(graph, spec, 25.0, seed=1)
    again = Simulation(7)
    again.use_network(net)
    net.start_fault_records()
    again.env.run(until=25.0)
    assert fresh.recorder.to_frame().equals(again.recorder.to_frame())
