"""Parameter sweeps: a grid of scenario parameters × seeds on worker processes, one tidy
table at the end.

>>> table = sweep("consensus-averaging", {"graph": ["ring", "complete"], "K": [10, 20]},
...               seeds=3, out="sweeps/ca", fixed={"rounds": 100})  # doctest: +SKIP

Each run is one validated scenario config and one seed. The whole grid is checked before
any worker starts (the same one-line ``ValueError`` as ``bflnet run --set``). Runs execute
on ``workers`` local processes (:class:`~bflnet.runtime.worker_pool.WorkerPool`: plain
Python processes that never import the caller's ``__main__``, so a script without an
``if __name__ == "__main__"`` guard, a notebook or ``python - < script.py`` can sweep, and
the workers are ready as soon as they have imported what the runs need), or on an
existing Dask cluster given by its ``scheduler`` address. Each worker runs one run at a
time with at most ``torch_threads`` (default 1) torch / OpenMP / BLAS threads, so W
workers use W cores. A local worker that dies loses only its run, which another worker
does again (three tries in all).

On disk (``out`` a directory, or a ``.parquet`` file whose parts live next to it)::

    out/                          out.parquet          (the final table)
      table.parquet               out.parts/
      manifest.jsonl                manifest.jsonl
      sweep.json                    sweep.json
      runs/<run_id>.parquet         runs/<run_id>.parquet

The driver writes each finished run's rows as its own Parquet part (to a temporary file,
then ``os.replace``) and appends one JSON line to the manifest, keyed by ``run_id`` =
``<first 16 hex digits of config_hash>-s<seed>``, where ``config_hash`` is the SHA-256 of
the canonical JSON of the scenario name and the full validated config. A part on disk is
a finished run: re-running the same sweep skips it, so a killed sweep loses nothing that
finished. A run that raises is recorded in the manifest with its error and is retried on
the next invocation; the others go on. The final table is the parts in grid order (the
last grid key varies fastest), then seed, then the run's own row order, with the swept
parameters, ``seed``, ``run_id`` and ``config_hash`` as the first columns; so it is the
same whatever the number of workers. Every column has one type whatever the grid: where
the runs' values are of several kinds (node ids: numbers under a random walk, ``"server"``
under a parameter server), the column is text (:mod:`bflnet.runs.column_types`). Run one
sweep process per ``out`` at a time.

A run's own column named like one of those is dropped when it holds the same values
(e.g. ``K``), else kept as ``run_<name>`` (e.g. per-run sub-seeds in ``seed`` become
``run_seed``). ``run_id`` names one curve in any table (one run's or a sweep's): where a
scenario's rows carry their own ``run_id`` (several curves per call, e.g. one per
method), the table's ``run_id`` is ``<sweep run>/<the scenario's run_id>`` (the sweep run
``<config hash prefix>-s<seed>`` alone on rows without one), and the scenario's value is
kept as ``run_run_id``; the sweep run, which names the part and the manifest line, is the
part before the ``/``.

A part is checked before it is reused: it must read back, hold the rows the manifest
recorded, and carry the record of its own run (scenario, config, seed). A part that fails
the check is deleted and computed again, with a warning naming it and the reason.

Ctrl-C or SIGTERM stops a sweep within about a second: the runs in flight are abandoned,
the worker processes stopped, temporary files removed, and :class:`Interrupted` is raised
with a message saying how many runs are kept and how to resume (run the same sweep
again). The local workers do not see a terminal's Ctrl-C (nor a SIGTERM to the process
group) themselves; the driver kills them. An existing cluster (``scheduler``) is checked
with a short connect timeout before anything is written.

Every part stores its run's record (scenario, full config, seed, bflnet version) and the
table stores the sweep's (scenario, grid, fixed parameters, seeds, version) as Parquet
metadata (:mod:`bflnet.runs.provenance`), so ``bflnet rerun`` can make either again.

A sweep with ``load_state`` (``--load-state DIR``) starts every run from the states saved
there: the configs are the saved one with the grid and the fixed parameters applied
(which may change only what a load may change) and the seed is the saved one, alone
(``seeds`` 1); the records name the directory, and a part made from another state (or
none) is computed again.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import logging
import math
import os
import sys
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bflnet.files.atomic import write_files
from bflnet.runs.config import group_key, parse_value
from bflnet.runs.output import METADATA_KEY, metadata_json, write_parquet
from bflnet.runs.provenance import canonical_config, run_record, sweep_record
from bflnet.runs.registry import get_scenario, run_scenario
from bflnet.runtime.interrupt import Interrupted, catch_signals, deferred
from bflnet.runtime.threads import available_cpus
from bflnet.runtime.worker_pool import WorkerPool
from bflnet.validation.errors import SweepError
from bflnet.validation.renames import rename_keys

if TYPE_CHECKING:  # NumPy, pandas and pyarrow are imported where tables are read or made,
    import pandas as pd  # so that the workers start while the driver imports them

META_COLUMNS = ("seed", "run_id", "config_hash")
#: Most runs (grid points x seeds) of one sweep: each is a part file and a manifest line.
MAX_RUNS = 100_000
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
CONNECT_TIMEOUT_S = 5.0  # to an existing scheduler


#: Local worker processes a sweep may start per CPU this process may run on (each is a
#: Python process of its own, with its own copy of the scenario's imports and data).
WORKERS_PER_CPU = 4
#: Most local worker processes of one sweep, however many CPUs the machine has.
MAX_WORKERS = 256


def default_workers() -> int:
    """``min(2, cpu count)``: the local worker processes used when none is given."""
    return min(2, available_cpus())


def max_workers() -> int:
    """The most local worker processes a sweep may start here: :data:`WORKERS_PER_CPU` per
    CPU this process may run on, at most :data:`MAX_WORKERS`."""
    return min(MAX_WORKERS, WORKERS_PER_CPU * available_cpus())


def check_workers(value: Any) -> int:
    """``value`` as a number of local worker processes in 1..:func:`max_workers`, else a
    one-line ``ValueError`` naming ``workers`` and the bound (before anything starts)."""
    limit = max_workers()
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ValueError(f"workers: must be an integer >= 1 and <= {limit} ({WORKERS_PER_CPU}"
                         f" local worker processes per CPU, {available_cpus()} CPUs here; at "
                         f"most {MAX_WORKERS}), got {_short(value)}")
    return value


# --- the plan: grid expansion, validation, config hashes ---------------------------------


@dataclass(frozen=True)
class Run:
    """One run of a sweep: a grid point (the swept values), a seed and the config's hash."""

    params: Mapping[str, Any]
    seed: int
    config_hash: str

    @property
    def run_id(self) -> str:
        return f"{self.config_hash[:16]}-s{self.seed}"


