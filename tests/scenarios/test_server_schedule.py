"""The parameter server's agent selection: its default (one agent per iteration) and
what ``bflnet describe`` says for every scenario that runs a server."""

from __future__ import annotations

import inspect

import pytest

from bflnet.cli.main import main
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import RoundRobinSelector
from bflnet.protocols.stopping import StopRule
from bflnet.runs.registry import get_scenario, scenario_names

SERVER_CALLS = ("ParameterServerProtocol", "BufferedServerProtocol", "run_server_rounds",
                "run_parameter_server")


def test_default_selection_is_one_agent_per_iteration_in_turn() -> None:
    protocol = ParameterServerProtocol(object(), StopRule(max_iterations=1))  # type: ignore[arg-type]
    assert isinstance(protocol.selector, RoundRobinSelector)
    picks = [protocol.selector.select(i, [0, 1, 2], None) for i in range(1, 5)]
    assert picks == [[0], [1], [2], [0]]


def _runs_a_server(name: str) -> bool:
    source = inspect.getsource(inspect.getmodule(get_scenario(name).run_fn))
    return any(call in source for call in SERVER_CALLS)


@pytest.mark.parametrize("name", scenario_names())
def test_describe_shows_the_selection_of_every_server_scenario(name, capsys) -> None:
    assert main(["describe", name]) == 0
    text = capsys.readouterr().out
    shown = "parameter server's agent selection:" in text
    assert shown == _runs_a_server(name)
    assert (get_scenario(name).server_schedule is not None) == shown
