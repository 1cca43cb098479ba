"""Time, bits and energy to a target, per setting, as a tidy table: what ``bflnet
summarize`` prints and ``bflnet.summarize`` returns (pure pandas).

For every run (:mod:`bflnet.analysis.setting_runs`: the rows of one curve) and target
(:mod:`bflnet.analysis.targets`: ``accuracy>=0.8``, ``max_deviation<=5%``) the values of
the ``x`` columns (default: ``time_s``, ``cum_bits``, ``energy_j``, those the table has) at
the first row that meets the target; then per setting and target, over its runs (its
seeds): how many runs there are, how many reached the target and their share, and the
mean, standard deviation (``ddof=1``; NaN for one run) and median of each ``x`` over the
runs that reached it: ``time_s_to_target_mean``, ``..._sd``, ``..._median``.

With a ``reference`` setting (``mac=links``): each run's ``x`` over the reference run's of
the same seed (and ``run``) and of the same other settings, then the same statistics:
``time_s_ratio_to_reference_mean`` ... (over the seeds where both reached the target; the
reference's own rows are 1). ``last`` columns: each run's last value (NaN skipped),
``accuracy_last_mean`` ...; with a reference, also the paired difference to the
reference run's last value, ``accuracy_last_diff_to_reference_mean`` ...

A setting none of whose runs has a value of a target's column (e.g. the consensus runs of
a table that also holds CD-BFL's accuracy) has no row for that target.

>>> import pandas as pd
>>> t = pd.DataFrame({"mac": ["a"] * 3 + ["b"] * 3, "seed": 0, "iteration": [0, 1, 2] * 2,
...                   "time_s": [0.0, 1.0, 2.0, 0.0, 3.0, 6.0], "acc": [.1, .5, .9] * 2})
>>> s = summarize(t, ["acc>=0.5"], reference={"mac": "a"}, by=["mac"])
>>> s[["mac", "reached", "time_s_to_target_mean", "time_s_ratio_to_reference_mean"]]
  mac  reached  time_s_to_target_mean  time_s_ratio_to_reference_mean
0   a        1                    1.0                             1.0
1   b        1                    3.0                             3.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bflnet.analysis.setting_runs import Runs, runs_of
from bflnet.analysis.targets import Target, first_crossing

#: The x columns measured at a target by default (those the table has).
DEFAULT_X = ("time_s", "cum_bits", "energy_j")
#: The statistics over a setting's runs, as column suffixes.
STATS = ("mean", "sd", "median")


def _texts(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)


def _numeric(frame: pd.DataFrame, role: str, column: Any) -> str:
    if not isinstance(column, str):
        raise ValueError(f"{role}: expected a column name, got {type(column).__name__}")
    if column not in frame.columns:
        raise ValueError(f"{role}: unknown column {column!r}; available: "
                         f"{', '.join(map(str, frame.columns))}")
    series = frame[column]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise ValueError(f"{role} {column}: not a numeric column")
    return column


def _reference_items(reference: Any) -> list[tuple[str, str]]:
    """``{"mac": "links"}`` or ``["mac=links", ...]`` as ``[(column, text)]``."""
    if reference is None:
        return []
    if isinstance(reference, Mapping):
        items = [(str(k), str(v)) for k, v in reference.items()]
    else:
        items = []
        for text in _texts(reference):
            if not isinstance(text, str):
                raise ValueError(f"--reference: expected column=value, got "
                                 f"{type(text).__name__}")
            column, sep, value = text.partition("=")
            if not sep or not column.strip():
                raise ValueError(f"--reference: expected column=value, got {text[:200]!r}")
            items.append((column.strip(), value.strip()))
    if not items:
        raise ValueError("--reference: give at least one column=value")
    return items


def _matches(series: pd.Series, column: str, text: str) -> np.ndarray:
    """Where ``series`` equals ``text`` read as the column's type."""
    if pd.api.types.is_bool_dtype(series):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"--reference {column}={text[:200]}: {column} is true or false")
        return (series == (text.lower() == "true")).to_numpy()
    if pd.api.types.is_numeric_dtype(series):
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"--reference {column}={text[:200]}: {column} is numeric; give "
                             f"a number") from None
        if math.isnan(number):
            return series.isna().to_numpy()
        return np.isclose(series.to_numpy(dtype=float), number, rtol=1e-9, atol=0.0)
    return (series.astype(str) == text).to_numpy()


