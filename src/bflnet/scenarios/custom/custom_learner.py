"""Scenario ``custom-learner``: any registered learner under a random walk, a parameter
server or gossip, over the network the settings describe.

The learner is named by ``learner``: a built-in one (``gaussian-mean``) or one that an
installed distribution registers through the ``bflnet.learners`` entry points (a factory
``make(K, points_per_agent, rng[, settings]) -> GlobalStateLearner``,
:mod:`bflnet.learners.catalog`). Its settings, if it declares any, are parameters named
``learner.NAME`` (``--set learner.noise_var=0.1``, ``--grid``, a ``[learner]`` TOML
table), recorded in result files like the others. The same learner object runs under
each ``protocol``:

- ``random-walk``: the global state travels with a token (the ``walk`` rule);
- ``parameter-server``: a server schedules one agent per round, in turn (uplinks of the
  ``channel``; the D2D graph is not used);
- ``gossip``: every node keeps a copy of the global state and mixes it with its
  neighbours' (:class:`~bflnet.learners.gossip.gossip_adapter.GossipAdapter`: increments
  scaled by K for a learner that declares ``combines = Combines.ADDITIVE``, states
  averaged for ``Combines.AVERAGED``; any other learner is refused in one line).

One row per round (``iteration``) with the learner's ``evaluate`` metrics (for
``gaussian-mean``: ``posterior_mean``, ``posterior_sd``, ``mean_error``, ``kl``),
``time_s`` and ``cum_bits``. Under gossip each metric ``m`` is the median over the nodes
of each node's own value, with ``m_max``, ``m_spread`` and ``m_at_mean`` (the metric of
the nodes' mean state) beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from bflnet.protocols.graphs.walk_names import WALK_NAMES
from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import group, group_value, param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import EDGE_BYTES, FLOAT64, NODE_BYTES, ROW_BYTES, Footprint, count
from bflnet.runs.schema import (
    BASE,
    CUM_BITS_DOWN,
    CUM_BITS_UP,
    DROPPED,
    NODE,
    SCHEDULED,
    UPDATES,
    Column,
    Schema,
    col,
)
from bflnet.scenarios.shared.network_settings import NetworkSettings

if TYPE_CHECKING:
    import pandas as pd

NAME = "custom-learner"
PROTOCOLS = ("random-walk", "parameter-server", "gossip")
#: Bytes per agent each protocol keeps beyond the graph, the links and the data: the
#: learner's agent state, the protocol's per-node records and, for gossip, every node's
#: copy of the global state with its mixing weights. Measured with ``gaussian-mean``
#: (peak resident memory at K = 10^5 and 2 x 10^5 on a ring and a torus: 0.4, 0.9 and
#: 2.3 kB per agent), with a margin of about a fifth of the whole.
AGENT_BYTES = {"random-walk": 1_000.0, "parameter-server": 1_500.0, "gossip": 3_500.0}
#: Bytes per edge each protocol keeps beyond the graph's: the links' queues and, for
#: gossip, a round's messages in the neighbours' inboxes (measured: 0.1 and 1.2 kB per
#: edge), with a margin.
EDGE_EXTRA_BYTES = {"random-walk": 300.0, "parameter-server": 0.0, "gossip": 1_700.0}


def _known_learner(name: str) -> None:
    from bflnet.learners.catalog import learner_names
    from bflnet.validation.params import shown

    names = learner_names()
    if name not in names:
        raise ValueError(f"learner: must be one of {', '.join(names)} (built-in or a "
                         f"bflnet.learners plugin), got {shown(name)}")


def _settings(name: str, given: object) -> object:
    """Learner ``name``'s settings from what was given (module docs)."""
    from bflnet.learners.catalog import make_settings, settings_class

    return group_value("learner", f"learner {name!r}", settings_class(name), given,
                       lambda values: make_settings(name, values))


@dataclass(frozen=True)
class CustomLearnerConfig(NetworkSettings):
    """Parameters of ``custom-learner``."""

    SCENARIO: ClassVar[str] = NAME

    learner: str = param("gaussian-mean", "the learner: a built-in one or a bflnet.learners "
                         "plugin (bflnet list shows them)")
    protocol: str = param("random-walk", "how the learner's state moves", choices=PROTOCOLS)
    rounds: int = param(100, "iterations (random walk, server) or gossip rounds", ge=1,
                        le=10**7)
    points_per_agent: int = param(20, "data points per agent", ge=1, le=10**6)
    walk: str = param("metropolis-hastings", "random-walk rule (protocol=random-walk)",
                      choices=WALK_NAMES)
    mixing: str = param("metropolis-hastings", "mixing-matrix rule (protocol=gossip)",
                        choices=("metropolis-hastings", "max-degree", "uniform"))
    eval_every: int = param(1, "evaluate every this many rounds (and the last)", ge=1,
                            le=10**7)
    learner_settings: object = group("learner", "the learner's own settings "
                                     "(learner.NAME; bflnet describe custom-learner lists "
                                     "them)")

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        _known_learner(self.learner)
        object.__setattr__(self, "learner_settings", _settings(self.learner,
                                                               self.learner_settings))

    @staticmethod
    def group_choices(prefix: str) -> dict[str, type | str | None]:
        """The settings class of every learner (a plugin that cannot be loaded: why),
        for ``bflnet describe``."""
        from bflnet.learners.catalog import settings_classes

        return settings_classes()

    def footprint(self) -> Footprint:
        """The network (a parameter server: the agents' uplinks and downlinks, no D2D
        graph), the agents' data (``points_per_agent`` float64 each), what the protocol
        keeps per agent and per edge (:data:`AGENT_BYTES`, :data:`EDGE_EXTRA_BYTES`:
        measured with the built-in learner; a plugin learner's own state is its own) and
        one row per round."""
        if self.protocol == "parameter-server":  # the run builds no D2D graph
            k = float(self.K)
            fp = Footprint().add(f"the {count(k)} agents' uplinks and downlinks", ("K",),
                                 bytes=(NODE_BYTES + EDGE_BYTES) * k, work=3.0 * k)
        else:
            k = self.agents()
            fp = super().footprint()
        points = k * self.points_per_agent
        state = AGENT_BYTES[self.protocol] * k
        if self.protocol != "parameter-server":
            state += EDGE_EXTRA_BYTES[self.protocol] * self.graph_size().edges
        rows = self.rounds + 1.0
        return fp.add(
            f"{points:.3g} data points", ("K", "points_per_agent"), bytes=FLOAT64 * points,
            work=points).add(
            f"{self.protocol}: the {count(k)} agents' states and records", ("K", "protocol"),
            bytes=state).add(f"{rows:.3g} recorded rows", ("rounds",),
                             bytes=ROW_BYTES * rows * (2.0 if self.protocol == "gossip"
                                                       else 1.0))


