"""Buffered asynchronous parameter server in the style of FedBuff (Nguyen et al., "Federated
Learning with Buffered Asynchronous Aggregation", AISTATS 2022).

Every agent runs its own loop: download the server's current global state, compute a local
update (its compute model; log-normal stragglers, traces), upload it, and start again at
once. The server keeps the arrivals in a buffer and merges every ``buffer_size`` of them;
each merge makes a new version of the global state. An update's **staleness** is the
number of versions made between its agent's download and the merge that uses it
(0: nothing was merged in between).

With ``staleness_weighted=True`` update ``i`` counts with weight ``s(τ_i) = 1/sqrt(1 + τ_i)``
(FedBuff's choice): the learner's :meth:`~bflnet.learners.base.GlobalStateLearner.merge_weighted`
(for FedAvg: ``w + (1/B) Σ_i s(τ_i) Δw_i``, server learning rate 1); a learner without a
weighted merge is refused at the start.

Rows: ``download`` (``node``, ``version`` downloaded) when an agent starts a cycle;
``merged_update`` (``node``, ``download_s``, ``sent_s`` when its upload began,
``arrived_s``, ``downloaded_version``, ``staleness``, ``weight``) for each update of a
merge, written at the merge, just before its ``iteration`` row (``iteration`` = the new
version; ``updates``, ``staleness_mean``, ``staleness_max`` and the metrics). The stop
rule is checked after every merge. A message lost on the way ends that cycle; the agent
starts again (after ``retry_s`` if the failed cycle took no simulated time, e.g. a link
down for good). Forget requests are not supported here.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from bflnet.learners.base import GlobalStateLearner, Update, supports_weighted_merge
from bflnet.protocols.base import (
    AgentSlots,
    IterationLoop,
    call,
    check_eval_every,
    check_merges_several,
    start_run,
)
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.wire import CodecSpec
from bflnet.protocols.parameter_server import serve_agent
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.node import SERVER
from bflnet.simulator.simulation import Outcome, Simulation
from bflnet.validation.checks import check_int, check_real


def staleness_weight(staleness: int) -> float:
    """FedBuff's staleness weight ``1 / sqrt(1 + staleness)``.

    >>> staleness_weight(0), staleness_weight(3)
    (1.0, 0.5)
    """
    return 1.0 / math.sqrt(1.0 + staleness)


@dataclass
class _Arrival:
    """An update in the server's buffer and where it came from."""

    update: Update
    version: int
    download_s: float
    times: dict[str, float]


@dataclass
class _Server:
    """The server's side of one run: the global state, its version and the buffer."""

    state: Any
    finished: simpy.Event
    version: int = 0
    buffer: list[_Arrival] = field(default_factory=list)