@dataclass(frozen=True)
class SweepPlan:
    """The validated sweep: runs in table order and the full config of every grid point."""

    scenario: str
    grid: Mapping[str, tuple[Any, ...]]
    fixed: Mapping[str, Any]
    seeds: tuple[int, ...]
    runs: tuple[Run, ...]
    configs: Mapping[str, Mapping[str, Any]]  # config_hash -> canonical config dict
    #: The state directory every run starts from (resolved; ``None``: none).
    load_state: str | None = None


def config_hash(scenario: str, config: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the scenario name and its full config dict."""
    text = json.dumps({"scenario": scenario, "config": dict(config)}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _typed(cls: type, key: str, value: Any) -> Any:
    """A command-line string converted to the field's type; NumPy scalars to Python ones."""
    numpy = sys.modules.get("numpy")  # a NumPy scalar comes only once NumPy is imported
    if numpy is not None and isinstance(value, numpy.generic):
        value = value.item()
    return parse_value(cls, key, value) if isinstance(value, str) else value


def _typed_grid(cls: type, grid: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    out = {}
    for key, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise ValueError(f"grid: {key} must be a list of values, got {values!r}")
        if not values:
            raise ValueError(f"grid: {key} has no values")
        out[key] = tuple(_typed(cls, key, v) for v in values)
    return out


def _check_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    message = (f"seeds: must be a positive count or a list of distinct integers >= 0 (at most "
               f"{MAX_RUNS} seeds), got {_short(seeds)}")
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if not 1 <= seeds <= MAX_RUNS:
            raise ValueError(message)
        return tuple(range(seeds))
    values = tuple(seeds) if isinstance(seeds, Sequence) and not isinstance(seeds, str) else ()
    ok = values and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                        for s in values)
    if not ok or len(set(values)) != len(values):
        raise ValueError(message)
    return values


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _check_size(grid: Mapping[str, tuple[Any, ...]], seeds: tuple[int, ...]) -> None:
    """One line when the grid's points times the seeds exceed :data:`MAX_RUNS` (counted
    before the grid is expanded)."""
    points = math.prod(len(v) for v in grid.values())
    if points * len(seeds) > MAX_RUNS:
        raise ValueError(f"seeds, grid: {points} grid points x {len(seeds)} seeds = "
                         f"{points * len(seeds)} runs, more than the {MAX_RUNS} one sweep may "
                         f"have (each run is a part file)")


def _loaded_seeds(seeds: int | Sequence[int], saved: int) -> tuple[int, ...]:
    """A sweep that loads a saved state runs its seed ``saved`` only: ``seeds`` must be 1
    (the count) or ``[saved]``."""
    if (isinstance(seeds, int) and not isinstance(seeds, bool) and seeds == 1) or (
            isinstance(seeds, Sequence) and not isinstance(seeds, str)
            and len(seeds) == 1 and type(seeds[0]) is int and seeds[0] == saved):
        return (saved,)
    raise ValueError(f"seeds: a sweep that loads a saved state runs the state's seed "
                     f"({saved}) only; give --seeds 1 or none, got {_short(seeds)}")


def plan_sweep(name: str, grid: Mapping[str, Sequence[Any]], seeds: int | Sequence[int],
               fixed: Mapping[str, Any] | None = None,
               load_state: str | Path | None = None) -> SweepPlan:
    """Expand and validate the grid (every point's config is built and checked here, its
    footprint too: a point too large for this machine is refused before any run).
    ``load_state``: every run starts from the state saved there, with its settings and
    seed (:meth:`~bflnet.runs.registry.Scenario.load_config`)."""
    scenario = get_scenario(name)
    cls = scenario.config_cls
    fixed_values = {k: _typed(cls, k, v) for k, v in rename_keys(cls, fixed or {}).items()}
    grid_values = _typed_grid(cls, rename_keys(cls, grid))
    both = [k for k in grid_values if k in fixed_values]
    if both:
        raise ValueError(f"grid: {both[0]} is both swept and fixed")
    saved = None if load_state is None else scenario.saved_settings(load_state)
    seed_values = _check_seeds(seeds) if saved is None else _loaded_seeds(seeds, saved.seed)
    _check_size(grid_values, seed_values)
    runs: list[Run] = []
    configs: dict[str, dict[str, Any]] = {}
    points: dict[str, dict[str, Any]] = {}
    typed: dict[str, dict[Any, Any]] = {}
    for combo in itertools.product(*grid_values.values()):
        point = dict(zip(grid_values, combo, strict=True))
        overrides = {**fixed_values, **point}
        settings = scenario.config(overrides if saved is None else saved.overrides(overrides))
        try:
            scenario.check_resources(settings)
        except ValueError as exc:
            raise ValueError(f"{exc} (grid point {point})" if point else str(exc)) from None
        config = canonical_config(settings)
        # a group's setting (learner.noise_var) is typed by the config: its typed value
        point = {k: config.get(k, v) if group_key(cls, k) else v for k, v in point.items()}
        digest = config_hash(name, config)
        if digest in configs:
            raise ValueError(f"grid: {points[digest]} and {point} are the same config")
        configs[digest], points[digest] = config, point
        runs.extend(Run(point, seed, digest) for seed in seed_values)
        for key, value in zip(grid_values, combo, strict=True):
            typed.setdefault(key, {}).setdefault(value, point[key])
    grid_values = {k: tuple(typed[k][v] for v in values) if group_key(cls, k) else values
                   for k, values in grid_values.items()}
    first = next(iter(configs.values()))
    fixed_values = {k: first.get(k, v) if group_key(cls, k) else v
                    for k, v in fixed_values.items()}
    return SweepPlan(name, grid_values, fixed_values, seed_values, tuple(runs), configs,
                     None if saved is None else str(saved.path.resolve()))


def parse_grid(cls: type, pairs: Sequence[str]) -> dict[str, list[Any]]:
    """``["K=10,20", "graph=ring"]`` → ``{"K": [10, 20], "graph": ["ring"]}``, typed."""
    grid: dict[str, list[Any]] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--grid: expected key=v1,v2,..., got {pair!r}")
        key, text = (part.strip() for part in pair.split("=", 1))
        key = rename_keys(cls, {key: None}).popitem()[0]
        if key in grid:
            raise ValueError(f"--grid: {key} is given twice")
        grid[key] = [parse_value(cls, key, v) for v in text.split(",")]
    return grid


# --- storage: paths, manifest, parts -----------------------------------------------------


@dataclass(frozen=True)
class SweepPaths:
    """Where a sweep keeps its final table, manifest, description and per-run parts."""

    root: Path
    table: Path

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.jsonl"

    @property
    def spec(self) -> Path:
        return self.root / "sweep.json"

    def part(self, run_id: str) -> Path:
        return self.runs / f"{run_id}.parquet"


def sweep_paths(out: str | Path) -> SweepPaths:
    """``out`` a directory, or ``X.parquet`` with its parts in the sibling ``X.parts/``."""
    out = Path(out)
    if out.suffix.lower() == ".parquet":
        return SweepPaths(out.with_name(f"{out.stem}.parts"), out)
    if out.suffix.lower() == ".csv" or out.is_file():
        raise ValueError(f"--out: must be a directory or a .parquet file, got {str(out)!r}")
    return SweepPaths(out, out / "table.parquet")


def _atomic_write(path: Path, write: Any) -> None:
    """``write(tmp_path)`` then rename over ``path``: readers never see a partial file; a
    :class:`~bflnet.validation.errors.WriteError` naming ``path`` if it cannot be written."""
    write_files([(path, write)])


def _write_text(path: Path, text: str) -> None:
    _atomic_write(path, lambda tmp: tmp.write_text(text))


def _write_parquet(frame: pd.DataFrame, path: Path, metadata: Mapping[str, Any]) -> None:
    _atomic_write(path, lambda tmp: write_parquet(frame, tmp, metadata))


def _read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """Latest record per run id; a line torn by a kill, or otherwise not a record of
    ours, is skipped."""
    records: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_bytes().decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError, RecursionError):
                record = json.loads(line)
                if isinstance(record, dict) and isinstance(record["run_id"], str):
                    records[record["run_id"]] = record
    return records


