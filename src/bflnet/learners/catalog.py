"""Named learners that the ``custom-learner`` scenario runs: the built-in ones and those
other distributions register through the ``bflnet.learners`` entry points
(:mod:`bflnet.plugins`).

A learner entry is a factory ``make(K, points_per_agent, rng) -> GlobalStateLearner``: it
builds the learner and its agents' data (agents ``0 .. K-1``) from ``rng``. A learner with
hyper-parameters declares them as a frozen dataclass of
:func:`~bflnet.validation.params.param` fields and takes them as a fourth parameter
named ``settings``, annotated with that class::

    @dataclass(frozen=True)
    class Settings:
        noise_var: float = param(1.0, "variance of the noise", gt=0)

        def __post_init__(self) -> None:
            validate(self)

    def make(K: int, points_per_agent: int, rng: np.random.Generator,
             settings: Settings) -> GlobalStateLearner: ...

``custom-learner`` then takes them as ``learner.noise_var`` (``--set``, ``--grid``, a
``[learner]`` TOML table), ``bflnet describe custom-learner`` lists them and result files
record them. A factory without a ``settings`` parameter has no settings.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

#: Built-in learners: name -> ("module:factory", "module:settings class" or "",
#: description). The settings class is named here so that ``bflnet describe`` finds it
#: without importing the learner (numpy).
BUILT_IN: dict[str, tuple[str, str, str]] = {
    "gaussian-mean": ("bflnet.learners.conjugate.gaussian_mean:make",
                      "bflnet.learners.hyper:GaussianMeanParams",
                      "conjugate posterior of a scalar mean from Gaussian data (exact; "
                      "additive state)"),
}
#: What a plugin's learner entry point must be, as its errors say.
FACTORY_CONTRACT = ("a factory make(K, points_per_agent, rng) or make(K, points_per_agent, "
                    "rng, settings: SettingsClass)")


def _plugins() -> dict[str, Any]:
    from bflnet import plugins

    return plugins.by_name(plugins.LEARNERS, frozenset(BUILT_IN))


def learner_names() -> list[str]:
    """The built-in and plugin learners' names, sorted (plugins are not imported)."""
    return sorted(set(BUILT_IN) | set(_plugins()))


def learner_lines() -> list[str]:
    """One line per learner for ``bflnet list``."""
    plugins = _plugins()
    return [f"  {name}: {BUILT_IN[name][2]}" if name in BUILT_IN else
            f"  {name}: plugin from {plugins[name].dist} ({plugins[name].value})"
            for name in learner_names()]


def _plugin(name: str) -> Any:
    plugin = _plugins().get(name)
    if plugin is None:
        raise ValueError(f"learner: unknown learner {name!r}; known: "
                         f"{', '.join(learner_names())}")
    return plugin


def _imported(path: str) -> Any:
    from importlib import import_module

    module, attribute = path.split(":")
    return getattr(import_module(module), attribute)


def learner_factory(name: str) -> Callable[..., Any]:
    """The factory of learner ``name`` (a plugin is imported here, behind the fence); a
    one-line error for an unknown name, a ``PluginError`` for a plugin that fails to
    load or is no factory."""
    if name in BUILT_IN:
        return _imported(BUILT_IN[name][0])
    from bflnet.validation.errors import PluginError

    plugin = _plugin(name)
    factory = plugin.load()
    if not callable(factory):
        raise PluginError(f"{plugin.who()}: must be {FACTORY_CONTRACT}, got "
                          f"{type(factory).__name__}")
    return factory


def _annotation(who: str, factory: Callable[..., Any]) -> Any:
    """The class that annotates ``factory``'s ``settings`` parameter; ``None`` if it has
    no such parameter; a ``PluginError`` naming ``who`` if the annotation is missing or
    does not resolve."""
    from bflnet.validation.errors import PluginError

    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature: the old contract
        return None
    parameter = parameters.get("settings")
    if parameter is None:
        return None
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        raise PluginError(f"{who}: its factory's settings parameter has no annotation; "
                          f"annotate it with the settings class (settings: Settings)")
    if isinstance(annotation, str):  # from __future__ import annotations
        namespace = getattr(inspect.unwrap(factory), "__globals__", {})
        try:
            annotation = eval(annotation, dict(namespace))  # its module's own names
        except Exception as exc:
            raise PluginError(f"{who}: the annotation {annotation!r} of its factory's "
                              f"settings parameter does not resolve "
                              f"({type(exc).__name__}: {exc})") from None
    return annotation


