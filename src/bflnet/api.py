"""The Python API: :func:`run`, :func:`sweep` and :func:`summarize`, the ``bflnet run``,
``bflnet sweep`` and ``bflnet summarize`` commands as functions.

A parameter is given as a keyword and checked like ``--set`` (or a TOML file's value):
the same types, the same one-line ``ValueError`` naming the field and what is allowed.
The functions' own arguments (the scenario's name, the seed, paths, flags, the grid, the
workers, the scheduler) are checked before anything runs too: a one-line ``TypeError``
(a wrong type) or ``ValueError`` (a value not allowed) naming the argument.

>>> import bflnet
>>> table = bflnet.run("cover-time", seed=1, K=5, runs=3)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
    return seed


def _check_scheduler(scheduler: Any) -> str | None:
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler: must be a Dask scheduler's address (a str such as "
                        f"'tcp://host:8786') or None, got {type(scheduler).__name__}")
    if scheduler is not None and not scheduler.strip():
        raise ValueError(f"scheduler: must be a Dask scheduler's address such as "
                         f"'tcp://host:8786' or None, got {scheduler!r}")
    return scheduler


def _check_grid(grid: Any) -> Mapping[str, Any]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid: must be a mapping of parameter to a list of values, got "
                        f"{type(grid).__name__}")
    for key in grid:
        if not isinstance(key, str):
            raise TypeError(f"grid: its keys must be parameter names (str), got "
                            f"{type(key).__name__} {key!r:.60}")
    return grid


def _typed(cls: type, name: str, value: Any) -> Any:
    """``value`` for field ``name`` of ``cls``, typed as ``--set name=...`` types it."""
    from bflnet.runs.config import parse_value
    from bflnet.runs.config_file import toml_value

    if value is None:  # an optional field's none (an error for any other field)
        return parse_value(cls, name, "none")
    return toml_value(cls, name, value)


def run(name: str, seed: int | None = None, *, progress: bool = False,
        save_state: str | Path | None = None, load_state: str | Path | None = None,
        force: bool = False, **params: Any) -> pd.DataFrame:
    """Run scenario ``name`` with ``params`` (its parameters, as keywords) and ``seed``
    (default 0); the table ``bflnet run NAME --seed SEED --set K=V ... --out FILE`` writes.

    ``save_state`` / ``load_state``: a directory to save the learnt states into, or to
    start from (scenarios that support it; ``force``: over a saved state), as
    ``--save-state`` / ``--load-state``. A load takes the saved settings and seed:
    ``params`` may change only the settings of the request and after it (a setting of
    the learning that differs from the saved one is a ``ValueError`` naming it)."""
    from bflnet.runs.registry import get_scenario
    from bflnet.validation.arguments import check_flag, check_name, check_path

    scenario = get_scenario(check_name("name", name, "a scenario name"))
    seed = None if seed is None else _check_seed(seed)
    progress, force = check_flag("progress", progress), check_flag("force", force)
    save = check_path("save_state", save_state, optional=True)
    load = check_path("load_state", load_state, optional=True)
    cls = scenario.config_cls
    overrides = {key: _typed(cls, key, value) for key, value in params.items()}
    if load is None:
        config, seed = scenario.config(overrides), 0 if seed is None else seed
    else:
        config, seed = scenario.load_config(load, overrides, seed)
    return scenario.run(config, seed=seed, progress=progress, save_state=save,
                        load_state=load, force=force)


def sweep(name: str, grid: Mapping[str, Sequence[Any]], out: str | Path, *,
          seeds: int | Sequence[int] = 1, workers: int | None = None,
          scheduler: str | None = None, progress: bool = False,
          load_state: str | Path | None = None, **params: Any) -> pd.DataFrame:
    """Run scenario ``name`` over ``grid`` (parameter → list of values; the grid is their
    product) × ``seeds`` (a count N: seeds 0..N-1, or a list) with the fixed ``params``,
    on ``workers`` local processes (or the Dask cluster at ``scheduler``), every run kept
    under ``out`` (a directory or FILE.parquet; re-running resumes); the full table, as
    ``bflnet sweep NAME --grid K=V1,V2 --set K=V --seeds N --out OUT``. Works from a
    script without an ``if __name__ == "__main__"`` guard, a notebook or standard input
    (the workers never import the caller's main module). ``load_state``: every run starts
    from the state saved there, with its settings and its seed only (``seeds`` 1), as
    ``--load-state``."""
    from bflnet.runs.config_file import toml_grid
    from bflnet.runs.registry import get_scenario
    from bflnet.runs.sweep import check_workers
    from bflnet.runs.sweep import sweep as run_sweep
    from bflnet.validation.arguments import check_flag, check_name, check_path

    cls = get_scenario(check_name("name", name, "a scenario name")).config_cls
    grid = _check_grid(grid)
    path = check_path("out", out)
    if workers is not None:
        check_workers(workers)
    scheduler = _check_scheduler(scheduler)
    progress = check_flag("progress", progress)
    load = check_path("load_state", load_state, optional=True)
    typed_grid = toml_grid(cls, {k: list(v) if isinstance(v, (list, tuple)) else v
                                 for k, v in grid.items()})
    fixed = {key: _typed(cls, key, value) for key, value in params.items()}
    return run_sweep(name, typed_grid, seeds, path, fixed=fixed, workers=workers,
                     scheduler=scheduler, progress=progress, load_state=load)


def summarize(table: pd.DataFrame | str | Path,
              targets: str | Sequence[str] = (), *, x: str | Sequence[str] | None = None,
              reference: Mapping[str, Any] | str | Sequence[str] | None = None,
              by: str | Sequence[str] | None = None, last: str | Sequence[str] = (),
              where: Sequence[str] = (), run_by: str | Sequence[str] | None = None
              ) -> pd.DataFrame:
    """Time, bits and energy to each target per setting, over its seeds, and the ratios
    to a ``reference`` setting: the table ``bflnet summarize TABLE --target T --x X
    --reference C=V --by C --last C --where C=V --out FILE`` writes (one row per setting
    and target; :mod:`bflnet.analysis.summary` names its columns).

    ``table``: a result table (DataFrame, or a .csv / .parquet file or sweep directory);
    ``targets``: ``"accuracy>=0.8"``, ``"max_deviation<=5%"`` (of the run's first value);
    ``reference``: ``{"mac": "links"}`` or ``["mac=links"]``. Errors are one-line
    ``ValueError`` naming the command-line option."""
    from bflnet.analysis.summary import summarize as summarize_table
    from bflnet.analysis.table_filter import where as keep_rows

    if isinstance(table, (str, Path)):
        from bflnet.runs.result_tables import read_table

        frame, _ = read_table(str(table))
    else:
        frame = table
    if where:
        if isinstance(where, str):
            where = [where]
        frame = keep_rows(frame, list(where))
    return summarize_table(frame, targets, x=x, by=by, reference=reference, last=last,
                           run_by=run_by)