def _record(plan: SweepPlan, run: Run, status: str, **fields: Any) -> dict[str, Any]:
    return {"run_id": run.run_id, "config_hash": run.config_hash, "seed": run.seed,
            "scenario": plan.scenario, "params": dict(run.params), "status": status,
            "error": None, "rows": None, "elapsed_s": None, "worker": None, **fields,
            "config": dict(plan.configs[run.config_hash])}


def _run_entry(run: Run) -> dict[str, Any]:
    return {"run_id": run.run_id, "config_hash": run.config_hash, "seed": run.seed,
            "params": dict(run.params)}


def _remove_temporaries(paths: SweepPaths) -> None:
    """Half-written files left by a killed sweep (see :func:`_atomic_write`)."""
    stale = [*paths.runs.glob(".*.tmp"), *paths.root.glob(".*.tmp"),
             *paths.table.parent.glob(f".{paths.table.name}.*.tmp")]
    for path in stale:
        path.unlink(missing_ok=True)


_RECORD_KEYS = ("kind", "scenario", "seed", "config", "load_state")


def part_problem(plan: SweepPlan, run: Run, part: Path, rows: Any) -> str | None:
    """Why the part on disk cannot stand for ``run`` (``None`` if it can): it does not
    read back, its row count is not the ``rows`` the manifest recorded (when it recorded
    one), or its stored record is not that of this run."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(part)
        raw = (table.schema.metadata or {}).get(METADATA_KEY)
        record = json.loads(raw.decode()) if raw is not None else None
    except Exception as exc:  # any damage: truncated, not Parquet, bad metadata, ...
        reason = _one_line(exc).replace(f" {str(part)!r}", "").replace(str(part), "it")
        return f"it does not read back ({reason[:200]})"
    if isinstance(rows, int) and table.num_rows != rows:
        return f"it has {table.num_rows} rows, the manifest recorded {rows}"
    expected = run_record(plan.scenario, plan.configs[run.config_hash], run.seed,
                          plan.load_state)
    if not isinstance(record, dict) or any(
            metadata_json({"v": record.get(k)}) != metadata_json({"v": expected.get(k)})
            for k in _RECORD_KEYS):
        return "its stored record is not that of this run"
    return None


def _scan(plan: SweepPlan, paths: SweepPaths) -> tuple[set[str], dict[str, str]]:
    """Read only: the run ids with a sound part, and why each other part is unsound."""
    if paths.runs.exists() and not paths.runs.is_dir():
        raise ValueError(f"--out: {str(paths.runs)!r} must be a directory of a sweep's runs")
    records = _read_manifest(paths.manifest)
    done, bad = set(), {}
    for run in plan.runs:
        part = paths.part(run.run_id)
        if part.is_dir():
            raise ValueError(f"--out: {str(part)!r} is a directory, not a run's part; "
                             f"move it away")
        if not part.exists():
            continue
        record = records.get(run.run_id, {})
        rows = record.get("rows") if record.get("status") == "ok" else None
        problem = part_problem(plan, run, part, rows)
        if problem is None:
            done.add(run.run_id)
        else:
            bad[run.run_id] = problem
    return done, bad


def _prepare(plan: SweepPlan, paths: SweepPaths, done: set[str],
             bad: Mapping[str, str]) -> None:
    """Set up ``out``: delete the unsound parts, reconcile the manifest with the parts."""
    import pyarrow.parquet as pq

    paths.runs.mkdir(parents=True, exist_ok=True)
    _remove_temporaries(paths)
    for run_id in bad:
        paths.part(run_id).unlink(missing_ok=True)
    records = _read_manifest(paths.manifest)
    for run in plan.runs:
        record = records.get(run.run_id, {})
        if run.run_id in done and record.get("status") != "ok":  # killed before logging
            rows = pq.read_metadata(paths.part(run.run_id)).num_rows
            records[run.run_id] = _record(plan, run, "ok", rows=rows)
        elif run.run_id in bad:
            records[run.run_id] = _record(plan, run, "bad part", error=bad[run.run_id])
    _write_text(paths.manifest, "".join(json.dumps(r) + "\n" for r in records.values()))
    spec = {"scenario": plan.scenario, "grid": {k: list(v) for k, v in plan.grid.items()},
            "fixed": dict(plan.fixed), "seeds": list(plan.seeds),
            "runs": [_run_entry(run) for run in plan.runs],
            **({} if plan.load_state is None else {"load_state": plan.load_state})}
    _write_text(paths.spec, json.dumps(spec, indent=1))
    paths.table.unlink(missing_ok=True)


# --- execution: local worker processes, or Dask ------------------------------------------


def _limit_threads(n: int) -> None:
    """At most ``n`` torch / BLAS threads in this worker process."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
    else:
        for variable in _THREAD_VARIABLES:
            os.environ[variable] = str(n)


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _worker_address() -> str:
    """The Dask worker's address, or ``local:<process id>``."""
    if "distributed" in sys.modules:  # imported in a Dask worker, never in a local one
        from distributed import get_worker

        with contextlib.suppress(ValueError):  # not inside a Dask worker
            return str(get_worker().address)
    return f"local:{os.getpid()}"


