"""Parameter-server pattern: schedule agents, downlink, local compute, uplink, merge."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import simpy

from bflnet.learners.base import GlobalStateLearner, Update, learner_label, needs_mean_merge
from bflnet.protocols.base import (
    AgentSlots,
    call,
    check_eval_every,
    check_interventions,
    check_merges_several,
    start_run,
)
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.wire import CodecSpec
from bflnet.protocols.interventions import KEEP, ForgetRequest
from bflnet.protocols.scheduling import AgentSelector, AllAgents, RoundRobinSelector
from bflnet.protocols.stopping import StopRule
from bflnet.protocols.uplink import (
    UPLINKS,
    AirCompUplink,
    DigitalUplink,
    IdealUplink,
    Uplink,
    UplinkRounds,
)
from bflnet.simulator.message import Message
from bflnet.simulator.node import SERVER
from bflnet.simulator.simulation import Outcome, Simulation
from bflnet.validation.checks import check_real


class ParameterServerProtocol:
    """The server holds the global state. Per iteration it schedules agents (``selector``),
    sends each the state (downlink codec), the agents compute in parallel, each from its
    own private state and stream kept at its node, and upload their updates (uplink
    codec); the server merges the updates that arrived, and each merged update's agent
    keeps its new private state. An agent whose downlink or uplink message is dropped
    contributes nothing that iteration and keeps its old state.

    **Broadcast** (``broadcast=True``, on a shared medium, not with ``deadline_s``): the
    state goes down in one transmission for all the scheduled agents (its bits, air time
    and the server's energy counted once, ``cum_bits_down`` once); each agent receives it
    or not on its own SINR. Nobody acknowledges a broadcast, so a lost reception follows
    the rule of a lost downlink: that agent sits the round out (no update, old state),
    with no negative acknowledgement and no resending.

    **Agent selection.** Without a ``selector`` the server schedules **one agent per
    iteration**, in turn (``RoundRobinSelector(1)``: agent 0, 1, ..., K−1, 0, ...), the
    schedule of distributed SVGD; ``AllAgents()`` gives FedAvg-style rounds of every
    agent, ``RoundRobinSelector(m)`` / ``UniformSelector(m)`` ``m`` agents at a time
    (:mod:`bflnet.protocols.scheduling`). A round of several agents merges several updates
    at once: the learner must declare that this means something (``combines``
    ``ADDITIVE``, ``AVERAGED`` or ``PARTICLES``, :class:`~bflnet.learners.base.Combines`),
    else the run is refused in one line naming it.

    ``interventions`` are :class:`ForgetRequest` events on the same timeline; a request's
    ``then`` phase can change the scheduled agents, the uplink codec and ``eval_every``.

    A learner whose ``batches_agents`` is true computes the scheduled agents' updates as
    one ``local_update_batch`` call when the round starts (its inputs, the one downlink
    payload, the agents' states and streams, are known then). Links, times and bits are
    as without batching: each agent still waits for its downlink, its compute time and
    its uplink, and an agent whose downlink is lost has its stream rewound to where it
    was, so its draws are those of the sequential path.

    **Deadline** (``deadline_s``; ``None``: wait for every scheduled agent, the plain
    synchronous round). A round closes when every update has arrived or ``deadline_s``
    simulated seconds after its broadcast, whichever is first, and the server merges the
    updates that reached it by then. An update arriving later is dropped from the merge
    (its agent keeps its old state) and written as a ``late_update`` row (``node``,
    ``round``, ``lateness_s`` after the deadline, ``download_s``, ``sent_s``). Each merged
    update is a ``merged_update`` row (``download_s``, ``sent_s``, ``arrived_s``,
    ``staleness`` = 0), and the ``iteration`` row adds ``late`` (scheduled agents whose
    update had not arrived when the round closed: still computing or on the air; some of
    them are lost later) and ``busy`` (scheduled agents not sent the state because they
    were still working on an earlier round's update). A round whose scheduled agents are
    all busy lasts the whole deadline.

    The ``metrics`` of the updates merged in a round (e.g. a learner's clip counts) are
    summed key by key into the round's row.

    **Uplink** (``uplink``; ``None``: each agent's own link, ``uplink=links``): an
    :class:`~bflnet.protocols.uplink.AirCompUplink` superposes the participants' updates
    in one analog transmission, a :class:`~bflnet.protocols.uplink.DigitalUplink` sends
    them quantised one after the other, an :class:`~bflnet.protocols.uplink.IdealUplink`
    delivers their exact mean (:mod:`bflnet.protocols.uplink`). The round's transmission
    starts when every scheduled agent's update is ready or at the deadline; an update
    ready later is a ``late_update`` row (and with a deadline the ``merged_update`` rows
    name the updates ready in time, heard or not). The server hands the learner the delivered
    mean (``merge_mean``; a learner must declare ``merges_mean``, else it is refused in
    one line with its reason), the heard agents keep their new states, and the row gets
    the uplink's columns (``k_active``, ``channel_var``, energies, ...). ``downlink``:
    ``"links"`` (each agent's link, or ``broadcast``) or ``"ideal"`` (the state reaches
    every scheduled agent at once, no time, no bits: the over-the-air papers' set-up).
    ``observe(iteration, state)`` (if given) sees the state after every iteration.
    """

    def __init__(self, learner: GlobalStateLearner, stop: StopRule, *,
                 selector: AgentSelector | None = None, uplink_codec: CodecSpec = None,
                 downlink_codec: CodecSpec = None, eval_every: int = 1,
                 progress: bool = False, interventions: Sequence[ForgetRequest] = (),
                 deadline_s: float | None = None, broadcast: bool = False,
                 uplink: Uplink | None = None, downlink: str = "links",
                 observe: Callable[[int, Any], None] | None = None) -> None:
        if not isinstance(broadcast, bool):
            raise ValueError(f"broadcast: must be True or False, got {broadcast!r}")
        if broadcast and deadline_s is not None:
            raise ValueError("broadcast: not with deadline_s (a deadline round sends the state "
                             "to each agent when it becomes free, not to all at once)")
        self.broadcast = broadcast
        self.learner = learner
        self.stop = stop
        self.selector = selector if selector is not None else RoundRobinSelector(1)
        self.uplink_codec = uplink_codec
        self.downlink_codec = downlink_codec
        self.eval_every = check_eval_every(eval_every)
        self.progress = progress
        self.interventions = check_interventions(interventions)
        if any(request.hold_token for request in self.interventions):
            raise ValueError("forget.hold_token: applies to the random walk's token; the "
                             "parameter server has none, so leave it false")
        self.deadline_s = None if deadline_s is None else check_real(
            "deadline_s", deadline_s, gt=0, le=1e12)
        if uplink is not None and not isinstance(uplink, UPLINKS):
            raise ValueError(f"uplink: must be None (links) or one of "
                             f"{', '.join(c.__name__ for c in UPLINKS)}, got {uplink!r}")
        if uplink is not None and uplink_codec is not None:
            raise ValueError(f"uplink_codec: not with uplink={uplink.name} (it carries the "
                             f"updates itself); leave it unset")
        if downlink not in ("links", "ideal"):
            raise ValueError(f"downlink: must be links or ideal, got {downlink!r}")
        if downlink == "ideal" and (broadcast or deadline_s is not None):
            raise ValueError("downlink: ideal is not with broadcast or deadline_s")
        if uplink is not None:
            needs_mean_merge(learner, uplink.name)
            if any(r.then is not None and r.then.uplink_codec is not KEEP
                   and r.then.uplink_codec is not None for r in self.interventions):
                raise ValueError(f"forget.then.uplink_codec: not with uplink={uplink.name} "
                                 f"(it carries the updates itself); leave it unset")
        self.uplink = uplink
        self.downlink = downlink
        self.observe = observe

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        if net is None or not net.has_server:
            raise ValueError("network: the parameter-server protocol needs server=True")
        env, rec, learner = sim.env, sim.recorder, self.learner
        if self.broadcast and net.air is None:
            raise ValueError("broadcast: needs a shared medium (medium=shared); independent "
                             "links carry one message each")
        agents: Sequence[Any] = net.agents
        check_merges_several(learner, "parameter server", len(agents) if isinstance(
            self.selector, AllAgents) else int(getattr(self.selector, "agents_per_round", 1)))
        setup = start_run(sim, self.stop, eval_every=self.eval_every, progress=self.progress,
                          interventions=self.interventions, init_agent=learner.init_agent,
                          agents=agents,
                          agent_streams=getattr(learner, "uses_agent_streams", True))
        loop, slots = setup.loop, setup.agents
        sched_rng = sim.streams.numpy("protocol.schedule")
        learner_rng = sim.streams.numpy("learner")
        state = call(sim, learner.init, learner_rng, node=SERVER,
                     iteration=0, what="learner.init")
        air = None if self.uplink is None else UplinkRounds(self.uplink, sim, agents,
                                                            learner_rng)
        rec.record("init", node=SERVER, **({} if air is None else air.first_row()),
                   **loop.evaluate(0, lambda: learner.evaluate(state), node=SERVER))
        down_rng = sim.streams.numpy("codec.down")
        up_rngs = {agent: sim.streams.numpy(f"codec.up.{agent}") for agent in agents}
        uplink_codec = self.uplink_codec
        batched = bool(getattr(learner, "batches_agents", False))
        busy: set[Any] = set()  # agents still working on an update (deadline mode)
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
            extra: dict[str, int] = {}
            if self.deadline_s is None:
                ready = (self._batch(sim, slots, chosen, state, down_payload, iteration)
                         if batched and len(chosen) > 1 else {})
                downlink = None
                if self.broadcast:  # one transmission of the state for every chosen agent
                    downlink = env.process(net.air.broadcast(
                        SERVER, Message(SERVER, "*", "state", down_payload, down_bits,
                                        iteration), chosen, links=net.links, direction="down"))
                jobs = [env.process(self._serve(sim, slots, agent, state, down_payload,
                                                down_bits, iteration, up_rngs[agent],
                                                uplink_codec, ready.get(agent), downlink,
                                                send=air is None))
                        for agent in chosen]
                done = yield env.all_of(jobs)
                updates: list[Update] = [u for u in done.values() if u is not None]
            else:
                updates, extra = yield from self._deadline_round(
                    sim, slots, chosen, busy, state, down_payload, down_bits, iteration,
                    up_rngs, uplink_codec, batched)
            if air is not None:
                state, updates, fields = yield from air.deliver(
                    sim, self._merge_mean(sim, iteration),
                    getattr(learner, "noise_target", None), state, updates)
                extra = {**extra, **fields}
                for update in updates:
                    slots.commit(update.agent, update.agent_state)
                    loop.merged(update)
            elif updates:
                state = call(sim, learner.merge, state, updates, node=SERVER,
                             iteration=iteration, what="learner.merge")
                for update in updates:
                    slots.commit(update.agent, update.agent_state)
                    loop.merged(update)
            if self.observe is not None:
                self.observe(iteration, state)
            metrics = loop.evaluate(iteration, lambda s=state: learner.evaluate(s), node=SERVER)
            if any(u.metrics for u in updates):
                metrics = {**summed_metrics(updates), **metrics}
            if air is not None and (clash := sorted(set(metrics) & set(extra))):
                raise sim.error(ValueError(
                    f"metrics: {learner_label(learner)} reports {clash[0]!r}, a column of "
                    f"uplink={air.uplink.name}; name the metric otherwise"), node=SERVER,
                    iteration=iteration, what="learner.evaluate")
            if loop.end_iteration(iteration, "iteration", metrics, node=SERVER,
                                  scheduled=len(chosen), updates=len(updates), **extra):
                return loop.outcome(state, slots)

    def _deadline_round(self, sim: Simulation, slots: AgentSlots, chosen: Sequence[Any],
                        busy: set[Any], state: Any, down_payload: Any, down_bits: int,
                        iteration: int, up_rngs: dict[Any, Any], uplink_codec: CodecSpec,
                        batched: bool
                        ) -> Generator[simpy.Event, Any, tuple[list[Update], dict[str, Any]]]:
        """One round with a deadline (class docs): the updates that arrived in time, in
        scheduling order, and the row's ``late`` and ``busy`` counts."""
        env, rec = sim.env, sim.recorder
        start = env.now
        closes = start + self.deadline_s  # type: ignore[operator]
        launch = [agent for agent in chosen if agent not in busy]
        ready = (self._batch(sim, slots, launch, state, down_payload, iteration)
                 if batched and len(launch) > 1 else {})
        arrived: dict[Any, tuple[Update, dict[str, float]]] = {}
        pending = set(launch)
        is_open = [True]

        def job(agent: Any) -> Generator[simpy.Event, Any, None]:
            busy.add(agent)
            times: dict[str, float] = {}
            update = yield from self._serve(sim, slots, agent, state, down_payload, down_bits,
                                            iteration, up_rngs[agent], uplink_codec,
                                            ready.get(agent), times=times,
                                            send=self.uplink is None)
            busy.discard(agent)
            pending.discard(agent)
            if update is None:
                return
            if is_open[0]:
                arrived[agent] = (update, times)
            else:
                rec.record("late_update", node=agent, round=iteration,
                           lateness_s=env.now - closes, download_s=start,
                           sent_s=times["sent_s"])

        jobs = [env.process(job(agent)) for agent in launch]
        timer = env.timeout(self.deadline_s)  # type: ignore[arg-type]
        yield env.any_of([env.all_of(jobs), timer]) if jobs else timer
        is_open[0] = False
        updates = []
        for agent in launch:
            if agent in arrived:
                update, times = arrived[agent]
                rec.record("merged_update", node=agent, download_s=start,
                           sent_s=times["sent_s"], arrived_s=times["arrived_s"], staleness=0)
                updates.append(update)
        return updates, {"late": len(pending), "busy": len(chosen) - len(launch)}

    def _merge_mean(self, sim: Simulation, iteration: int) -> Any:
        def merge(state: Any, mean: Any, channel_var: float, rng: Any) -> Any:
            return call(sim, self.learner.merge_mean, state, mean, channel_var, rng,
                        node=SERVER, iteration=iteration, what="learner.merge_mean")
        return merge

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
               uplink_codec: CodecSpec, ready: tuple[Update, Any] | None = None,
               downlink: simpy.Event | None = None,
               times: dict[str, float] | None = None, *, send: bool = True
               ) -> Generator[simpy.Event, Any, Update | None]:
        return serve_agent(sim, self.learner, slots, agent, state, down_payload, down_bits,
                           iteration, up_rng, self.downlink_codec, uplink_codec, ready, times,
                           downlink=downlink, send=send,
                           ideal_downlink=self.downlink == "ideal")


def serve_agent(sim: Simulation, learner: GlobalStateLearner, slots: AgentSlots, agent: Any,
                state: Any, down_payload: Any, down_bits: int, iteration: int, up_rng: Any,
                downlink_codec: CodecSpec, uplink_codec: CodecSpec,
                ready: tuple[Update, Any] | None = None,
                times: dict[str, float] | None = None, *,
                downlink: simpy.Event | None = None, send: bool = True,
                ideal_downlink: bool = False
                ) -> Generator[simpy.Event, Any, Update | None]:
    """SimPy process body of one agent's turn: downlink of ``state`` (encoded as
    ``down_payload``), local update (``ready``: computed already, with its stream's state
    before), compute time, uplink. The update as the server decodes it, or ``None`` if a
    message was lost. ``times`` (if given) gets ``sent_s`` (the upload began) and
    ``arrived_s``. ``downlink``: the process of a broadcast of the state (its value
    ``{agent: arrived}``) instead of the agent's own downlink message; ``ideal_downlink``:
    the state arrives at once, uncounted. ``send=False``: the update once computed, not
    sent (the uplink is the protocol's, :mod:`bflnet.protocols.uplink`)."""
    net = sim.network
    assert net is not None
    if ideal_downlink:
        arrived = True
    elif downlink is not None:
        arrived = (yield downlink)[agent]
    else:
        down = yield from net.links[(SERVER, agent)].send(
            Message(SERVER, agent, "state", down_payload, down_bits, iteration),
            deliver=False)
        arrived = down.delivered
    if not arrived:
        if ready is not None and ready[1] is not None:
            slots.rng(agent).bit_generator.state = ready[1]
        return None
    if ready is not None:
        update = ready[0]
    else:
        received = wire.decode(downlink_codec, down_payload, state)
        update = call(sim, learner.local_update, agent, received,
                      slots.state(agent), slots.rng(agent), node=agent,
                      iteration=iteration, what="learner.local_update")
    duration = net.nodes[agent].compute_time(update.work)
    if duration:
        yield sim.env.timeout(duration)
    if not send:
        if times is not None:
            times["sent_s"] = times["arrived_s"] = sim.env.now
        update.agent = agent
        return update
    up_payload, up_bits = wire.encode(uplink_codec, update.payload, up_rng)
    if times is not None:
        times["sent_s"] = sim.env.now
    up = yield from net.links[(agent, SERVER)].send(
        Message(agent, SERVER, "update", up_payload, up_bits, iteration), deliver=False)
    if not up.delivered:
        return None
    if times is not None:
        times["arrived_s"] = sim.env.now
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


def run_fald(learner: Any, rounds: int, dim: int, *, seed: int,
             uplink: AirCompUplink | DigitalUplink | None = None,
             on_round: Callable[[int, np.ndarray], None] | None = None,
             chains: int = 0, name: str = "fald", common_noise: bool = False
             ) -> tuple[Any, np.ndarray]:
    """``rounds`` rounds of a FALD-kind ``learner`` (``FALD``, ``TorchFALD``,
    ``AnalogFedAvg``: :class:`~bflnet.learners.langevin.fald_server.FALDRounds`) on a star
    of ``learner.K`` devices and a server, every device every round, ideal downlink,
    ``uplink`` (``None``: :class:`~bflnet.protocols.uplink.IdealUplink`): ``(frame,
    final sample)``. ``chains > 0`` runs that many chains at once under the same fading
    (samples ``(chains, dim)``); ``on_round(round, theta)`` sees each new sample;
    ``common_noise``: :mod:`bflnet.protocols.uplink`'s.
    The frame has an ``init`` row and one ``round`` row per round (``silent_round`` when
    nobody was heard) with the uplink's columns."""
    import networkx as nx

    from bflnet.learners.langevin.fald_server import FALDRounds

    if isinstance(uplink, DigitalUplink) and chains:
        raise ValueError("chains: the digital uplink runs one chain")
    if uplink is not None and len(uplink.mean_gains) != learner.K:
        raise ValueError(f"mean_gains: one per device ({learner.K}), got "
                         f"{len(uplink.mean_gains)}")
    if isinstance(uplink, AirCompUplink):
        uplink = replace(uplink, common_noise=bool(common_noise))
    shape = (int(dim),) if chains == 0 else (int(chains), int(dim))
    sim = Simulation(seed, name=name)
    graph = nx.Graph()
    graph.add_nodes_from(range(learner.K))
    sim.build_network(graph, server=True)
    protocol = ParameterServerProtocol(
        FALDRounds(learner, shape), StopRule(max_iterations=int(rounds)), selector=AllAgents(),
        uplink=uplink if uplink is not None else IdealUplink(), downlink="ideal",
        observe=on_round)
    result = sim.run(protocol)
    frame = result.frame
    rows = frame["event"] == "iteration"
    frame.loc[rows, "event"] = np.where(frame.loc[rows, "k_active"] == 0, "silent_round",
                                        "round")
    return frame.drop(columns=["scheduled", "updates"]), result.state
