"""Plugins: scenarios and learners that other installed distributions register through
Python entry points.

A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."bflnet.scenarios"]
    my-scenario = "my_package.scenario"          # a module that calls bflnet's @register
    [project.entry-points."bflnet.learners"]
    my-learner = "my_package.learner:make"       # make(K, points_per_agent, rng) -> learner

``bflnet list`` shows them without importing them (the entry points are read from the
installed distributions' ``entry_points.txt`` files, a few milliseconds); a plugin is
imported only when it is run or described. A plugin that fails to import, registers the
wrong kind of object or reuses a name that is taken gives a one-line error or warning
naming it.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass

SCENARIOS = "bflnet.scenarios"
LEARNERS = "bflnet.learners"


@dataclass(frozen=True)
class Plugin:
    """One entry point: its ``name`` in ``group``, ``value`` (``module`` or
    ``module:attribute``) and the distribution that declares it."""

    group: str
    name: str
    value: str
    dist: str

    def label(self) -> str:
        """How errors name it: ``'name' (value, from dist)``."""
        return f"{self.name!r} ({self.value}, from {self.dist})"

    def load(self) -> object:
        """Import the module and return the attribute (or the module); a one-line
        ``ValueError`` naming the plugin if that fails."""
        from importlib import import_module

        module, _, attribute = self.value.partition(":")
        kind = "scenario" if self.group == SCENARIOS else "learner"
        try:
            obj: object = import_module(module.strip())
            for part in attribute.strip().split(".") if attribute.strip() else ():
                obj = getattr(obj, part)
        except Exception as exc:  # any failure of a third party's import is reported
            message = " ".join(str(exc).split())
            raise ValueError(f"plugin {kind} {self.label()} failed to load: "
                             f"{type(exc).__name__}: {message}") from None
        return obj


def _dist_name(folder: str) -> str:
    stem = folder.rsplit(".", 1)[0]  # foo-1.0.dist-info -> foo-1.0
    return stem.split("-")[0]


def _parse(text: str, dist: str, wanted: tuple[str, ...]) -> list[Plugin]:
    found, group = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        if group in wanted and "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
            if name and value:
                found.append(Plugin(group, name, value, dist))
    return found


@functools.cache
def _scan(path: tuple[str, ...]) -> tuple[Plugin, ...]:
    """Every ``bflnet.*`` entry point of the distributions on ``path`` (first one of a
    distribution found on the path wins, as for imports)."""
    plugins: list[Plugin] = []
    seen: set[str] = set()
    for folder in path:
        try:
            entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            dist = _dist_name(entry.name)
            key = dist.lower().replace("_", "-")
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read(1 << 20)
            except (OSError, UnicodeDecodeError):
                continue
            if "bflnet." in text:
                plugins.extend(_parse(text, dist, (SCENARIOS, LEARNERS)))
    return tuple(plugins)


def plugins(group: str) -> list[Plugin]:
    """The entry points of ``group`` on the current ``sys.path``, in path order."""
    return [p for p in _scan(tuple(sys.path)) if p.group == group]


_WARNED: set[str] = set()


def warn_once(message: str) -> None:
    """A one-line warning on stderr, once per process."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"bflnet: warning: {message}", file=sys.stderr)


def by_name(group: str, taken: set[str] | frozenset[str]) -> dict[str, Plugin]:
    """``group``'s plugins by name; one that reuses a name in ``taken`` (the built-ins) or
    another plugin's name is left out with a one-line warning naming it."""
    kind = "scenario" if group == SCENARIOS else "learner"
    out: dict[str, Plugin] = {}
    for plugin in plugins(group):
        if plugin.name in taken:
            warn_once(f"plugin {kind} {plugin.label()} is ignored: a built-in {kind} has "
                      f"that name")
        elif plugin.name in out:
            warn_once(f"plugin {kind} {plugin.label()} is ignored: {kind} {plugin.name!r} "
                      f"is already registered by {out[plugin.name].dist}")
        else:
            out[plugin.name] = plugin
    return out