def execute_run(scenario: str, config: Mapping[str, Any], seed: int,
                torch_threads: int = 1, load_state: str | None = None) -> dict[str, Any]:
    """Run one (config, seed) on a worker (from the states saved in ``load_state``, if
    given); errors are returned, not raised."""
    _limit_threads(torch_threads)
    start = time.perf_counter()
    outcome: dict[str, Any] = {"worker": _worker_address()}
    try:
        frame = run_scenario(scenario, config, seed=seed, load_state=load_state)
    except Exception as exc:  # recorded in the manifest; the sweep goes on
        outcome.update(status="error", error=_one_line(exc), traceback=traceback.format_exc())
    else:
        outcome.update(status="ok", frame=frame, rows=len(frame))
    outcome["elapsed_s"] = time.perf_counter() - start
    return outcome


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """A one-line ``ValueError`` unless a Dask scheduler answers at ``address`` within
    ``timeout`` seconds (default :data:`CONNECT_TIMEOUT_S`; a bad address fails at once).
    Runs in its own thread and event loop, so it works under a running loop (Jupyter)."""
    from distributed.comm import connect

    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout

    async def probe() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    failure: list[BaseException] = []

    def attempt() -> None:
        try:
            import asyncio

            asyncio.run(asyncio.wait_for(probe(), timeout + 1))
        except BaseException as exc:  # what a wrong address or peer can raise varies
            failure.append(exc)

    thread = threading.Thread(target=attempt, name="bflnet-scheduler-check", daemon=True)
    thread.start()
    thread.join(timeout + 2)
    if thread.is_alive() or (failure and type(failure[0]) is TimeoutError):
        reason = f"no answer in {timeout:g} s"  # connected, but no handshake came
    elif failure and not isinstance(failure[0], OSError | ValueError):
        reason = "something answers there, but not a Dask scheduler"  # e.g. MemoryError
    else:
        reason = _one_line(failure[0]) if failure else None
    if reason is not None:
        raise ValueError(f"--scheduler: cannot connect to {address[:200]!r} "
                         f"({reason[:300]})")


