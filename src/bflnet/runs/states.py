"""State directories: a run's learnt states saved (``--save-state DIR``) and a later run
started from them (``--load-state DIR``): learn once, unlearn many times.

A state directory holds two files, written together atomically:

- ``state.json``: the scenario, its full config, the seed, the bflnet version and, per run,
  the checkpoint's non-array parts (token position, clock, bit counters, random streams'
  states, ...);
- ``arrays.npz``: every array (global state, agents' states), read back with
  ``allow_pickle=False``: nothing in the directory is ever unpickled or executed.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bflnet.files.atomic import check_can_create, path_kind, write_files
from bflnet.files.input_files import decode_text, describe_os_error, read_bytes
from bflnet.protocols.checkpoint import WalkCheckpoint

STATE_FILE, ARRAYS_FILE = "state.json", "arrays.npz"
FORMAT = "bflnet-state/1"
#: Largest ``state.json`` read.
MAX_STATE_JSON = 64 * 2**20


@dataclass
class States:
    """What a run saves (``saving``: :meth:`keep` collects each run's checkpoint) and
    what it starts from (``loaded``: the record and arrays of a state directory)."""

    saving: bool = False
    loaded: tuple[dict[str, Any], dict[str, np.ndarray]] | None = None
    kept: dict[int, dict[str, Any]] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def keep(self, run: int, checkpoint: WalkCheckpoint, **extra: Any) -> None:
        """Keep run ``run``'s checkpoint (encoded now: later changes do not leak in)."""
        self.kept[run] = {"checkpoint": encode_checkpoint(checkpoint, self.arrays,
                                                          f"run{run}"),
                          "extra": json.loads(json.dumps(_plain(extra)))}

    def start(self, run: int, template: Callable[[Any], Any]
              ) -> tuple[WalkCheckpoint, dict[str, Any]] | None:
        """Run ``run``'s loaded checkpoint, or ``None`` when not loading."""
        if self.loaded is None:
            return None
        record, arrays = self.loaded
        runs = {r.get("run"): r for r in record.get("runs", []) if isinstance(r, dict)}
        if run not in runs:
            raise ValueError(f"--load-state: the saved state has no run {run}")
        extra = runs[run].get("extra")
        return (decode_checkpoint(runs[run].get("checkpoint") or {}, arrays, template),
                _Extra(extra if isinstance(extra, dict) else {}))


class _Extra(dict):
    """A run's saved extra values: a missing one is a one-line error."""

    def __missing__(self, key: str) -> Any:
        raise ValueError(f"--load-state: state.json is malformed (no {key!r} in a run)")

    def number(self, key: str) -> int | float:
        """The saved finite number ``key``."""
        value = self[key]
        if type(value) not in (int, float) or not np.isfinite(value):
            raise ValueError(f"--load-state: state.json is malformed ({key} is {value!r}, "
                             f"not a finite number)")
        return value

    def row(self, key: str, numbers: tuple[str, ...]) -> dict[str, Any]:
        """The saved record row ``key``, its fields ``numbers`` checked like
        :meth:`number`."""
        row = self[key]
        if not isinstance(row, dict):
            raise ValueError(f"--load-state: state.json is malformed ({key} is not a row)")
        for name in numbers:
            _Extra(row).number(name)
        return row


# --------------------------------------------------------------------------- encoding
def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers (JSON-able)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def _encode(value: Any, arrays: dict[str, np.ndarray], key: str) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise ValueError(f"states: {key} is an array of Python objects; not saved")
        arrays[key] = value
        return {"array": key}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"fields": {f.name: _encode(getattr(value, f.name), arrays, f"{key}.{f.name}")
                           for f in dataclasses.fields(value)}}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise ValueError(f"states: {key} is a {type(value).__name__}; only arrays, numbers, "
                     f"text and dataclasses of them can be saved")


def _decode(tree: Any, arrays: Mapping[str, np.ndarray], template: Any = None) -> Any:
    if not isinstance(tree, dict) or len(tree) != 1:
        raise ValueError("--load-state: state.json has a malformed value")
    (kind, body), = tree.items()
    if kind == "array":
        if not isinstance(body, str) or body not in arrays:
            raise ValueError(f"--load-state: {ARRAYS_FILE} has no array {body!r}")
        value = arrays[body]
        if isinstance(template, np.ndarray) and (value.shape != template.shape
                                                 or value.dtype != template.dtype):
            raise ValueError(f"--load-state: the array {body!r} is {value.dtype} of shape "
                             f"{value.shape}; this learner's is {template.dtype} of shape "
                             f"{template.shape}")
        return value
    if kind == "value":
        if template is not None and type(body) is not type(template) and not (
                isinstance(template, float) and type(body) is int):
            raise ValueError(f"--load-state: a saved {type(template).__name__} is "
                             f"{body!r}")
        return body
    if kind == "fields" and dataclasses.is_dataclass(template) and isinstance(body, dict):
        names = {f.name for f in dataclasses.fields(template)}
        if set(body) != names:
            raise ValueError(f"--load-state: an agent's state has the fields {sorted(body)}, "
                             f"this learner's {sorted(names)}")
        return dataclasses.replace(template, **{n: _decode(v, arrays, getattr(template, n))
                                                for n, v in body.items()})
    raise ValueError("--load-state: state.json has a value this learner cannot hold")


def encode_checkpoint(ck: WalkCheckpoint, arrays: dict[str, np.ndarray],
                      prefix: str) -> dict[str, Any]:
    """``ck`` as JSON-able data, its arrays put in ``arrays`` under ``prefix``."""
    return {"iteration": ck.iteration, "now": ck.now, "current": ck.current,
            "previous": ck.previous, "seen": list(ck.seen), "covered": ck.covered,
            "state": _encode(np.asarray(ck.state), arrays, f"{prefix}.state"),
            "agent_states": [[k, _encode(v, arrays, f"{prefix}.agent.{k}")]
                             for k, v in ck.agent_states.items()],
            "counters": ck.counters, "streams": ck.streams, "links": ck.links}


