"""How far do EM-TDAMP's tables move between ``dtype=float64`` and ``dtype=float32``?

Runs the EM-TDAMP cases of ``scripts/same_tables.py`` (the same scenarios and short
settings) at each seed in both dtypes and prints, per case and metric column, the largest
absolute difference over every row and seed and the largest relative one; the columns
equal in every row are listed.

    .venv/bin/python scripts/emtdamp_dtype_diff.py [--seeds 0,1,2] [--cases emtdamp]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from same_tables import CASES  # type: ignore[import-not-found]

EMTDAMP_CASES = ("emtdamp", "emtdamp-boston", "emtdamp-fashion")


def run(case: str, dtype: str, seed: int) -> pd.DataFrame:
    from bflnet.scenarios import run_scenario

    scenario, overrides = CASES[case]
    frame = run_scenario(scenario, {**overrides, "dtype": dtype}, seed=seed)
    return frame.drop(columns=[c for c in frame.columns if "wall" in c])


def compare(case: str, seeds: list[int]) -> None:
    worst: dict[str, tuple[float, float]] = {}
    for seed in seeds:
        a, b = run(case, "float64", seed), run(case, "float32", seed)
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            raise SystemExit(f"{case}: the tables' shapes differ at seed {seed}")
        for column in a.columns:
            x, y = a[column], b[column]
            if x.equals(y):
                worst.setdefault(column, (0.0, 0.0))
                continue
            if not (pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y)):
                worst[column] = (float("nan"), float("nan"))
                continue
            u, v = x.to_numpy(float), y.to_numpy(float)
            both = np.isfinite(u) & np.isfinite(v)
            if not np.array_equal(np.isfinite(u), np.isfinite(v)):
                worst[column] = (float("inf"), float("inf"))
                continue
            diff = np.abs(u[both] - v[both])
            scale = np.abs(u[both])
            rel = diff / np.where(scale > 0, scale, 1.0)
            old = worst.get(column, (0.0, 0.0))
            worst[column] = (max(old[0], float(diff.max(initial=0))),
                             max(old[1], float(rel.max(initial=0))))
    print(f"{case} (seeds {', '.join(map(str, seeds))}):")
    same = [c for c, w in worst.items() if w == (0.0, 0.0)]
    for column, (absolute, relative) in worst.items():
        if column not in same:
            print(f"  {column:>20}: max abs diff {absolute:.2e}, max rel diff {relative:.2e}")
    print(f"  equal in every row: {', '.join(same)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--cases", default=",".join(EMTDAMP_CASES))
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    for case in args.cases.split(","):
        if case not in EMTDAMP_CASES:
            parser.error(f"--cases: must be among {', '.join(EMTDAMP_CASES)}, got {case!r}")
        compare(case, seeds)


if __name__ == "__main__":
    main()
