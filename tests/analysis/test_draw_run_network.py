"""`bflnet draw` draws the network the run builds: the positions, edges and link SNRs of
the picture are those of the networks the run's own Simulation built (captured while it
runs), for `d2d-medium` (every setting) and `consensus-averaging --set medium=shared`;
and a shared-medium picture shows the medium: packets sent and receptions lost per node,
the TDMA slots, a chosen node's ranges, the run's totals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.patches import Circle

from bflnet.analysis.network_plot import draw_network
from bflnet.cli.main import main
from bflnet.cli.network_view import scenario_pictures, table_pictures
from bflnet.runs.registry import get_scenario
from bflnet.simulator.simulation import Simulation

D2D = {"tasks": "consensus", "K": 12, "rounds": 2, "macs": "links,tdma,csma",
       "broadcasts": "false,true"}


@pytest.fixture
def built(monkeypatch):
    """``[(simulation name, network)]`` of every network built while the test runs."""
    networks = []
    build = Simulation.build_network

    def spy(self, graph, **kwargs):
        network = build(self, graph, **kwargs)
        networks.append((self.name, network))
        return network

    monkeypatch.setattr(Simulation, "build_network", spy)
    return networks


def run_table(tmp_path, name, params, seed):
    path = tmp_path / f"{name}.parquet"
    sets = [x for k, v in params.items() for x in ("--set", f"{k}={v}")]
    assert main(["run", name, *sets, "--seed", str(seed), "--out", str(path),
                 "--no-progress"]) == 0
    return str(path)


def snr_db(network, u, v) -> float:
    """The mean SNR of link ``u -> v`` as the run's network has it."""
    if network.air is None:
        return network.links[(u, v)].channel.mean_snr_at_distance_db
    medium = network.air.medium
    i = medium.index
    return 10 * math.log10(medium.spec.tx_mw * medium.mean_gain(i[u], i[v]) / medium.noise)


def positions(network) -> dict:
    if network.air is None:
        return {n: tuple(network.graph.nodes[n]["pos"]) for n in network.graph.nodes}
    medium = network.air.medium
    return {n: tuple(medium.positions()[medium.index[n]]) for n in network.graph.nodes}


def snr_at_1m(config) -> float:
    """The medium's SNR at 1 m: power - loss at 1 m - thermal noise (-174 dBm/Hz over the
    bandwidth, plus the noise figure)."""
    return (config.tx_power_dbm - config.ref_loss_db + 174.0
            - 10.0 * math.log10(config.bandwidth_hz) - config.noise_figure_db)


def same_network(picture, network) -> None:
    assert sorted(picture.graph.edges) == sorted(network.graph.edges)
    ours = positions(network)
    assert set(picture.positions) == set(ours)
    for n, xy in ours.items():
        assert picture.positions[n] == pytest.approx(xy, abs=1e-12)
    assert picture.quality and set(picture.quality) == set(network.graph.edges)
    for (u, v), value in picture.quality.items():
        assert value == pytest.approx(snr_db(network, u, v), abs=1e-9)


def test_draw_d2d_medium_is_the_network_each_run_built(tmp_path, built):
    path = run_table(tmp_path, "d2d-medium", D2D, seed=4)
    runs = {name.split("mac=")[1]: net for name, net in built if "mac=" in name}
    assert set(runs) == {"links", "tdma unicast", "tdma broadcast", "csma unicast",
                         "csma broadcast"}
    table = pd.read_parquet(path)
    config = get_scenario("d2d-medium").config(D2D)
    area = config.radius_m * math.sqrt(math.pi * config.K / config.degree)
    for setting, network in runs.items():
        mac, _, cast = setting.partition(" ")
        filters = [f"mac={mac}"] + ([f"broadcast={cast == 'broadcast'}"] if cast else [])
        built.clear()
        (picture,), _ = table_pictures(path, filters, 0)
        same_network(picture, network)
        assert f"area {area:.4g} m" in picture.title
        assert picture.title.split("\n")[1] == \
            f"mac = {mac}, broadcast = {cast == 'broadcast'}"  # its setting, not its counts
        run = table[(table["mac"] == mac) & (table["broadcast"] == (cast == "broadcast"))]
        last = run.iloc[-1]
        if mac == "links":  # independent links at the medium's SNR at 1 m, d^-exponent
            assert picture.medium is None
            u, v = next(iter(network.graph.edges))
            d = math.dist(network.graph.nodes[u]["pos"], network.graph.nodes[v]["pos"])
            assert picture.quality[(u, v)] == pytest.approx(
                snr_at_1m(config) - 10.0 * config.path_loss_exponent * math.log10(d))
            continue
        # the medium: its totals over the run, its TDMA slots
        summary = (f"over the run: {last['transmissions']} packets on the air, "
                   f"{last['collisions']} of {last['receptions']} receptions lost")
        assert picture.medium.summary.startswith(summary)
        drawn = " ".join(draw_network([picture]).axes[0].get_title().split())
        assert summary in drawn and f"mac = {mac}, broadcast = {cast == 'broadcast'}" in drawn
        air = network.air
        if mac == "tdma":
            index = air.medium.index
            assert picture.medium.slots == {n: air.colours[index[n]] for n in index}
            assert picture.medium.frame_slots == air.frame_slots


