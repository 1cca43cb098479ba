"""Random-walk pattern: a token carrying the global state hops over D2D links."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import networkx as nx
import simpy
from numpy import ndarray

from bflnet.channels.fixed import FixedRateChannel
from bflnet.channels.ideal import IdealChannel
from bflnet.learners.base import GlobalStateLearner
from bflnet.protocols.base import NO_METRICS, call, check_eval_every, check_interventions, start_run
from bflnet.protocols.checkpoint import WalkCheckpoint, capture, check_resumable, restore
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.wire import CodecSpec
from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.link import Interrupted
from bflnet.simulator.message import Message
from bflnet.simulator.simulation import Outcome, Simulation
from bflnet.validation.checks import check_real

#: Consecutive drops of the token on one hop after which the run is ended as broken.
MAX_TOKEN_RETRIES = 1000
#: Channels whose attempt's duration depends on the bits alone (never on the time), and
#: that never lose a message when they never draw.
_PURE_CHANNELS = (FixedRateChannel, IdealChannel)
#: Stands for the event queue of a clock that does not show it (never empty: the walk
#: then always yields its timeouts to SimPy).
_NEVER_ALONE = (None,)


class RandomWalkProtocol:
    """Token-passing: at each iteration the node holding the token updates the global state
    (``local_update`` from its own private state and stream, then ``merge``; the agent
    keeps its new private state), then passes the token to the node the walk rule picks.

    If the walk stays put no message is sent. A token lost on a hop (all ARQ attempts
    failed) is re-sent by the sender, which kept a copy; the retries cost air time and bits.
    When the next node is not a neighbour (round-robin walks), the token is relayed along
    a shortest path. Iteration ``i`` is recorded when node ``k⁽ⁱ⁾`` has finished computing.
    ``checkpoint_after`` / ``resume`` (:mod:`bflnet.protocols.checkpoint`): the run
    between two iterations, captured for ``on_checkpoint``, or started again from there.
    A forget request with ``hold_token`` makes a forgetting agent that holds the token keep
    it until its forget is complete (the walk rule is not consulted meanwhile).

    Faults (nodes with ``outages``, :mod:`bflnet.faults`): a token lost to an outage on a
    direct hop (the neighbour or the link is down) makes the holder decide again (a new
    walk draw), so the walk goes on over the live graph. A holder that goes down before
    its update is done loses the update (a ``token_lost`` row with the steps lost; the
    iteration does not count, nor does the visit towards cover); ``token_timeout_s``
    later the node that handed it the token regenerates the token from the copy it kept
    (``token_regenerated``) and decides where it goes next. Without outages none of this
    runs.

    Mobility (``Network(mobility=...)``): the walk must be one over the run's live graph
    (:class:`~bflnet.protocols.live_walk.LiveMetropolisHastingsWalk` of ``net.live``); a
    hop goes to a neighbour that is live when the holder decides. An isolated holder
    keeps the token (and computes again), so give it a compute time for the graph to move.
    """

    def __init__(self, learner: GlobalStateLearner, walk: Any, stop: StopRule, *,
                 codec: CodecSpec = None, eval_every: int = 1, start: Any = None,
                 progress: bool = False, interventions: Sequence[ForgetRequest] = (),
                 token_timeout_s: float = 0.1, checkpoint_after: int | None = None,
                 on_checkpoint: Callable[[WalkCheckpoint], None] | None = None,
                 resume: WalkCheckpoint | None = None) -> None:
        self.learner = learner
        #: Hand a :class:`WalkCheckpoint` to ``on_checkpoint`` between iteration
        #: ``checkpoint_after`` and the next; ``resume`` starts from one instead.
        self.checkpoint_after, self.on_checkpoint = checkpoint_after, on_checkpoint
        self.resume = resume
        self.token_timeout_s = check_real("token_timeout_s", token_timeout_s, ge=0, le=1e9)
        self.walk = walk
        self.stop = stop
        self.codec = codec
        self.eval_every = check_eval_every(eval_every)
        self.start = start
        self.progress = progress
        self.interventions = check_interventions(interventions)
        self.visits: list[Any] = []

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        assert net is not None
        env, rec, learner = sim.env, sim.recorder, self.learner
        setup = start_run(sim, self.stop, eval_every=self.eval_every, progress=self.progress,
                          interventions=self.interventions, init_agent=learner.init_agent,
                          agents=net.agents,
                          agent_streams=getattr(learner, "uses_agent_streams", True))
        loop, slots = setup.loop, setup.agents
        resume, seen = self.resume, set()
        previous: Any = None  # the node that handed the token to the holder
        iteration = 0
        if resume is not None or self.on_checkpoint is not None:
            check_resumable(sim)
        if resume is None:
            walk_rng = sim.streams.numpy("protocol.walk")
            # a codec that never draws gets no stream (making one costs, and changes nothing)
            codec_rng = (sim.streams.numpy("codec.token") if wire.draws(self.codec)
                         else None)
            state = call(sim, learner.init, sim.streams.numpy("learner"), node=None,
                         iteration=0, what="learner.init")
            current = self.walk.first_node(walk_rng) if self.start is None else self.start
            if current not in net.nodes:
                raise ValueError(f"start: node {current!r} is not in the graph")
            rec.record("init", node=current, **loop.evaluate(
                0, lambda: learner.evaluate(state), node=current))
        else:
            try:
                walk_rng, codec_rng = restore(sim, resume)
            except (TypeError, KeyError, AttributeError, ValueError, OverflowError) as exc:
                raise ValueError(f"states: the saved run does not fit this one "
                                 f"({type(exc).__name__}: {exc})") from None
            state, current, previous = resume.state, resume.current, resume.previous
            iteration, seen, loop.covered = resume.iteration, set(resume.seen), resume.covered
            if current not in net.nodes:
                raise ValueError(f"states: the token's node {current!r} is not in the graph")
            yield env.timeout(resume.now)
        live, graph = net.live, net.graph
        if live is None:
            adjacency = net.adjacency()
        else:  # the live graph's own map, changed in place as the nodes move
            if getattr(self.walk, "live", None) is not live:
                raise ValueError("walk: a network with mobility needs a walk over its live "
                                 "graph, LiveMetropolisHastingsWalk(net.live)")
            adjacency, graph = live.adjacency, live.graph
        crashes = {k: node.outages for k, node in net.nodes.items()}
        can_crash = any(line is not None for line in crashes.values())
        if resume is None and self.on_checkpoint is None and self._plain(net, loop, can_crash):
            return (yield from self._plain_walk(sim, loop, slots, state, current, adjacency,
                                                walk_rng, codec_rng))
        compute = {k: node.compute_time for k, node in net.nodes.items()}
        links, codec, visits = net.links, self.codec, self.visits
        local_update, merge, evaluate = learner.local_update, learner.merge, learner.evaluate
        agent_state, agent_rng, commit = slots.state, slots.rng, slots.commit
        next_node, timeout = self.walk.next_node, env.timeout
        # SimPy's event queue: while it is empty the walk is the only thing scheduled, and
        # a timeout would only set the clock to now + delay, which the walk does in place
        # (the same float, the same record; the costliest part of a hop saved)
        queue = getattr(env, "_queue", _NEVER_ALONE)
        n_agents = len(net.agents)
        requests = bool(self.interventions)
        holders: set[Any] = set()  # agents of hold_token requests
        while True:
            if iteration == self.checkpoint_after and self.on_checkpoint is not None:
                if loop.requested:
                    raise ValueError("states: a run cannot be saved after a forget request")
                self.on_checkpoint(capture(
                    sim, iteration=iteration, current=current, previous=previous, seen=seen,
                    covered=loop.covered, state=state, walk_rng=walk_rng,
                    codec_rng=codec_rng))
            if requests:
                for request in loop.due_requests(iteration):
                    loop.apply_forget(request, lambda k: commit(k, learner.forget(
                        k, agent_state(k))), iteration)
                    if request.hold_token:
                        holders.update(request.agents)
            iteration += 1
            rec.iteration = iteration
            try:
                update = local_update(current, state, agent_state(current), agent_rng(current))
                new_state = merge(state, (update,))
            except Exception as exc:
                raise sim.error(exc, node=current, iteration=iteration,
                                what="learner.local_update") from exc
            duration = compute[current](update.work)
            outages = crashes[current] if can_crash else None
            if outages is not None and not _up_throughout(outages, env.now, duration):
                # the holder crashed: its update is lost, the token is regenerated
                current = yield from self._regenerate(sim, current, previous, outages,
                                                      update, iteration)
                iteration -= 1
                rec.iteration = iteration
                previous = None
                regenerated = True
            else:
                regenerated = False
                state = new_state
                visits.append(current)
                if not loop.covered:
                    seen.add(current)
                    loop.covered = len(seen) == n_agents
                commit(current, update.agent_state)
                if update.event is not None:
                    if update.agent is None:
                        update.agent = current
                    loop.merged(update)
                if duration:
                    if queue or duration < 0:
                        yield timeout(duration)
                    else:  # nothing else is scheduled: the timeout would only move the clock
                        env._now += duration
            if not regenerated:
                metrics = (loop.evaluate(iteration, lambda s=state: evaluate(s), node=current)
                           if loop.due(iteration) else NO_METRICS)
                if loop.end_iteration(iteration, "iteration", metrics, node=current):
                    return loop.outcome(state, slots)
                if holders and current in holders and current in loop.pending:
                    continue  # a forgetting agent keeps the token until it is done
            decisions = 0
            while True:  # walk decisions until the token moves (or stays)
                nxt = next_node(current, walk_rng)
                if nxt == current:
                    break
                direct = nxt in adjacency[current]
                hops = (nxt,) if nxt in adjacency[current] else \
                nx.shortest_path(graph, current, nxt)[1:]
                payload, bits = wire.encode(codec, state, codec_rng)
                sender, moved = current, True
                for hop in hops:
                    link = links[(sender, hop)]
                    for _ in range(MAX_TOKEN_RETRIES):
                        message = Message(sender, hop, "token", payload, bits, iteration)
                        if link.radio is not None:  # a shared medium: no outages there
                            delivery = yield from link.send(message, deliver=False)
                            if delivery.delivered:
                                break
                            rec.record("token_dropped", node=sender, peer=hop)
                            continue
                        schedule = link.schedule(bits)
                        delay = schedule[1] - env.now
                        if queue or delay < 0:
                            yield timeout(delay)
                        else:
                            env._now += delay
                        if link.complete(message, schedule, deliver=False):
                            break
                        rec.record("token_dropped", node=sender, peer=hop)
                        if direct and schedule.__class__ is Interrupted:
                            moved = False  # an outage: the holder decides again
                            break
                    else:
                        raise sim.error(
                            RuntimeError(f"token dropped {MAX_TOKEN_RETRIES} times in a row"),
                            node=sender, iteration=iteration, what=f"link {sender} -> {hop}")
                    if not moved:
                        break
                    sender = hop
                if moved:
                    state = wire.decode(codec, payload, state)
                    previous, current = current, nxt
                    break
                decisions += 1
                if decisions >= MAX_TOKEN_RETRIES:
                    raise sim.error(RuntimeError(f"no reachable neighbour in {decisions} walk "
                                                 "decisions (outages)"), node=current,
                                    iteration=iteration, what="random walk")

    def _plain(self, net: Any, loop: Any, can_crash: bool) -> bool:
        """Whether :meth:`_plain_walk` runs this walk: nothing moves, no node or link can
        fail, no forget request, no progress bar."""
        return (net.live is None and not can_crash and not self.interventions
                and loop.bar is None
                and all(link.outages is None for link in net.links.values()))

    def _plain_walk(self, sim: Simulation, loop: Any, slots: Any, state: Any, current: Any,
                    adjacency: dict[Any, frozenset[Any]], walk_rng: Any, codec_rng: Any
                    ) -> Generator[simpy.Event, Any, Outcome]:
        """:meth:`process`'s loop when no node or link can fail, nothing moves, no forget
        request is pending and no progress bar is drawn (the common case): the same steps
        in the same order, with the same draws, times and rows, the per-iteration
        book-keeping inlined (the walk's cost over bare SimPy is mostly its Python calls),
        and the clock moved in place while nothing else is scheduled."""
        net = sim.network
        assert net is not None
        env, rec, learner, stop = sim.env, sim.recorder, self.learner, loop.stop
        queue = getattr(env, "_queue", _NEVER_ALONE)  # empty: the walk is alone
        graph, links, codec, visits = net.graph, net.links, self.codec, self.visits
        nodes, init_agent = net.nodes, slots.init
        rng_of = slots.rng
        local_update, merge, evaluate = learner.local_update, learner.merge, learner.evaluate
        next_node, timeout, encode, decode = self.walk.next_node, env.timeout, wire.encode, \
            wire.decode
        record, eval_every = rec.record_iteration, loop.eval_every
        max_iterations = stop.max_iterations
        last_due = -1 if max_iterations is None else max_iterations
        stop_at = float("inf") if max_iterations is None else max_iterations
        # the stopping rules a plain walk checks itself; any other goes through stop.reason
        simple_stop = (stop.max_time_s is None and stop.max_bits is None and stop.until is None
                       and not stop.forgotten)
        stop_on_cover = stop.cover
        n_agents = len(net.agents)
        seen: set[Any] = set()
        covered = loop.covered
        iteration = 0
        uses_streams = slots.uses_streams
        # per node: its compute time as one call (the model's own, when the node has no
        # battery and the model draws nothing: what Node.compute_time would call)
        durations = {k: (node.compute.duration if node.battery is None
                         and not node.compute.draws else node.compute_time)
                     for k, node in nodes.items()}
        # per link, on first use: what a one-packet message needs when the channel never
        # draws nor loses it (Link.schedule's first case and Link.settle, inlined)
        fast_links: dict[Any, Any] = {}
        record_messages = rec.record_messages
        # a learner without its own evaluate has no metrics (the base class's {})
        evaluates = getattr(evaluate, "__func__", None) is not GlobalStateLearner.evaluate
        while True:
            iteration += 1
            rec.iteration = iteration
            node = nodes[current]
            if uses_streams:
                rng = node.rng
                if rng is None:
                    rng = rng_of(current)
            else:
                rng = None
            try:
                if not node.has_state:
                    node.state = init_agent(current, rng)
                    node.has_state = True
                update = local_update(current, state, node.state, rng)
                state = merge(state, (update,))
            except Exception as exc:
                raise sim.error(exc, node=current, iteration=iteration,
                                what="learner.local_update") from exc
            duration = durations[current](update.work)
            visits.append(current)
            if not covered:
                seen.add(current)
                covered = loop.covered = len(seen) == n_agents
            node.state, node.has_state = update.agent_state, True
            if update.event is not None:
                if update.agent is None:
                    update.agent = current
                loop.merged(update)
            if duration:
                if queue or duration < 0:
                    yield timeout(duration)
                else:
                    env._now += duration
            if evaluates and (iteration % eval_every == 0 or iteration == last_due):
                try:
                    metrics = evaluate(state)
                except Exception as exc:
                    raise sim.error(exc, node=current, iteration=iteration,
                                    what="evaluate") from exc
            else:
                metrics = NO_METRICS
            block = rec.block
            if block is not None and not metrics and not rec.context:
                # Recorder.record_iteration's common case: a tuple on the open block
                block.append((env._now, iteration, "iteration", rec.cum_bits,
                              rec.cum_bits_delivered, current))
            else:
                record("iteration", current, metrics, env._now)
            if simple_stop:
                if iteration >= stop_at:
                    loop.reason = "max_iterations"
                    return loop.outcome(state, slots)
                if stop_on_cover and covered:
                    loop.reason = "cover"
                    return loop.outcome(state, slots)
            else:
                loop.reason = stop.reason(iteration=iteration, time_s=env.now,
                                          cum_bits=rec.cum_bits, metrics=metrics,
                                          covered=covered)
                if loop.reason is not None:
                    return loop.outcome(state, slots)
            nxt = next_node(current, walk_rng)
            if nxt == current:
                continue
            if codec is None and state.__class__ is ndarray:  # wire.encode's first case
                payload, bits = state, 64 * state.size
            else:
                payload, bits = encode(codec, state, codec_rng)
            # a link met before (the hop loop below keeps only links' entries, so this
            # is a direct hop) whose last duration is for these bits
            fast = fast_links.get((current, nxt))
            if fast.__class__ is list and bits.__class__ is int and bits == fast[3]:
                medium, now = fast[0], env._now
                busy = medium.busy_until
                end = (busy if busy > now else now) + fast[4]
                medium.busy_until = end
                delay = end - now
                if queue or delay < 0:
                    yield timeout(delay)
                else:
                    env._now += delay
                rec.cum_bits += bits
                rec.cum_bits_delivered += bits
                if payload is not state:
                    state = decode(codec, payload, state)
                current = nxt
                continue
            hops = (nxt,) if nxt in adjacency[current] else \
                nx.shortest_path(graph, current, nxt)[1:]
            sender = current
            for hop in hops:
                key = (sender, hop)
                fast = fast_links.get(key)
                if fast is None:
                    fast = fast_links[key] = _fast_link(links[key], record_messages)
                if fast.__class__ is list and bits.__class__ is int and 0 <= bits <= fast[2]:
                    # Link.schedule's one-packet case: the channel neither draws nor loses
                    medium, now = fast[0], env._now
                    busy = medium.busy_until
                    start = busy if busy > now else now
                    if bits == fast[3]:  # a channel whose duration depends on bits only
                        step, lost = fast[4], False
                    else:
                        step, lost = fast[1](bits, start, None)
                        if fast[5] and not lost:
                            fast[3], fast[4] = bits, step
                    if not lost:
                        end = start + step
                        medium.busy_until = end
                        delay = end - now
                        if queue or delay < 0:
                            yield timeout(delay)
                        else:
                            env._now += delay
                        # Link.settle: nothing but the counters on such a link
                        rec.cum_bits += bits
                        rec.cum_bits_delivered += bits
                        sender = hop
                        continue
                link = links[key]
                for _ in range(MAX_TOKEN_RETRIES):
                    schedule = link.schedule(bits)
                    delay = schedule[1] - env.now
                    if queue or delay < 0:
                        yield timeout(delay)
                    else:
                        env._now += delay
                    if link.settle(bits, schedule, "token"):
                        break
                    rec.record("token_dropped", node=sender, peer=hop)
                else:
                    raise sim.error(
                        RuntimeError(f"token dropped {MAX_TOKEN_RETRIES} times in a row"),
                        node=sender, iteration=iteration, what=f"link {sender} -> {hop}")
                sender = hop
            if payload is not state:  # (wire.decode gives back a raw array as it is)
                state = decode(codec, payload, state)
            current = nxt

    def _regenerate(self, sim: Simulation, holder: Any, previous: Any, outages: Any,
                    update: Any, iteration: int) -> Generator[simpy.Event, Any, Any]:
        """The token holder ``holder`` went down before its update was done: the update
        is lost (a ``fault`` row ``token_lost`` with the work lost), and after
        ``token_timeout_s`` the node that handed it the token (or the holder itself, once
        it is up again, when there is none) regenerates the token from the copy it kept
        (``token_regenerated``); returns the new holder."""
        env, rec = sim.env, sim.recorder
        crash = env.now if not outages.is_up(env.now) else outages.next_change(env.now)
        yield env.timeout(crash - env.now)
        rec.record("fault", node=holder, kind="token_lost", lost_steps=update.work.steps)
        yield env.timeout(self.token_timeout_s)
        keeper = previous if previous is not None else holder
        line = sim.network.nodes[keeper].outages
        while line is not None and not line.is_up(env.now):
            up = line.next_change(env.now)
            if up == float("inf"):
                raise sim.error(RuntimeError("the token was lost and its keeper is down for "
                                             "good"), node=keeper, iteration=iteration,
                                what="random walk")
            yield env.timeout(up - env.now)
        rec.record("fault", node=keeper, kind="token_regenerated", peer=holder)
        return keeper


def _fast_link(link: Any, record_messages: bool) -> list[Any] | bool:
    """``[medium, channel.attempt, mtu_bits, bits, duration, pure]`` of a link whose
    one-packet messages need only the channel's duration and the bit counters (an
    independent d2d link without outages or battery, over a channel that never draws,
    no message rows), else False. ``pure``: the duration depends on the bits alone (an
    ideal or fixed-rate channel), so the last ``(bits, duration)`` is kept."""
    channel = link.channel
    if (link.radio is not None or link.outages is not None or link.energy is not None
            or record_messages or link.direction != "d2d" or channel.draws):
        return False
    pure = channel.__class__ in _PURE_CHANNELS
    return [link.medium, channel.attempt, link.mtu_bits, None, None, pure]


def _up_throughout(outages: Any, start: float, duration: float) -> bool:
    """Whether a node with these outages is up over ``[start, start + duration]``."""
    return outages.is_up(start) and outages.next_change(start) > start + duration
