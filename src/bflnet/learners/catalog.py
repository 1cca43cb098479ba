"""Named learners that the ``custom-learner`` scenario runs: the built-in ones and those
other distributions register through the ``bflnet.learners`` entry points
(:mod:`bflnet.plugins`).

A learner entry is a factory ``make(K, points_per_agent, rng) -> GlobalStateLearner``: it
builds the learner and its agents' data (agents ``0 .. K-1``) from ``rng``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Built-in learners: name -> ("module:factory", description).
BUILT_IN: dict[str, tuple[str, str]] = {
    "gaussian-mean": ("bflnet.learners.conjugate.gaussian_mean:make",
                      "conjugate posterior of a scalar mean from Gaussian data (exact; "
                      "additive state)"),
}


def _plugins() -> dict[str, Any]:
    from bflnet import plugins

    return plugins.by_name(plugins.LEARNERS, frozenset(BUILT_IN))


def learner_names() -> list[str]:
    """The built-in and plugin learners' names, sorted (plugins are not imported)."""
    return sorted(set(BUILT_IN) | set(_plugins()))


def learner_lines() -> list[str]:
    """One line per learner for ``bflnet list``."""
    plugins = _plugins()
    return [f"  {name}: {BUILT_IN[name][1]}" if name in BUILT_IN else
            f"  {name}: plugin from {plugins[name].dist} ({plugins[name].value})"
            for name in learner_names()]


def _plugin(name: str) -> Any:
    plugin = _plugins().get(name)
    if plugin is None:
        raise ValueError(f"learner: unknown learner {name!r}; known: "
                         f"{', '.join(learner_names())}")
    return plugin


def learner_factory(name: str) -> Callable[..., Any]:
    """The factory of learner ``name`` (a plugin is imported here, behind the fence); a
    one-line error for an unknown name, a ``PluginError`` for a plugin that fails to
    load or is no factory."""
    if name in BUILT_IN:
        from importlib import import_module

        module, attribute = BUILT_IN[name][0].split(":")
        return getattr(import_module(module), attribute)
    from bflnet.validation.errors import PluginError

    plugin = _plugin(name)
    factory = plugin.load()
    if not callable(factory):
        raise PluginError(f"{plugin.who()}: must be a factory make(K, points_per_agent, rng), "
                          f"got {type(factory).__name__}")
    return factory


def make_learner(name: str, K: int, points_per_agent: int, rng: Any, *,
                 reserved: frozenset[str] = frozenset()) -> Any:
    """Learner ``name`` for ``K`` agents. A built-in one as its factory makes it; a
    plugin's behind the fence (:func:`bflnet.learners.fenced.fenced_learner`: its
    metrics may not take the ``reserved`` names, the run's own columns), a
    ``PluginError`` naming it if its factory fails or returns something other than a
    :class:`GlobalStateLearner`."""
    from bflnet.learners.base import GlobalStateLearner

    factory = learner_factory(name)
    if name in BUILT_IN:
        return factory(K, points_per_agent, rng)
    from bflnet.learners.fenced import fenced_learner
    from bflnet.runtime.fence import call, refusal

    who = _plugin(name).who()
    learner = call(who, "factory", factory, K, points_per_agent, rng)
    if not isinstance(learner, GlobalStateLearner):
        raise refusal(who, "factory", learner, "a bflnet.learners.base.GlobalStateLearner")
    return fenced_learner(learner, who, reserved)
