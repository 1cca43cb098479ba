"""Carrier sense by received power (energy and preamble detection) and the vulnerable
window (propagation delay, CCA time, Rx/Tx turnaround) on the shared medium."""

from __future__ import annotations

import math
import subprocess
import sys

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from bflnet.cli.main import main
from bflnet.radio import Csma, LogDistance, RadioSpec, SharedMediumSpec
from bflnet.radio.pathloss import dbm_to_mw
from bflnet.radio.phy import phy_preset
from bflnet.radio.phy.sensing import SPEED_OF_LIGHT_M_S, window_s
from bflnet.simulator import Simulation

BITS = 8000


def build(positions, phy="80211a", *, mac=None, seed=5, fading="none", shadowing_db=0.0,
          exponent=3.0, tx_power_dbm=20.0, **kw):
    # a hard SINR threshold: two overlapping frames both fail (the error model of
    # reception="mcs" would let DSSS's processing gain capture the first: not what these
    # carrier-sense tests are about)
    kw.setdefault("reception", "threshold")
    radio = RadioSpec(tx_power_dbm=tx_power_dbm, bandwidth_hz=20e6, noise_figure_db=7.0,
                      coding_rate=1.0, sinr_threshold_db=10.0, fading=fading,
                      pathloss=LogDistance(exponent, 1.0, 40.0, shadowing_db), phy=phy, **kw)
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": tuple(p)}) for k, p in enumerate(positions))
    g.add_edges_from((0, k) for k in range(1, len(positions)))
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(radio, mac=mac or Csma()),
                            mtu_bits=BITS)
    return sim, net, net.air.medium


def busy_nodes(medium) -> set[int]:
    return {n for n, c in enumerate(medium.busy_count) if c > 0}


def test_default_is_power_sensing_under_a_preset_and_a_circle_when_asked():
    _, _, medium = build([(0.0, 0.0), (5.0, 0.0)])
    assert medium.power_sense is not None and medium.sense_range_m is None
    sense = medium.power_sense
    assert sense.pd_dbm == -82.0 and sense.ed_dbm == -62.0  # OFDM, 17.3.10.6
    _, _, medium = build([(0.0, 0.0), (5.0, 0.0)], mac=Csma(sense_range_m=30.0))
    assert medium.power_sense is None and medium.sense_range_m == 30.0
    _, _, medium = build([(0.0, 0.0), (5.0, 0.0)], phy="ideal")
    assert medium.power_sense is None and medium.sense_range_m == pytest.approx(
        medium.spec.range_m)
    b = phy_preset("80211b")
    assert b.pd_dbm == -80.0 and (b.cca_s, b.turnaround_s) == (15e-6, 5e-6)
    # DSSS energy detection by transmit power (15.4.8.5)
    assert [b.ed_threshold_dbm(p) for p in (23.0, 20.0, 18.0, 16.0, 10.0)] == \
        [-80.0, -76.0, -76.0, -70.0, -70.0]


def test_with_shadowing_and_fading_a_node_senses_exactly_the_transmitters_above_pd():
    """8 dB shadowing and Rayleigh fading: each transmission, started alone, makes busy
    exactly the nodes where its power (the medium's own draw) is at or above the PD
    threshold; that set is not a circle."""
    rng = np.random.default_rng(1)
    xy = rng.uniform(0.0, 400.0, size=(80, 2))
    sim, _, medium = build(xy, fading="rayleigh", shadowing_db=8.0)
    pd_mw = dbm_to_mw(-82.0)
    inside_not_sensed = outside_sensed = checked = 0

    def body():
        nonlocal inside_not_sensed, outside_sensed, checked
        for sender in range(0, 80, 4):
            tx = medium.start(sender, [(sender + 1) % 80], 1e-4, BITS)
            # its power at each node: the mean (path loss and the pair's shadowing) times
            # the block-fading draws the medium just took (what reception sees too)
            near, mean, _ = medium.around(sender)
            gains = medium._buf[medium._pos - near.size:medium._pos]
            assert np.array_equal(tx.near, near) and np.array_equal(tx.power, mean * gains)
            above = {n for n, m, g in zip(near.tolist(), mean.tolist(), gains.tolist(),
                                          strict=True) if m * g >= pd_mw}
            assert busy_nodes(medium) == {sender, *above}
            for n in near.tolist():
                d = medium.distance(sender, n)
                sensed = medium.busy_count[n] > 0
                inside_not_sensed += d < 80.0 and not sensed
                outside_sensed += d > 150.0 and sensed
            checked += 1
            yield sim.env.timeout(2e-4)  # it ends: every carrier idle again
            medium.settle(sim.env.now)
            assert busy_nodes(medium) == set()
            assert not medium.power_sense.energy.any()
    sim.env.process(body())
    sim.env.run()
    assert checked == 20
    assert inside_not_sensed > 0 and outside_sensed > 0  # shadowing and fading decide


