"""Bad input to the shared medium: negative distances, a non-finite SINR threshold, MAC
parameters out of range, positions a graph file cannot have, colourings that cannot exist
and sizes that do not fit: one-line errors naming the field (exit code 2 from the CLI),
never a traceback, a hang or a huge allocation."""

from __future__ import annotations

import math

import pytest

from bflnet.cli.main import main
from bflnet.radio import Aloha, Csma, LogDistance, RadioSpec, Tdma, distance2_colouring
from bflnet.scenarios import get_scenario

SHARED = ["--set", "medium=shared", "--set", "channel=rayleigh", "--set", "K=6",
          "--set", "rounds=2", "--no-progress"]
HUGE = "1" + "0" * 400


def one_error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    final = err.split("\r")[-1]
    assert "Traceback" not in err
    assert err.count("\n") == 1 and final.startswith("bflnet: error: "), err
    return final


@pytest.mark.parametrize("extra, text", [
    (["area_m=-5", "graph=random-geometric"], "area_m: must be a finite number >= 0.001"),
    (["radius_m=-1", "graph=random-geometric"], "radius_m: must be a finite number >= 0.001"),
    (["sense_range_m=-0.5"], "sense_range_m: must be a finite number >= 0"),
    (["sinr_threshold_db=inf"], "sinr_threshold_db: must be a finite number"),
    (["sinr_threshold_db=-inf"], "sinr_threshold_db: must be a finite number"),
    (["sinr_threshold_db=1e308"], "sinr_threshold_db: must be a finite number"),
    (["mac=aloha", "aloha_p=0"], "aloha_p: must be a finite number >= 1e-09 and <= 1"),
    (["mac=aloha", "aloha_p=-0.1"], "aloha_p: must be a finite number >= 1e-09 and <= 1"),
    (["mac=aloha", "aloha_p=nan"], "aloha_p: must be a finite number >= 1e-09 and <= 1"),
    (["retry_limit=1000000000"], "retry_limit: must be an integer >= 0 and <= 1000"),
    ([f"retry_limit={HUGE}"], "retry_limit: must be an integer >= 0 and <= 1000"),
    (["mac=tdma", "mac_slot_s=0"], "mac_slot_s: must be a finite number >= 1e-09"),
    (["mac=tdma", "mac_slot_s=inf"], "mac_slot_s: must be a finite number >= 1e-09"),
    (["mac=tdma", "mac_slot_s=1e308"], "mac_slot_s: must be a finite number >= 1e-09"),
    (["backoff_slot_s=0"], "backoff_slot_s: must be a finite number >= 1e-09"),
    (["backoff_slot_s=inf"], "backoff_slot_s: must be a finite number >= 1e-09"),
    (["backoff_slot_s=1e308"], "backoff_slot_s: must be a finite number >= 1e-09"),
    (["cw_min=0"], "cw_min: must be an integer >= 1"),
    (["cw_min=32", "cw_max=16"], "cw_max: must be >= cw_min (32)"),
    (["mac=tdma", "tdma_frame_slots=0"], "tdma_frame_slots: must be an integer >= 1"),
    (["mac=aloha", "mac_slot_s=1e-9"], "mac_slot_s: must be at least the air time"),
    (["shadowing_db=-1"], "shadowing_db: must be a finite number >= 0"),
    (["path_loss_exponent=-1"], "path_loss_exponent: must be a finite number >= 0"),
])
def test_bad_settings_are_one_line_and_exit_code_2(capsys, tmp_path, extra, text):
    sets = [x for kv in extra for x in ("--set", kv)]
    final = one_error_line(capsys, ["run", "consensus-averaging", *SHARED, *sets, "--out",
                                    str(tmp_path / "r.csv")])
    assert text in final, final


def graphml(tmp_path, coords: list[tuple[str, str]]) -> str:
    nodes = "".join(f'<node id="n{i}"><data key="x">{x}</data><data key="y">{y}</data>'
                    f'</node>' for i, (x, y) in enumerate(coords))
    edges = "".join(f'<edge source="n{i}" target="n{i + 1}"/>' for i in range(len(coords) - 1))
    path = tmp_path / "g.graphml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key id="x" for="node" attr.name="x" attr.type="double"/>'
        '<key id="y" for="node" attr.name="y" attr.type="double"/>'
        f'<graph edgedefault="undirected">{nodes}{edges}</graph></graphml>')
    return str(path)


