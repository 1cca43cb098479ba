"""The registry of named scenarios: a config class and a run function per name."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bflnet.runs.config import make_config
from bflnet.runs.resources import Footprint, check_footprint
from bflnet.runtime.fence import surfaced
from bflnet.validation.errors import PluginError
from bflnet.validation.params import shown
from bflnet.validation.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from bflnet.runs.schema import Schema
    from bflnet.runs.states import SavedSettings

RunFunction = Callable[..., "pd.DataFrame"]
#: A scenario's default figure of its result table.
PlotFunction = Callable[["pd.DataFrame"], "Figure"]

#: The modules that register the scenarios, imported on the first look-up (they keep
#: their heavy imports inside ``run``, so that ``bflnet list`` starts fast).
SCENARIO_MODULES = (
    "cdbfl.d2d_medium", "cdbfl.local_steps", "cdbfl.shift", "custom.custom_learner",
    "dsvgd.async_fedavg", "dsvgd.forget_svgd", "dsvgd.sparsifiers", "dsvgd.vs_fedavg",
    "emtdamp.compare", "emtdamp.emtdamp", "gfvl.beta_bernoulli", "gfvl.beta_exponential",
    "gfvl.churn", "gfvl.unlearning", "gfvl.unlearning_latency",
    "gossip.consensus_averaging", "gossip.mobile_gossip", "ota.ota_langevin",
    "ota.wflmc_gaussian", "studies.cover_time",
)

#: The scenario ``bflnet run`` uses when no name is given.
DEFAULT_SCENARIO = "gfvl-beta-bernoulli"


@dataclass(frozen=True)
class Scenario:
    """A named experiment: ``run(config, seed=..., progress=...)`` returns a tidy DataFrame;
    ``plot(frame)``, if the scenario has one, draws its default figure of that frame."""

    name: str
    config_cls: type
    run_fn: RunFunction
    description: str
    plot: PlotFunction | None = None
    #: Data sets (``bflnet.data.ensure.known()`` names) the scenario reads.
    datasets: tuple[str, ...] = ()
    #: What its output columns mean (``bflnet describe NAME --columns``).
    columns: Schema | None = None
    #: Config fields that may differ between a run that saved states and one that loads
    #: them (``None``: the scenario cannot save or load states).
    state_free: tuple[str, ...] | None = None
    #: Which agents the parameter server schedules each iteration, for the scenarios
    #: that run one (``bflnet describe`` shows it).
    server_schedule: str | None = None
    #: The plugin that registered it (how its errors name it), whose code runs behind the
    #: fence (:mod:`bflnet.runs.plugin_scenario`); ``None`` for bflnet's own.
    plugin: str | None = None

    def config(self, overrides: Mapping[str, Any] | None = None) -> Any:
        """The validated config with ``overrides`` applied."""
        if self.plugin is not None:
            from bflnet.runs.plugin_scenario import fenced_config

            return fenced_config(self, overrides)
        return make_config(self.config_cls, overrides)

    def check_resources(self, config: Any) -> Footprint:
        """The config's footprint; a one-line ``ValueError`` naming the fields that make it
        too large for this process (memory) or for one run (set-up work), before anything
        is allocated."""
        if self.plugin is not None:
            from bflnet.runs.plugin_scenario import fenced_footprint

            footprint = fenced_footprint(self, config)
        else:
            footprint = config.footprint()
        check_footprint(footprint)
        return footprint

    def _check_states(self, option: str) -> None:
        """A one-line ``ValueError`` if the scenario cannot save or load states."""
        if self.state_free is None:
            raise ValueError(f"{option}: scenario {self.name!r} cannot save or load states; "
                             f"supported: {', '.join(state_scenarios())}")

    def saved_settings(self, load_state: str | Path) -> SavedSettings:
        """The settings the state in ``load_state`` was saved with (its ``state.json``
        verified and checked as this scenario's), from which a loading run takes its
        config and seed (:mod:`bflnet.runs.states.loading`)."""
        from bflnet.runs.states import saved_settings

        self._check_states("--load-state")
        return saved_settings(load_state, self.name, self.config_cls,
                              self.state_free or ())

    def load_config(self, load_state: str | Path, overrides: Mapping[str, Any] | None = None,
                    seed: int | None = None) -> tuple[Any, int]:
        """The config and seed of a run that loads ``load_state``: the saved config with
        ``overrides`` applied (a setting of the learning that differs from the saved one
        is a one-line ``ValueError`` naming it) and the saved seed (``seed``, if given,
        must be it)."""
        saved = self.saved_settings(load_state)
        return self.config(saved.overrides(overrides)), saved.seed_for(seed)

    def run(self, config: Any = None, *, seed: int = 0, progress: bool = False,
            save_state: str | Path | None = None, load_state: str | Path | None = None,
            force: bool = False) -> pd.DataFrame:
        """Run with ``config`` (defaults if ``None``) and ``seed``, once its footprint has
        been checked (:meth:`check_resources`); a plugin's error inside (a plugin
        learner's, reported by the protocol that called it) leaves as that
        :class:`PluginError`; ``save_state``: also write the learnt states
        into that directory (``force``: over a saved one); ``load_state``: start from the
        states saved there (see :mod:`bflnet.runs.states`). Both are checked before
        the run."""
        if seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed}")
        config = self.config() if config is None else config
        footprint = self.check_resources(config)
        from bflnet.protocols.progress import setup_status  # lazily: tqdm

        if save_state is None and load_state is None:
            with setup_status(self.name, footprint.summary(), progress), surfaced():
                return self.run_fn(config, seed=seed, progress=progress)
        from bflnet.runs import states as st
        from bflnet.runs.provenance import canonical_config, run_record

        if save_state is not None:
            save_state = st.state_path(save_state, "--save-state")
        if load_state is not None:
            load_state = st.state_path(load_state, "--load-state")
        self._check_states("--save-state" if save_state is not None else "--load-state")
        fields = json.loads(json.dumps(canonical_config(config)))
        handle = st.States(saving=save_state is not None)
        if save_state is not None:
            st.check_save_dir(save_state, force=force)
        try:
            if load_state is not None:
                # read whole and verified before anything runs (or is saved over it)
                handle.source = st.read_state_dir(load_state)
                handle.source.record = st.check_record(handle.source.record,
                                                       self.config_cls)
                st.check_compatible(handle.source.record, self.name, fields, seed,
                                    self.state_free)
            with setup_status(self.name, footprint.summary(), progress), surfaced():
                frame = self.run_fn(config, seed=seed, progress=progress, states=handle)
        finally:
            handle.close()
        if save_state is not None:
            st.write_state_dir(save_state, run_record(self.name, config, seed), handle)
        return frame


_REGISTRY: dict[str, Scenario] = {}


def register(name: str, config: type, description: str,
             plot: PlotFunction | None = None,
             datasets: tuple[str, ...] = (),
             columns: Schema | None = None, state_free: tuple[str, ...] | None = None,
             server_schedule: str | None = None) -> Callable[[RunFunction], RunFunction]:
    """Decorator that registers a scenario's run function (and optional default ``plot``,
    the data sets it reads, its output columns and, for a scenario that saves and loads
    states through a ``states=`` argument, the config fields a load may change; for one
    that runs a parameter server, which agents it schedules) under ``name``."""

    def wrap(fn: RunFunction) -> RunFunction:
        if name in _REGISTRY:
            raise ValueError(f"scenario {name!r} is registered twice")
        _REGISTRY[name] = Scenario(name, config, fn, description, plot, tuple(datasets),
                                   columns, state_free, server_schedule)
        return fn

    return wrap


_BUILT_IN: set[str] = set()


@contextlib.contextmanager
def _registering() -> Iterator[None]:
    """Imports of modules that register scenarios. When one fails (Ctrl-C in its middle,
    say), Python forgets the module and a retry runs it again from the start: the scenarios
    it registered are forgotten too, else the retry would find them registered twice (or
    find the half-run module's run function). Those that modules still loaded registered
    (one the failed module imported, say) are kept."""
    before = set(_REGISTRY)
    try:
        yield
    except BaseException:
        for name in set(_REGISTRY) - before:
            if not _of_a_loaded_module(_REGISTRY[name].run_fn):
                del _REGISTRY[name]
        raise


def _of_a_loaded_module(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` was defined by a module that is loaded (anything but a function: yes)."""
    namespace = getattr(fn, "__globals__", None)
    if not isinstance(namespace, dict):
        return True
    module = sys.modules.get(namespace.get("__name__", ""))
    return module is not None and vars(module) is namespace


def _load_scenarios() -> None:
    if _BUILT_IN:
        return
    for module in SCENARIO_MODULES:
        with _registering():
            import_module(f"bflnet.scenarios.{module}")
    _BUILT_IN.update(_REGISTRY)  # and any registered from Python before the first look-up


def plugin_scenarios() -> dict[str, Any]:
    """The scenarios other distributions register through the ``bflnet.scenarios`` entry
    points (:mod:`bflnet.plugins`), by name, not imported; a name clash is a warning."""
    from bflnet import plugins

    _load_scenarios()
    return plugins.by_name(plugins.SCENARIOS, frozenset(_BUILT_IN))


#: Plugin scenarios refused once imported: name -> the error (a retry gets the same one).
_REFUSED: dict[str, str] = {}


def _load_plugin(name: str) -> None:
    """Import the plugin that registers scenario ``name`` and put what it registers behind
    the fence (:mod:`bflnet.runs.plugin_scenario`); a one-line :class:`PluginError` naming
    it if it fails or registers something else."""
    if name in _REFUSED:
        raise PluginError(_REFUSED[name])
    plugins = plugin_scenarios()
    plugin = plugins.get(name)
    if plugin is None:
        return
    before = set(_REGISTRY)
    with _registering():
        obj = plugin.load()
    if name not in _REGISTRY:  # not registered with @register when imported
        if not isinstance(obj, Scenario):
            raise PluginError(
                f"{plugin.who()}: registers no scenario {name!r} (it must call "
                f"bflnet.scenarios.register({name!r}, ...) when imported, or be a Scenario; "
                f"got {type(obj).__name__})")
        _REGISTRY[name] = obj if obj.name == name else Scenario(
            name, obj.config_cls, obj.run_fn, obj.description, obj.plot, obj.datasets,
            obj.columns, obj.state_free, obj.server_schedule)
    from bflnet.runs.plugin_scenario import checked

    for new in sorted((set(_REGISTRY) - before) | {name}):
        who = plugins.get(new, plugin).who()
        try:
            _REGISTRY[new] = checked(who, _REGISTRY[new])
        except PluginError as exc:
            del _REGISTRY[new]
            _REFUSED[new] = str(exc)
            if new == name:
                raise


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``; a one-line error listing the known names otherwise."""
    if name not in _REGISTRY:
        _load_scenarios()
    if name not in _REGISTRY:
        _load_plugin(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        known = scenario_names()
        raise ValueError(f"unknown scenario {shown(name)}; {did_you_mean(name, known)}known: "
                         f"{', '.join(known)}") from None


def state_scenarios() -> list[str]:
    """The scenarios that can save and load states (``--save-state``, ``--load-state``)."""
    _load_scenarios()
    return sorted(n for n, s in _REGISTRY.items() if s.state_free is not None)


def scenario_names() -> list[str]:
    """The registered scenarios' names (the plugins' included), sorted."""
    _load_scenarios()
    return sorted(set(_REGISTRY) | set(plugin_scenarios()))


def scenario_lines() -> list[str]:
    """``bflnet list``'s output: one line per scenario, ``name: description``, the default
    one marked (a plugin not imported yet: where it comes from); then the learners that
    ``custom-learner`` runs."""
    plugins = plugin_scenarios()
    lines = []
    for name in scenario_names():
        if name in _REGISTRY:
            text = _REGISTRY[name].description
        else:
            plugin = plugins[name]
            text = f"plugin from {plugin.dist} ({plugin.value}); bflnet describe {name}"
        lines.append(f"{name}{' (default)' if name == DEFAULT_SCENARIO else ''}: {text}")
    from bflnet.learners.catalog import learner_lines

    return [*lines, "", "learners (bflnet run custom-learner --set learner=NAME):",
            *learner_lines()]


def run_scenario(name: str, overrides: Mapping[str, Any] | None = None, *, seed: int = 0,
                 progress: bool = False, load_state: str | Path | None = None) -> pd.DataFrame:
    """Run scenario ``name`` with parameter ``overrides`` and ``seed`` (``load_state``:
    from the states saved there, ``overrides`` the full config the load runs with)."""
    scenario = get_scenario(name)
    return scenario.run(scenario.config(overrides), seed=seed, progress=progress,
                        load_state=load_state)
