"""Fading correlated in time (``coherence_time_s``): a retry inside the coherence time fails
with the probability the correlated channel gives; the marginal stays the fading law and
the power gain's autocorrelation at lag ``dt`` is ``exp(-2 dt / Tc)``; reciprocal pairs;
the same seed the same channel; bad settings are one-line errors.

The closed form of a retry: with the fade of an attempt ``g1`` and of its retry ``g2``
(unit-mean exponentials whose complex gains have correlation ``rho``; a bivariate
exponential of Kibble and Moran with power correlation ``rho^2``) and the outage level
``x = threshold / mean SNR``, ``P(g1 < x, g2 < x)`` is the bivariate Rayleigh CDF in
Marcum's Q function (Simon and Alouini, "Digital Communication over Fading Channels",
2nd ed., 2005), checked here against the integral of the conditional noncentral
chi-square law of ``g2`` given ``g1``.
"""

from __future__ import annotations

import math
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from scipy import integrate, stats

from bflnet.cli.main import main
from bflnet.radio import LogDistance, RadioSpec, SharedMediumSpec
from bflnet.radio.phy.coherence import CoherentFading, correlation
from bflnet.scenarios import run_scenario
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

BITS = 1000  # 1 ms on the air at 1 Mbit/s: a retry starts 1 ms after its attempt
AIRTIME_S = 1e-3
DISTANCE_M = 60.0
#: The outage level: the first attempt fails with probability 1 - exp(-x) = 1/2.
X = math.log(2.0)


def marcum_q1(a: float, b: float) -> float:
    """Marcum's Q function of order 1, ``Q1(a, b) = P(noncentral chi2(2, a^2) > b^2)``."""
    return float(stats.ncx2.sf(b * b, 2, a * a))


def both_fail(x: float, rho: float) -> float:
    """``P(g1 < x, g2 < x)`` of unit-mean exponential fades whose complex gains have
    correlation ``rho`` (bivariate Rayleigh CDF, module docstring)."""
    if rho == 0.0:
        return (1.0 - math.exp(-x)) ** 2
    if rho == 1.0:  # the same fade twice
        return 1.0 - math.exp(-x)
    lam, s = rho * rho, 1.0 - rho * rho
    a, b = math.sqrt(2.0 * lam * x / s), math.sqrt(2.0 * x / s)
    return 1.0 - math.exp(-x) * marcum_q1(b, a) - math.exp(-x) * (1.0 - marcum_q1(a, b))


def both_fail_integral(x: float, rho: float) -> float:
    """The same from ``g2 | g1 = u``: ``2 g2 / (1 - rho^2)`` is noncentral chi-square with
    2 degrees of freedom and noncentrality ``2 rho^2 u / (1 - rho^2)``."""
    lam, s = rho * rho, 1.0 - rho * rho
    return integrate.quad(lambda u: math.exp(-u) * stats.ncx2.cdf(2 * x / s, 2,
                                                                   2 * lam * u / s), 0, x)[0]


def retry_fails(x: float, rho: float) -> float:
    """``P(retry fails | first attempt failed)``."""
    return both_fail(x, rho) / (1.0 - math.exp(-x))


def test_the_closed_form_is_the_integral_and_its_limits():
    for rho in (0.1, 0.5, math.exp(-0.25), 0.95):
        assert both_fail(X, rho) == pytest.approx(both_fail_integral(X, rho), abs=1e-9)
    assert retry_fails(X, 1e-6) == pytest.approx(1.0 - math.exp(-X), abs=1e-9)
    assert retry_fails(X, 1.0 - 1e-9) == pytest.approx(1.0, abs=1e-3)


def radio(**kw) -> RadioSpec:
    """1 Mbit/s, Rayleigh fading, a threshold at which a packet at ``DISTANCE_M`` is in
    outage with probability ``1 - exp(-X)``."""
    base = RadioSpec(tx_power_dbm=0.0, bandwidth_hz=1e6, noise_figure_db=7.0, coding_rate=1.0,
                     pathloss=LogDistance(3.0, 1.0, 40.0), fading="rayleigh")
    threshold_db = base.mean_snr_db(DISTANCE_M) + 10.0 * math.log10(X)
    # a hard threshold (the closed forms are outage probabilities), whatever the PHY preset
    return RadioSpec(**{**base.__dict__, "sinr_threshold_db": threshold_db,
                        "reception": "threshold", **kw})


def arq(spec: RadioSpec, n: int, gap_s: float, *, seed: int = 1, phy_rows: bool = False):
    """``n`` one-packet messages ``0 -> 1`` over ``DISTANCE_M``, one every ``gap_s``
    seconds (in the middle of its gap), two attempts each (stop-and-wait ARQ, no MAC):
    each message's delivery, or with ``phy_rows`` the run's rows."""
    g = nx.Graph()
    g.add_nodes_from([(0, {"pos": (0.0, 0.0)}), (1, {"pos": (DISTANCE_M, 0.0)})])
    g.add_edge(0, 1)
    sim = Simulation(seed, record_messages=phy_rows)
    net = sim.build_network(g, medium=SharedMediumSpec(spec), max_attempts=2, mtu_bits=BITS)
    out = []

    def body():
        for i in range(n):
            t = (i + 0.5) * gap_s
            yield sim.env.timeout(t - sim.env.now)
            d = yield from net.links[(0, 1)].send(Message(0, 1, "x", None, BITS),
                                                   deliver=False)
            out.append((d.attempts, d.delivered))
    sim.env.process(body())
    sim.env.run()
    if phy_rows:
        return sim.recorder.to_frame()
    return np.array(out)


