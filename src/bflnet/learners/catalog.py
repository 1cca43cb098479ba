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


def learner_factory(name: str) -> Callable[..., Any]:
    """The factory of learner ``name`` (a plugin is imported here); a one-line error for an
    unknown name or a plugin that fails to load."""
    if name in BUILT_IN:
        from importlib import import_module

        module, attribute = BUILT_IN[name][0].split(":")
        return getattr(import_module(module), attribute)
    plugin = _plugins().get(name)
    if plugin is None:
        raise ValueError(f"learner: unknown learner {name!r}; known: "
                         f"{', '.join(learner_names())}")
    factory = plugin.load()
    if not callable(factory):
        raise ValueError(f"plugin learner {plugin.label()}: must be a factory "
                         f"make(K, points_per_agent, rng), got {type(factory).__name__}")
    return factory


def make_learner(name: str, K: int, points_per_agent: int, rng: Any) -> Any:
    """Learner ``name`` for ``K`` agents; a one-line error naming it if its factory fails
    or returns something other than a :class:`GlobalStateLearner`."""
    from bflnet.learners.base import GlobalStateLearner

    factory = learner_factory(name)
    try:
        learner = factory(K, points_per_agent, rng)
    except Exception as exc:
        raise ValueError(f"learner {name!r}: its factory failed: {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}") from None
    if not isinstance(learner, GlobalStateLearner):
        raise ValueError(f"learner {name!r}: its factory must return a GlobalStateLearner, "
                         f"got {type(learner).__name__}")
    return learner