def decode_checkpoint(tree: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                      template: Callable[[Any], Any]) -> WalkCheckpoint:
    """The checkpoint :func:`encode_checkpoint` wrote; ``template(k)`` is a fresh agent
    state of agent ``k`` whose type and fields the saved one must have."""
    try:
        agents = {k: _decode(v, arrays, template(k)) for k, v in tree["agent_states"]}
        iteration, now = tree["iteration"], tree["now"]
        if type(iteration) is not int or iteration < 0:
            raise ValueError(f"iteration: must be an integer >= 0, got {iteration!r}")
        if type(now) not in (int, float) or not 0 <= now < 1e300:
            raise ValueError(f"now: must be a finite number >= 0, got {now!r}")
        counters = dict(tree["counters"])
        if any(type(v) is not int or v < 0 for v in counters.values()):
            raise ValueError("counters: must be integers >= 0")
        return WalkCheckpoint(
            iteration=iteration, now=float(now), current=tree["current"],
            previous=tree["previous"], seen=list(tree["seen"]), covered=bool(tree["covered"]),
            state=_decode(tree["state"], arrays), agent_states=agents, counters=counters,
            streams=dict(tree["streams"]), links=[list(x) for x in tree["links"]])
    except (KeyError, TypeError, ValueError) as exc:
        detail = str(exc).removeprefix("--load-state: ")
        raise ValueError(f"--load-state: state.json is malformed ({type(exc).__name__}: "
                         f"{detail})") from None


# --------------------------------------------------------------------------- directories
def check_save_dir(path: str | Path, *, force: bool = False) -> Path:
    """Before a run: ``path`` is (or can be made as) a directory this process can write
    in, without a saved state unless ``force``. A one-line ``ValueError`` otherwise."""
    path, what = Path(path), "--save-state"
    kind = path_kind(path, what)
    if kind not in (None, "directory"):
        raise ValueError(f"{what}: {str(path)!r} exists and is not a directory")
    holds_state = kind == "directory" and path_kind(path / STATE_FILE, what) is not None
    if holds_state and not force:
        raise ValueError(f"{what}: {str(path)!r} already holds a saved state; pass "
                         f"--force to overwrite it")
    # files go into the directory itself, or into a new one made under its nearest parent
    check_can_create(path / STATE_FILE if kind == "directory" else path, what)
    return path


def write_state_dir(path: str | Path, record: Mapping[str, Any], states: States) -> Path:
    """Write ``record`` (scenario, config, seed, version) and ``states``' runs into the
    directory ``path`` (created), both files or neither."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--save-state: cannot create {str(path)!r} "
                         f"({describe_os_error(exc)})") from None
    body = {"format": FORMAT, **record,
            "runs": [{"run": r, **states.kept[r]} for r in sorted(states.kept)]}
    text = json.dumps(body, sort_keys=True, indent=1) + "\n"

    def arrays(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez(handle, **states.arrays)

    write_files([(path / ARRAYS_FILE, arrays),
                 (path / STATE_FILE, lambda tmp: tmp.write_text(text))])
    return path


def read_state_dir(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The record and arrays of the state directory ``path``; a one-line ``ValueError``
    if it is missing, not a directory, unreadable or not a bflnet state."""
    path, what = Path(path), "--load-state"
    kind = path_kind(path, what)
    if kind is None:
        raise ValueError(f"{what}: {str(path)!r} does not exist")
    if kind != "directory":
        raise ValueError(f"{what}: {str(path)!r} is not a directory")
    for name in (STATE_FILE, ARRAYS_FILE):
        if path_kind(path / name, what) != "file":
            raise ValueError(f"{what}: {str(path)!r} holds no saved state ({name} is "
                             f"missing; write one with --save-state)")
    text = decode_text(read_bytes(path / STATE_FILE, what, MAX_STATE_JSON),
                       path / STATE_FILE, what)
    try:
        record = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{what}: {str(path / STATE_FILE)!r} is not JSON ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"{what}: {str(path / STATE_FILE)!r} is not a bflnet state "
                         f"(format {FORMAT})")
    try:
        with np.load(path / ARRAYS_FILE, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        raise ValueError(f"{what}: cannot read {str(path / ARRAYS_FILE)!r} "
                         f"({' '.join(reason.split())[:200]})") from None
    return record, arrays


def check_compatible(record: Mapping[str, Any], scenario: str, config: Mapping[str, Any],
                     seed: int, free: tuple[str, ...]) -> None:
    """A one-line ``ValueError`` unless the saved state was made by ``scenario`` with
    ``seed`` and a config equal to ``config`` except in the fields ``free``."""
    what = "--load-state"
    if record.get("scenario") != scenario:
        raise ValueError(f"{what}: the state was saved by scenario "
                         f"{record.get('scenario')!r}, not {scenario!r}")
    if record.get("seed") != seed:
        raise ValueError(f"{what}: the state was saved with seed {record.get('seed')!r}; "
                         f"run with --seed {record.get('seed')!r}")
    saved = record.get("config")
    if not isinstance(saved, dict):
        raise ValueError(f"{what}: state.json has no config")
    for name in sorted(set(saved) | set(config)):
        if name in free:
            continue
        if saved.get(name) != config.get(name):
            raise ValueError(f"{what}: the state was saved with {name}="
                             f"{saved.get(name)!r}, this run has {name}="
                             f"{config.get(name)!r} (only {', '.join(free)} may differ)")