@contextlib.contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A ``distributed.Client`` on the existing cluster at ``scheduler`` (checked first,
    with a short connect timeout); closed on exit."""
    from distributed import Client

    with _quiet_logs():
        check_scheduler(scheduler)
        client = None
        try:
            with deferred():  # no Client object is left to a slow clean-up at exit
                client = Client(scheduler, timeout=f"{max(CONNECT_TIMEOUT_S, 1)}s",
                                set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ValueError(f"--scheduler: cannot connect to {scheduler[:200]!r} "
                             f"({_one_line(exc)[:300]})") from None
        except BaseException:  # an interrupt that came while connecting
            if client is not None:
                client.close()
            raise
        with client:
            yield client


def _thread_caps(torch_threads: int) -> dict[str, str]:
    """The environment that caps a local worker's torch / OpenMP / BLAS threads."""
    return {variable: str(torch_threads) for variable in _THREAD_VARIABLES}


@contextlib.contextmanager
def _outcomes(plan: SweepPlan, workers: int, scheduler: str | None,
              torch_threads: int) -> Iterator[Callable[[Sequence[Run]], Iterator[Any]]]:
    """Where the runs execute: ``workers`` local processes (:class:`WorkerPool`), or the
    Dask cluster at ``scheduler``. Yields a function from the pending runs to their
    ``(run, outcome)`` pairs as each ends."""
    if scheduler is not None:
        with dask_client(scheduler) as client:
            yield lambda pending: _dask_outcomes(plan, pending, client, torch_threads)
        return
    with WorkerPool(workers, env=_thread_caps(torch_threads)) as pool:
        yield lambda pending: _local_outcomes(plan, pending, pool, torch_threads)


