"""TOML config files for ``bflnet run --config`` and ``bflnet sweep --config``.

A run file::

    scenario = "consensus-averaging"   # optional if the command line names it
    seed = 3                            # optional (default 0)
    out = "results/ca.csv"              # optional

    [params]                            # any of the scenario's parameters
    graph = "ring"
    K = 20
    loss_prob = 0.1

A sweep file has ``seeds`` (a count, or a list of seeds) instead of ``seed`` and a
``[grid]`` table of lists (``graph = ["ring", "complete"]``); its ``[params]`` are fixed
for every run.

A scenario that runs a learner with settings (``custom-learner``) takes them in a
``[learner]`` table (``noise_var = 0.1``: the same as ``--set learner.noise_var=0.1``);
a sweep's ``[grid]`` sweeps one as ``"learner.noise_var" = [0.1, 1.0]``.

Values are checked like ``--set``: the same parser and the same one-line errors naming the
field. TOML values are typed, so each must fit its field: an integer for an integer field
(or a whole number such as ``2e3``), an integer or a number for a number field, ``true`` /
``false`` for a switch, a string for a text field, and the string ``"none"`` for an
optional field left unset. Options given on the command line override the file.
"""

from __future__ import annotations

import contextlib
import tomllib
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bflnet.files.input_files import read_bytes
from bflnet.runs.config import (
    describe_fields,
    field_types,
    group_key,
    parse_overrides,
    parse_value,
)
from bflnet.runs.registry import DEFAULT_SCENARIO, get_scenario
from bflnet.validation.params import group_fields
from bflnet.validation.renames import current_name, rename_keys
from bflnet.validation.suggest import did_you_mean

#: Tables of a group's settings a file may have (``[learner]``).
GROUP_TABLES = ("learner",)
RUN_KEYS = ("scenario", "seed", "out", "params", *GROUP_TABLES)
SWEEP_KEYS = ("scenario", "seeds", "out", "params", "grid", *GROUP_TABLES)
#: Largest config file read (a config is a few hundred bytes).
MAX_CONFIG_BYTES = 2**20
#: Deepest nesting of tables and arrays accepted (a config needs 3: [grid] K = [...]).
MAX_CONFIG_DEPTH = 16


def _depth(data: dict[str, Any]) -> int:
    """How deeply tables and arrays nest under the file's top level (``[params]``: 1),
    without recursion."""
    deepest, stack = 0, [(value, 0) for value in data.values()]
    while stack:
        item, depth = stack.pop()
        children = (item.values() if isinstance(item, dict) else item
                    if isinstance(item, list) else None)
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_CONFIG_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


@dataclass(frozen=True)
class ConfigFile:
    """A config file's top-level values, checked for shape but not yet against a scenario
    (the command line may name the scenario)."""

    path: Path
    scenario: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, Any] | None = None
    seed: int | None = None
    seeds: Any = None
    out: str | None = None
    #: The group tables (``[learner]``), by prefix.
    groups: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def read_config_file(path: str | Path, allowed: Sequence[str]) -> ConfigFile:
    """Read the TOML file at ``path`` whose top-level keys must be among ``allowed``."""
    path = Path(path)
    with contextlib.suppress(OSError):  # read_bytes says why it cannot be read
        if not path.exists() and not path.is_symlink():
            raise ValueError(f"--config: no file {str(path)!r}")
        if path.is_dir():
            raise ValueError(f"--config: {str(path)!r} is a directory, not a TOML file")
    raw = read_bytes(path, "--config", MAX_CONFIG_BYTES)  # /dev/zero: refused at once
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ValueError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep") from None
    if _depth(data) > MAX_CONFIG_DEPTH:
        raise ValueError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep")
    unknown = [key for key in data if key not in allowed]
    if unknown:
        raise ValueError(f"{path}: unknown key {unknown[0]!r}; "
                         f"{did_you_mean(unknown[0], allowed)}allowed: {', '.join(allowed)}")
    for key in ("scenario", "out"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{path}: {key}: must be a string, got {data[key]!r}")
    for key in ("params", "grid", *GROUP_TABLES):
        if key in data and not isinstance(data[key], dict):
            raise ValueError(f"{path}: {key}: must be a table ([{key}]), got {data[key]!r}")
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"{path}: seed: must be a non-negative integer, got {seed!r}")
    return ConfigFile(path, data.get("scenario"), data.get("params", {}), data.get("grid"),
                      seed, data.get("seeds"), data.get("out"),
                      {key: data[key] for key in GROUP_TABLES if key in data})


def _is_optional(tp: Any) -> bool:
    return type(None) in typing.get_args(tp)


def _fits(value: Any, tp: Any) -> bool:
    """Whether the TOML ``value`` may go into a field of type ``tp``."""
    kinds = {a for a in (typing.get_args(tp) or (tp,)) if a is not type(None)}
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int):
        return bool(kinds & {int, float})
    if isinstance(value, float):
        return float in kinds or (int in kinds and value.is_integer())
    if isinstance(value, str):
        return str in kinds or _is_optional(tp)  # "none" for an optional field
    return False


