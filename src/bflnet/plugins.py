"""Plugins: scenarios and learners that other installed distributions register through
Python entry points.

A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."bflnet.scenarios"]
    my-scenario = "my_package.scenario"          # a module that calls bflnet's @register
    [project.entry-points."bflnet.learners"]
    my-learner = "my_package.learner:make"       # make(K, points_per_agent, rng) -> learner

``bflnet list`` shows them without importing them (the entry points are read from the
installed distributions' ``entry_points.txt`` files, a few milliseconds); a plugin is
imported only when it is run or described. A plugin that reuses a name that is taken
gives a one-line warning naming it.

Every call into a plugin, its import included, runs behind a fence
(:mod:`bflnet.runtime.fence`): a failure, ``sys.exit``, ``KeyboardInterrupt`` or a value
of the wrong kind is one :class:`~bflnet.validation.errors.PluginError` naming the plugin,
the hook and what it raised or returned (the command line's exit code 4). The scenarios'
fence is :mod:`bflnet.runs.plugin_scenario`, the learners' :mod:`bflnet.learners.fenced`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
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

    @property
    def kind(self) -> str:
        """``scenario`` or ``learner``."""
        return "scenario" if self.group == SCENARIOS else "learner"

    def who(self) -> str:
        """How errors from its hooks name it: ``plugin scenario 'name' (value, from dist)``."""
        return f"plugin {self.kind} {self.label()}"

    def load(self) -> object:
        """Import the module and return the attribute (or the module), behind the fence
        (:mod:`bflnet.runtime.fence`: anything raised there, ``sys.exit`` included, is a
        one-line :class:`PluginError` naming the plugin). An import that takes more than
        :data:`LOADING_NOTICE_S` seconds is named on stderr while it goes on."""
        from importlib import import_module

        from bflnet.runtime.fence import fenced

        module, _, attribute = self.value.partition(":")
        with _notice(f"loading {self.who()} ...", LOADING_NOTICE_S), \
                fenced(self.who(), "import"):
            obj: object = import_module(module.strip())
            for part in attribute.strip().split(".") if attribute.strip() else ():
                obj = getattr(obj, part)
        return obj


#: Seconds a plugin's import may take before stderr says which plugin is loading.
LOADING_NOTICE_S = 0.5


@contextlib.contextmanager
def _notice(text: str, after_s: float) -> Iterator[None]:
    """``bflnet: TEXT`` on stderr if the block lasts more than ``after_s`` seconds (a plugin
    that hangs at import can then be told apart, and stopped with Ctrl-C)."""
    import threading

    timer = threading.Timer(after_s, lambda: print(f"bflnet: {text}", file=sys.stderr,
                                                   flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


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