def test_draw_a_scenario_is_the_network_its_run_builds(built):
    """The numbers of a first study at K = 30: the run's square and the links coloured
    from the run's SNR at 1 m (the title as the config gives them)."""
    (picture,) = scenario_pictures("d2d-medium", {"K": 30, "macs": "links"}, seed=0)
    config = get_scenario("d2d-medium").config({"K": 30, "macs": "links"})
    graph = config.run_graph(0)
    assert sorted(picture.graph.edges) == sorted(graph.edges)
    area = config.radius_m * math.sqrt(math.pi * config.K / config.degree)
    assert f"area {area:.4g} m" in picture.title
    assert f"{snr_at_1m(config):.0f} dB mean SNR at 1 m" in picture.title
    u, v = next(iter(graph.edges))
    d = math.dist(graph.nodes[u]["pos"], graph.nodes[v]["pos"])
    assert picture.quality[(u, v)] == pytest.approx(
        snr_at_1m(config) - 10.0 * config.path_loss_exponent * math.log10(d))


def test_draw_consensus_averaging_on_the_shared_medium(tmp_path, built):
    params = {"medium": "shared", "mac": "csma", "K": 10, "rounds": 4, "channel": "rayleigh",
              "record_messages": True, "tx_power_dbm": -10}
    path = run_table(tmp_path, "consensus-averaging", params, seed=2)
    ((_, network),) = built
    built.clear()
    # laid out from the run's own stream "positions"
    (picture,) = scenario_pictures("consensus-averaging", params, seed=2)
    same_network(picture, network)
    (picture,), _ = table_pictures(path, [], 0, node=3)
    assert picture.positions == scenario_pictures("consensus-averaging", params,
                                                  seed=2)[0].positions
    assert picture.quality_label == "transmission attempts per message (measured)"
    # the medium's activity per node, from the table's rows
    frame = pd.read_parquet(path)
    tx = frame[frame["event"] == "tx"]["node"].astype(int).value_counts()
    lost = frame[(frame["event"] == "mac") & (frame["kind"] == "collision")]
    lost = pd.to_numeric(lost["peer"]).astype(int).value_counts()
    medium = picture.medium
    assert medium.sent == {int(k): float(v) for k, v in tx.items()}
    assert medium.lost == {int(k): float(v) for k, v in lost.items()}
    assert medium.summary == (f"over the run: {len(frame[frame.event == 'tx'])} packets sent, "
                              f"{len(frame[frame.kind == 'collision'])} receptions lost")
    radio = network.air.medium.spec
    assert medium.radio_range_m == radio.range_m
    # phy=80211b (the default): CSMA senses by received power, not within a circle
    assert medium.sense_range_m is None
    assert medium.interference_range_m == network.air.medium.range_m
    # on the figure: node size by packets sent, fill by receptions lost, node 3's ranges
    fig = draw_network([picture])
    ax = fig.axes[0]
    (nodes,) = [c for c in ax.collections if isinstance(c, PathCollection)
                and len(c.get_offsets()) == 10]
    sizes = dict(zip(picture.graph.nodes, nodes.get_sizes(), strict=True))
    busiest, idlest = max(medium.sent, key=medium.sent.get), min(medium.sent,
                                                                   key=medium.sent.get)
    assert sizes[busiest] > sizes[idlest]
    assert np.allclose(nodes.get_array(), [medium.lost.get(n, 0) for n in picture.graph.nodes])
    circles = [a for a in ax.get_children() if isinstance(a, Circle)]
    assert sorted(c.get_radius() for c in circles) == pytest.approx(sorted(
        [radio.range_m, network.air.medium.range_m]))  # no sense circle (by power)
    assert all(tuple(c.center) == pytest.approx(picture.positions[3]) for c in circles)
    labels = " ".join(ax.get_legend_handles_labels()[1])
    assert "node 3: radio range" in labels and "node 3: interference range" in labels
    assert "packets sent" in labels
    assert {"receptions lost at the node (collision, half-duplex)",
            "transmission attempts per message (measured)"} <= {
        a.get_ylabel() for a in fig.axes[1:]}


def test_tdma_slots_are_the_node_colours():
    (picture,) = scenario_pictures("consensus-averaging", {
        "medium": "shared", "mac": "tdma", "K": 16, "graph": "random-geometric",
        "area_m": 1500.0, "radius_m": 400.0, "tx_power_dbm": 0.0}, seed=1)
    slots = picture.medium.slots
    assert len(set(slots.values())) == picture.medium.frame_slots < 16
    fig = draw_network([picture])
    (nodes,) = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    assert np.array_equal(nodes.get_array(), [slots[n] for n in picture.graph.nodes])
    assert any(a.get_ylabel().startswith("TDMA slot of a frame of") for a in fig.axes)
    # neighbours in the graph never share a slot
    assert all(slots[u] != slots[v] for u, v in picture.graph.edges)


@pytest.mark.parametrize("argv, message", [
    (["d2d-medium", "--node", "99"], "--node: must be a node of the drawn graph (0..9), got 99"),
    (["consensus-averaging", "--node", "1"], "--node: draws a node's ranges on a shared medium"),
])
def test_node_errors_are_one_line(tmp_path, capsys, argv, message):
    assert main(["draw", *argv, "--out", str(tmp_path / "n.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ") and message in err
    assert not (tmp_path / "n.png").exists()


def test_the_examples_in_the_docstrings():
    import doctest

    import bflnet.analysis.network_plot as network_plot
    import bflnet.protocols.progress as progress
    import bflnet.validation.suggest as suggest

    for module in (network_plot, progress, suggest):
        assert doctest.testmod(module).failed == 0, module.__name__
