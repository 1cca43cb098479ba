"""reception="mcs": the MCS tables, the error model from the SINR of each interval of a
frame, preamble detection and capture, the rate setting (a rate, or auto)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from bflnet.radio import LogDistance, NoMac, RadioSpec, SharedMediumSpec
from bflnet.radio.phy.errors import (
    AUTO_TARGET_PER,
    CAPTURE_MARGIN_DB,
    PREAMBLE_SNR_DB,
    bit_error,
    bit_errors,
    error_model,
    frame_error_rates,
)
from bflnet.radio.phy.mcs import MCS_TABLES, mcs_table, pick_mcs
from bflnet.radio.phy.timing import phy_preset
from bflnet.simulator import Simulation

BITS = 8000
NOISE_DBM = -107.0  # 1 MHz, 7 dB noise figure
LOSS = LogDistance(3.0, 1.0, 40.0)


def spec(phy: str = "80211a", tx_power_dbm: float = 0.0, **kw) -> RadioSpec:
    return RadioSpec(tx_power_dbm=tx_power_dbm, bandwidth_hz=1e6, noise_figure_db=7.0,
                     pathloss=LOSS, fading="none", phy=phy, **kw)


def medium_of(radio: RadioSpec, positions, seed: int = 1):
    g = nx.empty_graph(len(positions))
    for k, p in enumerate(positions):
        g.nodes[k]["pos"] = p
    sim = Simulation(seed, record_messages=True)
    net = sim.build_network(g, medium=SharedMediumSpec(radio, mac=NoMac()))
    return sim, net.air.medium


def power_for(snr_db: float, distance_m: float) -> float:
    """The transmit power (dBm) that gives a mean SNR of ``snr_db`` at ``distance_m``."""
    return snr_db + LOSS.loss_db(distance_m) + NOISE_DBM


# ---------------------------------------------------------------------------- tables
def test_the_mcs_tables_are_the_standards_rates():
    rates = {phy: [m.rate_bps / 1e6 for m in table] for phy, table in MCS_TABLES.items()}
    assert rates["80211b"] == [1, 2, 5.5, 11]
    assert rates["80211a"] == rates["80211g"] == [6, 9, 12, 18, 24, 36, 48, 54]
    ofdm = [(m.modulation, m.coding_rate) for m in mcs_table("80211a")]
    assert ofdm == [("BPSK", "1/2"), ("BPSK", "3/4"), ("QPSK", "1/2"), ("QPSK", "3/4"),
                    ("16-QAM", "1/2"), ("16-QAM", "3/4"), ("64-QAM", "2/3"),
                    ("64-QAM", "3/4")]
    # the basic rate (ACKs) is the table's first
    for phy in MCS_TABLES:
        assert mcs_table(phy)[0].rate_bps == phy_preset(phy).basic_rate_bps


@pytest.mark.parametrize(("kw", "text"), [
    ({"phy": "80211a", "data_rate": "7"}, "data_rate: must be auto or a rate of phy=80211a "
     "in Mbit/s (6, 9, 12, 18, 24, 36, 48, 54), got '7'"),
    ({"phy": "80211b", "data_rate": 54}, "data_rate: must be auto or a rate of phy=80211b"),
    ({"phy": "80211b", "data_rate": True}, "data_rate: must be auto"),
    ({"phy": "ideal", "reception": "mcs"}, "reception: mcs needs a PHY preset"),
    ({"phy": "ideal", "data_rate": "6"}, "data_rate: used only with reception=mcs"),
    ({"phy": "80211a", "reception": "threshold", "data_rate": "6"},
     "data_rate: used only with reception=mcs"),
])
def test_bad_rates_are_one_line_errors(kw, text):
    with pytest.raises(ValueError) as err:
        spec(**kw)
    assert text in str(err.value) and "\n" not in str(err.value)


def test_mcs_is_the_default_with_a_preset_and_the_rate_sets_the_air_time():
    assert spec("ideal").reception_rule == "threshold"
    assert spec("80211b").reception_rule == "mcs" and spec("80211b").rate_bps == 1e6
    assert spec("80211a", data_rate="54").rate_bps == 54e6
    assert spec("80211g", data_rate="auto").rate_bps == 6e6  # slots are sized at the slowest
    assert spec("80211a", data_rate="54").airtime_s(BITS) == pytest.approx(
        phy_preset("80211a").frame_s(BITS, 54e6))


# ---------------------------------------------------------------------------- curves
def test_the_curves_vectorised_are_the_scalar_ones_and_fall_with_the_sinr():
    s = 10 ** (np.linspace(-10.0, 40.0, 401) / 10)
    for table in MCS_TABLES.values():
        for m in table:
            v = bit_errors(m, s)
            assert np.allclose(v, [bit_error(m, x) for x in s], rtol=1e-12, atol=1e-300)
            assert (np.diff(v) <= 1e-15).all() and (v >= 0).all() and (v <= 1).all()
    # the NIST union bound of BPSK 1/2 at 3 dB, by hand
    p = 0.5 * math.erfc(math.sqrt(10 ** 0.3))
    d = math.sqrt(4 * p * (1 - p))
    terms = {10: 36, 12: 211, 14: 1404, 16: 11633, 18: 77433, 20: 502690, 22: 3322763,
             24: 21292910, 26: 134365911}
    assert bit_error(pick_mcs("80211a", 6), 10 ** 0.3) == pytest.approx(
        0.5 * sum(c * d ** k for k, c in terms.items()), rel=1e-12)
    assert bit_error(pick_mcs("80211b", 1), 0.1) == pytest.approx(0.5 * math.exp(-2.2))


def check_points(model, m):
    """SINRs (dB) at which to test the curve of ``m``: where its PER is near 1/4, 1/2 and
    3/4, or, where the preamble threshold decides alone, just below and above it; and
    one below the preamble threshold."""
    grid = np.round(np.arange(PREAMBLE_SNR_DB + 0.05, 30.0, 0.05), 2)
    per = frame_error_rates(model, m, 10 ** (grid / 10), BITS)
    points = sorted({float(grid[np.argmin(np.abs(per - q))]) for q in (0.25, 0.5, 0.75)
                     if ((per > 0.02) & (per < 0.98)).any()})
    return [PREAMBLE_SNR_DB - 0.2, *(points or [PREAMBLE_SNR_DB + 0.05])]


@pytest.mark.parametrize("phy", ["80211b", "80211a"])
def test_the_medium_loses_packets_with_the_models_per_at_each_sinr(phy):
    """Fading off, one link at a fixed SINR: the share of packets the medium loses is
    within a binomial confidence interval (3.5 standard deviations) of the curve."""
    model = error_model(phy_preset(phy))
    n = 800
    for m in mcs_table(phy):
        for snr_db in check_points(model, m):
            radio = spec(phy, power_for(snr_db, 10.0), data_rate=f"{m.rate_bps / 1e6:g}")
            _sim, medium = medium_of(radio, [(0.0, 0.0), (10.0, 0.0)], seed=int(snr_db * 100))
            airtime = model.frame_s(BITS, m)
            lost = sum(not medium.finish(medium.start(0, [1], airtime, BITS, mcs=m))[1]
                       for _ in range(n))
            p = float(frame_error_rates(model, m, [10 ** (snr_db / 10)], BITS)[0])
            band = 3.5 * math.sqrt(p * (1 - p) / n) + 1.0 / n
            assert abs(lost / n - p) <= band, (m.name, snr_db, lost / n, p)


# ---------------------------------------------------------------------------- intervals
def test_an_interferer_over_half_the_packet_gives_two_intervals():
    """0 -> 1 at 25 dB; node 2 starts halfway through the frame and stays on past its
    end, taking the SINR to about 13 dB: the packet error rate is that of two intervals
    (header and first half at the SNR, second half at the SINR), not of the lowest SINR
    over the whole frame."""
    m = pick_mcs("80211a", 24)
    model = error_model(phy_preset("80211a"))
    radio = spec("80211a", power_for(25.0, 10.0), data_rate="24")
    positions = [(0.0, 0.0), (10.0, 0.0), (10.0, 27.0), (10.0, 60.0)]
    sim, medium = medium_of(radio, positions, seed=5)
    env = sim.env
    airtime = model.frame_s(BITS, m)
    s = medium.mean_powers(0)[1]
    i = medium.mean_powers(2)[1]
    noise = medium.noise
    snr, sinr = s / noise, s / (noise + i)
    assert 12.0 < 10 * math.log10(sinr) < 14.0
    # the closed form: header bits and the first half's at the SNR, the rest at the SINR
    p = phy_preset("80211a")
    data_s = airtime - p.preamble_s
    half = airtime / 2
    head_bits = 24
    first_bits = (half - p.preamble_s) * m.rate_bps
    second_bits = (data_s - (half - p.preamble_s)) * m.rate_bps
    keep = ((1 - bit_error(model.basic, snr)) ** head_bits
            * (1 - bit_error(m, snr)) ** first_bits * (1 - bit_error(m, sinr)) ** second_bits)
    closed = 1 - keep
    lowest = float(frame_error_rates(model, m, [sinr], BITS)[0])
    n = 1500
    band = 3.5 * math.sqrt(closed * (1 - closed) / n)
    assert 0.15 < closed < 0.85 and lowest - closed > 4 * band  # the rules differ

    lost = 0
    for k in range(n):
        t0 = k * 3 * airtime
        if t0 > env.now:
            env.run(until=t0)
        tx = medium.start(0, [1], airtime, BITS, mcs=m)
        env.run(until=t0 + half)
        other = medium.start(2, [3], airtime, BITS, mcs=m)
        if k == 0:  # the reception's intervals: the total at 1 before and after 2 began
            (rec,) = medium.rx_at[1]
            assert rec.log == pytest.approx([t0, s, t0 + half, s + i])
            assert model.success(m, tx.start, tx.end, rec.log, s, True, noise) == \
                pytest.approx(keep, rel=1e-9)
        env.run(until=t0 + airtime)
        lost += not medium.finish(tx)[1]
        medium.finish(other)
    assert abs(lost / n - closed) <= band + 1 / n, (lost / n, closed, lowest)


def test_every_reception_is_decided_on_the_brute_force_intervals_it_saw():
    """Random overlapping frames: each decided reception's success probability from its
    log equals the one from every transmission's powers, interval by interval."""
    rng = np.random.default_rng(3)
    K = 8
    positions = [tuple(map(float, rng.uniform(0.0, 60.0, 2))) for _ in range(K)]
    radio = spec("80211a", power_for(20.0, 30.0), data_rate="auto")
    sim, medium = medium_of(radio, positions, seed=2)
    model, env = medium._model, sim.env
    seen: list = []
    decide = medium._decide_mcs

    def spy(rec, tx):
        seen.append((list(rec.log), rec.signal, rec.own, rec.node, tx))
        decide(rec, tx)
    medium._decide_mcs = spy
    txs = []

    def node(k):
        draws = np.random.default_rng(50 + k)
        while True:
            yield env.timeout(draws.exponential(4e-4))
            dst = int(draws.integers(K - 1))
            dst += dst >= k
            mcs = medium.data_mcs(k, [dst], 1000, True)
            air = model.frame_s(1000, mcs)
            tx = medium.start(k, [dst], air, 1000, mcs=mcs)
            txs.append(tx)
            yield env.timeout(air)
            medium.finish(tx)
    for k in range(K):
        env.process(node(k))
    env.run(until=0.05)
    assert len(seen) > 50
    for log, signal, own, r, tx in seen:
        others = [o for o in txs if o is not tx and o.start < tx.end and o.end > tx.start
                  and o.sender != r and o.near is not None and r in o.near]
        cuts = sorted({tx.start, *(o.start for o in others if o.start > tx.start),
                       *(o.end for o in others if o.end < tx.end)})
        brute = []
        for t in cuts:
            total = sum(float(o.power[np.searchsorted(o.near, r)]) for o in others
                        if o.start <= t < o.end)
            brute += [t, total + (signal if own else 0.0)]
        mcs = tx.mcs or model.basic
        assert model.success(mcs, tx.start, tx.end, log, signal, own, medium.noise) == \
            pytest.approx(model.success(mcs, tx.start, tx.end, brute, signal, own,
                                        medium.noise), rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------------------- capture
def two_frames(margin_db: float, delay_s: float, *, a_snr_db: float = 30.0):
    """A (node 0) and then, ``delay_s`` later, B (node 2), ``margin_db`` stronger, both
    to node 1 at the basic rate (6 Mbit/s): ``(A's tx, B's tx)`` after both ended."""
    model = error_model(phy_preset("80211a"))
    radio = spec("80211a", power_for(a_snr_db, 10.0))
    d_b = 10.0 * 10 ** (-margin_db / 30.0)
    sim, medium = medium_of(radio, [(0.0, 0.0), (10.0, 0.0), (10.0, d_b)], seed=4)
    air = model.frame_s(800, model.basic)
    a = medium.start(0, [1], air, 800)
    sim.env.run(until=delay_s)
    b = medium.start(2, [1], air, 800)
    sim.env.run(until=delay_s + air)
    medium.finish(a)
    medium.finish(b)
    return a, b


def test_a_stronger_frame_within_the_preamble_is_captured():
    a, b = two_frames(CAPTURE_MARGIN_DB + 1.0, 10e-6)  # within the 20 µs preamble
    assert b.outcome == {1: True} and a.outcome == {1: False}
    assert a.causes == {1: "collision"}


def test_a_stronger_frame_after_the_preamble_is_lost_to_the_locked_one():
    a, b = two_frames(CAPTURE_MARGIN_DB + 1.0, 30e-6)  # after the preamble
    assert b.outcome == {1: False} and b.causes == {1: "collision"}
    assert a.outcome == {1: False}  # and A's SINR is -6 dB for the rest


def test_a_frame_less_than_the_margin_stronger_is_not_captured():
    # B is detectable (SINR 4.5 dB >= 4 dB) and would decode alone at that SINR, but the
    # receiver is locked on A
    _a, b = two_frames(CAPTURE_MARGIN_DB - 0.5, 10e-6)
    assert b.outcome == {1: False} and b.causes == {1: "collision"}
    model = error_model(phy_preset("80211a"))
    alone = model.frame_success(model.basic, 10 ** 0.45, model.frame_s(800, model.basic))
    assert alone > 0.9


def test_a_frame_whose_preamble_is_not_detected_is_lost():
    model = error_model(phy_preset("80211a"))
    for snr_db, received in ((PREAMBLE_SNR_DB - 0.5, False), (PREAMBLE_SNR_DB + 4.0, True)):
        _sim, medium = medium_of(spec("80211a", power_for(snr_db, 10.0)),
                                [(0.0, 0.0), (10.0, 0.0)])
        tx = medium.start(0, [1], model.frame_s(800, model.basic), 800)
        assert medium.finish(tx) == {1: received}
        assert tx.causes == ({} if received else {1: "outage"})


# ---------------------------------------------------------------------------- data_rate=auto
def test_rate_auto_picks_per_link_the_fastest_mcs_below_the_target_per():
    model = error_model(phy_preset("80211a"))
    positions = [(0.0, 0.0), (5.0, 0.0), (40.0, 0.0), (120.0, 0.0)]
    _sim, medium = medium_of(spec("80211a", 0.0, data_rate="auto"), positions)
    table = mcs_table("80211a")
    chosen = []
    for r in (1, 2, 3):
        snr = medium.mean_powers(0)[r] / medium.noise
        m = medium.data_mcs(0, [r], BITS, True)
        chosen.append(m.rate_bps / 1e6)
        per = frame_error_rates(model, m, [snr], BITS)[0]
        k = table.index(m)
        assert per <= AUTO_TARGET_PER or k == 0
        if k + 1 < len(table):  # the next faster one misses the target
            assert frame_error_rates(model, table[k + 1], [snr], BITS)[0] > AUTO_TARGET_PER
    assert chosen[0] == 54 and chosen[0] > chosen[1] > chosen[2]
    assert medium.data_mcs(0, [1, 2], BITS, False) == table[0]  # broadcasts: basic rate


def test_air_time_follows_the_chosen_rate_and_the_ack_goes_at_the_basic_rate():
    from bflnet.radio import Csma
    from bflnet.simulator.message import Message

    timing = phy_preset("80211a")
    for rate, expected in (("54", 54e6), ("auto", 54e6), (None, 6e6)):
        g = nx.Graph()
        g.add_nodes_from([(0, {"pos": (0.0, 0.0)}), (1, {"pos": (5.0, 0.0)})])
        g.add_edge(0, 1)
        sim = Simulation(2, record_messages=True)
        net = sim.build_network(g, medium=SharedMediumSpec(spec("80211a", 10.0, data_rate=rate),
                                                           mac=Csma()), mtu_bits=BITS)

        def body(net=net):
            yield from net.links[(0, 1)].send(Message(0, 1, "x", None, BITS), deliver=False)
        sim.env.process(body())
        sim.env.run()
        frame = sim.recorder.to_frame()
        tx = frame[frame.event == "tx"].sort_values("start_s")
        data, ack = tx.iloc[0], tx.iloc[1]
        assert data.end_s - data.start_s == pytest.approx(timing.frame_s(BITS, expected))
        assert ack.frame == "ack" and ack.end_s - ack.start_s == pytest.approx(timing.ack_s)
