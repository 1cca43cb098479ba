"""The settings of a run that loads a saved state (``--load-state DIR``): the saved
state's config and seed, changed only where the load may change them.

A load repeats nothing: every setting and the seed come from the saved state's
``state.json``. The settings of the request and after it (the scenario's ``state_free``)
may be given freely (``--set``, a TOML file's ``[params]``, a sweep's grid, a keyword of
``bflnet.run``); a setting of the learning given again must equal the saved one, else a
one-line ``ValueError`` names it. The run then checks the whole directory as before
(:meth:`~bflnet.runs.states.handle.States.verify`).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bflnet.runs.states.directory import read_state_record, state_path
from bflnet.runs.states.schema import FORMAT, check_record
from bflnet.validation.params import field_types
from bflnet.validation.renames import rename_keys

#: Free settings listed by name in an error; more are referred to ``bflnet describe``.
LISTED = 10


@dataclass(frozen=True)
class SavedSettings:
    """What the state directory ``path`` was saved with: ``scenario``, ``seed`` and
    ``config`` (checked as a config of the scenario, current field names), and the
    settings a load may change (``free``)."""

    path: Path
    scenario: str
    seed: int
    config: Mapping[str, Any]
    free: tuple[str, ...]
    config_cls: type

    def seed_for(self, seed: int | None) -> int:
        """The saved seed; ``seed`` (given by the user, ``None``: not given) must be it."""
        if seed is not None and seed != self.seed:
            raise ValueError(f"seed: the state in {str(self.path)!r} was saved with seed "
                             f"{self.seed}; a load runs with that seed (omit the seed, or "
                             f"give --seed {self.seed})")
        return self.seed

    def overrides(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The saved config with ``given`` (typed values, old names allowed) applied; a
        one-line ``ValueError`` naming the first setting of the learning that ``given``
        changes."""
        given = rename_keys(self.config_cls, given or {})
        types_ = field_types(self.config_cls)
        for name, value in given.items():
            if name in self.free or name not in types_:  # unknown: the config's own error
                continue
            saved = self.config[name]
            if not _same(types_[name], saved, value):
                raise ValueError(
                    f"{name}: the state in {str(self.path)!r} was saved with "
                    f"{name}={_shown(saved)}, this run sets {name}={_shown(value)}; a load "
                    f"takes the learning settings from the saved state (omit {name}, or save "
                    f"a new state to learn with it) and may change {self._free_text()}")
        return {**self.config, **given}

    def _free_text(self) -> str:
        if len(self.free) <= LISTED:
            return f"only {', '.join(self.free)}"
        return f"only the {len(self.free)} settings bflnet describe {self.scenario} lists"


def saved_scenario(path: str | Path) -> str | None:
    """The scenario that saved the state in ``path`` (``None``: the file does not say;
    :func:`saved_settings` then says what is wrong). ``state.json``'s checksum is
    verified."""
    record = read_state_record(path)
    name = record.get("scenario") if isinstance(record, dict) else None
    return name if isinstance(name, str) and name else None


def saved_settings(path: str | Path, scenario: str, config_cls: type,
                   free: tuple[str, ...]) -> SavedSettings:
    """The settings the state in ``path`` was saved with, for a load by ``scenario``
    (config class ``config_cls``, whose ``free`` settings a load may change): its
    ``state.json`` read (checksum verified) and checked but for its runs; a one-line
    ``ValueError`` if it is not a state of ``scenario``."""
    path = state_path(path, "--load-state")
    record = read_state_record(path)
    name = record.get("scenario") if isinstance(record, dict) else None
    if isinstance(record, dict) and record.get("format") == FORMAT and name != scenario:
        raise ValueError(f"--load-state: state.json: scenario: the state was saved by "
                         f"scenario {_shown(name)}, not {scenario!r}")
    record = check_record(record, config_cls)
    return SavedSettings(path, scenario, record["seed"], dict(record["config"]), free,
                         config_cls)


def _is_float_field(tp: Any) -> bool:
    return tp is float or float in typing.get_args(tp)


def _same(tp: Any, saved: Any, value: Any) -> bool:
    """Whether ``value`` is the ``saved`` value of a field of type ``tp`` (an integer is
    the same number in a float field)."""
    numbers = all(type(v) in (int, float) for v in (saved, value))
    if _is_float_field(tp) and numbers:
        return float(saved) == float(value)
    return type(saved) is type(value) and saved == value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
