"""bench/scale_curve.py measures what it says: the hops and messages it divides by are the
protocol's own records, and its random geometric graphs have the mean degree it claims."""

import importlib.util
import math
import sys
from pathlib import Path

import networkx as nx
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "scale_curve.py"


@pytest.fixture(scope="module")
def sc():
    path = list(sys.path)  # the module puts bench/ on sys.path
    spec = importlib.util.spec_from_file_location("scale_curve", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["scale_curve"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("scale_curve", None)
    sys.path[:] = path


def test_walk_counts_are_the_records_hops_and_moves(sc):
    curve = sc.walk_curves([10], (200, 1200), repeat=1)[0]
    assert (curve.short.iterations, curve.long.iterations) == (200, 1200)
    assert curve.units == (200, 1200)
    # every move of the token is one 64-bit message in the record, a stay is none
    for run in (curve.short, curve.long):
        assert 0 < run.moved < run.iterations
        assert run.messages == run.moved


def test_gossip_counts_are_the_records_rounds_and_messages(sc):
    K = 16
    rounds = sc.gossip_rounds(K, (640, 1920))
    assert rounds == (10, 30)
    curve = sc.gossip_curves([K], (640, 1920), repeat=1)[0]
    assert (curve.short.iterations, curve.long.iterations) == rounds
    assert curve.units == (4 * K * rounds[0], 4 * K * rounds[1])
    assert (curve.short.messages, curve.long.messages) == curve.units


def test_random_geometric_graph_is_connected_with_the_mean_degree(sc):
    assert math.isclose(sc.near_probability(1.0), math.pi - 8 / 3 + 1 / 2)
    assert math.isclose(sc.near_probability(1.0 + 1e-9), sc.near_probability(1.0),
                        abs_tol=1e-7)
    assert sc.near_probability(math.sqrt(2) - 1e-9) == pytest.approx(1.0, abs=1e-6)
    graph = sc.rgg(2000, seed=3)
    assert nx.is_connected(graph)
    assert sorted(graph.nodes) == list(range(graph.number_of_nodes()))
    assert graph.number_of_nodes() > 0.99 * 2000
    assert 2 * graph.number_of_edges() / graph.number_of_nodes() == pytest.approx(8, rel=0.1)
