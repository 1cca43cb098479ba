"""The shared medium's settings beyond consensus-averaging: ``reception`` (threshold | per),
the parameter server's downlink broadcast (``async-fedavg``) and async broadcast gossip
(``mobile-gossip``), checked on the records; bad values are one-line errors (exit code 2).
"""

import math

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.scenarios import get_scenario, run_scenario

FEDAVG = {"K": 4, "points_per_agent": 40, "eval_size": 100, "hidden": 4, "local_steps": 2,
          "batch_size": 8, "duration_s": 4.0, "compute_s_per_step": 0.1, "eval_every": 2,
          "methods": "sync", "medium": "shared", "mac": "tdma", "record_messages": True}


def rounds_of(frame):
    """Per round of ``frame``: its message rows (``iteration`` of the round)."""
    msgs = frame[frame.event == "message"]
    return {int(r): m for r, m in msgs.groupby("iteration")}


@pytest.mark.usefixtures("use_tiny_fashion")
def test_server_downlink_broadcast_is_one_transmission_with_per_receiver_outcomes():
    K = FEDAVG["K"]
    # -10 dBm, Rayleigh fading, over a 100 m square: each agent misses some broadcasts on
    # its own fading draw; a model (784-4-10 MLP, float64) is one packet (mtu_bits)
    radio = {"tx_power_dbm": -10.0, "channel": "rayleigh", "mtu_bits": 204_160,
             "duration_s": 6.0}
    cast = run_scenario("async-fedavg", {**FEDAVG, **radio, "broadcast": True}, seed=1)
    uni = run_scenario("async-fedavg", {**FEDAVG, **radio}, seed=1)
    its = cast[cast.event == "iteration"].set_index("iteration")
    lost = 0
    for r, msgs in rounds_of(cast).items():
        down = msgs[msgs.kind == "state"]
        assert len(down) == 1 and down.peer.iloc[0] == "*"  # one message for every agent
        assert down.receivers.iloc[0] == K
        got = int(down.received.iloc[0])
        lost += K - got
        # each agent that received the state uploads an update; the others sit out
        assert (msgs.kind == "update").sum() == got
        assert its.loc[r, "updates"] <= got
        # its packets: one tx row each from the server, to all K agents (the ACKs the
        # server sends for the agents' unicast updates aside: 802.11b, the default phy)
        tx = cast[(cast.event == "tx") & (cast.iteration == r) & (cast.node == "server")
                  & (cast["frame"] != "ack")]
        assert len(tx) == down.attempts.iloc[0] and (tx.receivers == K).all()
        assert tx.bits.sum() == down.bits_on_air.iloc[0] == down.bits.iloc[0]
    assert lost > 0  # some receptions were lost (the test exercises the loss rule)
    # the downlink bits are counted once a round: one model's bits, not K
    bits = cast[cast.event == "message"].bits.max()
    steps = np.diff(cast[cast.event.isin(["init", "iteration"])].cum_bits_down.to_numpy())
    assert (steps == bits).all()
    # unicast: K messages a round, each acknowledged and retried (ARQ)
    for _, msgs in rounds_of(uni).items():
        down = msgs[msgs.kind == "state"]
        assert len(down) == K and (down.peer != "*").all()
    steps = np.diff(uni[uni.event.isin(["init", "iteration"])].cum_bits_down.to_numpy())
    assert (steps >= K * bits).all()


