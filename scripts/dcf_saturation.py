"""Saturated 802.11 DCF on the shared medium: collision probability and throughput.

``n`` stations around an access point (5 m away, no fading, carrier sense by received
power: every pair well above the energy-detection threshold) always have a 1023-byte
packet for it; 802.11b at 1 Mbit/s (``phy=80211b``: DIFS, SIFS, EIFS, PLCP preamble and
header, MAC header and FCS, an ACK at the basic rate; CW 32 ... 1024), no retry limit.
Measured over ``duration_s`` simulated seconds:

* ``p``: the share of data frames whose ACK did not come back (the collision
  probability of Bianchi's model: no frame is lost to noise here);
* ``S``: the normalised throughput, payload bits acknowledged over the run's duration at
  the 1 Mbit/s data rate (the overheads, ACKs and idle slots all count as lost time).

Besides ``n`` = 5 ... 50 in one collision domain, the hidden-terminal case A-B-C: A and
C (80 m apart, carrier sense a 50 m circle) both send to B in the middle; beside it the
same three nodes sensing by received power, so everyone senses everyone
(``connected``). The table (with Bianchi's fixed point for the same timings,
``tests/radio/test_dcf_saturation.py`` checks both, with a fixed point of its own) and
the table of docs/wireless-medium.md made from it::

    PYTHONPATH=src python scripts/dcf_saturation.py > docs/tables/dcf_saturation.csv
    PYTHONPATH=src python scripts/dcf_saturation.py --markdown docs/tables/dcf_saturation.csv
"""

from __future__ import annotations

import argparse
import math
import sys

import networkx as nx
import numpy as np
import pandas as pd

from bflnet.radio import Csma, LogDistance, RadioSpec, SharedMediumSpec
from bflnet.radio.phy import phy_preset
from bflnet.simulator import Simulation
from bflnet.simulator.message import Message

PAYLOAD_BITS = 1023 * 8
RATE_BPS = 1e6
NS = (2, 5, 10, 15, 20, 30, 40, 50)


def radio(phy: str = "80211b") -> RadioSpec:
    """20 dBm, 1 MHz at 1 bit/s/Hz (1 Mbit/s), 10 dB threshold (``reception="threshold"``:
    Bianchi's model has no capture), no fading: a lone frame nearby arrives, two
    overlapping ones collide."""
    return RadioSpec(tx_power_dbm=20.0, bandwidth_hz=RATE_BPS, noise_figure_db=7.0,
                     coding_rate=1.0, sinr_threshold_db=10.0,
                     pathloss=LogDistance(3.0, 1.0, 40.0), fading="none", phy=phy,
                     reception="threshold")


def saturate(n: int, duration_s: float, *, seed: int = 1, hidden: bool = False,
             phy: str = "80211b") -> dict[str, float]:
    """One saturated run: node 0 the access point, ``1..n`` the stations (``hidden``: two
    stations 80 m apart, each 40 m from the access point, carrier sense 50 m; else on a
    5 m circle, everyone sensing everyone by received power). ``{"p", "S", "attempts",
    "successes"}``."""
    if hidden:
        if n != 2:
            raise ValueError(f"n: the hidden-terminal case has 2 stations, got {n}")
        pos = [(0.0, 0.0), (-40.0, 0.0), (40.0, 0.0)]
    else:
        angle = 2 * np.pi * np.arange(n) / n
        pos = [(0.0, 0.0)] + [(5 * math.cos(a), 5 * math.sin(a)) for a in angle]
    g = nx.Graph()
    g.add_nodes_from((k, {"pos": p}) for k, p in enumerate(pos))
    g.add_edges_from((0, k) for k in range(1, len(pos)))
    mac = Csma(sense_range_m=50.0 if hidden else None, retry_limit=1000)
    sim = Simulation(seed)
    net = sim.build_network(g, medium=SharedMediumSpec(radio(phy), mac=mac),
                            mtu_bits=PAYLOAD_BITS)
    count = {"attempts": 0, "successes": 0}

    def station(src: int):  # always a packet for the access point
        link = net.links[(src, 0)]
        while True:
            d = yield from link.send(Message(src, 0, "x", None, PAYLOAD_BITS), deliver=False)
            count["attempts"] += d.attempts  # (a packet still in progress is not counted)
            count["successes"] += d.delivered

    for k in range(1, len(pos)):
        sim.env.process(station(k))
    sim.env.run(until=duration_s)
    ok, attempts = count["successes"], count["attempts"]
    return {"p": 1.0 - ok / attempts, "S": ok * PAYLOAD_BITS / RATE_BPS / duration_s,
            "attempts": attempts, "successes": ok}


def bianchi(n: int, w: int = 32, m: int = 5) -> tuple[float, float]:
    """Bianchi's fixed point (basic access) with the 802.11b timings of the medium:
    ``(p, S)`` for ``n`` saturated stations, ``Ts`` = frame + SIFS + ACK + DIFS,
    ``Tc`` = frame + EIFS."""
    def tau(p: float) -> float:
        if abs(1 - 2 * p) < 1e-12:  # 0/0 at p = 1/2: a hair beside it
            p += 1e-9
        q = 1 - 2 * p
        return 2 * q / (q * (w + 1) + p * w * (1 - (2 * p) ** m))

    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 - (1 - tau(mid)) ** (n - 1) > mid else (lo, mid)
    p = (lo + hi) / 2
    t = tau(p)
    ptr = 1 - (1 - t) ** n
    ps = n * t * (1 - t) ** (n - 1) / ptr
    phy = phy_preset("80211b")
    assert phy is not None
    frame = phy.frame_s(PAYLOAD_BITS, RATE_BPS)
    ts, tc = frame + phy.sifs_s + phy.ack_s + phy.difs_s, frame + phy.eifs_s
    s = ps * ptr * (PAYLOAD_BITS / RATE_BPS) / ((1 - ptr) * phy.slot_s + ptr * ps * ts
                                                + ptr * (1 - ps) * tc)
    return p, s


def markdown(table: pd.DataFrame) -> str:
    """The table of docs/wireless-medium.md: measured and Bianchi's ``p`` and ``S``."""
    lines = ["| case | n | p | p (Bianchi) | S | S (Bianchi) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in table.itertuples():
        bp, bs = bianchi(int(row.n))
        model = (f"{bp:.3f} | {row.S:.3f} | {bs:.3f}" if row.case == "connected"
                 else f"– | {row.S:.3f} | –")
        lines.append(f"| {row.case} | {row.n} | {row.p:.3f} | {model} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=1000.0,
                        help="simulated seconds per run (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", metavar="CSV",
                        help="print the documentation's table of a stored CSV instead")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(pd.read_csv(args.markdown)))
        return
    out = sys.stdout
    out.write("case,n,duration_s,seed,attempts,successes,p,S\n")
    cases = [("connected", n, False) for n in NS] + [("hidden", 2, True)]
    for case, n, hidden in cases:
        got = saturate(n, args.duration_s, seed=args.seed, hidden=hidden)
        out.write(f"{case},{n},{args.duration_s:g},{args.seed},{got['attempts']},"
                  f"{got['successes']},{got['p']:.6f},{got['S']:.6f}\n")
        out.flush()


if __name__ == "__main__":
    main()