#: gaussian-mean's metrics: name -> (unit, meaning).
GAUSSIAN_MEAN_METRICS = {
    "posterior_mean": ("1", "posterior mean of theta"),
    "posterior_sd": ("1", "posterior standard deviation"),
    "mean_error": ("1", "|posterior mean - exact posterior mean with every agent's data|"),
    "kl": ("nats", "KL(posterior || exact posterior with every agent's data)"),
}
#: Under gossip, what each metric m is, and the columns beside it.
GOSSIP_STATISTICS = {
    "_max": "the largest over the nodes of each node's {name}",
    "_spread": "the largest less the smallest over the nodes of each node's {name}",
    "_at_mean": "{name} of the nodes' mean state",
}


def _learner_columns() -> list[Column]:
    columns = []
    for name, (unit, meaning) in GAUSSIAN_MEAN_METRICS.items():
        columns.append(col(name, unit, f"learner=gaussian-mean: {meaning} (gossip: the "
                           f"median over the nodes of each node's own)", "init",
                           "iteration", "round", when="learner=gaussian-mean"))
        columns += [col(name + end, unit, "learner=gaussian-mean, gossip: "
                        + what.format(name=name),
                        "init", "round", when="learner=gaussian-mean and protocol=gossip")
                    for end, what in GOSSIP_STATISTICS.items()]
    return columns


SCHEMA = Schema.of(
    *BASE,
    *_learner_columns(),
    NODE.means("the token holder (random-walk) or the server (parameter-server)")
    .only_when("protocol=random-walk or protocol=parameter-server"),
    CUM_BITS_UP.only_when("protocol=parameter-server"),
    CUM_BITS_DOWN.only_when("protocol=parameter-server"),
    SCHEDULED.on("iteration").only_when("protocol=parameter-server"),
    UPDATES.on("iteration").only_when("protocol=parameter-server"),
    DROPPED.on("round").only_when("protocol=gossip"),
    col("disagreement", "1", "largest |node's state - the nodes' mean state| (max norm)",
        "init", "round", when="protocol=gossip"),
)

#: The columns the run writes itself: a plugin learner's metrics may not take these names.
RUN_COLUMNS = frozenset(c.name for c in SCHEMA.columns if not c.when.startswith("learner="))


@register(NAME, CustomLearnerConfig,
          "Any registered learner (built-in or a bflnet.learners plugin) under a random walk, "
          "a parameter server or gossip; the learner's metrics per round.", columns=SCHEMA,
          server_schedule="protocol=parameter-server: one agent per round, in turn "
                          "(RoundRobinSelector(1))")
def run(config: CustomLearnerConfig, *, seed: int = 0, progress: bool = False
        ) -> pd.DataFrame:
    import networkx as nx

    from bflnet.learners.catalog import make_learner
    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.simulator.simulation import Simulation

    sim = Simulation(seed, name=NAME)
    if config.protocol == "parameter-server":
        graph = nx.empty_graph(config.K)
    else:
        graph = config.run_graph(seed)
        require_connected(graph)
    learner = make_learner(config.learner, graph.number_of_nodes(), config.points_per_agent,
                           sim.streams.numpy("data"), settings=config.learner_settings,
                           reserved=RUN_COLUMNS)
    stop = StopRule(max_iterations=config.rounds)
    kwargs = config.network_kwargs(graph)
    if config.protocol == "random-walk":
        from bflnet.protocols.graphs.walks import make_walk
        from bflnet.protocols.random_walk import RandomWalkProtocol

        sim.build_network(graph, **kwargs)
        protocol = RandomWalkProtocol(learner, make_walk(config.walk, graph), stop,
                                      eval_every=config.eval_every, progress=progress)
    elif config.protocol == "parameter-server":
        from bflnet.protocols.parameter_server import ParameterServerProtocol
        from bflnet.protocols.scheduling import RoundRobinSelector

        sim.build_network(graph, server=True, **kwargs)
        protocol = ParameterServerProtocol(learner, stop, selector=RoundRobinSelector(1),
                                           eval_every=config.eval_every, progress=progress)
    else:
        from bflnet.learners.gossip.gossip_adapter import GossipAdapter
        from bflnet.protocols.consensus import ConsensusProtocol

        gossip = GossipAdapter(learner, agents=graph.number_of_nodes())  # by its combines
        sim.build_network(graph, **kwargs)
        protocol = ConsensusProtocol(gossip,
                                     config.mixing, stop, eval_every=config.eval_every,
                                     progress=progress)
    return sim.run(protocol).frame