def settings_class(name: str) -> type | None:
    """Learner ``name``'s settings class (a frozen dataclass of ``param`` fields), or
    ``None`` if it has none; a plugin's is the annotation of its factory's ``settings``
    parameter (imported behind the fence; a ``PluginError`` naming it if that is no such
    class)."""
    if name in BUILT_IN:
        path = BUILT_IN[name][1]
        return _imported(path) if path else None
    from bflnet.runtime.fence import fenced
    from bflnet.validation.errors import PluginError
    from bflnet.validation.params import base_type, settings_class_problem

    who = _plugin(name).who()
    factory = learner_factory(name)
    with fenced(who, "settings class"):
        annotation = _annotation(who, factory)
        if annotation is None:
            return None
        cls = base_type(annotation)[0]  # Settings | None: Settings
        problem = settings_class_problem(cls) if isinstance(cls, type) else \
            f"{cls!r} is not a class"
    if problem is not None:
        raise PluginError(f"{who}: its settings class: {problem}; it must be a frozen "
                          f"dataclass of bflnet.validation.params.param fields")
    return cls


def settings_classes() -> dict[str, type | str | None]:
    """Every learner's settings class (``None``: none), or for a plugin that cannot be
    loaded the one-line reason (``bflnet describe custom-learner`` lists them all)."""
    from bflnet.validation.errors import PluginError

    out: dict[str, type | str | None] = {}
    for name in learner_names():
        try:
            out[name] = settings_class(name)
        except PluginError as exc:
            out[name] = str(exc)
    return out


def make_settings(name: str, values: Mapping[str, Any]) -> Any:
    """Learner ``name``'s settings from ``values`` (typed); a plugin's class is built
    behind the fence (its ``ValueError`` is the user's value refused)."""
    cls = settings_class(name)
    if cls is None:
        raise ValueError(f"learner {name!r} has no settings")
    if name in BUILT_IN:
        return cls(**values)
    from bflnet.runtime.fence import fenced

    with fenced(_plugin(name).who(), f"settings class {cls.__name__}",
                passing=(ValueError,)):
        return cls(**values)


def make_learner(name: str, K: int, points_per_agent: int, rng: Any, *,
                 settings: Any = None, reserved: frozenset[str] = frozenset()) -> Any:
    """Learner ``name`` for ``K`` agents with its ``settings`` (an instance of
    :func:`settings_class`; ``None``: its defaults; a factory without settings gets
    none). A built-in one as its factory makes it; a plugin's behind the fence
    (:func:`bflnet.learners.fenced.fenced_learner`: its metrics may not take the
    ``reserved`` names, the run's own columns), a ``PluginError`` naming it if its
    factory fails or returns something other than a :class:`GlobalStateLearner`."""
    from bflnet.learners.base import GlobalStateLearner

    factory = learner_factory(name)
    cls = settings_class(name)
    if cls is not None and settings is None:
        settings = make_settings(name, {})
    elif cls is None and settings is not None:
        raise ValueError(f"learner {name!r} has no settings")
    args = (K, points_per_agent, rng) if cls is None else (K, points_per_agent, rng, settings)
    if name in BUILT_IN:
        return factory(*args)
    from bflnet.learners.fenced import fenced_learner
    from bflnet.runtime.fence import call, refusal

    who = _plugin(name).who()
    learner = call(who, "factory", factory, *args)
    if not isinstance(learner, GlobalStateLearner):
        raise refusal(who, "factory", learner, "a bflnet.learners.base.GlobalStateLearner")
    return fenced_learner(learner, who, reserved)
