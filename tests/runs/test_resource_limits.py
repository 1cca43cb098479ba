"""Sizes that pass no check never reach the run: the named cases of the robustness probe,
through the CLI (one line on stderr naming the user-facing field, exit 2, no warning
first), the resource footprint (memory and set-up work, estimated before anything is
allocated), graph files counted before they are built, a sweep's seeds, and long echoed
values cut."""

from __future__ import annotations

import pytest

from bflnet.cli.main import main
from bflnet.runs import resources
from bflnet.runs.graph_size import count_graph_file, estimate
from bflnet.runs.registry import get_scenario
from bflnet.runs.resources import Footprint, check_footprint, human_bytes


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bflnet: error: "), captured.err
    return lines[0]


@pytest.mark.parametrize(("name", "settings", "field"), [
    ("consensus-averaging", ["K=1e308"], "K"),
    ("consensus-averaging", ["K=1e9"], "K"),
    ("cover-time", ["K=100000"], "K"),
    ("consensus-averaging", ["K=100000", "graph=complete"], "K"),
    ("churn-gfvl", ["K=1e8"], "K"),
    ("unlearning-latency", ["K=1000000"], "K"),
    ("gfvl-beta-bernoulli", ["points_per_agent=1e308"], "points_per_agent"),
    ("gfvl-beta-exponential", ["theta_true=1e308"], "theta_true"),
    ("gfvl-unlearning", ["theta_true=1e308"], "theta_true"),
    ("consensus-averaging", ["graph=random-geometric", "area_m=1e308"], "area_m"),
    ("unlearning-latency", ["learn_rounds=1e308"], "learn_rounds"),
    ("gfvl-beta-bernoulli", ["prior_b=1e308"], "prior_b"),
    ("dsvgd-vs-fedavg", ["fedavg_lr=1e308"], "fedavg_lr"),
    ("dsvgd-vs-fedavg", ["fedavg_local_steps=1e308"], "fedavg_local_steps"),
    ("gfvl-beta-exponential", ["samples=1e308"], "samples"),
    ("gfvl-unlearning", ["local_steps=1e308"], "local_steps"),
    ("gfvl-unlearning", ["samples=10000000"], "samples"),
    ("cover-time", ["runs=1e308"], "runs"),
    ("consensus-averaging", ["rounds=1e308"], "rounds"),
    ("consensus-averaging", ["rounds=100000000"], "rounds"),
    ("unlearning-latency", ["max_rounds=100000000"], "max_rounds"),
])
def test_named_cases_give_one_line_naming_the_field(name, settings, field, capsys, recwarn):
    args = ["run", name, "--no-progress"]
    for s in settings:
        args += ["--set", s]
    assert main(args) == 2
    line = one_error_line(capsys)
    assert field in line.split(":", 2)[1] + line.split(":", 2)[2][:80], line
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_a_too_large_config_is_refused_with_its_estimate(capsys):
    assert main(["run", "cover-time", "--set", "K=100000", "--no-progress"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("bflnet: error: K, graph: the run needs about ")
    assert "dense 1e+05 x 1e+05 transition matrix: 160 GB" in line


def test_legitimate_large_runs_are_not_refused():
    """torus K=4096 (a 134 MB dense mixing matrix) fits; so do the defaults."""
    scenario = get_scenario("consensus-averaging")
    fp = scenario.check_resources(scenario.config({"graph": "torus", "K": 4096}))
    assert 1e8 < fp.memory_bytes < 2e9


def test_the_limit_is_this_process_s_room(monkeypatch):
    """A config that fits the machine but not a smaller limit is refused, naming it."""
    scenario = get_scenario("consensus-averaging")
    config = scenario.config({"graph": "torus", "K": 4096})
    monkeypatch.setattr(resources, "memory_limit_bytes", lambda: 10**8)
    with pytest.raises(ValueError, match=r"^K, graph: the run needs about .* more than the "
                                         r"100 MB this process may use$"):
        scenario.check_resources(config)


def test_set_up_work_beyond_the_limit_is_refused():
    fp = Footprint().add("Erdős–Rényi draws", ("K", "edge_prob"), bytes=1.0, work=1e12)
    with pytest.raises(ValueError, match=r"^K, edge_prob: the set-up needs about 1e\+12 "
                                         r"operations"):
        check_footprint(fp, limit=10**12)


def test_dense_algebra_beyond_the_limit_is_refused():
    fp = Footprint().add("a dense solve", ("K",), flops=1e15)
    with pytest.raises(ValueError, match="^K: the run's dense linear algebra"):
        check_footprint(fp, limit=10**12)


@pytest.mark.parametrize(("graph", "K", "edges"), [
    ("complete", 5, 10), ("ring", 7, 7), ("path", 7, 6), ("star", 7, 6), ("torus", 16, 32)])
def test_graph_estimates_bound_the_built_graphs(graph, K, edges):
    import numpy as np

    from bflnet.protocols.graphs.topologies import make_graph
    built = make_graph(graph, K, np.random.default_rng(0))
    size = estimate(graph, K)
    assert size.nodes == built.number_of_nodes() == K
    assert size.edges >= built.number_of_edges() == edges


def test_a_graph_file_is_counted_before_it_is_built(tmp_path, capsys):
    path = tmp_path / "big.txt"
    with path.open("w") as f:
        f.write("# a ring\n")
        f.writelines(f"{i} {i + 1}\n" for i in range(200_000))
    nodes, edges = count_graph_file(str(path))
    assert edges >= 200_000 and nodes >= 200_001
    graphml = tmp_path / "g.graphml"
    graphml.write_text('<graphml><graph edgedefault="undirected"><node id="a"/><node id="b"/>'
                       '<edge source="a" target="b"/></graph></graphml>')
    assert count_graph_file(str(graphml)) == (2.0, 1.0)
    assert count_graph_file(str(tmp_path / "missing.txt")) == (0.0, 0.0)
    # the dense mixing matrix of 200 001 nodes cannot fit: refused before the file is parsed
    assert main(["run", "consensus-averaging", "--set", "graph=file", "--set",
                 f"graph_file={path}", "--no-progress"]) == 2
    assert one_error_line(capsys).startswith("bflnet: error: graph_file: the run needs about")


def test_a_huge_seed_count_gives_one_line(tmp_path, capsys):
    assert main(["sweep", "consensus-averaging", "--seeds", "1000000000", "--out",
                 str(tmp_path / "s"), "--no-progress"]) == 2
    assert "seeds: must be a positive count or a list of distinct integers >= 0 (at most " \
           "100000 seeds), got 1000000000" in one_error_line(capsys)
    assert main(["sweep", "consensus-averaging", "--seeds", "1000", "--grid",
                 "rounds=" + ",".join(str(r) for r in range(1, 201)), "--out",
                 str(tmp_path / "s"), "--no-progress"]) == 2
    assert "200 grid points x 1000 seeds = 200000 runs" in one_error_line(capsys)
    assert not (tmp_path / "s").exists()


def test_a_sweep_point_too_large_is_refused_before_any_run(tmp_path, capsys):
    assert main(["sweep", "cover-time", "--grid", "K=10,100000", "--out",
                 str(tmp_path / "s"), "--no-progress"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("bflnet: error: K, graph: the run needs") and "{'K': 100000}" in line
    assert not (tmp_path / "s").exists()


def test_a_long_echoed_value_is_cut(capsys):
    assert main(["run", "consensus-averaging", "--set", "graph=" + "x" * 5000]) == 2
    line = one_error_line(capsys)
    assert len(line) < 300 and "(5002 characters)" in line and line.count("x") < 100


def test_human_bytes_of_huge_estimates():
    assert human_bytes(1.05e15) == "1.05e+03 TB"


def test_run_seeds_are_made_lazily_and_equal_spawn():
    import numpy as np

    from bflnet.scenarios.shared.seeds import run_seeds
    from bflnet.simulator.rng import RngStreams
    for seed in (0, 7, 2**40):
        children = RngStreams(seed).seed_sequence("runs").spawn(300)
        spawned = [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
                   for c in children]
        lazy = run_seeds(seed, 300)
        assert len(lazy) == 300 and list(lazy) == spawned
        assert lazy[-1] == spawned[-1] and lazy[5:9] == spawned[5:9]
    with pytest.raises(IndexError):
        run_seeds(0, 3)[3]
    assert len(run_seeds(0, 10**6)) == 10**6  # nothing is made up front


def test_rounds_that_take_no_time_are_refused(capsys):
    """Synchronous gossip over the ideal channel never reaches duration_s: rounds without
    end (a hang that filled memory); a channel so fast that the rounds cannot fit in
    memory is refused by the estimate."""
    assert main(["run", "mobile-gossip", "--set", "mode=sync", "--set", "channel=ideal"]) == 2
    assert one_error_line(capsys).startswith("bflnet: error: channel: synchronous rounds")
    assert main(["run", "mobile-gossip", "--set", "mode=sync", "--set", "rate_bps=1e15",
                 "--set", "latency_s=0", "--no-progress"]) == 2
    assert one_error_line(capsys).startswith(
        "bflnet: error: duration_s, rate_bps, latency_s, speeds: the run needs about")