def _reference_mask(runs: Runs, items: list[tuple[str, str]]) -> np.ndarray:
    from bflnet.analysis.table_filter import sorted_values, value_list

    mask = np.ones(len(runs.per_run), dtype=bool)
    for column, text in items:
        if column not in runs.by:
            raise ValueError(f"--reference {column}: not one of the setting columns "
                             f"({', '.join(runs.by) or 'none'}); add it with --by")
        hit = _matches(runs.per_run[column], column, text)
        if not hit.any():
            raise ValueError(f"--reference {column}={text[:200]}: no run has this value; "
                             f"{column} takes {value_list(sorted_values(runs.per_run[column]))}")
        mask &= hit
    if not mask.any():
        raise ValueError(f"--reference: no run has {' and '.join(f'{c}={t}' for c, t in items)}"
                         f" together")
    return mask


def _last_values(frame: pd.DataFrame, codes: np.ndarray, column: str, n: int) -> np.ndarray:
    values = frame[column].astype(float).groupby(codes).last()  # NaN skipped
    return values.reindex(range(n)).to_numpy()


def _per_run(frame: pd.DataFrame, runs: Runs, targets: list[Target], x: list[str],
             last: list[str]) -> pd.DataFrame:
    """One row per run and target (or per run, without targets): the settings, the
    replicates, whether it reached the target and the ``x`` values there, the ``last``
    values."""
    n = len(runs.per_run)
    base = runs.per_run.copy()
    base["_run"] = np.arange(n)
    for column in last:
        base[f"{column}_last"] = _last_values(frame, runs.codes, column, n)
    if not targets:
        return base
    parts = []
    for target in targets:
        first = first_crossing(frame[target.column], runs.codes, target)
        if first.empty:
            raise ValueError(f"--target {target.label}: no row has a value of "
                             f"{target.column}")
        part = base.loc[first.index.to_numpy()].copy()
        part.insert(len(runs.by), "target", target.label)
        rows = first.to_numpy()
        part["reached"] = rows >= 0
        for column in x:
            values = frame[column].to_numpy(dtype=float)
            part[f"{column}_to_target"] = np.where(rows >= 0, values[np.maximum(rows, 0)],
                                                   np.nan)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _pair(per_run: pd.DataFrame, runs: Runs, mask: np.ndarray, items: list[tuple[str, str]],
          measures: list[str]) -> pd.DataFrame:
    """``per_run`` with each measure's value in the paired reference run (``_ref``)."""
    fixed = {c for c, _ in items}
    key = [c for c in runs.by if c not in fixed] + runs.replicates
    key += ["target"] if "target" in per_run.columns else []
    ref = per_run[mask[per_run["_run"].to_numpy()]]
    if ref.duplicated(key).any():
        raise ValueError("--reference: several reference runs pair with one run; name the "
                         "settings that tell them apart with --by")
    ref = ref[[*key, *measures]].rename(columns={m: f"{m}_ref" for m in measures})
    if not key:
        return per_run.assign(**{c: ref[c].iloc[0] for c in ref.columns})
    return per_run.merge(ref, on=key, how="left", sort=False)


def _aggregate(per_run: pd.DataFrame, keys: list[str], measures: list[str],
               replicates: list[str]) -> pd.DataFrame:
    grouped = per_run.groupby(keys if keys else np.zeros(len(per_run), dtype=int),
                              sort=False, dropna=False)
    out = grouped.size().rename("runs").to_frame()
    if "seed" in replicates:
        out["seeds"] = grouped["seed"].nunique()
    if "reached" in per_run.columns:
        out["reached"] = grouped["reached"].sum().astype(int)
        out["reached_share"] = out["reached"] / out["runs"]
    for column in measures:
        stats = grouped[column].agg(["mean", "std", "median"])
        out[f"{column}_mean"] = stats["mean"]
        out[f"{column}_sd"] = stats["std"]
        out[f"{column}_median"] = stats["median"]
    return out.reset_index(drop=not keys)


