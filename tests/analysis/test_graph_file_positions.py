"""A graph file's node positions are checked like its edge weights: numeric ``x``/``y``
node attributes or a ``pos`` of two numbers (GraphML, GML), every node or none, each 2
finite numbers in range; anything else is one line naming the file and the node, from
``load_graph``, ``bflnet plot-network`` and ``bflnet run --set graph=file``, and nothing
is drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import bflnet
from bflnet.cli.main import main
from bflnet.protocols.graphs.topologies import load_graph

SRC = str(Path(bflnet.__file__).resolve().parents[1])
EDGES_GML = "edge [ source 0 target 1 ] edge [ source 1 target 2 ]"


def gml(path: Path, *nodes: str) -> Path:
    """A GML file of a 3-node path whose nodes carry the attributes ``nodes``."""
    body = " ".join(f"node [ id {i} {a} ]" for i, a in enumerate(nodes))
    path.write_text(f"graph [ {body} {EDGES_GML} ]\n")
    return path


def graphml(path: Path, key: str, kind: str, *values: str) -> Path:
    """A GraphML file of a 3-node path whose nodes carry ``key`` (of GraphML ``kind``)."""
    nodes = "".join(f'<node id="n{i}"><data key="k">{v}</data></node>'
                    for i, v in enumerate(values))
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        f'<key id="k" for="node" attr.name="{key}" attr.type="{kind}"/>'
        f'<graph edgedefault="undirected">{nodes}<edge source="n0" target="n1"/>'
        '<edge source="n1" target="n2"/></graph></graphml>')
    return path


BAD = {
    "GraphML pos as strings": (lambda p: graphml(p / "g.graphml", "pos", "string", "12", "34",
                                                 "56"), "node 'n0'", "got pos='12'"),
    "GraphML pos 'x,y' text": (lambda p: graphml(p / "g.graphml", "pos", "string", "1,2",
                                                 "3,4", "5,6"), "node 'n0'", "got pos='1,2'"),
    "GraphML pos one number": (lambda p: graphml(p / "g.graphml", "pos", "double", "1", "2",
                                                 "3"), "node 'n0'", "got pos=1.0"),
    "GraphML x as text": (lambda p: graphml(p / "g.graphml", "x", "string", "a", "b", "c"),
                          "node 'n0'", "x, y within"),
    "GML pos strings": (lambda p: gml(p / "g.gml", 'pos "a" pos "b"', "pos 3 pos 4",
                                      "pos 5 pos 6"), "node 0", "got pos=['a', 'b']"),
    "GML pos one number": (lambda p: gml(p / "g.gml", "pos 1", "pos 3 pos 4", "pos 5 pos 6"),
                           "node 0", "got pos=1"),
    "GML pos three numbers": (lambda p: gml(p / "g.gml", "pos 3 pos 4", "pos 1 pos 2 pos 3",
                                            "pos 5 pos 6"), "node 1", "got pos=[1, 2, 3]"),
    "GML pos inf": (lambda p: gml(p / "g.gml", "pos 1 pos 2", "pos 3 pos 4", "pos INF pos 6"),
                    "node 2", "pos=[inf, 6]"),
    "GML pos nan": (lambda p: gml(p / "g.gml", "pos NAN pos 2", "pos 3 pos 4", "pos 5 pos 6"),
                    "node 0", "pos=[nan, 2]"),
    "GML pos far away": (lambda p: gml(p / "g.gml", "pos 1.0E300 pos 2", "pos 3 pos 4",
                                       "pos 5 pos 6"), "node 0", "within +-1e+09 m"),
    "GML x without y": (lambda p: gml(p / "g.gml", "x 1", "x 3 y 4", "x 5 y 6"), "node 0",
                        "x, y within"),
    "GML a node without one": (lambda p: gml(p / "g.gml", "pos 1 pos 2", "pos 3 pos 4", ""),
                               "node 2", "has no position while node 0 has one"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_position_is_one_line_naming_the_file_and_node(case, tmp_path):
    make, node, text = BAD[case]
    path = make(tmp_path)
    with pytest.raises(ValueError) as caught:
        load_graph(path)
    message = str(caught.value)
    assert message.startswith(f"path: graph file {str(path)!r}: {node} "), message
    assert text in message and "\n" not in message, message


def test_good_positions_are_kept(tmp_path):
    path = gml(tmp_path / "g.gml", "pos 1.5 pos 2", "pos -3 pos 4", "pos 5 pos 6.0E8")
    assert dict(load_graph(path).nodes(data="pos")) == {0: (1.5, 2.0), 1: (-3.0, 4.0),
                                                        2: (5.0, 6e8)}
    path = gml(tmp_path / "xy.gml", "x 1 y 2", "x 3 y 4", "x 5 y 6")
    assert dict(load_graph(path).nodes(data="pos")) == {0: (1.0, 2.0), 1: (3.0, 4.0),
                                                        2: (5.0, 6.0)}
    path = gml(tmp_path / "none.gml", "", "", "")  # no positions: laid out when drawn
    assert dict(load_graph(path).nodes(data="pos")) == {0: None, 1: None, 2: None}


def test_a_gml_file_is_drawn_at_its_positions(tmp_path, capsys):
    path = gml(tmp_path / "g.gml", "pos 0 pos 0", "pos 10 pos 0", "pos 10 pos 10")
    assert main(["plot-network", str(path), "--out", str(tmp_path / "n.png")]) == 0
    assert (tmp_path / "n.png").stat().st_size > 0
    bad = tmp_path / "bad.gml"
    bad.write_text("graph [ node [ id 0 ] node [ id 0 ] ]]")
    assert main(["plot-network", str(bad), "--out", str(tmp_path / "m.png")]) == 2
    assert "cannot parse GML file" in capsys.readouterr().err
    assert not (tmp_path / "m.png").exists()


def cli(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(cwd),
           "MPLCONFIGDIR": str(cwd / ".mpl")}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", *argv], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("case", ["GraphML pos as strings", "GML pos strings"])
def test_plot_network_refuses_bad_positions_in_one_line(case, tmp_path):
    make, node, text = BAD[case]
    path = make(tmp_path)
    done = cli(["plot-network", str(path), "--out", "n.png"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"bflnet: error: path: graph file {str(path)!r}: {node} ")
    assert done.stderr.count("\n") == 1 and text in done.stderr
    assert not (tmp_path / "n.png").exists()


def test_a_run_on_a_graph_file_refuses_bad_positions_in_one_line(tmp_path):
    make, node, text = BAD["GraphML pos as strings"]
    path = make(tmp_path)
    done = cli(["run", "consensus-averaging", "--set", "graph=file", "--set",
                f"graph_file={path}", "--set", "rounds=2", "--no-progress", "--out", "r.csv"],
               tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"{node} " in done.stderr and text in done.stderr
    assert not (tmp_path / "r.csv").exists()
