"""Parameter-server pattern: schedule agents, downlink, local compute, uplink, merge."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import simpy

from bflnet.learners.base import GlobalStateLearner, Update
from bflnet.protocols import wire
from bflnet.protocols.base import (
    AgentSlots,
    call,
    check_eval_every,
    check_interventions,
    start_run,
)
from bflnet.protocols.interventions import KEEP, ForgetRequest
from bflnet.protocols.scheduling import AgentSelector, RoundRobinSelector
from bflnet.protocols.stopping import StopRule
from bflnet.protocols.wire import CodecSpec
from bflnet.simulator.message import Message
from bflnet.simulator.node import SERVER
from bflnet.simulator.simulation import Outcome, Simulation


class ParameterServerProtocol:
    """The server holds the global state. Per iteration it schedules agents (``selector``),
    sends each the state (downlink codec), the agents compute in parallel, each from its
    own private state and stream kept at its node, and upload their updates (uplink
    codec); the server merges the updates that arrived, and each merged update's agent
    keeps its new private state. An agent whose downlink or uplink message is dropped
    contributes nothing that iteration and keeps its old state.

    ``interventions`` are :class:`ForgetRequest` events on the same timeline; a request's
    ``then`` phase can change the scheduled agents, the uplink codec and ``eval_every``.

    A learner whose ``batches_agents`` is true computes the scheduled agents' updates as
    one ``local_update_batch`` call when the round starts (its inputs, the one downlink
    payload, the agents' states and streams, are known then). Links, times and bits are
    as without batching: each agent still waits for its downlink, its compute time and
    its uplink, and an agent whose downlink is lost has its stream rewound to where it
    was, so its draws are those of the sequential path.

    The ``metrics`` of the updates merged in a round (e.g. a learner's clip counts) are
    summed key by key into the round's row.
    """

    def __init__(self, learner: GlobalStateLearner, stop: StopRule, *,
                 selector: AgentSelector | None = None, uplink_codec: CodecSpec = None,
                 downlink_codec: CodecSpec = None, eval_every: int = 1,
                 progress: bool = False, interventions: Sequence[ForgetRequest] = ()) -> None:
        self.learner = learner
        self.stop = stop
        self.selector = selector if selector is not None else RoundRobinSelector(1)
        self.uplink_codec = uplink_codec
        self.downlink_codec = downlink_codec
        self.eval_every = check_eval_every(eval_every)
        self.progress = progress
        self.interventions = check_interventions(interventions)

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        if net is None or not net.has_server:
            raise ValueError("network: the parameter-server protocol needs server=True")
        env, rec, learner = sim.env, sim.recorder, self.learner
        agents: Sequence[Any] = net.agents
        setup = start_run(sim, self.stop, eval_every=self.eval_every, progress=self.progress,
                          interventions=self.interventions, init_agent=learner.init_agent,
                          agents=agents,
                          agent_streams=getattr(learner, "uses_agent_streams", True))
        loop, slots = setup.loop, setup.agents
        sched_rng = sim.streams.numpy("protocol.schedule")
        state = call(sim, learner.init, sim.streams.numpy("learner"), node=SERVER,
                     iteration=0, what="learner.init")
        rec.record("init", node=SERVER,
                   **loop.evaluate(0, lambda: learner.evaluate(state), node=SERVER))
        down_rng = sim.streams.numpy("codec.down")
        up_rngs = {agent: sim.streams.numpy(f"codec.up.{agent}") for agent in agents}
        uplink_codec = self.uplink_codec
        batched = bool(getattr(learner, "batches_agents", False))
        iteration = 0
        while True:
            for request in loop.due_requests(iteration):
                self._forget(loop, slots, request, iteration)
                if request.then is not None:
                    if request.then.agents is not KEEP:
                        agents = request.then.agents
                    if request.then.uplink_codec is not KEEP:
                        uplink_codec = request.then.uplink_codec
                    if request.then.eval_every is not KEEP:
                        loop.eval_every = request.then.eval_every
            iteration += 1
            rec.iteration = iteration
            chosen = self.selector.select(iteration, agents, sched_rng)
            down_payload, down_bits = wire.encode(self.downlink_codec, state, down_rng)
            ready = (self._batch(sim, slots, chosen, state, down_payload, iteration)
                     if batched and len(chosen) > 1 else {})
            jobs = [env.process(self._serve(sim, slots, agent, state, down_payload, down_bits,
                                            iteration, up_rngs[agent], uplink_codec,
                                            ready.get(agent)))
                    for agent in chosen]
            done = yield env.all_of(jobs)
            updates: list[Update] = [u for u in done.values() if u is not None]
            if updates:
                state = call(sim, learner.merge, state, updates, node=SERVER,
                             iteration=iteration, what="learner.merge")
                for update in updates:
                    slots.commit(update.agent, update.agent_state)
                    loop.merged(update)
            metrics = loop.evaluate(iteration, lambda s=state: learner.evaluate(s), node=SERVER)
            if any(u.metrics for u in updates):
                metrics = {**summed_metrics(updates), **metrics}
            if loop.end_iteration(iteration, "iteration", metrics, node=SERVER,
                                  scheduled=len(chosen), updates=len(updates)):
                return loop.outcome(state, slots)

    def _forget(self, loop: Any, slots: AgentSlots, request: ForgetRequest,
                iteration: int) -> None:
        def forget(agent: Any) -> None:
            slots.commit(agent, self.learner.forget(agent, slots.state(agent)))

        loop.apply_forget(request, forget, iteration)

    def _batch(self, sim: Simulation, slots: AgentSlots, chosen: Sequence[Any], state: Any,
               down_payload: Any, iteration: int) -> dict[Any, tuple[Update, Any]]:
        """Every scheduled agent's update from one ``local_update_batch`` call, with the
        state of its stream before the call (to rewind it if its downlink is lost)."""
        received = wire.decode(self.downlink_codec, down_payload, state)
        agents = list(chosen)
        states = [slots.state(agent) for agent in agents]  # (an init's draws come first)
        rngs = [slots.rng(agent) for agent in agents]
        before = [None if rng is None else rng.bit_generator.state for rng in rngs]
        updates = call(sim, self.learner.local_update_batch, agents, received, states, rngs,
                       node=SERVER,
                       iteration=iteration, what=f"learner.local_update_batch of {agents!r}")
        if len(updates) != len(agents):
            raise sim.error(ValueError(f"returned {len(updates)} updates for "
                                       f"{len(agents)} agents"), node=SERVER,
                            iteration=iteration, what="learner.local_update_batch")
        return {agent: (update, saved)
                for agent, update, saved in zip(agents, updates, before, strict=True)}

    def _serve(self, sim: Simulation, slots: AgentSlots, agent: Any, state: Any,
               down_payload: Any, down_bits: int, iteration: int, up_rng: Any,
               uplink_codec: CodecSpec, ready: tuple[Update, Any] | None = None
               ) -> Generator[simpy.Event, Any, Update | None]:
        net = sim.network
        assert net is not None
        down = yield from net.links[(SERVER, agent)].send(
            Message(SERVER, agent, "state", down_payload, down_bits, iteration), deliver=False)
        if not down.delivered:
            if ready is not None and ready[1] is not None:
                slots.rng(agent).bit_generator.state = ready[1]
            return None
        if ready is not None:
            update = ready[0]
        else:
            received = wire.decode(self.downlink_codec, down_payload, state)
            update = call(sim, self.learner.local_update, agent, received,
                          slots.state(agent), slots.rng(agent), node=agent,
                          iteration=iteration, what="learner.local_update")
        duration = net.nodes[agent].compute_time(update.work)
        if duration:
            yield sim.env.timeout(duration)
        up_payload, up_bits = wire.encode(uplink_codec, update.payload, up_rng)
        up = yield from net.links[(agent, SERVER)].send(
            Message(agent, SERVER, "update", up_payload, up_bits, iteration), deliver=False)
        if not up.delivered:
            return None
        update.payload = wire.decode(uplink_codec, up_payload, update.payload)
        update.agent = agent
        return update


def summed_metrics(updates: Sequence[Update]) -> dict[str, float]:
    """The merged updates' ``metrics`` (e.g. clip counts), summed key by key."""
    total: dict[str, float] = {}
    for update in updates:
        for key, value in (update.metrics or {}).items():
            total[key] = total.get(key, 0.0) + value
    return total
