"""The schema of a saved state's ``state.json``, checked before anything runs from it.

Two steps:

- :func:`check_record` (before the run, by :meth:`~bflnet.runs.registry.Scenario.run`):
  the record's own fields (format, bflnet version, kind, scenario, seed) and its config,
  validated as a config of the scenario (every field there, of its type and range);
- :func:`check_runs` (by the scenario, once it knows its network: :class:`StateSpec`):
  every saved run's checkpoint, each value of its type and range and consistent with the
  config: the iteration the config saves at, node ids within the network, clocks and link
  busy times finite and >= 0, bit counters bounded, the agents' states of the learner's
  types (a field's metadata may bound it: ``choices``, ``ge``, ``le``, and ``visits``: a
  count of visits, at most the iterations run), random streams valid PCG64 states; and
  the arrays the record names, with the dtype and shape each must have.

Any violation is a one-line ``ValueError`` naming the value by its key path in the file
(``runs[0].checkpoint.now``) and what is allowed there.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bflnet.protocols.checkpoint import COUNTERS
from bflnet.validation.params import shown

#: The format a state directory's ``state.json`` declares.
FORMAT = "bflnet-state/1"
#: Latest simulated clock (seconds) a saved state may hold.
MAX_CLOCK_S = 1e15
#: Largest bit counter a saved state may hold (integers exact in a float).
MAX_BITS = 2**53
#: The keys of ``state.json``, of a saved run and of its checkpoint.
RECORD_KEYS = ("bflnet", "config", "format", "kind", "runs", "scenario", "seed")
RUN_KEYS = ("checkpoint", "extra", "run")
CHECKPOINT_KEYS = ("agent_states", "counters", "covered", "current", "iteration", "links",
                   "now", "previous", "seen", "state", "streams")
#: A PCG64 bit generator's state, as numpy gives it.
PCG64_KEYS = ("bit_generator", "has_uint32", "state", "uinteger")
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!_-]{0,63}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STREAM = re.compile(r"(protocol\.walk|codec\.token|(agent|compute)\.(\d{1,9})|"
                     r"link\.(\d{1,9})\.(\d{1,9}))")


def at(path: str, key: str | int) -> str:
    """The key path of ``key`` under ``path``: ``runs[0]``, ``runs[0].checkpoint``,
    ``streams['agent.0']``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _NAME.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def refuse(path: str, allowed: str, value: Any) -> ValueError:
    """The one-line error: the value at ``path`` is not ``allowed``."""
    return ValueError(f"--load-state: state.json: {path}: must be {allowed}, "
                      f"got {shown(value)}")


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_real(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def integer(path: str, value: Any, lo: int, hi: int) -> int:
    """``value``, an integer in ``lo..hi``."""
    if not _is_int(value) or not lo <= value <= hi:
        raise refuse(path, str(lo) if lo == hi else f"an integer in {lo}..{hi}", value)
    return value


def real(path: str, value: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    """``value``, a finite number in ``[lo, hi]``."""
    if not _is_real(value) or not lo <= value <= hi:
        bounds = "" if math.isinf(lo) and math.isinf(hi) else f" in [{lo:g}, {hi:g}]"
        raise refuse(path, f"a finite number{bounds}", value)
    return value


def mapping(path: str, value: Any, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``value``, an object (with exactly ``keys``, when given)."""
    if not isinstance(value, dict):
        raise refuse(path, "an object", value)
    if keys is not None:
        for key in keys:
            if key not in value:
                raise ValueError(f"--load-state: state.json: {at(path, key)}: missing")
        for key in value:
            if key not in keys:
                raise ValueError(f"--load-state: state.json: {at(path, key)}: not a field "
                                 f"there (allowed: {', '.join(keys)})")
    return value


def sequence(path: str, value: Any, most: int, length: int | None = None) -> list[Any]:
    """``value``, a list of at most ``most`` items (exactly ``length``, when given)."""
    if not isinstance(value, list):
        raise refuse(path, "a list", value)
    if length is not None and len(value) != length:
        raise ValueError(f"--load-state: state.json: {path}: must have {length} items, "
                         f"has {len(value)}")
    if len(value) > most:
        raise ValueError(f"--load-state: state.json: {path}: must have at most {most} "
                         f"items, has {len(value)}")
    return value


def equal(path: str, value: Any, wanted: Any) -> Any:
    """``value``, equal to ``wanted`` and of its type."""
    if type(value) is not type(wanted) or value != wanted:
        raise refuse(path, repr(wanted), value)
    return value


# --------------------------------------------------------------------------- the record
def check_record(record: Any, config_cls: type) -> dict[str, Any]:
    """``record`` (a parsed ``state.json``) checked but for its runs; its config validated
    as a ``config_cls`` (old field names renamed). Returns the record with that config."""
    from bflnet.runs.config import ValidationBug, make_config
    from bflnet.validation.renames import rename_keys

    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"--load-state: state.json: format: must be {FORMAT!r} (not a "
                         f"bflnet state, or of another version), got "
                         f"{shown(record.get('format') if isinstance(record, dict) else record)}")
    mapping("", record, RECORD_KEYS)
    if not isinstance(record["bflnet"], str) or not _VERSION.fullmatch(record["bflnet"]):
        raise refuse("bflnet", "a bflnet version", record["bflnet"])
    equal("kind", record["kind"], "run")
    if not isinstance(record["scenario"], str) or not 0 < len(record["scenario"]) <= 200:
        raise refuse("scenario", "a scenario name", record["scenario"])
    if not _is_int(record["seed"]) or record["seed"] < 0:
        raise refuse("seed", "an integer >= 0", record["seed"])
    saved = mapping("config", record["config"])
    fields = [f.name for f in dataclasses.fields(config_cls)]
    try:
        saved = rename_keys(config_cls, saved)
    except ValueError as exc:
        raise ValueError(f"--load-state: state.json: config.{exc}") from None
    for name in fields:
        if name not in saved:
            raise ValueError(f"--load-state: state.json: {at('config', name)}: missing")
    for name in saved:
        if name not in fields:
            raise ValueError(f"--load-state: state.json: {at('config', name)}: not a "
                             f"parameter of scenario {record['scenario']!r}")
    try:
        make_config(config_cls, saved)
    except ValidationBug:
        raise
    except ValueError as exc:
        raise ValueError(f"--load-state: state.json: config.{exc}") from None
    sequence("runs", record["runs"], 10**7)
    return {**record, "config": saved}


# --------------------------------------------------------------------------- the runs
@dataclass(frozen=True)
class StateSpec:
    """What a scenario's saved runs must be: ``runs`` of them, on a network of ``nodes``
    nodes (ids ``0..nodes-1``, every one an agent), each saved at iteration
    ``iteration``, its global state like ``state`` and agent ``k``'s like ``agent(k)``
    (an array: of its dtype and shape; a dataclass: its fields so); ``extra`` checks a
    run's extra values (:class:`Fields`); ``arrays``: further arrays the directory holds
    (name: an array of the dtype and shape it must have); ``links``: the network's."""

    runs: int = 0
    nodes: int = 0
    iteration: int = 0
    state: np.ndarray | None = None
    agent: Callable[[int], Any] | None = None
    extra: Callable[[Fields], None] | None = None
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: The network's links (``(a, b)`` pairs), every one saved (``None``: not checked).
    links: frozenset[tuple[int, int]] | None = None
    max_clock_s: float = MAX_CLOCK_S


@dataclass(frozen=True)
class Fields:
    """A saved run's extra values at ``path`` (``value``, an object), checked against its
    checkpoint (``now``, ``counters``, ``iteration``, ``nodes``, all checked already)."""

    path: str
    value: dict[str, Any]
    now: float
    counters: dict[str, int]
    iteration: int
    nodes: int

    def only(self, *names: str) -> None:
        """Exactly the keys ``names``."""
        mapping(self.path, self.value, tuple(sorted(names)))

    def get(self, name: str) -> Any:
        """The value ``name`` (a one-line error if it is missing)."""
        if name not in self.value:
            raise ValueError(f"--load-state: state.json: {at(self.path, name)}: missing")
        return self.value[name]

    def clock(self, name: str) -> float:
        """A time in seconds no later than the checkpoint's clock."""
        return real(at(self.path, name), self.get(name), 0.0, self.now)

    def bits(self, name: str, counter: str) -> int:
        """A bit count no larger than the checkpoint's counter ``counter``."""
        return integer(at(self.path, name), self.get(name), 0, self.counters[counter])

    def real(self, name: str) -> float:
        """A finite number."""
        return real(at(self.path, name), self.get(name))

    def equal(self, name: str, wanted: Any) -> Any:
        """Exactly ``wanted``."""
        return equal(at(self.path, name), self.get(name), wanted)

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        """One of ``choices``."""
        if self.get(name) not in choices or not isinstance(self.get(name), str):
            raise refuse(at(self.path, name), f"one of {', '.join(choices)}", self.get(name))
        return self.get(name)

    def node(self, name: str) -> int:
        """A node id."""
        return integer(at(self.path, name), self.get(name), 0, self.nodes - 1)

    def mapping(self, name: str) -> Fields:
        """The object ``name``, checked the same way."""
        return dataclasses.replace(self, path=at(self.path, name),
                                   value=mapping(at(self.path, name), self.get(name)))


def check_runs(runs: Any, spec: StateSpec) -> dict[str, np.ndarray]:
    """The saved ``runs`` (``state.json``'s ``runs``) checked against ``spec``; the arrays
    they name, each with the array whose dtype and shape it must have (``spec.arrays``
    included)."""
    expected: dict[str, np.ndarray] = dict(spec.arrays)
    sequence("runs", runs, spec.runs, length=spec.runs)
    for r, run in enumerate(runs):
        path = at("runs", r)
        mapping(path, run, RUN_KEYS)
        integer(at(path, "run"), run["run"], r, r)
        ck = _check_checkpoint(at(path, "checkpoint"), run["checkpoint"], r, spec, expected)
        extra = mapping(at(path, "extra"), run["extra"])
        fields = Fields(at(path, "extra"), extra, ck["now"], ck["counters"],
                        ck["iteration"], spec.nodes)
        if spec.extra is None:
            fields.only()
        else:
            spec.extra(fields)
    return expected


def _check_checkpoint(path: str, ck: Any, r: int, spec: StateSpec,
                      expected: dict[str, np.ndarray]) -> dict[str, Any]:
    mapping(path, ck, CHECKPOINT_KEYS)
    K = spec.nodes
    integer(at(path, "iteration"), ck["iteration"], spec.iteration, spec.iteration)
    real(at(path, "now"), ck["now"], 0.0, spec.max_clock_s)
    integer(at(path, "current"), ck["current"], 0, K - 1)
    if ck["previous"] is not None:
        integer(at(path, "previous"), ck["previous"], 0, K - 1)
    seen = sequence(at(path, "seen"), ck["seen"], K)
    for i, k in enumerate(seen):
        integer(at(at(path, "seen"), i), k, 0, K - 1)
        if i and k <= seen[i - 1]:
            raise refuse(at(at(path, "seen"), i), f"above seen[{i - 1}] = {seen[i - 1]} "
                         f"(seen is sorted, each node once)", k)
    if type(ck["covered"]) is not bool or ck["covered"] != (len(seen) == K):
        raise refuse(at(path, "covered"), f"{str(len(seen) == K).lower()} (whether seen "
                     f"holds all {K} nodes)", ck["covered"])
    if spec.state is not None:
        equal(at(at(path, "state"), "array"),
              mapping(at(path, "state"), ck["state"], ("array",))["array"], f"run{r}.state")
        expected[f"run{r}.state"] = spec.state
    agents = _check_agents(at(path, "agent_states"), ck["agent_states"], r, spec, expected)
    if spec.agent is not None and agents != set(seen):
        raise ValueError(f"--load-state: state.json: {at(path, 'agent_states')}: must hold "
                         f"the agents of seen (the visited ones: {_ids(seen)}), holds "
                         f"{_ids(sorted(agents))}")
    counters = mapping(at(path, "counters"), ck["counters"], tuple(sorted(COUNTERS)))
    for name in COUNTERS:
        integer(at(at(path, "counters"), name), counters[name], 0, MAX_BITS)
    links = _check_links(at(path, "links"), ck["links"], spec)
    _check_streams(at(path, "streams"), ck["streams"], K, links, agents)
    return ck


def _ids(ids: list[int]) -> str:
    text = ", ".join(map(str, ids[:10]))
    return f"{text}, ... ({len(ids)})" if len(ids) > 10 else text or "none"


def _check_agents(path: str, agents: Any, r: int, spec: StateSpec,
                  expected: dict[str, np.ndarray]) -> set[int]:
    sequence(path, agents, spec.nodes)
    done: set[int] = set()
    for i, pair in enumerate(agents):
        where = at(path, i)
        sequence(where, pair, 2, length=2)
        k = integer(at(where, 0), pair[0], 0, spec.nodes - 1)
        if k in done:
            raise ValueError(f"--load-state: state.json: {at(where, 0)}: agent {k} is "
                             f"there twice")
        done.add(k)
        if spec.agent is None:
            raise refuse(where, "absent (this scenario saves no agent states)", pair)
        _check_tree(at(where, 1), pair[1], spec.agent(k), f"run{r}.agent.{k}", {},
                    spec.iteration, expected)
    return done


def _check_tree(path: str, tree: Any, template: Any, key: str, meta: Mapping[str, Any],
                iteration: int, expected: dict[str, np.ndarray]) -> None:
    """An encoded value (``{"fields": ...}``, ``{"array": ...}``, ``{"value": ...}``)
    of the learner's ``template``'s type; arrays go to ``expected``."""
    if dataclasses.is_dataclass(template) and not isinstance(template, type):
        names = tuple(sorted(f.name for f in dataclasses.fields(template)))
        body = mapping(at(path, "fields"), mapping(path, tree, ("fields",))["fields"], names)
        for f in dataclasses.fields(template):
            _check_tree(at(at(path, "fields"), f.name), body[f.name],
                        getattr(template, f.name), f"{key}.{f.name}", f.metadata, iteration,
                        expected)
        return
    if isinstance(template, np.ndarray):
        equal(at(path, "array"), mapping(path, tree, ("array",))["array"], key)
        expected[key] = template
        return
    value = mapping(path, tree, ("value",))["value"]
    where = at(path, "value")
    if template is None:
        if value is not None:
            raise refuse(where, "null", value)
        return
    kind = type(template)
    if isinstance(template, float):
        real(where, value)
    elif kind is not type(value) or kind not in (bool, int, str):
        raise refuse(where, f"a {kind.__name__}", value)
    choices = meta.get("choices")
    if choices and value not in choices:
        raise refuse(where, f"one of {', '.join(map(str, choices))}", value)
    lo, hi = meta.get("ge"), meta.get("le")
    if meta.get("visits"):
        hi = iteration if hi is None else min(hi, iteration)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise refuse(where, f"a number in [{lo if lo is not None else '-inf'}, "
                     f"{hi if hi is not None else 'inf'}]", value)


def _check_links(path: str, links: Any, spec: StateSpec) -> set[tuple[int, int]]:
    K = spec.nodes
    sequence(path, links, K * (K - 1))
    pairs: set[tuple[int, int]] = set()
    for i, link in enumerate(links):
        where = at(path, i)
        sequence(where, link, 4, length=4)
        a = integer(at(where, 0), link[0], 0, K - 1)
        b = integer(at(where, 1), link[1], 0, K - 1)
        if a == b or (a, b) in pairs:
            raise ValueError(f"--load-state: state.json: {where}: the link {a}->{b} "
                             f"{'is a loop' if a == b else 'is there twice'}")
        if spec.links is not None and (a, b) not in spec.links:
            raise ValueError(f"--load-state: state.json: {where}: the link {a}->{b} is not "
                             f"in this network")
        pairs.add((a, b))
        real(at(where, 2), link[2], 0.0, spec.max_clock_s)
        if link[3] is not None and type(link[3]) is not bool:
            raise refuse(at(where, 3), "null or a boolean", link[3])
    if spec.links is not None and len(pairs) != len(spec.links):
        raise ValueError(f"--load-state: state.json: {path}: must hold every link of this "
                         f"network ({len(spec.links)}), has {len(pairs)}")
    return pairs


def _check_streams(path: str, streams: Any, K: int, links: set[tuple[int, int]],
                   agents: set[int]) -> None:
    """The random streams: valid PCG64 states of streams this network has; agents' own
    streams, if the learner draws from them, for exactly the agents with a state."""
    mapping(path, streams)
    if "protocol.walk" not in streams:
        raise ValueError(f"--load-state: state.json: {at(path, 'protocol.walk')}: missing")
    for name, state in streams.items():
        where = at(path, name)
        match = _STREAM.fullmatch(name)
        ids = [int(x) for x in (match.groups()[2:] if match else ()) if x is not None]
        if (match is None or any(k >= K for k in ids)
                or (name.startswith("link.") and tuple(ids) not in links)):
            raise ValueError(f"--load-state: state.json: {where}: not a stream of this "
                             f"network (protocol.walk, codec.token, agent.<k>, compute.<k>, "
                             f"link.<a>.<b> of a saved link)")
        check_pcg64(where, state)
    drawn = {int(name.split(".")[1]) for name in streams if name.startswith("agent.")}
    if drawn and drawn != agents:
        k = min(drawn ^ agents)
        raise ValueError(f"--load-state: state.json: {at(path, f'agent.{k}')}: "
                         f"{'missing' if k in agents else 'not expected'} (the agents with "
                         f"a saved state have their own streams, the others none)")


def check_pcg64(path: str, state: Any) -> None:
    """``state``, a PCG64 bit generator's state as numpy gives it."""
    mapping(path, state, PCG64_KEYS)
    equal(at(path, "bit_generator"), state["bit_generator"], "PCG64")
    integer(at(path, "has_uint32"), state["has_uint32"], 0, 1)
    integer(at(path, "uinteger"), state["uinteger"], 0, 2**32 - 1)
    inner = mapping(at(path, "state"), state["state"], ("inc", "state"))
    integer(at(at(path, "state"), "state"), inner["state"], 0, 2**128 - 1)
    inc = integer(at(at(path, "state"), "inc"), inner["inc"], 0, 2**128 - 1)
    if inc % 2 == 0:
        raise refuse(at(at(path, "state"), "inc"), "an odd integer (a PCG64 increment)", inc)
