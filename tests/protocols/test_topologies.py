"""Graph builders: sizes, degrees, connectivity, file round trips, loud errors."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.protocols.graphs.topologies import (
    GRAPH_NAMES,
    complete,
    erdos_renyi,
    grid,
    load_graph,
    make_graph,
    node_distance,
    path,
    random_geometric,
    require_connected,
    ring,
    square_factors,
    star,
    validate_graph,
)


def degrees(g: nx.Graph) -> list[int]:
    return [d for _, d in sorted(g.degree())]


def edge_set(g: nx.Graph) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in g.edges}


def assert_convention(g: nx.Graph) -> None:
    assert sorted(g.nodes) == list(range(g.number_of_nodes()))
    assert validate_graph(g) == g.number_of_nodes()


# ------------------------------------------------------------------ deterministic builders


@pytest.mark.parametrize("K", [2, 3, 7, 20])
def test_complete(K):
    g = complete(K)
    assert_convention(g)
    assert g.number_of_edges() == K * (K - 1) // 2
    assert degrees(g) == [K - 1] * K


@pytest.mark.parametrize("K", [2, 5, 12])
def test_star_hub_is_node_zero(K):
    g = star(K)
    assert_convention(g)
    assert g.number_of_edges() == K - 1
    assert degrees(g) == [K - 1] + [1] * (K - 1)


@pytest.mark.parametrize("K", [3, 4, 11])
def test_ring(K):
    g = ring(K)
    assert_convention(g)
    assert g.number_of_edges() == K
    assert degrees(g) == [2] * K
    assert g.has_edge(K - 1, 0)


@pytest.mark.parametrize("K", [2, 6])
def test_path(K):
    g = path(K)
    assert_convention(g)
    assert g.number_of_edges() == K - 1
    assert degrees(g) == [1] + [2] * (K - 2) + [1]


@pytest.mark.parametrize(("rows", "cols"), [(1, 2), (2, 3), (3, 4), (5, 5)])
def test_grid_counts_and_degrees(rows, cols):
    g = grid(rows, cols)
    assert_convention(g)
    assert g.number_of_edges() == rows * (cols - 1) + cols * (rows - 1)
    if rows >= 3 and cols >= 3:
        assert max(degrees(g)) == 4 and min(degrees(g)) == 2


@pytest.mark.parametrize(("rows", "cols"), [(3, 3), (3, 5), (4, 6)])
def test_torus_is_four_regular(rows, cols):
    g = grid(rows, cols, periodic=True)
    assert_convention(g)
    assert g.number_of_edges() == 2 * rows * cols
    assert degrees(g) == [4] * (rows * cols)
    assert g.has_edge(0, cols - 1) and g.has_edge(0, (rows - 1) * cols)


def test_grid_node_numbering_is_row_major():
    g = grid(3, 4)
    for n, cell in g.nodes(data="label"):
        assert n == cell[0] * 4 + cell[1]


@pytest.mark.parametrize(("K", "shape"), [(12, (3, 4)), (16, (4, 4)), (7, (1, 7)), (10, (2, 5))])
def test_square_factors(K, shape):
    assert square_factors(K) == shape


@pytest.mark.parametrize(
    ("builder", "arg", "message"),
    [
        (complete, 1, "K: must be an integer >= 2, got 1"),
        (star, 0, "K: must be an integer >= 2, got 0"),
        (ring, 2, "K: must be an integer >= 3, got 2"),
        (path, 2.0, "K: must be an integer >= 2, got 2.0"),
        (complete, True, "K: must be an integer >= 2, got True"),
    ],
)
def test_bad_K_is_one_line_error(builder, arg, message):
    with pytest.raises(ValueError) as err:
        builder(arg)
    assert str(err.value) == message


# ------------------------------------------------------------------ random builders


@pytest.mark.parametrize("seed", range(5))
def test_erdos_renyi_connected_and_reproducible(seed):
    g = erdos_renyi(30, 0.15, np.random.default_rng(seed))
    assert_convention(g)
    assert g.number_of_nodes() == 30 and nx.is_connected(g)
    again = erdos_renyi(30, 0.15, np.random.default_rng(seed))
    assert edge_set(g) == edge_set(again)


def test_erdos_renyi_edge_density_matches_p():
    # with p well above the threshold conditioning on connectivity barely matters
    K, p = 40, 0.3
    counts = [erdos_renyi(K, p, np.random.default_rng(s)).number_of_edges() for s in range(40)]
    pairs = K * (K - 1) / 2
    se = math.sqrt(pairs * p * (1 - p) / len(counts))
    assert abs(np.mean(counts) - pairs * p) < 4 * se


def test_erdos_renyi_never_connected_is_loud():
    with pytest.raises(ValueError, match=r"^p: erdos-renyi graph .* never connected in 5 tries"):
        erdos_renyi(50, 0.001, np.random.default_rng(0), max_tries=5)


@pytest.mark.parametrize("p", [0, 1.5, -0.1, "0.5"])
def test_erdos_renyi_bad_p(p):
    with pytest.raises(ValueError, match=r"^p: must be a number in \(0, 1\]"):
        erdos_renyi(10, p, np.random.default_rng(0))


@pytest.mark.parametrize("seed", range(5))
def test_random_geometric_positions_edges_and_connectivity(seed):
    K, radius, area = 60, 300.0, 1000.0
    g = random_geometric(K, radius, area, np.random.default_rng(seed))
    assert_convention(g)
    assert nx.is_connected(g)
    pos = np.array([g.nodes[i]["pos"] for i in range(K)])
    assert all(isinstance(g.nodes[i]["pos"], tuple) for i in range(K))
    assert pos.min() >= 0.0 and pos.max() <= area
    # edges are exactly the pairs within radio range
    for u in range(K):
        for v in range(u + 1, K):
            d = node_distance(g, u, v)
            assert d == pytest.approx(float(np.linalg.norm(pos[u] - pos[v])))
            assert g.has_edge(u, v) == (d <= radius)


def test_random_geometric_positions_are_uniform():
    xs = np.concatenate(
        [
            [
                p[0]
                for _, p in random_geometric(50, 400.0, 1000.0, np.random.default_rng(s)).nodes(
                    data="pos"
                )
            ]
            for s in range(20)
        ]
    )
    # mean of U(0, 1000) over 1000 draws (conditioning on connectivity is mild here)
    assert abs(xs.mean() - 500.0) < 4 * 1000.0 / math.sqrt(12 * xs.size)


def test_random_geometric_too_sparse_is_loud():
    with pytest.raises(ValueError, match=r"^radius_m: .*never connected in 3 tries"):
        random_geometric(100, 1.0, 1000.0, np.random.default_rng(0), max_tries=3)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"radius_m": 0}, "radius_m"),
        ({"area_m": -1.0}, "area_m"),
        ({"radius_m": math.nan}, "radius_m"),
    ],
)
def test_random_geometric_bad_lengths(kwargs, field):
    args = {"K": 10, "radius_m": 100.0, "area_m": 100.0} | kwargs
    with pytest.raises(ValueError, match=rf"^{field}: must be a finite number > 0"):
        random_geometric(rng=np.random.default_rng(0), **args)


def test_random_graph_without_rng_is_loud():
    with pytest.raises(ValueError, match=r"^rng: graph 'erdos-renyi' is random"):
        make_graph("erdos-renyi", 10, None, p=0.5)


def test_node_distance_without_positions_is_none():
    assert node_distance(ring(5), 0, 1) is None


# ------------------------------------------------------------------ connectivity and convention


def test_require_connected_accepts_connected():
    require_connected(ring(5))


def test_require_connected_rejects_disconnected_in_one_line():
    g = nx.disjoint_union_all([ring(3), path(2), path(2)])
    with pytest.raises(ValueError) as err:
        require_connected(g)
    assert str(err.value) == (
        "graph: disconnected (3 components); this protocol needs a connected graph"
    )


@pytest.mark.parametrize(
    ("graph", "match"),
    [
        (nx.relabel_nodes(ring(3), {0: "a"}), r"^graph: nodes must be the integers 0\.\.2"),
        (nx.relabel_nodes(ring(3), {0: 3}), r"^graph: nodes must be the integers 0\.\.2"),
        (nx.DiGraph([(0, 1), (1, 0)]), r"^graph: must be an undirected networkx\.Graph"),
        (nx.Graph([(0, 1), (1, 1)]), r"^graph: has 1 self-loop"),
        (nx.Graph(), r"^graph: has no nodes"),
    ],
)
def test_convention_violations(graph, match):
    with pytest.raises(ValueError, match=match):
        require_connected(graph)


# ------------------------------------------------------------------ files


def test_load_edge_list_round_trip(tmp_path):
    g = erdos_renyi(15, 0.3, np.random.default_rng(3))
    f = tmp_path / "g.edgelist"
    nx.write_edgelist(g, f, data=False)
    loaded = load_graph(f)
    assert_convention(loaded)
    assert edge_set(loaded) == edge_set(g)
    assert [loaded.nodes[i]["label"] for i in range(15)] == list(range(15))


def test_load_txt_with_comments_and_string_labels(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("# a triangle plus a tail\nb c\na b\n\nc a  # closes it\nc d\n")
    g = load_graph(f)
    assert_convention(g)
    labels = {i: g.nodes[i]["label"] for i in g}
    assert labels == {0: "a", 1: "b", 2: "c", 3: "d"}
    assert edge_set(g) == {(0, 1), (0, 2), (1, 2), (2, 3)}


def test_load_csv_with_header_and_weights(tmp_path):
    f = tmp_path / "g.csv"
    f.write_text("source,target,weight\n10,20,0.5\n20,30,1.5\n")
    g = load_graph(f)
    assert [g.nodes[i]["label"] for i in range(3)] == [10, 20, 30]
    assert g.edges[0, 1]["weight"] == 0.5 and g.edges[1, 2]["weight"] == 1.5


def test_load_graphml_round_trip_with_positions(tmp_path):
    g = random_geometric(20, 400.0, 1000.0, np.random.default_rng(1))
    h = nx.Graph()
    for n, (x, y) in g.nodes(data="pos"):
        h.add_node(n, x=x, y=y)
    h.add_edges_from(g.edges)
    f = tmp_path / "g.graphml"
    nx.write_graphml(h, f)
    loaded = load_graph(f)
    assert_convention(loaded)
    assert edge_set(loaded) == edge_set(g)
    for n in range(20):
        assert loaded.nodes[n]["pos"] == pytest.approx(g.nodes[n]["pos"])


def test_load_graphml_integer_ids_sort_numerically(tmp_path):
    f = tmp_path / "g.graphml"
    nx.write_graphml(nx.path_graph(12), f)  # ids "0".."11": must not sort as strings
    loaded = load_graph(f)
    assert edge_set(loaded) == edge_set(nx.path_graph(12))


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("missing.txt", None, r"does not exist"),
        ("g.json", "{}", r"unsupported graph file .*allowed suffixes: \.txt"),
        ("g.txt", "0 1\n1 2 3 4\n", r"line 2: expected 'u v' or 'u v weight'"),
        ("g.txt", "0 1\n1 2 x\n", r"line 2: expected"),
        ("g.txt", "0 1\n2 2\n", r"line 2: self-loop"),
        ("g.txt", "# nothing\n", r"has no edges"),
        ("g.graphml", "<not graphml", r"cannot parse GraphML file"),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_path(tmp_path, name, content, match):
    f = tmp_path / name
    if content is not None:
        f.write_text(content)
    with pytest.raises(ValueError, match=match) as err:
        load_graph(f)
    msg = str(err.value)
    assert msg.startswith("path: ") and str(f) in msg and "\n" not in msg


def test_directory_is_not_a_graph_file(tmp_path):
    d = tmp_path / "dir.txt"
    d.mkdir()
    with pytest.raises(ValueError, match="does not exist or is not a file"):
        load_graph(d)


# ------------------------------------------------------------------ make_graph


def test_graph_names():
    assert set(GRAPH_NAMES) == {
        "complete",
        "star",
        "ring",
        "path",
        "grid",
        "torus",
        "erdos-renyi",
        "random-geometric",
        "file",
    }


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("complete", {}),
        ("star", {}),
        ("ring", {}),
        ("path", {}),
        ("grid", {}),
        ("torus", {}),
        ("erdos-renyi", {"p": 0.5}),
        ("random-geometric", {"radius_m": 500.0, "area_m": 1000.0}),
    ],
)
def test_make_graph_builds_connected_K_node_graphs(name, params):
    g = make_graph(name, 12, np.random.default_rng(0), **params)
    assert_convention(g)
    assert g.number_of_nodes() == 12
    require_connected(g)


def test_make_graph_grid_shapes():
    rng = np.random.default_rng(0)
    assert make_graph("grid", 12, rng).number_of_edges() == 3 * 3 + 4 * 2  # 3x4
    assert make_graph("grid", 12, rng, rows=2).number_of_edges() == 2 * 5 + 6  # 2x6
    assert make_graph("torus", 16, rng).number_of_edges() == 32  # 4x4 torus
    assert make_graph("torus", None, rng, rows=3, cols=3).number_of_nodes() == 9
    with pytest.raises(ValueError, match=r"^K: must equal rows\*cols = 12, got 10"):
        make_graph("grid", 10, rng, rows=3, cols=4)
    with pytest.raises(ValueError, match=r"^cols: must divide K=10, got 3"):
        make_graph("grid", 10, rng, cols=3)


def test_make_graph_file(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("0 1\n1 2\n2 0\n")
    assert make_graph("file", None, path=f).number_of_edges() == 3
    assert make_graph("file", 3, path=str(f)).number_of_nodes() == 3
    with pytest.raises(ValueError, match=r"^K: graph file .* has 3 nodes, got K=4"):
        make_graph("file", 4, path=f)


def test_make_graph_unknown_name_lists_allowed():
    with pytest.raises(ValueError) as err:
        make_graph("hypercube", 8, np.random.default_rng(0))
    assert str(err.value) == (
        "name: unknown graph 'hypercube'; allowed: complete, star, ring, path, grid, torus, "
        "erdos-renyi, random-geometric, file"
    )


def test_make_graph_unknown_or_missing_param():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^params: unknown parameter\(s\) p for graph 'ring'"):
        make_graph("ring", 5, rng, p=0.3)
    with pytest.raises(ValueError, match=r"allowed: radius_m, area_m, max_tries$"):
        make_graph("random-geometric", 5, rng, radius=3)
    with pytest.raises(ValueError, match=r"^p: required for graph 'erdos-renyi'$"):
        make_graph("erdos-renyi", 5, rng)