def _task_arguments(plan: SweepPlan, run: Run, torch_threads: int) -> tuple[Any, ...]:
    return (plan.scenario, dict(plan.configs[run.config_hash]), run.seed, torch_threads,
            plan.load_state)


def _local_outcomes(plan: SweepPlan, pending: Sequence[Run], pool: WorkerPool,
                    torch_threads: int) -> Iterator[tuple[Run, dict[str, Any]]]:
    runs = {run.run_id: run for run in pending}
    tasks = [(run.run_id, __name__, "execute_run", _task_arguments(plan, run, torch_threads))
             for run in pending]
    for run_id, status, value in pool.map(tasks):
        if status == "ok":
            yield runs[run_id], value
        else:  # the worker died running it, or the outcome could not come back
            yield runs[run_id], {"status": "error", "error": str(value), "elapsed_s": None}


def _dask_outcomes(plan: SweepPlan, pending: Sequence[Run], client: Any,
                   torch_threads: int) -> Iterator[tuple[Run, dict[str, Any]]]:
    from distributed import as_completed

    token = uuid.uuid4().hex[:8]
    futures = {client.submit(execute_run, *_task_arguments(plan, run, torch_threads),
                             key=f"bflnet-run-{run.run_id}-{token}", pure=False): run
               for run in pending}
    for future in as_completed(futures, loop=client.loop):
        run = futures.pop(future)
        outcome = _outcome(future)  # fetched from the worker: may be interrupted
        future.release()
        yield run, outcome


def _outcome(future: Any) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as exc:  # the worker died (KilledWorker) or the task was lost
        return {"status": "error", "error": _one_line(exc), "elapsed_s": None}


def _run_pending(plan: SweepPlan, outcomes: Iterator[tuple[Run, dict[str, Any]]],
                 paths: SweepPaths, bar: Any) -> list[dict[str, Any]]:
    """Persist each run as it ends; the failed runs' records."""
    failures = []
    with paths.manifest.open("a") as manifest:
        for run, outcome in outcomes:
            with deferred():  # a part and its manifest line are written whole
                frame = outcome.pop("frame", None)
                if frame is not None:
                    _write_parquet(frame, paths.part(run.run_id), run_record(
                        plan.scenario, plan.configs[run.config_hash], run.seed,
                        plan.load_state))
                record = _record(plan, run, **outcome)
                _append(manifest, record)
                if record["status"] != "ok":
                    failures.append(record)
                if failures:
                    bar.set_postfix(failed=len(failures), refresh=False)
                bar.update(1)
    return failures


def _append(manifest: TextIO, record: Mapping[str, Any]) -> None:
    manifest.write(json.dumps(record) + "\n")
    manifest.flush()


# --- the table ---------------------------------------------------------------------------


def _head_columns(run: Run, keys: Sequence[str], dtypes: Mapping[str, Any],
                  index: pd.Index) -> pd.DataFrame:
    import pandas as pd

    values = {**{k: run.params[k] for k in keys}, "seed": run.seed, "run_id": run.run_id,
              "config_hash": run.config_hash}
    return pd.DataFrame({k: pd.Series([v] * len(index), index=index, dtype=dtypes[k])
                         for k, v in values.items()})


