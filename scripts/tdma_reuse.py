"""TDMA frame length with and without spatial reuse, on the layout and radio of the
d2d-medium study (docs/wireless-medium.md: 0 dBm, path-loss exponent 3.5, radius 30 m,
degree 8; the area grows with K at constant density).

For K = 100 and 1600 (seed 0) it builds the TDMA network of ``d2d-medium`` and reads the
frame length of each schedule: ``distance2`` (a distance-2 colouring of the interference
graph, no two nodes within the interference range in one slot) and ``sinr`` (spatial
reuse: nodes share a slot while every receiver of each still decodes at its mean SINR)
with an interference margin of 0, 3 and 10 dB, and with ``phy=80211b`` (its ACKs checked
too). It writes docs/tables/tdma_reuse.csv:

    PYTHONPATH=src python scripts/tdma_reuse.py            # about 15 s
    PYTHONPATH=src python scripts/tdma_reuse.py --k 100    # print only, no table

tests/test_doc_numbers.py recomputes the K = 100 rows and reads the table's numbers in
docs/wireless-medium.md.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pandas as pd

from bflnet.radio import Tdma
from bflnet.scenarios.cdbfl.d2d_medium import D2DMediumConfig
from bflnet.simulator.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "tables" / "tdma_reuse.csv"
#: The study's radio and geometry (scripts/reproduce_d2d_medium.py).
STUDY = {"tx_power_dbm": 0.0, "path_loss_exponent": 3.5, "radius_m": 30.0}
#: ``(schedule, interference margin in dB, phy)`` of each row (a PHY preset: the schedule
#: checks the ACKs too).
CASES = (("distance2", 0.0, "ideal"), ("sinr", 0.0, "ideal"), ("sinr", 3.0, "ideal"),
         ("sinr", 10.0, "ideal"), ("sinr", 0.0, "80211b"))
KS = (100, 1600)


def built(K: int, schedule: str, margin_db: float, *, seed: int = 0,
          fading: str | None = None, phy: str = "ideal") -> object:
    """The built network of d2d-medium's TDMA run at ``K`` with this schedule (broadcast,
    64-bit messages; ``fading``: override the radio's; ``phy``: its PHY preset)."""
    config = D2DMediumConfig(K=K, tasks="consensus", macs="tdma", **STUDY)
    graph = config.run_graph(seed)
    kwargs = config.run_network("tdma", True, 64).network_kwargs(graph)
    medium = kwargs["medium"]
    radio = dataclasses.replace(medium.radio, phy=phy,
                                fading=medium.radio.fading if fading is None else fading)
    kwargs["medium"] = dataclasses.replace(
        medium, radio=radio, mac=Tdma(schedule=schedule, margin_db=margin_db))
    return Simulation(seed).build_network(graph, **kwargs)


def rows(ks: tuple[int, ...] = KS, seed: int = 0) -> pd.DataFrame:
    """One row per K and case: the frame length in slots."""
    out = []
    for K in ks:
        for schedule, margin, phy in CASES:
            air = built(K, schedule, margin, seed=seed, phy=phy).air  # type: ignore[attr-defined]
            out.append({"K": K, "schedule": schedule, "margin_db": margin, "phy": phy,
                        "frame_slots": int(air.frame_slots),
                        "interference_range_m": round(float(air.medium.range_m), 1),
                        "seed": seed})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, action="append",
                        help="only this K (repeatable); prints, writes no table")
    args = parser.parse_args()
    table = rows(tuple(args.k) if args.k else KS)
    print(table.to_string(index=False))
    if not args.k:
        table.to_csv(TABLE, index=False)
        print(f"wrote {TABLE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