@pytest.mark.usefixtures("use_tiny_fashion")
def test_server_broadcast_from_the_command_line(capsys, tmp_path):
    sets = [f"{k}={v}" for k, v in {**FEDAVG, "broadcast": "true",
                                    "record_messages": "false"}.items()]
    argv = ["run", "async-fedavg", *(a for s in sets for a in ("--set", s)), "--no-progress",
            "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 0, capsys.readouterr().err
    assert (tmp_path / "r.csv").exists()


MOBILE = {"K": 6, "speeds": "0", "duration_s": 3.0, "rate": 2.0, "area_m": 20.0,
          "radius_m": 40.0, "medium": "shared", "channel": "rayleigh", "mac": "tdma",
          "record_messages": True}


def test_async_broadcast_gossip_is_one_transmission_per_wake_up():
    K = MOBILE["K"]  # a complete graph: every node hears the K - 1 others
    cast = run_scenario("mobile-gossip", {**MOBILE, "broadcast": True}, seed=4)
    uni = run_scenario("mobile-gossip", MOBILE, seed=4)
    ex = cast[cast.event == "exchange"]
    msgs = cast[cast.event == "message"]
    assert len(ex) > 3 and (ex.peer == "*").all() and (ex.outcome == "broadcast").all()
    assert len(msgs) == len(ex) and (msgs.peer == "*").all()
    assert (msgs.receivers == K - 1).all()
    # per-receiver outcomes: received + dropped receptions = the neighbours
    assert ((ex.received + ex.dropped) == K - 1).all()
    assert ex.received.to_numpy().tolist() == msgs.received.to_numpy().tolist()
    # one 64-bit packet on the air per broadcast, not one per neighbour
    assert (cast.event == "tx").sum() == len(ex)
    assert cast.cum_bits.max() == 64 * len(ex)
    # unicast push-pull: two messages per exchange, each to one neighbour
    uex = uni[uni.event == "exchange"]
    assert (uni.event == "message").sum() >= len(uex) and (uni.cum_bits.max()
                                                            >= 64 * len(uex))
    assert (uni[uni.event == "message"].peer != "*").all()


def test_async_broadcast_energy_is_charged_once():
    """The protocol itself: a broadcast's bits are charged once to its sender's battery."""
    import networkx as nx

    from bflnet.faults.energy import Battery
    from bflnet.learners.gossip.averaging import ConsensusAveraging
    from bflnet.protocols.async_gossip import AsyncGossipProtocol
    from bflnet.protocols.stopping import StopRule
    from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec, Tdma
    from bflnet.simulator import Simulation

    K = 4
    g = nx.complete_graph(K)
    for k in g:
        g.nodes[k]["pos"] = (5 * math.cos(2 * math.pi * k / K), 5 * math.sin(2 * math.pi * k / K))
    spec = RadioSpec(tx_power_dbm=20.0, fading="none", pathloss=LogDistance(3.0, 1.0, 40.0))
    battery = Battery(capacity_j=1.0, tx_power_w=0.5)
    sim = Simulation(1, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(spec, mac=Tdma()), energy=battery)
    result = sim.run(AsyncGossipProtocol(ConsensusAveraging({k: float(k) for k in range(K)}),
                                         StopRule(max_iterations=5), broadcast=True))
    senders = result.frame[result.frame.event == "exchange"].node.astype(int).tolist()
    per_bit = 0.5 / spec.rate_bps
    spent = [1.0 - net.nodes[k].battery.left_j for k in range(K)]
    assert spent == pytest.approx([64 * per_bit * senders.count(k) for k in range(K)])


def test_reception_per_loses_packets_with_the_bpsk_error_rate_where_threshold_loses_none():
    """Two nodes 100 m apart (circle layout), no fading, SNR 6 dB, 1.2 dB above the
    threshold of coding rate 2 (2^2 - 1 = 4.8 dB): the threshold passes every packet; the
    error-rate map loses a 64-bit packet with 1 - (1 - Q(sqrt(2 SNR)))^64, within 4
    standard errors over 2 000 packets (phy=ideal: no ACK frames that could be lost)."""
    rounds = 1000
    base = {"graph": "path", "K": 2, "layout": "circle", "area_m": 100.0, "channel": "ideal",
            "medium": "shared", "phy": "ideal", "mac": "tdma", "tx_power_dbm": -1.0,
            "max_attempts": 1,
            "rounds": rounds, "record_messages": True}
    config = get_scenario("consensus-averaging").config({**base, "reception": "per"})
    radio = config.medium_spec().radio
    snr = 10 ** (radio.mean_snr_db(100.0) / 10)
    assert 10 * math.log10(snr) == pytest.approx(6.0)
    per = 1 - (1 - 0.5 * math.erfc(math.sqrt(snr))) ** 64
    for reception, expected in (("threshold", 0.0), ("per", per)):
        frame = run_scenario("consensus-averaging", {**base, "reception": reception}, seed=2)
        msgs = frame[frame.event == "message"]
        assert len(msgs) == 2 * rounds
        rate = msgs.dropped.mean()
        if expected == 0.0:
            assert rate == 0.0
        else:
            assert abs(rate - expected) < 4 * math.sqrt(expected * (1 - expected) / len(msgs))
            assert rate > 0.05  # the error-rate map is the stricter one here


@pytest.mark.parametrize(("scenario", "sets", "text"), [
    ("consensus-averaging", ["medium=shared", "reception=foo"],
     "reception: must be one of threshold, per, mcs or none, got 'foo'"),
    ("consensus-averaging", ["reception=per"],
     "reception: not used with medium=links; used only with medium=shared"),
    ("consensus-averaging", ["medium=shared", "broadcast=maybe"], "broadcast: must be"),
    ("mobile-gossip", ["broadcast=true"],
     "broadcast: not used with medium=links; used only with medium=shared"),
    ("consensus-averaging", ["medium=shared", "reception=per", "mac=tdma",
                             "sinr_threshold_db=3"],
     "sinr_threshold_db: not used with reception=per and mac=tdma"),
    ("async-fedavg", ["medium=shared", "broadcast=true"],
     "broadcast: not used by methods deadline, fedbuff"),
    ("async-fedavg", ["area_m=50"], "area_m: not used with medium=links"),
    ("mobile-gossip", ["medium=shared", "mac=tdma"],
     "mac: not used as tdma with moving nodes"),
    ("mobile-gossip", ["medium=shared", "layout=grid"], "layout: not used by mobile-gossip"),
    ("consensus-averaging", ["round_jitter_s=-0.1"], "round_jitter_s: must be a finite number"),
    ("consensus-averaging", ["medium=shared", "mac=tdma", "tdma_schedule=x"],
     "tdma_schedule: must be one of auto, distance2, sinr"),
    ("consensus-averaging", ["medium=shared", "mac=aloha", "guard_s=inf"],
     "guard_s: must be a finite number >= 0"),
])
def test_bad_settings_are_one_line_errors_with_exit_code_2(capsys, tmp_path, scenario, sets,
                                                           text):
    argv = ["run", scenario, *(a for s in sets for a in ("--set", s)), "--no-progress",
            "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ") and text in err, err


def test_the_server_reads_area_and_layout_on_a_shared_medium():
    scenario = get_scenario("async-fedavg")
    used = scenario.config({"medium": "shared"}).used_fields()
    assert {"area_m", "layout", "mac", "broadcast", "reception"} <= used
    assert not {"area_m", "layout", "mac"} & scenario.config({}).used_fields()
    assert "area_m" not in scenario.config_cls.decided_elsewhere()


def test_em_tdamp_rounds_broadcast_the_state_once():
    """The EM-TDAMP scenarios' server (every client every round): the downlink bits of a
    round are one copy of the state with broadcast, K copies with unicast."""
    K, rounds = 4, 2
    base = {"K": K, "rounds": rounds, "medium": "shared", "mac": "tdma"}
    uni = run_scenario("emtdamp", base, seed=1)
    cast = run_scenario("emtdamp", {**base, "broadcast": True}, seed=1)
    down_uni = np.diff(uni.cum_bits_down.to_numpy())
    down_cast = np.diff(cast.cum_bits_down.to_numpy())
    assert (down_uni > 0).all() and (down_uni == K * down_cast).all()
    assert (cast.updates.iloc[1:] == K).all()  # close enough that nobody misses it
    assert (cast.cum_bits_up == uni.cum_bits_up).all()  # the uplinks stay unicast
    for name in ("emtdamp-boston", "emtdamp-mnist"):
        used = get_scenario(name).config({"medium": "shared"}).used_fields()
        assert {"broadcast", "reception", "area_m", "layout"} <= used


def test_round_jitter_spreads_consensus_averaging_s_rounds():
    """0 is the default's rows; a jitter changes when packets go, the same seed gives the
    same rows. With phy=ideal the spread rounds end later (the jitter adds to them); under
    802.11b (the default) a spread start avoids collisions whose retries cost more than
    the jitter, so the rounds may end sooner: only a change is asserted there."""
    base = {"K": 10, "rounds": 5, "medium": "shared", "mac": "csma", "channel": "rayleigh"}
    at_once = run_scenario("consensus-averaging", base, seed=1)
    assert run_scenario("consensus-averaging", {**base, "round_jitter_s": 0.0},
                        seed=1).equals(at_once)
    spread = run_scenario("consensus-averaging", {**base, "round_jitter_s": 0.01}, seed=1)
    assert spread.equals(run_scenario("consensus-averaging",
                                      {**base, "round_jitter_s": 0.01}, seed=1))
    assert spread["time_s"].iloc[-1] != at_once["time_s"].iloc[-1]
    ideal = {**base, "phy": "ideal"}
    assert (run_scenario("consensus-averaging", {**ideal, "round_jitter_s": 0.01},
                         seed=1)["time_s"].iloc[-1]
            > run_scenario("consensus-averaging", ideal, seed=1)["time_s"].iloc[-1])
