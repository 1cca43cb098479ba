"""CSMA's losses against when devices start their rounds: consensus on ``d2d-medium``.

Every device starting its round at the same instant draws its first back-off from the
same small window (CW 16) at the same time: how much of CSMA's loss rate is that, and how
much is hidden terminals? For K = 10 and 30 (the study's radio and layout: 0 dBm,
path-loss exponent 3.5, radius 30 m; consensus, 20 rounds, unicast and broadcast,
``phy=ideal``, seeds 0-2) it runs CSMA with

* ``round_jitter_s`` = 0 (today: every device at once), 0.1, 1 and 10 ms (a 64-bit
  consensus packet is 32 µs on the air at 2 Mbit/s);
* three CSMA settings: the default (``cw_min`` 16, sensing within the radio range),
  ``cw_min=256``, and ``sense_range_m=1000`` (everyone senses everyone: nobody hidden);

and stores the loss rate (``collision_rate`` after the last round: receptions lost to
interference or half-duplex over receptions attempted), mean and range over the seeds, in
docs/tables/round_jitter.csv:

    PYTHONPATH=src python scripts/round_jitter_study.py          # about 2 minutes

``--phy 80211b --jitters 0,0.01`` runs the same at 802.11b's timing (CSMA sensing by
received power, CW 32 by default), into docs/tables/round_jitter_80211b.csv.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bflnet.scenarios import run_scenario

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "tables" / "round_jitter.csv"
STUDY = {"tx_power_dbm": 0.0, "path_loss_exponent": 3.5, "radius_m": 30.0, "phy": "ideal",
         "tasks": "consensus", "rounds": 20, "macs": "csma", "broadcasts": "false,true"}
KS = (10, 30)
JITTERS_S = (0.0, 1e-4, 1e-3, 1e-2)
VARIANTS = {"default": {}, "cw_min=256": {"cw_min": 256}, "sense_range_m=1000":
            {"sense_range_m": 1000.0}}
SEEDS = (0, 1, 2)


def loss_rates(K: int, jitter: float, variant: str, seed: int,
               phy: str = "ideal") -> list[dict]:
    """The loss rate of one run per broadcast setting."""
    frame = run_scenario("d2d-medium", {**STUDY, "K": K, "round_jitter_s": jitter,
                                        **VARIANTS[variant], "phy": phy}, seed=seed)
    last = frame.groupby("broadcast").tail(1)
    return [{"K": K, "round_jitter_s": jitter, "csma": variant,
             "broadcast": bool(row.broadcast), "seed": seed,
             "loss_rate": float(row.collision_rate), "time_s": float(row.time_s)}
            for row in last.itertuples()]


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max over the seeds of each setting's loss rate and time."""
    keys = ["K", "csma", "broadcast", "round_jitter_s"]
    out = runs.groupby(keys, sort=False).agg(
        loss_rate_mean=("loss_rate", "mean"), loss_rate_min=("loss_rate", "min"),
        loss_rate_max=("loss_rate", "max"), time_s_mean=("time_s", "mean"),
        seeds=("seed", "size")).reset_index()
    return out.round({"loss_rate_mean": 4, "loss_rate_min": 4, "loss_rate_max": 4,
                      "time_s_mean": 6})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="K = 10, seed 0 only; prints, writes no table")
    parser.add_argument("--phy", default="ideal", choices=("ideal", "80211b"))
    parser.add_argument("--jitters", default=",".join(f"{j:g}" for j in JITTERS_S),
                        help="comma list of round_jitter_s values")
    args = parser.parse_args()
    ks, seeds = ((10,), (0,)) if args.quick else (KS, SEEDS)
    jitters = [float(j) for j in args.jitters.split(",")]
    runs = pd.DataFrame([row for K in ks for variant in VARIANTS for jitter in jitters
                         for seed in seeds
                         for row in loss_rates(K, jitter, variant, seed, args.phy)])
    out = table(runs)
    print(out.to_string(index=False))
    path = TABLE if args.phy == "ideal" else TABLE.with_name(f"round_jitter_{args.phy}.csv")
    if not args.quick:
        out.to_csv(path, index=False)
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