CASES = {
    # block fading, blocks of 1000 s: the retry (1 ms later) is in its attempt's block
    "block": (dict(coherence_time_s=1e3, fading_model="block"), 1e3, 1.0),
    # the same with the receiver beyond the interference range (the far-receiver path)
    "block, far receiver": (dict(coherence_time_s=1e3, fading_model="block",
                                 interference_range_m=10.0), 1e3, 1.0),
    # Gauss-Markov, Tc = 4 air times: rho = exp(-1/4) between an attempt and its retry
    "gauss-markov": (dict(coherence_time_s=4 * AIRTIME_S, fading_model="gauss-markov"), 1.0,
                     math.exp(-0.25)),
    # Tc -> 0: every attempt an independent fade
    "gauss-markov, Tc -> 0": (dict(coherence_time_s=1e-6, fading_model="gauss-markov"), 1.0,
                              0.0),
    # no coherence time: a fresh draw per packet, as before
    "memoryless": ({}, 1.0, 0.0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_retry_inside_the_coherence_time_fails_as_the_correlated_channel_gives(case):
    fields, gap_s, rho = CASES[case]
    n = 3000
    got = arq(radio(**fields), n, gap_s)
    first_failed = got[:, 0] == 2
    m = int(first_failed.sum())
    p1 = 1.0 - math.exp(-X)  # the marginal: every first attempt is a fresh fade
    assert abs(m / n - p1) < 4.0 * math.sqrt(p1 * (1 - p1) / n), (m, n)
    retry_failed = int((first_failed & (got[:, 1] == 0)).sum())
    want = retry_fails(X, rho)
    if rho == 1.0:  # the same block: the same fade, every retry fails
        assert want == 1.0 and retry_failed == m
        return
    freq = retry_failed / m
    assert abs(freq - want) < 4.0 * math.sqrt(want * (1 - want) / m), (freq, want, m)
    # and the correlated and independent channels are told apart at this sample size
    if rho > 0:
        independent = 1.0 - math.exp(-X)
        assert abs(freq - independent) > 4.0 * math.sqrt(want * (1 - want) / m)


def test_the_ack_meets_the_data_frames_fade_reciprocal_pairs():
    """Under 802.11 timing the receiver's ACK (SIFS after the frame, at the same threshold
    here) crosses the pair's channel the other way: with a long coherence time it always
    gets through after a decoded frame; with a fresh fade it fails half the time."""
    n = 800
    rows = arq(radio(phy="80211b", coherence_time_s=1e3, fading_model="block"), n, 1e3,
               phy_rows=True)
    acks = rows[(rows.event == "tx") & (rows["frame"] == "ack")]
    assert len(acks) > n / 3 and (acks.received == 1).all()
    rows = arq(radio(phy="80211b"), n, 1.0, phy_rows=True)
    acks = rows[(rows.event == "tx") & (rows["frame"] == "ack")]
    p, k = math.exp(-X), len(acks)
    assert abs(acks.received.mean() - p) < 4.0 * math.sqrt(p * (1 - p) / k)


def test_a_pair_has_one_fade_both_ways():
    fading = CoherentFading(4, 1e-3, "gauss-markov", lambda: np.random.default_rng(3))
    g = fading.gains(2, np.array([0, 1, 3]), 0.5)
    assert fading.gain(1, 2, 0.5) == g[1]  # no time has passed: rho = 1
    assert fading.gain(3, 2, 0.5) == g[2]


@pytest.mark.parametrize("lag_tc", [0.1, 0.5, 1.5])
def test_the_marginal_stays_exponential_and_the_power_autocorrelation_is_rho_squared(lag_tc):
    """20000 independent pairs observed at ``t`` and ``t + lag``, half of them also used at
    random times in between (lazy updates compose exactly)."""
    n, tc = 20_000, 2e-3
    rng = np.random.default_rng(11)
    fading = CoherentFading(n + 1, tc, "gauss-markov", lambda: np.random.default_rng(7))
    near = np.arange(1, n + 1)
    t0 = 0.0123
    g0 = fading.gains(0, near, t0).copy()
    half = near[::2].copy()
    for t in np.sort(rng.uniform(t0, t0 + lag_tc * tc, size=3)):
        fading.gains(0, half, float(t))
    g1 = fading.gains(0, near, t0 + lag_tc * tc)
    for g in (g0, g1):
        assert stats.kstest(g, "expon").pvalue > 1e-3
        assert g.mean() == pytest.approx(1.0, abs=0.05)
    want = math.exp(-2.0 * lag_tc)  # rho^2
    assert correlation("gauss-markov", tc, lag_tc * tc) ** 2 == pytest.approx(want)
    r = float(np.corrcoef(g0, g1)[0, 1])
    assert abs(r - want) < 5.0 * (1.0 - want * want) / math.sqrt(n) + 1e-9, (r, want)


def test_rician_keeps_its_line_of_sight_and_block_fading_its_blocks():
    n, k = 20_000, 3.0
    fading = CoherentFading(n + 1, 1e-3, "gauss-markov", lambda: np.random.default_rng(2),
                            rician_k=k)
    near = np.arange(1, n + 1)
    g0 = fading.gains(0, near, 0.0).copy()
    g1 = fading.gains(0, near, 0.7e-3)
    for g in (g0, g1):  # 2 (K + 1) g is noncentral chi-square (2, 2K)
        assert stats.kstest(2 * (k + 1) * g, "ncx2", args=(2, 2 * k)).pvalue > 1e-3
    block = CoherentFading(n + 1, 1e-3, "block", lambda: np.random.default_rng(2))
    b0 = block.gains(0, near, 0.1e-3).copy()
    assert (block.gains(0, near, 0.99e-3) == b0).all()  # the same block
    b1 = block.gains(0, near, 1.2e-3)  # the next: independent
    assert stats.kstest(b1, "expon").pvalue > 1e-3
    assert abs(np.corrcoef(b0, b1)[0, 1]) < 5.0 / math.sqrt(n)


def test_the_same_seed_gives_the_same_channel_and_0_is_the_memoryless_medium():
    sets = {"K": 6, "rounds": 5, "medium": "shared", "channel": "rayleigh",
            "record_messages": True}
    plain = run_scenario("consensus-averaging", sets, seed=3)
    zero = run_scenario("consensus-averaging", {**sets, "coherence_time_s": 0.0}, seed=3)
    wall = [c for c in plain.columns if "wall" in c]
    assert plain.drop(columns=wall).equals(zero.drop(columns=wall))
    coherent = {**sets, "coherence_time_s": 0.01, "fading_model": "gauss-markov"}
    a = run_scenario("consensus-averaging", coherent, seed=3)
    b = run_scenario("consensus-averaging", coherent, seed=3)
    assert a.drop(columns=wall).equals(b.drop(columns=wall))
    assert not a.drop(columns=wall).equals(plain.drop(columns=wall))


@pytest.mark.parametrize(("fields", "text"), [
    (dict(coherence_time_s=-1.0), "coherence_time_s: must be a finite number in [0, 1e+06]"),
    (dict(coherence_time_s=math.nan), "coherence_time_s: must be a finite number"),
    (dict(coherence_time_s=math.inf), "coherence_time_s: must be a finite number"),
    (dict(coherence_time_s=1e-12), "coherence_time_s: must be 0 (off) or a finite number in "
                                   "[1e-09, 1e+06]"),
    (dict(coherence_time_s=1.0, fading="none"), "coherence_time_s: needs fading rayleigh or "
                                                "rician"),
    (dict(fading_model="jakes"), "fading_model: must be one of block, gauss-markov"),
])
def test_bad_radio_settings_are_one_line_errors(fields, text):
    with pytest.raises(ValueError) as info:
        RadioSpec(**fields)
    assert str(info.value).startswith(text) and "\n" not in str(info.value)


SHARED = ["--set", "medium=shared", "--set", "channel=rayleigh"]


@pytest.mark.parametrize(("sets", "text"), [
    ([*SHARED, "--set", "coherence_time_s=-1"], "coherence_time_s: must be a finite number"),
    ([*SHARED, "--set", "coherence_time_s=1e-12"], "coherence_time_s: must be 0 (off)"),
    ([*SHARED, "--set", "fading_model=ar1"], "fading_model: must be one of block, "
                                             "gauss-markov"),
    ([*SHARED, "--set", "fading_model=gauss-markov"], "fading_model: not used with "
                                               "coherence_time_s=none"),
    (["--set", "medium=shared", "--set", "channel=fixed", "--set", "coherence_time_s=1"],
     "coherence_time_s: not used with channel=fixed; used only with medium=shared and "
     "channel=rayleigh or rician"),
    (["--set", "coherence_time_s=1"], "coherence_time_s: not used with medium=links"),
])
def test_bad_settings_on_the_command_line_exit_2_with_one_line(capsys, tmp_path, sets, text):
    out = tmp_path / "r.csv"
    assert main(["run", "consensus-averaging", *sets, "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err, err
    assert not out.exists()


def test_the_command_line_takes_a_coherence_time_for_d2d_medium(tmp_path):
    """In a subprocess: ``describe`` lists both settings, a bad one is one line, exit 2."""
    cli = [sys.executable, "-m", "bflnet.cli"]
    shown = subprocess.run([*cli, "describe", "d2d-medium"], capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0
    assert "coherence_time_s" in shown.stdout and "fading_model" in shown.stdout
    out = tmp_path / "r.csv"
    bad = subprocess.run([*cli, "run", "d2d-medium", "--set", "coherence_time_s=nan",
                          "--no-progress", "--out", str(out)], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "coherence_time_s: must be a finite number" in bad.stderr
    assert not out.exists()