class BufferedServerProtocol:
    """FedBuff-style buffered asynchronous aggregation (module docs): every agent loops
    download → compute → upload; the server merges every ``buffer_size`` arrivals.

    >>> BufferedServerProtocol(None, StopRule(max_iterations=1), buffer_size=0)
    Traceback (most recent call last):
    ...
    ValueError: buffer_size: must be an integer >= 1 and <= 1000000000, got 0
    """

    def __init__(self, learner: GlobalStateLearner, stop: StopRule, *, buffer_size: int = 1,
                 staleness_weighted: bool = False, uplink_codec: CodecSpec = None,
                 downlink_codec: CodecSpec = None, eval_every: int = 1,
                 progress: bool = False, retry_s: float = 1.0) -> None:
        self.buffer_size = check_int("buffer_size", buffer_size, ge=1, le=10**9)
        if not isinstance(staleness_weighted, bool):
            raise ValueError(f"staleness_weighted: must be True or False, got "
                             f"{staleness_weighted!r}")
        if staleness_weighted and not supports_weighted_merge(learner):
            raise ValueError(f"staleness_weighted: {type(learner).__name__} has no weighted "
                             "merge (merge_weighted)")
        self.learner = learner
        self.stop = stop
        self.staleness_weighted = staleness_weighted
        self.uplink_codec = uplink_codec
        self.downlink_codec = downlink_codec
        self.eval_every = check_eval_every(eval_every)
        self.progress = progress
        self.retry_s = check_real("retry_s", retry_s, gt=0, le=1e12)

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        if net is None or not net.has_server:
            raise ValueError("network: the buffered server needs server=True")
        learner, agents = self.learner, list(net.agents)
        if self.buffer_size > len(agents):
            raise ValueError(f"buffer_size: must be <= the number of agents ({len(agents)}), "
                             f"got {self.buffer_size}")
        check_merges_several(learner, "buffered server", self.buffer_size)
        setup = start_run(sim, self.stop, eval_every=self.eval_every, progress=self.progress,
                          interventions=(), init_agent=learner.init_agent, agents=agents,
                          agent_streams=getattr(learner, "uses_agent_streams", True))
        state = call(sim, learner.init, sim.streams.numpy("learner"), node=SERVER,
                     iteration=0, what="learner.init")
        sim.recorder.record("init", node=SERVER, **setup.loop.evaluate(
            0, lambda: learner.evaluate(state), node=SERVER))
        server = _Server(state, sim.env.event())
        for agent in agents:
            sim.env.process(self._agent(sim, server, setup.loop, setup.agents, agent,
                                        sim.streams.numpy(f"codec.down.{agent}"),
                                        sim.streams.numpy(f"codec.up.{agent}")))
        outcome = yield server.finished
        return outcome

    def _agent(self, sim: Simulation, server: _Server, loop: IterationLoop,
               slots: AgentSlots, agent: Any, down_rng: Any, up_rng: Any
               ) -> Generator[simpy.Event, Any, None]:
        """One agent's cycles until the run ends."""
        env, rec = sim.env, sim.recorder
        while not server.finished.triggered:
            start, version, state = env.now, server.version, server.state
            rec.record("download", node=agent, version=version)
            payload, bits = wire.encode(self.downlink_codec, state, down_rng)
            times: dict[str, float] = {}
            update = yield from serve_agent(sim, self.learner, slots, agent, state, payload,
                                            bits, version, up_rng, self.downlink_codec,
                                            self.uplink_codec, None, times)
            if server.finished.triggered:
                return
            if update is None:
                if env.now == start:
                    yield env.timeout(self.retry_s)
                continue
            server.buffer.append(_Arrival(update, version, start, times))
            if len(server.buffer) >= self.buffer_size:
                self._merge(sim, server, loop, slots)

    def _merge(self, sim: Simulation, server: _Server, loop: IterationLoop,
               slots: AgentSlots) -> None:
        """Merge the buffer into a new version; record it; end the run if the stop rule
        says so."""
        rec, taken, old = sim.recorder, server.buffer, server.version
        server.buffer = []
        server.version = rec.iteration = old + 1
        staleness = [old - a.version for a in taken]
        weights = ([staleness_weight(s) for s in staleness] if self.staleness_weighted
                   else [1.0] * len(taken))
        for arrival, s, w in zip(taken, staleness, weights, strict=True):
            rec.record("merged_update", node=arrival.update.agent,
                       download_s=arrival.download_s, sent_s=arrival.times["sent_s"],
                       arrived_s=arrival.times["arrived_s"], downloaded_version=arrival.version,
                       staleness=s, weight=w)
        updates = [a.update for a in taken]
        if self.staleness_weighted:
            server.state = call(sim, self.learner.merge_weighted, server.state, updates,
                                weights, node=SERVER, iteration=server.version,
                                what="learner.merge_weighted")
        else:
            server.state = call(sim, self.learner.merge, server.state, updates, node=SERVER,
                                iteration=server.version, what="learner.merge")
        for update in updates:
            slots.commit(update.agent, update.agent_state)
            loop.merged(update)
        state = server.state
        metrics = loop.evaluate(server.version, lambda: self.learner.evaluate(state),
                                node=SERVER)
        if loop.end_iteration(server.version, "iteration", metrics, node=SERVER,
                              updates=len(updates), staleness_mean=sum(staleness) / len(updates),
                              staleness_max=max(staleness)):
            server.finished.succeed(loop.outcome(state, slots))