def _resolve_clashes(frame: pd.DataFrame, head: pd.DataFrame, run: Run) -> pd.DataFrame:
    """A run's own column named like a sweep column: dropped if it holds the same values
    (e.g. ``K``), else renamed ``run_<name>`` (e.g. per-run sub-seeds in ``seed``)."""
    drop, rename = [], {}
    for column in head.columns.intersection(frame.columns):
        if bool((frame[column] == head[column]).all()):
            drop.append(column)
        elif f"run_{column}" in frame.columns:
            raise ValueError(f"run {run.run_id}: columns {column!r} and 'run_{column}' "
                             f"clash with the sweep column {column!r}")
        else:
            rename[column] = f"run_{column}"
    return frame.drop(columns=drop).rename(columns=rename)


def _curve_ids(sweep_ids: pd.Series, own: pd.Series) -> pd.Series:
    """``<sweep run>/<the scenario's run_id>`` (the sweep's alone where a row has none):
    ``run_id`` names one curve in a sweep's table as in one run's."""
    composed = sweep_ids + "/" + own.astype(str)
    return composed.where(own.notna(), sweep_ids).astype(sweep_ids.dtype)


def _column_dtypes(runs: Sequence[Run], keys: Sequence[str]) -> dict[str, Any]:
    import pandas as pd

    dtypes = {k: pd.Series([run.params[k] for run in runs]).dtype for k in keys}
    dtypes.update(seed="int64", run_id=pd.Series(["x"]).dtype,
                  config_hash=pd.Series(["x"]).dtype)
    return dtypes


def assemble(runs: Sequence[Run], keys: Sequence[str], paths: SweepPaths) -> pd.DataFrame:
    """The parts of the finished ``runs``, in order, with the sweep columns in front."""
    import pandas as pd

    from bflnet.runs.column_types import one_type_per_column

    dtypes = _column_dtypes(runs, keys)
    frames = []
    for run in runs:
        part = paths.part(run.run_id)
        if not part.exists():
            continue
        try:
            frame = pd.read_parquet(part)
        except Exception as exc:  # damaged since it was checked, or an unfinished sweep's
            raise ValueError(f"{str(part)!r} does not read back ({_one_line(exc)[:200]}); "
                             f"run the sweep again to compute it again") from None
        head = _head_columns(run, keys, dtypes, frame.index)
        body = _resolve_clashes(frame, head, run)
        if "run_id" in frame.columns and "run_run_id" in body.columns:
            head["run_id"] = _curve_ids(head["run_id"], body["run_run_id"])
        frames.append(pd.concat([head, body], axis=1))
    if not frames:
        return pd.DataFrame({k: pd.Series(dtype=dtypes[k]) for k in (*keys, *META_COLUMNS)})
    return one_type_per_column(pd.concat(frames, ignore_index=True))


def _progress_bar(total: int, done: int, name: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, unit="run", desc=f"sweep {name}",
                disable=not enabled, file=sys.stderr, dynamic_ncols=True)


def _check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")
    return value


def sweep(name: str, grid: Mapping[str, Sequence[Any]], seeds: int | Sequence[int],
          out: str | Path, *, fixed: Mapping[str, Any] | None = None,
          workers: int | None = None, scheduler: str | None = None, progress: bool = True,
          torch_threads: int = 1, warn: Callable[[str], None] | None = None,
          load_state: str | Path | None = None) -> pd.DataFrame:
    """Run scenario ``name`` over ``grid`` (key → values) × ``seeds`` (a count: 0..N-1, or
    a list) with ``fixed`` overrides; persist every run under ``out``; the full table.

    ``load_state``: every run starts from the state saved in that directory, with its
    settings and its seed: ``grid`` and ``fixed`` may change only the settings a load may
    change, and ``seeds`` must be 1 (or the saved seed's list), the saved seed only.

    ``workers`` local processes (default ``min(2, cpus)``; at most :func:`max_workers`:
    4 per CPU, 256 in all; they never import the caller's ``__main__``) unless
    ``scheduler`` (an address such as ``tcp://host:8786``) names an existing Dask cluster.
    Finished runs in ``out`` are skipped; failed runs are retried; a damaged part is
    computed again and reported to ``warn`` (default :func:`warnings.warn`).
    ``table.attrs["sweep"]`` counts the runs and lists the failures; :class:`SweepError`
    if no run succeeded; :class:`Interrupted` on Ctrl-C or SIGTERM (in the main thread),
    every finished run kept.
    """
    workers = check_workers(default_workers() if workers is None else workers)
    plan = plan_sweep(name, grid, seeds, fixed, load_state)
    torch_threads = _check_count("torch_threads", torch_threads)
    paths = sweep_paths(out)
    with catch_signals():
        try:
            return _sweep(plan, paths, workers, scheduler, progress, torch_threads,
                          warn or _warn)
        except Interrupted as exc:
            raise _interrupted(plan, paths, exc.signum) from None