def test_two_transmitters_each_below_ed_together_above_it_make_the_carrier_busy():
    """X between A and C: each one's power at X is -64 dBm (below ED -62, and below a PD
    threshold raised to -50), their sum -61 dBm is above ED."""
    d = 10 ** (44.0 / 30.0)  # 20 dBm - (40 + 30 log10 d) = -64 dBm
    sim, _, medium = build([(0.0, 0.0), (-d, 0.0), (d, 0.0)], pd_threshold_dbm=-50.0)
    x, a, c = 0, 1, 2
    seen = []

    def body():
        first = medium.start(a, [x], 1e-3, BITS)
        assert 10 * math.log10(medium._total[x]) == pytest.approx(-64.0)
        seen.append(medium.busy_count[x])  # alone: idle at X
        yield sim.env.timeout(1e-4)
        medium.start(c, [x], 1e-3, BITS)
        assert 10 * math.log10(medium._total[x]) == pytest.approx(-64.0 + 10 * math.log10(2))
        seen.append(medium.busy_count[x])  # together: busy by energy
        assert not medium.errored[x]  # energy alone: no errored period
        yield sim.env.timeout(first.end - sim.env.now)
        medium.settle(sim.env.now)
        seen.append(medium.busy_count[x])  # A ended: idle again, since then
        assert medium.idle_since[x] == pytest.approx(first.end)
        # A and C, 2d apart, never sensed each other
        assert medium.busy_count[c] == 1  # its own transmission only
    sim.env.process(body())
    sim.env.run()
    assert seen == [0, 1, 0]


def test_a_frame_above_both_thresholds_counts_once_and_overlaps_make_errored_periods():
    sim, _, medium = build([(0.0, 0.0), (5.0, 0.0), (-5.0, 0.0)])

    def body():
        medium.start(1, [0], 1e-3, BITS)
        assert medium.busy_count[0] == 2 and not medium.errored[0]  # PD and ED
        yield sim.env.timeout(1e-3)
        medium.settle(sim.env.now)
        assert medium.busy_count[0] == 0 and not medium.errored[0]
        medium.start(1, [0], 1e-3, BITS)
        medium.start(2, [0], 1e-3, BITS)  # two detected frames overlap: errored
        assert medium.errored[0]
        yield sim.env.timeout(1e-3)
        medium.settle(sim.env.now)
        assert medium.busy_count == [0, 0, 0] and medium.errored[0]
    sim.env.process(body())
    sim.env.run()


def race(gap_s: float, distance_m: float, phy: str = "80211a", **kw):
    """A and B, ``distance_m`` apart, both send to R between them; their back-offs (2
    slots each, on an idle medium) end ``gap_s`` apart. ``(A received, B received,
    B's start - A's start)``."""
    half = distance_m / 2
    sim, _, medium = build([(0.0, 0.0), (-half, 0.0), (half, 0.0)], phy=phy, **kw)
    sched = medium.carrier
    r, a, b = 0, 1, 2
    timing = phy_preset(phy)
    got = {}

    def station(node, delay):
        yield sim.env.timeout(delay)
        yield sched.backoff(node, 2, 1, timing.cw_min + 1)
        airtime = timing.frame_s(BITS, 20e6)
        got[node] = medium.start(node, [r], airtime, BITS)
        yield sim.env.timeout(airtime)
        medium.finish(got[node])  # (as a transceiver does: the carrier goes idle)

    sim.env.process(station(a, 0.0))
    sim.env.process(station(b, gap_s))
    sim.env.run()
    outcome = {n: medium.finish(tx)[r] for n, tx in got.items()}
    return outcome[a], outcome[b], got[b].start - got[a].start


def test_backoffs_ending_within_the_vulnerable_window_collide():
    # 80211a at 30 m: 0.1 + 4 + 2 µs; 1 µs apart both transmit and collide at R
    assert window_s(phy_preset("80211a"), 30.0) == pytest.approx(6e-6 + 30.0 / SPEED_OF_LIGHT_M_S)
    ok_a, ok_b, lag = race(1e-6, 30.0)
    assert lag == pytest.approx(1e-6) and not ok_a and not ok_b
    # 50 µs apart: B has sensed A's frame and waits for it (and DIFS) before sending
    ok_a, ok_b, lag = race(50e-6, 30.0)
    assert ok_a and ok_b and lag > phy_preset("80211a").frame_s(BITS, 20e6)