def summarize(table: pd.DataFrame, targets: str | Target | Sequence[str | Target] = (), *,
              x: str | Sequence[str] | None = None, by: str | Sequence[str] | None = None,
              reference: Mapping[str, Any] | str | Sequence[str] | None = None,
              last: str | Sequence[str] = (), run_by: str | Sequence[str] | None = None
              ) -> pd.DataFrame:
    """The summary of ``table`` (module docs). ``targets``: ``COLUMN<=VALUE`` /
    ``COLUMN>=VALUE`` (``VALUE%``: a share of the run's first value); ``x``: the columns
    read at the target; ``by``: the setting columns (default: found, see
    :mod:`bflnet.analysis.setting_runs`); ``reference``: the reference setting,
    ``{"mac": "links"}`` or ``["mac=links"]``; ``last``: columns whose last value per run
    is summarised; ``run_by``: the columns that name one run (default ``run_id``, else
    ``seed``, with ``run``). A bad argument is a one-line ``ValueError`` naming the
    command-line option. The result's ``attrs["summary"]`` says which columns were the
    settings, the run key and the replicates."""
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table: expected a DataFrame or a result file, got "
                         f"{type(table).__name__}")
    if table.empty:
        raise ValueError("table: has no rows")
    parsed = [t if isinstance(t, Target) else Target.parse(t)
              for t in _texts(targets)]
    for target in parsed:
        _numeric(table, "--target", target.column)
    last_cols = [_numeric(table, "--last", c) for c in _texts(last)]
    if not parsed and not last_cols:
        raise ValueError("--target: give at least one target (COLUMN<=VALUE or "
                         "COLUMN>=VALUE), or a --last column")
    if x is None:
        x_cols = [c for c in DEFAULT_X if c in table.columns]
        if parsed and not x_cols:
            raise ValueError(f"--x: the table has none of {', '.join(DEFAULT_X)}; name the "
                             f"columns to read at the target")
    else:
        x_cols = [_numeric(table, "--x", c) for c in _texts(x)]
        if not x_cols:
            raise ValueError("--x: give at least one column")
    x_cols = list(dict.fromkeys(x_cols))
    by_cols = None if by is None else [str(c) for c in _texts(by)]
    run_cols = None if run_by is None else [str(c) for c in _texts(run_by)]
    measured = [*(t.column for t in parsed), *x_cols, *last_cols]
    runs = runs_of(table, by_cols, run_cols, measured)
    per_run = _per_run(table, runs, parsed, x_cols, last_cols)
    measures = [f"{c}_to_target" for c in x_cols] if parsed else []
    last_measures = [f"{c}_last" for c in last_cols]
    items = _reference_items(reference)
    ratios: list[str] = []
    diffs: list[str] = []
    if items:
        mask = _reference_mask(runs, items)
        per_run = _pair(per_run, runs, mask, items, [*measures, *last_measures])
        for column in x_cols if parsed else []:
            ratio = f"{column}_ratio_to_reference"
            with np.errstate(divide="ignore", invalid="ignore"):
                per_run[ratio] = (per_run[f"{column}_to_target"]
                                  / per_run[f"{column}_to_target_ref"])
            ratios.append(ratio)
        for column in last_measures:
            diffs.append(f"{column}_diff_to_reference")
            per_run[diffs[-1]] = per_run[column] - per_run[f"{column}_ref"]
    keys = [*runs.by, *(["target"] if parsed else [])]
    out = _aggregate(per_run, keys, [*measures, *ratios, *last_measures, *diffs],
                     runs.replicates)
    out.attrs["summary"] = {"by": list(runs.by), "run_key": list(runs.key),
                            "restarts": runs.restarted,
                            "replicates": list(runs.replicates),
                            "targets": [t.label for t in parsed], "x": x_cols,
                            "reference": dict(items), "last": last_cols}
    return out


def describe(summary: pd.DataFrame) -> str:
    """One line: what the settings, runs and replicates of ``summary`` were."""
    info = summary.attrs.get("summary", {})
    by = ", ".join(info.get("by", [])) or "none (one setting)"
    key = ", ".join(info.get("run_key", []))
    if info.get("restarts"):
        key = f"{key} and " * bool(key) + "where iteration starts again"
    key = key or "one run per row"
    reps = ", ".join(info.get("replicates", [])) or "none"
    return f"settings (--by): {by}; runs told apart by {key}; replicates: {reps}"


def text_table(summary: pd.DataFrame) -> str:
    """``summary`` for reading: ``reached`` as ``k/n`` and every statistic as
    ``mean ± sd`` (3 significant digits)."""
    info = summary.attrs.get("summary", {})
    keys = [*info.get("by", []), *(["target"] if "target" in summary.columns else [])]
    view = summary[keys].copy()
    if "reached" in summary.columns:
        view["reached"] = [f"{r}/{n}" for r, n in zip(summary["reached"], summary["runs"],
                                                      strict=True)]
    else:
        view["runs"] = summary["runs"]
    for column in summary.columns:
        if column.endswith("_mean"):
            name = column.removesuffix("_mean")
            view[name] = [_mean_sd(m, s) for m, s in zip(summary[column],
                                                         summary[f"{name}_sd"], strict=True)]
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.max_colwidth", 40):
        return view.to_string(index=False)


def _mean_sd(mean: float, sd: float) -> str:
    if not np.isfinite(mean):
        return "—"
    return f"{mean:.3g}" if not np.isfinite(sd) else f"{mean:.3g} ± {sd:.2g}"