def _as_text(value: Any) -> str:
    """The ``--set`` text of a TOML scalar (``repr`` keeps every bit of a float)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def toml_value(cls: type, name: str, value: Any) -> Any:
    """The TOML ``value`` of field ``name`` of config class ``cls``, typed exactly as
    ``--set name=...`` would type it; a one-line error naming the field otherwise."""
    types_ = field_types(cls)
    name = current_name(cls, name)
    if group_key(cls, name) is not None:  # typed by the config (its settings class)
        if isinstance(value, bool | int | float | str):
            return value
        raise ValueError(f"{name}: must be a number, a string or true / false, got "
                         f"{value!r}")
    if name in group_fields(cls).values() and name not in types_:  # e.g. from Python
        return value
    if name not in types_:
        return parse_value(cls, name, "")  # raises the --set error for an unknown name
    tp = types_[name]
    if _fits(value, tp):
        typed = parse_value(cls, name, _as_text(value))
        text_field = tp is str or str in typing.get_args(tp)
        if not isinstance(value, str) or text_field or typed is None:
            return typed
    allowed = next(r["allowed"] for r in describe_fields(cls) if r["name"] == name)
    raise ValueError(f"{name}: must be {allowed}, got {value!r}")


@contextlib.contextmanager
def _errors_name(path: Path) -> Iterator[None]:
    """Prefix a one-line ``ValueError`` raised inside with the file it comes from."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def toml_params(cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """A ``[params]`` table, typed field by field with :func:`toml_value`."""
    return {name: toml_value(cls, name, value)
            for name, value in rename_keys(cls, params).items()}


def toml_grid(cls: type, grid: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A ``[grid]`` table of non-empty lists, each value typed with :func:`toml_value`."""
    out = {}
    for name, values in rename_keys(cls, grid).items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid: {name} must be a non-empty list of values, got {values!r}")
        out[name] = [toml_value(cls, name, value) for value in values]
    return out


def _file_params(cls: type, file: ConfigFile | None) -> dict[str, Any]:
    if file is None:
        return {}
    with _errors_name(file.path):
        params = toml_params(cls, file.params)
        for prefix, table in file.groups.items():
            if prefix not in group_fields(cls):
                raise ValueError(f"[{prefix}]: scenario "
                                 f"{getattr(cls, 'SCENARIO', cls.__name__)} has no "
                                 f"{prefix} settings")
            for name, value in table.items():
                key = f"{prefix}.{name}"
                if key in params:
                    raise ValueError(f"{key}: given in [params] and in [{prefix}]")
                params[key] = toml_value(cls, key, value)
        return params


def scenario_name(given: str | None, file: ConfigFile | None, default: str | None) -> str:
    """The scenario named on the command line, in the file, or ``default``; a one-line error
    if the command line and the file disagree or neither names one."""
    in_file = file.scenario if file is not None else None
    if given is not None and in_file is not None and given != in_file:
        raise ValueError(f"scenario: {given!r} on the command line but {in_file!r} in "
                         f"{file.path}")  # type: ignore[union-attr]
    if given is None and in_file is not None:
        with _errors_name(file.path):  # type: ignore[union-attr]
            get_scenario(in_file)  # a one-line error for an unknown name
    name = given or in_file or default
    if name is None:
        raise ValueError("scenario: name one on the command line or with scenario = \"...\" "
                         "in the --config file")
    get_scenario(name)
    return name


@dataclass(frozen=True)
class RunRequest:
    """What ``bflnet run`` runs: the scenario, typed parameter overrides, seed (whether
    the command line or the file gave it: ``seed_given``) and output."""

    scenario: str
    overrides: Mapping[str, Any]
    seed: int
    out: str | None
    seed_given: bool = True


def run_request(name: str | None, config: str | Path | None, sets: Sequence[str],
                seed: int | None, out: str | None,
                default_scenario: str | None = None) -> RunRequest:
    """Merge a run's config file (if any) with its command line; the command line wins.
    The scenario named by neither is ``default_scenario`` (else :data:`DEFAULT_SCENARIO`)."""
    file = read_config_file(config, RUN_KEYS) if config is not None else None
    scenario = scenario_name(name, file, default_scenario or DEFAULT_SCENARIO)
    cls = get_scenario(scenario).config_cls
    overrides = {**_file_params(cls, file), **parse_overrides(cls, sets)}
    if seed is None and file is not None:
        seed = file.seed
    out = out if out is not None else (file.out if file else None)
    return RunRequest(scenario, overrides, 0 if seed is None else seed, out, seed is not None)


@dataclass(frozen=True)
class SweepRequest:
    """What ``bflnet sweep`` runs: the scenario, grid, fixed parameters, seeds and output."""

    scenario: str
    grid: Mapping[str, list[Any]]
    fixed: Mapping[str, Any]
    seeds: Any
    out: str


def sweep_request(name: str | None, config: str | Path | None, grid: Sequence[str],
                  sets: Sequence[str], seeds: int | None, out: str | None,
                  default_scenario: str | None = None) -> SweepRequest:
    """Merge a sweep's config file (if any) with its command line: ``--set K=..`` replaces
    the file's ``K`` in ``[params]`` or ``[grid]``, ``--grid K=..`` likewise. The scenario
    named by neither is ``default_scenario`` (none: an error)."""
    from bflnet.runs.sweep import parse_grid

    file = read_config_file(config, SWEEP_KEYS) if config is not None else None
    scenario = scenario_name(name, file, default_scenario)
    cls = get_scenario(scenario).config_cls
    cli_fixed = parse_overrides(cls, sets)
    cli_grid = parse_grid(cls, grid)
    file_fixed = _file_params(cls, file)
    file_grid: dict[str, list[Any]] = {}
    if file is not None:
        with _errors_name(file.path):
            file_grid = toml_grid(cls, file.grid or {})
    fixed = {k: v for k, v in file_fixed.items() if k not in cli_grid} | cli_fixed
    swept = {k: v for k, v in file_grid.items() if k not in cli_fixed} | cli_grid
    seeds = seeds if seeds is not None else (
        file.seeds if file and file.seeds is not None else 1)
    out = out if out is not None else (file.out if file else None)
    if out is None:
        raise ValueError("--out: give a directory or FILE.parquet (or out = \"...\" in the "
                         "--config file)")
    return SweepRequest(scenario, swept, fixed, seeds, out)
