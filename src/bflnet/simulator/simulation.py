"""The simulation: owns the clock (SimPy), the randomness and the record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import networkx as nx
import pandas as pd
import simpy

from bflnet.simulator.network import Network
from bflnet.simulator.recorder import Recorder
from bflnet.simulator.rng import RngStreams
from bflnet.validation.errors import SimulationError


@dataclass
class Outcome:
    """What a protocol's process gives back: the final global state (``None`` for
    consensus), every agent's private state, and why the run stopped."""

    state: Any = None
    agent_states: dict[Any, Any] = field(default_factory=dict)
    reason: str | None = None


@dataclass
class RunResult:
    """One finished run: the record as a DataFrame, the final global state, the agents'
    final private states and the stop rule that ended it."""

    frame: pd.DataFrame
    state: Any = None
    agent_states: dict[Any, Any] = field(default_factory=dict)
    reason: str | None = None


class Runnable(Protocol):
    """What :meth:`Simulation.run` accepts: a protocol that is a SimPy process factory."""

    def process(self, sim: Simulation) -> Any: ...


class Simulation:
    """One run: a ``simpy.Environment``, one root seed, one :class:`Recorder`.

    >>> import networkx as nx
    >>> sim = Simulation(seed=1)
    >>> net = sim.build_network(nx.path_graph(2))
    >>> sorted(net.links)
    [(0, 1), (1, 0)]
    """

    def __init__(self, seed: int = 0, *, name: str = "simulation",
                 record_messages: bool = False) -> None:
        self.streams = RngStreams(seed)
        self.seed = self.streams.seed
        self.name = name
        self.env = simpy.Environment()
        self.recorder = Recorder(self.env, record_messages=record_messages)
        self.network: Network | None = None

    def build_network(self, graph: nx.Graph, **kwargs: Any) -> Network:
        """Build the :class:`Network` for ``graph`` (keyword arguments as in ``Network``)."""
        self.network = Network(self.env, graph, self.streams, self.recorder, **kwargs)
        self.recorder.has_server = self.network.has_server
        return self.network

    def use_network(self, network: Network) -> Network:
        """Run on ``network``, built by another simulation, rebound to this one's clock,
        streams and record (:meth:`Network.rebind`): the same results as
        :meth:`build_network` with the same arguments, without the set-up."""
        network.rebind(self.env, self.streams, self.recorder)
        self.network = network
        self.recorder.has_server = network.has_server
        return network

    def run(self, protocol: Runnable) -> RunResult:
        """Run ``protocol`` to its stopping rule: the record as a DataFrame (``.frame``),
        the final global state and the agents' states."""
        outcome = self.run_outcome(protocol)
        return RunResult(self.recorder.to_frame(), outcome.state, outcome.agent_states,
                         outcome.reason)

    def run_outcome(self, protocol: Runnable) -> Outcome:
        """Run ``protocol`` without building a DataFrame (the rows stay in
        ``recorder.rows``): for many short runs."""
        if self.network is None:
            raise SimulationError(f"{self.name}: build_network() must be called before run()")
        done = self.env.process(protocol.process(self))
        self.network.start_fault_records()
        self.env.run(until=done)
        value = done.value
        return value if isinstance(value, Outcome) else Outcome()

    def error(self, exc: BaseException, *, node: Any, iteration: int, what: str) -> SimulationError:
        """A :class:`SimulationError` that says where a learner failed."""
        return SimulationError(
            f"{self.name}: {what} failed at node {node}, iteration {iteration}: "
            f"{type(exc).__name__}: {exc}")