def test_propagation_delay_widens_the_window_with_distance():
    # 7 µs apart: sensed in time at 30 m (window 6.1 µs), not at 600 m (8 µs)
    loud = {"tx_power_dbm": 30.0, "exponent": 2.0}  # 600 m: -65.6 dBm, above PD
    assert race(7e-6, 30.0, **loud)[:2] == (True, True)
    ok_a, ok_b, lag = race(7e-6, 600.0, **loud)
    assert lag == pytest.approx(7e-6) and not ok_a and not ok_b


def test_slot_synchronised_stations_collide_only_in_the_same_slot():
    # 802.11b: 15 + 5 µs fill the 20 µs slot: the window is capped at one slot, so a
    # back-off that ends a slot later has sensed the frame
    b = phy_preset("80211b")
    assert window_s(b, 100.0) == b.slot_s
    assert race(b.slot_s, 5.0, phy="80211b")[:2] == (True, True)
    assert race(b.slot_s * 0.9, 5.0, phy="80211b")[:2] == (False, False)


@pytest.mark.parametrize("kw, text", [
    ({"ed_threshold_dbm": math.nan}, "ed_threshold_dbm: must be a finite number in [-150, 30]"),
    ({"pd_threshold_dbm": -200.0}, "pd_threshold_dbm: must be a finite number in [-150, 30]"),
    ({"ed_threshold_dbm": "x"}, "ed_threshold_dbm: must be a finite number"),
    ({"ed_threshold_dbm": -70.0, "phy": "ideal"},
     "ed_threshold_dbm: carrier sense by received power needs a PHY preset"),
])
def test_bad_thresholds_are_one_line_errors(kw, text):
    kw = {"phy": "80211a", **kw}
    with pytest.raises(ValueError) as exc:
        RadioSpec(**kw)
    assert text in str(exc.value) and "\n" not in str(exc.value)


SHARED = ["run", "consensus-averaging", "--set", "medium=shared", "--set", "channel=rayleigh",
          "--set", "K=6", "--set", "rounds=2"]


@pytest.mark.parametrize("extra, text", [
    (["phy=80211a", "ed_threshold_dbm=nan"],
     "ed_threshold_dbm: must be a finite number >= -150 and <= 30 or none, got nan"),
    (["phy=80211b", "pd_threshold_dbm=-151"],
     "pd_threshold_dbm: must be a finite number >= -150 and <= 30 or none, got -151"),
    (["phy=ideal", "pd_threshold_dbm=-70"], "pd_threshold_dbm: not used with mac=csma"),
    (["phy=80211a", "sense_range_m=50", "ed_threshold_dbm=-70"],
     "ed_threshold_dbm: not used with"),
])
def test_cli_bad_thresholds_exit_2_with_one_line(tmp_path, extra, text):
    argv = [*SHARED, *(x for e in extra for x in ("--set", e)), "--out", "r.csv"]
    result = subprocess.run([sys.executable, "-m", "bflnet.cli", *argv], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    final = result.stderr.split("\r")[-1]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert final.startswith("bflnet: error: ") and text in final, result.stderr
    assert not list(tmp_path.iterdir())  # nothing written


def test_cli_accepts_the_thresholds_and_they_decide(tmp_path):
    def run(*extra):
        out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.csv"
        argv = [*SHARED, "--set", "phy=80211a", *(x for e in extra for x in ("--set", e)),
                "--set", "record_messages=true", "--out", str(out)]
        assert main(argv) == 0
        return pd.read_csv(out)
    default, deaf = run(), run("ed_threshold_dbm=30", "pd_threshold_dbm=30")
    assert not default.equals(deaf)  # nothing sensed: other collisions


def test_the_documented_thresholds_and_times_are_the_presets():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "wireless-medium.md").read_text()
    section = doc.split("## Carrier sense by received power", 1)[1].split("\n## ", 1)[0]
    a, b = phy_preset("80211a"), phy_preset("80211b")
    dbm = {float(x.replace("−", "-")) for x in re.findall(r"(−?\d+) dBm", section)}
    assert dbm == {a.pd_dbm, a.ed_dbm, b.pd_dbm, *(b.ed_threshold_dbm(p) for p in
                                                   (23.0, 20.0, 16.0)), 20.0}
    assert phy_preset("80211g").pd_dbm == a.pd_dbm and phy_preset("80211g").ed_dbm == a.ed_dbm
    us = {float(x) for x in re.findall(r"(\d+) µs", section)}
    assert us == {a.cca_s * 1e6, b.cca_s * 1e6, a.turnaround_s * 1e6, b.turnaround_s * 1e6}