def _warn(text: str) -> None:
    warnings.warn(text, stacklevel=3)


def _interrupted(plan: SweepPlan, paths: SweepPaths, signum: int) -> Interrupted:
    kept = sum(paths.part(run.run_id).is_file() for run in plan.runs)
    return Interrupted(signum, f"sweep interrupted: {kept} of {len(plan.runs)} runs are "
                       f"kept in {str(paths.root)!r}; run the same sweep again to "
                       f"compute the other {len(plan.runs) - kept}")


def _check_writable(paths: SweepPaths) -> None:
    """Read only: the sweep's folders exist or can be made (their nearest existing
    ancestor is a writable directory); the operating system's error if not."""
    for folder in (paths.root, paths.table.parent):
        existing = folder
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
        if not os.access(existing, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(existing))


def _sweep(plan: SweepPlan, paths: SweepPaths, workers: int, scheduler: str | None,
           progress: bool, torch_threads: int, warn: Callable[[str], None]) -> pd.DataFrame:
    _check_writable(paths)  # before any worker starts
    done, bad = _scan(plan, paths)
    for run_id, problem in bad.items():
        warn(f"the part {str(paths.part(run_id))!r} is damaged: {problem}; "
             f"computing it again")
    pending = [run for run in plan.runs if run.run_id not in done]
    failures: list[dict[str, Any]] = []
    if not pending:
        _prepare(plan, paths, done, bad)
    else:  # nothing is written before the workers start (or the scheduler answers)
        with _outcomes(plan, min(workers, len(pending)), scheduler, torch_threads) as outcomes:
            _prepare(plan, paths, done, bad)
            with _progress_bar(len(plan.runs), len(done), plan.scenario, progress) as bar:
                failures = _run_pending(plan, outcomes(pending), paths, bar)
    return _finish(plan, paths, len(done), len(pending), failures, bad)


def _finish(plan: SweepPlan, paths: SweepPaths, skipped: int, pending: int,
            failures: list[dict[str, Any]], bad: Mapping[str, str]) -> pd.DataFrame:
    if len(failures) == len(plan.runs):
        first = failures[0]
        raise SweepError(f"all {len(plan.runs)} runs failed (see {paths.manifest}); first: "
                         f"{first['params']} seed {first['seed']}: {first['error']}")
    table = assemble(plan.runs, list(plan.grid), paths)
    _write_parquet(table, paths.table, sweep_record(plan.scenario, plan.grid, plan.fixed,
                                                    plan.seeds, plan.load_state))
    table.attrs["sweep"] = {
        "scenario": plan.scenario, "runs": len(plan.runs), "skipped": skipped,
        "computed": pending - len(failures), "failed": [
            {k: f[k] for k in ("run_id", "params", "seed", "error")} for f in failures],
        "recomputed": dict(bad), "table": str(paths.table)}
    return table


def load_sweep(out: str | Path) -> pd.DataFrame:
    """The sweep's final table; for an unfinished sweep, the runs finished so far."""
    import pandas as pd

    paths = sweep_paths(out)
    if paths.table.exists():
        return pd.read_parquet(paths.table)
    if not paths.spec.exists():
        raise ValueError(f"out: no sweep found at {str(out)!r}")
    spec = json.loads(paths.spec.read_text())
    runs = [Run(r["params"], r["seed"], r["config_hash"]) for r in spec["runs"]]
    return assemble(runs, list(spec["grid"]), paths)


def load_manifest(out: str | Path) -> pd.DataFrame:
    """One row per run ever recorded under ``out``: parameters, seed, status, error, time."""
    import pandas as pd

    paths = sweep_paths(out)
    if not paths.manifest.exists():
        raise ValueError(f"out: no sweep found at {str(out)!r}")
    columns = ("run_id", "config_hash", "seed", "status", "error", "rows", "elapsed_s",
               "worker")
    rows = [{**r["params"], **{c: r.get(c) for c in columns}}
            for r in _read_manifest(paths.manifest).values()]
    return pd.DataFrame(rows)
