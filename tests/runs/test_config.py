import pytest

from bflnet.runs.config import describe_fields, parse_overrides
from bflnet.runs.registry import get_scenario, run_scenario
from bflnet.scenarios.gossip.consensus_averaging import ConsensusAveragingConfig as Config


def test_overrides_are_parsed_to_the_field_types():
    assert parse_overrides(Config, ["K=20", "graph=ring", "loss_prob=0.1",
                                    "max_attempts=none", "record_messages=true"]) == {
        "K": 20, "graph": "ring", "loss_prob": 0.1, "max_attempts": None,
        "record_messages": True}


@pytest.mark.parametrize(("overrides", "message"), [
    ({"K": 1}, "K: must be an integer >= 2 and <= 1000000, got 1"),
    ({"graph": "hexagon"}, "graph: must be one of complete, star, ring"),
    ({"loss_prob": 1.0}, "loss_prob: must be a finite number >= 0 and < 1, got 1.0"),
    ({"max_attempts": 0}, "max_attempts: must be an integer >= 1 and <= 1000000 or none, got 0"),
    ({"K": 2.5}, "K: must be an integer >= 2 and <= 1000000, got 2.5"),
    ({"rounds": True}, "rounds: must be an integer >= 1 and <= 100000000, got True"),
])
def test_bad_values_give_one_line_errors_naming_the_field(overrides, message):
    with pytest.raises(ValueError) as info:
        Config(**overrides)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("pairs", "message"), [
    (["K=abc"], "K: must be an integer >= 2 and <= 1000000, got 'abc'"),
    (["K=3.5"], "K: must be an integer >= 2 and <= 1000000, got '3.5'"),
    (["nope=1"], "unknown parameter 'nope'; allowed: graph, K"),
    (["K"], "--set: expected key=value, got 'K'"),
])
def test_bad_command_line_values(pairs, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        parse_overrides(Config, pairs)


def test_unknown_scenario_lists_the_known_ones():
    with pytest.raises(ValueError, match="^unknown scenario 'nope'; known: .*consensus-averaging"):
        get_scenario("nope")


def test_describe_lists_every_parameter_with_default_and_allowed_values():
    rows = {r["name"]: r for r in describe_fields(Config)}
    assert rows["K"]["default"] == 20 and rows["K"]["allowed"] == "an integer >= 2 and <= 1000000"
    assert rows["channel"]["allowed"].startswith("one of ideal, fixed")
    assert all(r["help"] for r in rows.values())


def test_disconnected_graph_is_rejected_with_a_clear_error(tmp_path):
    edges = tmp_path / "two-pieces.txt"
    edges.write_text("0 1\n2 3\n")
    with pytest.raises(ValueError, match="^graph: disconnected"):
        run_scenario("consensus-averaging", {"graph": "file", "graph_file": str(edges)})


@pytest.mark.parametrize(("make", "message"), [
    (lambda: get_scenario("Consensus-Averaging"),
     "unknown scenario 'Consensus-Averaging'; did you mean 'consensus-averaging'? known: "),
    (lambda: parse_overrides(Config, ["k=5"]), "unknown parameter 'k'; did you mean 'K'? "),
    (lambda: Config(mixing="max_degree"),
     "mixing: must be one of metropolis-hastings, max-degree, uniform, got 'max_degree'; "
     "did you mean 'max-degree'?"),
    (lambda: parse_overrides(Config, ["zzz=1"]), "unknown parameter 'zzz'; allowed: graph"),
])
def test_unknown_names_get_the_closest_allowed_one(make, message):
    with pytest.raises(ValueError) as info:
        make()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
