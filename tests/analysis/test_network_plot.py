"""bflnet plot-network: the graph of a scenario's config, of a result table's run (walk,
exchanges, outages) and of a graph file; and the one-line errors of the plot commands."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection

from bflnet.analysis.network_plot import NetworkPicture, draw_network, outages, walk_moves
from bflnet.cli.main import main
from bflnet.cli.network_view import scenario_pictures, split_runs


def _scatter_points(ax) -> int:
    return sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))


def test_a_scenario_graph_as_its_run_builds_it():
    from bflnet.runs.registry import get_scenario
    from bflnet.simulator.rng import RngStreams

    (picture,) = scenario_pictures("consensus-averaging",
                                   {"graph": "random-geometric", "channel": "rayleigh",
                                    "K": 12}, seed=3)
    config = get_scenario("consensus-averaging").config(
        {"graph": "random-geometric", "channel": "rayleigh", "K": 12})
    built = config.build_graph(RngStreams(3).numpy("graph"))
    assert sorted(picture.graph.edges) == sorted(built.edges)
    assert picture.positions[0] == built.nodes[0]["pos"]
    # the links' colour: the mean SNR at their length, 60 dB at 1 m - 30 log10(d)
    u, v = next(iter(built.edges))
    d = float(np.hypot(*np.subtract(built.nodes[u]["pos"], built.nodes[v]["pos"])))
    assert picture.quality[(u, v)] == pytest.approx(60.0 - 30.0 * np.log10(d))
    fig = draw_network([picture])
    ax = fig.axes[0]
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines[0].get_segments()) == built.number_of_edges()
    assert _scatter_points(ax) == 12 and ax.get_xlabel() == "x (m)"
    assert fig.axes[-1].get_ylabel() == "mean SNR of the link (dB)"  # the colour bar


def test_several_topologies_and_a_parameter_server():
    pictures = scenario_pictures("gfvl-beta-bernoulli", {}, seed=0)
    assert [p.graph.number_of_edges() for p in pictures] == [9, 10, 45]  # star, ring, K10
    assert len(draw_network(pictures).axes) == 3
    (server,) = scenario_pictures("async-fedavg", {}, seed=0)
    assert server.server and server.graph.number_of_nodes() == 10


def test_the_walk_exchanges_and_outages_of_a_run():
    graph = nx.path_graph(4)
    events = pd.DataFrame({
        "event": ["init", "iteration", "fault", "iteration", "fault", "iteration",
                  "exchange", "fault"],
        "time_s": [0.0, 1.0, 1.5, 2.0, 2.5, 3.0, 3.2, 3.4],
        "node": [0, 1, 2, 2, 2, 1, 0, 3], "peer": [None] * 6 + [1, 2],
        "kind": [None, None, "node_down", None, "node_up", None, None, "link_down"],
        "outcome": [None] * 6 + ["ok", None]})
    assert walk_moves(events)["node"].tolist() == [0, 1, 2, 1]
    down, links = outages(events)
    assert down.values.tolist() == [[2, 1.5, 2.5]]
    assert links[["node", "peer"]].values.tolist() == [[3, 2]]
    fig = draw_network([NetworkPicture(graph, events=events, title="t")], steps=10)
    ax, timeline = fig.axes[:2]  # then the colour bar of the token visits
    assert timeline.get_xlabel() == "time (s)" and timeline.get_ylabel() == "node"
    labels = ax.get_legend_handles_labels()[1]
    assert {"walk: first 3 moves (faint: early)", "node went down",
            "link went down"} <= set(labels)
    assert {"token holder", "node down", "link down"} <= set(
        timeline.get_legend_handles_labels()[1])
    # without a walk, the exchanges: link width and a timeline of segments node - peer
    gossip = events[events.event != "iteration"].assign(event=lambda f: f.event.replace(
        "init", "round"))
    fig = draw_network([NetworkPicture(graph, events=gossip)], steps=10)
    ax, timeline = fig.axes[:2]
    assert "link width: exchanges or messages" in ax.get_legend_handles_labels()[1]
    assert "exchange" in timeline.get_legend_handles_labels()[1]
    (segments,) = [c.get_segments() for c in timeline.collections
                   if isinstance(c, LineCollection)]
    assert np.allclose(segments[0], [[3.2, 0.0], [3.2, 1.0]])


def test_runs_of_a_table_start_at_their_init_rows():
    frame = pd.DataFrame({"event": ["init", "iteration", "init", "iteration", "fault"]})
    assert [len(r) for r in split_runs(frame)] == [2, 3]


@pytest.mark.parametrize("argv, message", [
    (["plot-network", "no-such-scenario", "--out", "n.png"], "unknown scenario"),
    (["plot-network", "cover-time", "--out", "n.jpg"], "--out: must end in"),
    (["plot-network", "cover-time", "--where", "K=3", "--out", "n.png"],
     "--where: only for a result table"),
    (["plot-network", "cover-time", "--set", "K=nan", "--out", "n.png"], "K"),
    (["plot-network", "cover-time", "--steps", "0", "--out", "n.png"], "--steps: must be"),
    (["plot-network", "cover-time", "--size", "1e308,2", "--out", "n.png"], "--size"),
    (["plot-network", "cover-time", "--dpi", "9999", "--out", "n.png"], "--dpi"),
])
def test_plot_network_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("bflnet: error:") and message in err


def test_plot_errors_are_one_line(tmp_path, capsys):
    table = pd.DataFrame({"event": "run", "run": range(6), "K": [4, 8] * 3,
                          "latency": np.arange(6.0)})
    path = tmp_path / "t.parquet"
    table.to_parquet(path)
    out = str(tmp_path / "f.png")
    cases = [(["--where", "nope=1"], "--where: unknown column 'nope'"),
             (["--where", "K=5"], "--where K=5: no row has this value; K takes 4, 8"),
             (["--where", "K"], "--where: expected column=value"),
             (["--col", "nope"], "--col: unknown column 'nope'"),
             (["--row", "run", "--col", "run", "--where", "run=1"], None),
             (["--kind", "line"], "--kind line: the distribution"),
             (["--kind", "violin"], "--kind: must be one of"),
             (["--xlim", "2,1"], "--xlim: expected finite lo < hi"),
             (["--xlim", "0,inf"], "--xlim: expected finite lo < hi"),
             (["--x", "nope"], "--x: unknown column 'nope'"),
             (["--hue", "run", "--where", "K=4"], None)]
    for extra, message in cases:
        code = main(["plot", str(path), "--y", "latency", "--out", out, *extra])
        err = capsys.readouterr().err.strip()
        if message is None:
            assert code == 0, err
            continue
        assert code == 2 and "\n" not in err and message in err, (extra, err)


def test_measured_attempts_per_link_from_message_rows():
    from bflnet.cli.network_view import measured_attempts

    run = pd.DataFrame({"event": ["message", "message", "message", "round"],
                        "node": [0, 1, 2, None], "peer": [1, 0, 1, None],
                        "attempts": [1, 3, 2, None]})
    assert measured_attempts(run) == {(0, 1): 2.0, (1, 2): 2.0}
    assert measured_attempts(run.drop(columns="attempts")) == {}
