"""Progress from a run's first second: the torch scenarios, whose set-up (torch, data,
pre-training) and iterations can be slow for large but valid values, draw a set-up bar
before any of that work, then one bar per protocol run, named by the setting it runs."""

import pytest

from bflnet.protocols.progress import SHOW_AFTER_S, run_label
from bflnet.runs.registry import run_scenario

SMALL = {"points_per_agent": 20, "eval_size": 50, "hidden": 4, "local_steps": 1, "K": 3,
         "eval_every": 2}
TINY = {
    "dsvgd-sparsifiers": {**SMALL, "particles": 2, "rounds": 2,
                          "sparsifiers": "shared", "sharing_fraction": 1.0},
    "dsvgd-vs-fedavg": {**SMALL, "particles": "2", "rate_multiples": "1", "rounds": 2},
    "forget-svgd": {"points_per_agent": 20, "eval_size": 50, "hidden": 4, "local_steps": 1,
                    "particles": 2, "pretrain_rounds": 2, "pretrain_local_steps": 1,
                    "learn_rounds": 1, "unlearn_rounds": 1, "scratch_rounds": 1,
                    "rate_multiples": "1", "sharing_fractions": "1"},
    "cdbfl-local-steps": {"K": 3, "points_per_agent": 20, "eval_size": 50, "hidden": 4, "rounds": 2,
                          "burn_in": 1, "local_steps_values": "1", "dsgld": False},
}

#: The first protocol bar of each (its setting named).
FIRST_BAR = {
    "dsvgd-sparsifiers": "dsvgd-sparsifiers sparsifier=shared:",
    "dsvgd-vs-fedavg": "dsvgd-vs-fedavg method=dsvgd particles=2 rate_multiple=1:",
    "forget-svgd": "forget-svgd phase=learn-forget rate_multiple=1 sharing_fraction=1:",
    "cdbfl-local-steps": "cdbfl-local-steps method=cd-bfl L=1:",
}

pytestmark = pytest.mark.usefixtures("use_tiny_fashion")


def test_bars_are_drawn_at_once():
    assert SHOW_AFTER_S < 1.0


@pytest.mark.parametrize("name", sorted(TINY))
def test_set_up_bar_comes_first_then_a_protocol_bar(name, capsys):
    run_scenario(name, TINY[name], seed=1, progress=True)
    err = capsys.readouterr().err
    # the run's set-up line (its estimate), then the scenario's set-up bar, before torch,
    # data and models
    assert err.lstrip("\r ").startswith(f"{name} set-up (~")
    assert f"{name} set-up:" in err
    assert "loading torch and data" in err
    # then the protocol's bar, named by its setting
    assert err.find(FIRST_BAR[name]) > err.find(f"{name} set-up:")


def test_no_bar_without_progress(capsys):
    run_scenario("forget-svgd", TINY["forget-svgd"], seed=1, progress=False)
    assert capsys.readouterr().err == ""


def test_a_bar_is_named_by_the_setting_it_runs():
    assert run_label("d2d-medium", {"K": 30, "mac": "csma"}, "broadcast") == \
        "d2d-medium K=30 mac=csma broadcast"
    assert run_label("mobile-gossip", {"speed": 5.0}) == "mobile-gossip speed=5"


def test_each_d2d_medium_setting_has_its_own_bar(capsys):
    """Not ten bars all called ``d2d-medium``: one per task and setting, named by it."""
    run_scenario("d2d-medium", {"tasks": "consensus", "K": 4, "rounds": 1,
                                "macs": "links,csma", "broadcasts": "false,true"},
                 seed=1, progress=True)
    err = capsys.readouterr().err
    bars = {line.split(":")[0].strip() for line in err.replace("\r", "\n").splitlines()
            if "it/s" in line or "it]" in line}
    assert bars == {f"d2d-medium task=consensus K=4 mac={m}" for m in
                    ("links", "csma unicast", "csma broadcast")}
