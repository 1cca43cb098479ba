"""The run's side of saved states: :class:`States` collects the checkpoints a run saves
and hands a loaded run its verified checkpoints; checkpoints to and from JSON-able data
with their arrays apart."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bflnet.protocols.checkpoint import WalkCheckpoint
from bflnet.runs.states.directory import ARRAYS_FILE, STATE_FILE, SavedState, write_directory
from bflnet.runs.states.schema import FORMAT, StateSpec, check_runs


@dataclass
class States:
    """What a run saves (``saving``: :meth:`keep` collects each run's checkpoint,
    ``arrays`` the arrays to write) and what it starts from (``source``: a state
    directory read, its record checked; the scenario calls :meth:`verify` before it uses
    anything of it)."""

    saving: bool = False
    source: SavedState | None = None
    kept: dict[int, dict[str, Any]] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    _loaded: dict[str, np.ndarray] | None = None

    @property
    def loading(self) -> bool:
        """Whether the run starts from a saved state."""
        return self.source is not None

    def verify(self, spec: StateSpec) -> dict[str, np.ndarray]:
        """The saved runs checked against ``spec`` (:func:`check_runs`), the arrays'
        headers against the dtypes and shapes they must have, then the arrays read
        (refused if one holds NaN or infinity); returns them by name."""
        if self.source is None:
            raise RuntimeError("bug in bflnet: States.verify without a loaded state")
        expected = check_runs(self.source.record["runs"], spec)
        headers = self.source.arrays.headers
        what = f"--load-state: {ARRAYS_FILE}"
        for name in sorted(headers):
            if name not in expected:
                raise ValueError(f"{what}: holds an array {name!r} that {STATE_FILE} does "
                                 f"not name")
        for name in sorted(expected):
            want, header = np.asarray(expected[name]), headers.get(name)
            if header is None:
                raise ValueError(f"{what}: has no array {name!r}")
            if header.dtype != want.dtype or header.shape != want.shape:
                raise ValueError(f"{what}: the array {name!r} is {header.dtype} of shape "
                                 f"{_dims(header.shape)}; it must be {want.dtype} of shape "
                                 f"{_dims(want.shape)}")
        arrays = {name: self.source.arrays.read(name) for name in sorted(expected)}
        for name, array in arrays.items():
            if array.dtype.kind in "fc" and not np.isfinite(array).all():
                where = np.unravel_index(int(np.argmin(np.isfinite(array))), array.shape)
                raise ValueError(f"{what}: the array {name!r} holds {array[where].item()!r} "
                                 f"(at {tuple(map(int, where))}); saved arrays hold finite "
                                 f"numbers")
        self._loaded = arrays
        return arrays

    def keep(self, run: int, checkpoint: WalkCheckpoint, **extra: Any) -> None:
        """Keep run ``run``'s checkpoint (encoded now: later changes do not leak in)."""
        self.kept[run] = {"checkpoint": encode_checkpoint(checkpoint, self.arrays,
                                                          f"run{run}"),
                          "extra": json.loads(json.dumps(_plain(extra)))}

    def start(self, run: int, template: Callable[[Any], Any]
              ) -> tuple[WalkCheckpoint, _Extra] | None:
        """Run ``run``'s loaded checkpoint (verified: :meth:`verify`), or ``None`` when
        not loading."""
        if self.source is None:
            return None
        if self._loaded is None:
            raise RuntimeError("bug in bflnet: a saved state used before States.verify")
        runs = {r.get("run"): r for r in self.source.record.get("runs", [])
                if isinstance(r, dict)}
        if run not in runs:
            raise ValueError(f"--load-state: the saved state has no run {run}")
        extra = runs[run].get("extra")
        return (decode_checkpoint(runs[run].get("checkpoint") or {}, self._loaded, template),
                _Extra(extra if isinstance(extra, dict) else {}))

    def close(self) -> None:
        """Close the loaded state directory's files."""
        if self.source is not None:
            self.source.close()


def _dims(shape: tuple[int, ...]) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 60 else text[:57] + "..."


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
def write_state_dir(path: str | Path, record: Mapping[str, Any], states: States) -> Path:
    """Write ``record`` (scenario, config, seed, version) and ``states``' runs into the
    directory ``path`` (created), with their checksums: all files or none."""
    body = {"format": FORMAT, **record,
            "runs": [{"run": r, **states.kept[r]} for r in sorted(states.kept)]}
    text = json.dumps(body, sort_keys=True, indent=1) + "\n"
    return write_directory(path, text, states.arrays)


def check_compatible(record: Mapping[str, Any], scenario: str, config: Mapping[str, Any],
                     seed: int, free: tuple[str, ...]) -> None:
    """A one-line ``ValueError`` unless the saved state was made by ``scenario`` with
    ``seed`` and a config equal to ``config`` except in the fields ``free``."""
    what = "--load-state: state.json"
    if record.get("scenario") != scenario:
        raise ValueError(f"{what}: scenario: the state was saved by scenario "
                         f"{record.get('scenario')!r}, not {scenario!r}")
    if record.get("seed") != seed:
        raise ValueError(f"{what}: seed: the state was saved with seed "
                         f"{record.get('seed')!r}; run with --seed {record.get('seed')!r}")
    saved = record.get("config")
    if not isinstance(saved, dict):
        raise ValueError(f"{what}: config: missing")
    for name in sorted(set(saved) | set(config)):
        if name in free:
            continue
        if saved.get(name) != config.get(name) or (
                type(saved.get(name)) is not type(config.get(name))):
            raise ValueError(f"{what}: config.{name}: the state was saved with {name}="
                             f"{_short(saved.get(name))}, this run has {name}="
                             f"{_short(config.get(name))} (only {', '.join(free)} may "
                             f"differ)")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