@pytest.mark.parametrize("x", ["nan", "inf", "-inf", "1e308", "-2e9"])
def test_graph_file_positions_must_be_finite_and_bounded(capsys, tmp_path, x):
    path = graphml(tmp_path, [(x, "0"), ("10", "0"), ("0", "10")])
    final = one_error_line(capsys, ["run", "consensus-averaging", "--set", "graph=file",
                                    "--set", f"graph_file={path}", "--set", "medium=shared",
                                    "--set", "channel=rayleigh", "--set", "rounds=2",
                                    "--no-progress", "--out", str(tmp_path / "r.csv")])
    assert "must have a finite position x, y within" in final and "n0" in final, final


def test_negative_coordinates_are_positions_and_coincident_nodes_get_a_schedule(tmp_path):
    """A coordinate may be negative (only distances may not); nodes all at one point are a
    complete interference graph: TDMA gives each its own slot."""
    from bflnet.scenarios import run_scenario

    for coords in ([("-50", "-20"), ("-40", "-20"), ("-30", "-25"), ("-45", "-10")],
                   [("7", "7")] * 4):
        path = graphml(tmp_path, coords)
        frame = run_scenario("consensus-averaging", {
            "graph": "file", "graph_file": path, "medium": "shared", "channel": "rayleigh",
            "mac": "tdma", "broadcast": True, "rounds": 2, "record_messages": True}, seed=0)
        tx = frame[frame["event"] == "tx"]
        assert len(tx) == 4 * 2 and (frame["event"] != "mac").all()  # no collision
        if coords[0] == coords[1]:  # 4 slots per round, one per node
            starts = sorted(tx["start_s"].round(12).unique())
            assert len(starts) == len(tx)


def test_api_objects_refuse_bad_values_in_one_line():
    cases = [
        (lambda: LogDistance(ref_distance_m=-1.0), "ref_distance_m"),
        (lambda: LogDistance(ref_distance_m=0.0), "ref_distance_m"),
        (lambda: LogDistance(exponent=math.nan), "path_loss_exponent"),
        (lambda: RadioSpec(sinr_threshold_db=math.nan), "sinr_threshold_db"),
        (lambda: RadioSpec(sinr_threshold_db=math.inf), "sinr_threshold_db"),
        (lambda: Aloha(p=0.0), "aloha_p"),
        (lambda: Aloha(p=1.5), "aloha_p"),
        (lambda: Aloha(slot_s=0.0), "slot_s"),
        (lambda: Tdma(frame_slots=0), "tdma_frame_slots"),
        (lambda: Tdma(slot_s=math.inf), "slot_s"),
        (lambda: Csma(cw_min=8, cw_max=4), "cw_max"),
        (lambda: Csma(slot_s=0.0), "csma_slot_s"),
        (lambda: Csma(slot_s=1e308), "csma_slot_s"),
        (lambda: Csma(retry_limit=10**9), "retry_limit"),
        (lambda: Csma(sense_range_m=-1.0), "sense_range_m"),
    ]
    for make, field in cases:
        with pytest.raises(ValueError) as err:
            make()
        message = str(err.value)
        assert message.startswith(f"{field}:") and "\n" not in message, message


def test_colourings_that_cannot_exist_are_refused():
    # a 5-cycle: every two nodes are within two hops, so 5 colours, though its degree is 2
    cycle = [(i, (i + 1) % 5) for i in range(5)]
    colours, slots = distance2_colouring(range(5), cycle)
    assert slots == 5 and len(set(colours.values())) == 5
    with pytest.raises(ValueError, match=r"^tdma_frame_slots: a distance-2 colouring .* "
                                         r"needs at least 3 colours"):
        distance2_colouring(range(5), cycle, frame_slots=2)
    with pytest.raises(ValueError, match=r"^tdma_frame_slots: the greedy distance-2 "
                                         r"colouring .* needs 5 colours, got 4"):
        distance2_colouring(range(5), cycle, frame_slots=4)
    # degenerate interference graphs: no edge (one slot), a single node, self-loops ignored
    assert distance2_colouring(range(3), [])[1] == 1
    assert distance2_colouring(range(1), [(0, 0)]) == ({0: 0}, 1)


def test_a_shared_medium_too_large_to_tabulate_is_refused_before_it_runs():
    """Everyone within everyone's interference range (a ring laid out in 100 m): the
    medium's per-node tables grow as K^2; refused in one line naming K."""
    scenario = get_scenario("consensus-averaging")
    config = scenario.config({"medium": "shared", "channel": "rayleigh", "K": 5000,
                              "rounds": 1})
    with pytest.raises(ValueError, match=r"^K, area_m, .*shared medium: 5000 nodes x 5000 "
                                         r"within interference range"):
        scenario.check_resources(config)
    small = scenario.config({"medium": "shared", "channel": "rayleigh", "K": 50})
    scenario.check_resources(small)  # fits
