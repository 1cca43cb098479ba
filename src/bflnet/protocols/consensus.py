"""Synchronous consensus pattern: compute, send to every neighbour, mix."""

from __future__ import annotations

from collections.abc import Generator
from operator import itemgetter
from typing import Any

import numpy as np
import scipy.sparse as sp
import simpy
from simpy.events import URGENT

from bflnet.learners.base import ConsensusLearner, PerNeighbour
from bflnet.protocols.base import AgentSlots, call, check_eval_every, start_consensus
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.wire import CodecSpec
from bflnet.protocols.graphs.mixing import MIXING_NAMES, make_mixing, mixing_from_edges, weight_rows
from bflnet.protocols.stopping import StopRule
from bflnet.radio.transceiver import Sending
from bflnet.simulator.link import checked_bits
from bflnet.simulator.message import Message
from bflnet.simulator.simulation import Outcome, Simulation
from bflnet.validation.checks import check_real

#: What a lost gossip message does (see :class:`ConsensusProtocol`).
LOST = ("reuse", "skip")
#: Above this many nodes a mixing matrix built from a rule name is sparse.
DENSE_MAX = 2000


class ConsensusProtocol:
    """Rounds of gossip with a mixing matrix ``weights`` (K×K, dense or ``scipy.sparse``,
    rows/columns in graph-node order). In each round every node computes (``local_steps``)
    on its own state and stream, sends ``outgoing`` to each neighbour over its own link (in
    parallel; one payload for all, or a :class:`PerNeighbour` mapping), learns what its
    neighbours will decode (``sent``), and when every message of the round has been
    delivered or dropped, every node ``absorb``s. What a lost message does depends on ``lost``:

    * ``"reuse"`` (for payloads that are values, e.g. samples): the neighbour is mixed in
      with the last value received from it; a neighbour never heard from has its weight
      moved to the node itself, so the weights used always sum to one.
    * ``"skip"`` (for payloads that are increments, e.g. CHOCO's compressed differences,
      which must not be applied twice): ``received`` holds only this round's arrivals and
      ``weights`` the node's whole row of the mixing matrix (self and every neighbour,
      arrived or not), so the learner can see, and report, what it missed. With
      ``max_attempts=None`` on the links (ARQ until delivered) nothing is ever missed.

    By default ``lost`` is ``"skip"`` for a learner whose ``increments`` attribute is true
    (CD-BFL, CF-FL) and ``"reuse"`` otherwise.

    A node that is down (``node_outages``, an empty battery) is cut off: every message to
    or from it is lost, and a crash without ``keep_state`` restarts its state. It still
    computes and mixes (with what it has) in the rounds it is down: pausing a down
    node's computation is not modelled yet.

    On a shared medium (``Network(medium=...)``) every node's messages queue for its one
    radio and each is decided when its packets end; with ``broadcast=True`` a node's
    payload (one for all neighbours) is one transmission that every neighbour receives or
    not on its own SINR (a :class:`PerNeighbour` payload is still sent neighbour by
    neighbour). A reception lost under broadcast follows ``lost`` as any lost message:
    no negative acknowledgement, no resending.

    ``round_jitter_s`` > 0: each node starts its round (its computation, then its
    messages) a delay uniform in ``[0, round_jitter_s)`` after the round begins, drawn
    per node and round from the stream ``round_jitter`` (0, the default: every node at
    once, no draw).

    ``weights`` may also be the name of a mixing rule (:data:`MIXING_NAMES`), built for
    the network's graph. A network with mobility needs a name: each round that starts
    after the live graph changed recomputes the matrix for the live graph (an isolated
    node keeps its value), and a neighbour that moved out of range is forgotten (its last
    value is not reused); ``current_weights`` is the matrix in use (sparse above
    :data:`DENSE_MAX` nodes) and ``recomputed`` counts the recomputations.
    """

    def __init__(self, learner: ConsensusLearner, weights: np.ndarray | str, stop: StopRule, *,
                 codec: CodecSpec = None, eval_every: int = 1, progress: bool = False,
                 lost: str | None = None, broadcast: bool = False,
                 round_jitter_s: float = 0.0) -> None:
        check_real("round_jitter_s", round_jitter_s, ge=0, le=1e6)
        self.round_jitter_s = float(round_jitter_s)
        if not isinstance(broadcast, bool):
            raise ValueError(f"broadcast: must be True or False, got {broadcast!r}")
        self.broadcast = broadcast
        increments = bool(getattr(learner, "increments", False))
        if lost is None:
            lost = "skip" if increments else "reuse"
        if lost not in LOST:
            raise ValueError(f"lost: must be one of {', '.join(LOST)}, got {lost!r}")
        if increments and lost == "reuse":
            raise ValueError(f"lost: {type(learner).__name__} sends increments, which must "
                             f"not be reused; use lost='skip'")
        self.lost = lost
        if isinstance(weights, str):
            if weights not in MIXING_NAMES:
                raise ValueError(f"weights: unknown mixing rule {weights!r}; allowed: "
                                 f"{', '.join(MIXING_NAMES)}")
        else:
            if not sp.issparse(weights):
                weights = np.asarray(weights, dtype=float)
            if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
                raise ValueError(f"weights: must be a square matrix, got shape {weights.shape}")
        self.learner = learner
        self.weights = weights
        self.stop = stop
        self.codec = codec
        self.eval_every = check_eval_every(eval_every)
        self.progress = progress
        self.current_weights: Any = None
        self.recomputed = 0

    def _live_rows(self, live: Any) -> tuple[dict[Any, dict[Any, float]], dict[Any, list[Any]]]:
        """The mixing rows and neighbour lists of the live graph as it is now."""
        u, v = live.edges()
        weights = mixing_from_edges(self.weights, live.K, u, v, sparse=live.K > DENSE_MAX)
        self.current_weights = weights
        self.recomputed += 1
        nodes = list(range(live.K))
        neighbours = {k: list(live.neighbours[k]) for k in nodes}
        return _checked_rows(weights, nodes, neighbours), neighbours

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        assert net is not None
        env, rec, learner = sim.env, sim.recorder, self.learner
        nodes = list(net.agents)
        if self.broadcast and net.air is None:
            raise ValueError("broadcast: needs a shared medium (medium=shared); independent "
                             "links carry one message each")
        live = net.live
        if live is not None:
            if not isinstance(self.weights, str):
                raise ValueError("weights: a network with mobility needs a mixing rule name "
                                 "(recomputed as the graph changes), not a fixed matrix")
            version = live.version
            rows, neighbours = self._live_rows(live)
        else:
            weights = self.weights
            if isinstance(weights, str):
                weights = make_mixing(weights, net.graph, sparse=len(nodes) > DENSE_MAX)
            self.current_weights = weights
            neighbours = {k: list(net.graph.neighbors(k)) for k in nodes}
            rows = _checked_rows(weights, nodes, neighbours)
        setup = start_consensus(sim, learner, self.stop, eval_every=self.eval_every,
                                progress=self.progress, nodes=nodes)
        loop, slots = setup.loop, setup.agents
        # a codec that never draws gets no streams (making one costs, and changes nothing)
        codec_rngs = ({k: sim.streams.numpy(f"codec.{k}") for k in nodes}
                      if wire.draws(self.codec) else dict.fromkeys(nodes))
        rec.record("init", **loop.evaluate(0, lambda: learner.evaluate(slots.snapshot()),
                                           node=None))
        last: dict[Any, dict[Any, Any]] = {k: {} for k in nodes}
        skip = self.lost == "skip"
        links, compute = net.links, {k: net.nodes[k].compute_time for k in nodes}
        jitter = self.round_jitter_s
        starts = sim.streams.numpy("round_jitter") if jitter > 0 else None
        delay = dict.fromkeys(nodes, 0.0)
        iteration = 0
        while True:
            if live is not None and live.version != version:
                version = live.version
                rows, neighbours = self._live_rows(live)
                for k in nodes:  # a neighbour out of range is forgotten
                    last[k] = {j: x for j, x in last[k].items() if j in rows[k]}
            iteration += 1
            rec.iteration = iteration
            t0 = env.now
            # Every node computes, then hands one message per neighbour to its link at the
            # end of its computation; the links' schedules are drawn at once (no process
            # per message), and the round waits once per distinct delivery time.
            sends: list[tuple[float, float, int, Any, Any, Message, Any]] = []
            decoded: dict[Any, Any] = {}
            round_end = t0
            if starts is not None:  # each node starts its round uniformly in [0, J)
                delay = dict(zip(nodes, (starts.random(len(nodes)) * jitter).tolist(),
                                 strict=True))
            for k in nodes:
                ready = t0 + self._compute_and_publish(sim, slots, k, neighbours[k],
                                                        codec_rngs[k], iteration, decoded,
                                                        compute[k], sends, delay[k])
                round_end = max(round_end, ready)
            if net.air is not None:
                if skip:
                    for k in nodes:
                        last[k] = {}
                arrived = yield from _over_the_air(sim, sends, iteration, self.broadcast)
                for (_, j, k, _, _), ok in zip(sends, arrived, strict=True):
                    if ok:
                        value = decoded[k]
                        last[j][k] = value[j] if isinstance(value, _PerReceiver) else value
                delivered = sum(arrived)
                if round_end > env.now:
                    yield env.timeout(round_end - env.now)
                dropped = len(sends) - delivered
                self._absorb(sim, slots, nodes, rows, last, skip, iteration)
                metrics = loop.evaluate(iteration, lambda: learner.evaluate(slots.snapshot()),
                                        node=None)
                if loop.end_iteration(iteration, "round", metrics, dropped=dropped):
                    return loop.outcome(None, slots)
                continue
            schedules = []
            for order, (ready, j, k, payload, bits) in enumerate(sends):
                link = links[(k, j)]
                schedule = link.schedule(bits, at=ready)
                # the time a process handed the message at ``ready`` would have woken at
                end = ready + (schedule[1] - ready)
                schedules.append((end, schedule[0], order, link,
                                  Message(k, j, "gossip", payload, bits, iteration), schedule))
            schedules.sort(key=_delivery_order)
            wake = {end: env.timeout(end - t0) for end in {item[0] for item in schedules}
                    if end > t0}
            if skip:
                for k in nodes:
                    last[k] = {}
            delivered = 0
            for end, _, _, link, message, schedule in schedules:
                if end > env.now:
                    yield wake[end]
                if link.complete(message, schedule, deliver=False):
                    delivered += 1
                    value = decoded[message.sender]
                    if isinstance(value, _PerReceiver):
                        value = value[message.receiver]
                    last[message.receiver][message.sender] = value
            if round_end > env.now:
                yield env.timeout(round_end - t0) if env.now == t0 else \
                    env.timeout(round_end - env.now)
            dropped = len(schedules) - delivered
            self._absorb(sim, slots, nodes, rows, last, skip, iteration)
            metrics = loop.evaluate(iteration, lambda: learner.evaluate(slots.snapshot()),
                                    node=None)
            if loop.end_iteration(iteration, "round", metrics, dropped=dropped):
                return loop.outcome(None, slots)

    def _absorb(self, sim: Simulation, slots: AgentSlots, nodes: list[Any],
                rows: dict[Any, dict[Any, float]], last: dict[Any, dict[Any, Any]],
                skip: bool, iteration: int) -> None:
        """Every node mixes what it has (the ``lost`` rule) into its state."""
        learner = self.learner
        for k in nodes:
            known = last[k]
            if skip:
                mix = rows[k]
            else:
                mix = {j: rows[k][j] for j in known}
                mix[k] = 1.0 - sum(mix.values())
            slots.commit(k, call(sim, learner.absorb, k, slots.state(k), known, mix,
                                 node=k, iteration=iteration, what="learner.absorb"))

    def _compute_and_publish(self, sim: Simulation, slots: AgentSlots, node: Any,
                             neighbours: list[Any], rng: Any, iteration: int,
                             decoded: dict[Any, Any], compute: Any,
                             sends: list[Any], delay: float = 0.0) -> float:
        """Node ``node``'s local steps and payloads: appends ``(ready, neighbour, node,
        payload, bits)`` to ``sends``, notes what the neighbours decode, tells the sender
        (``sent``); returns the node's start ``delay`` (its round jitter) plus its compute
        time."""
        learner = self.learner
        state, work = call(sim, learner.local_steps, node, slots.state(node), slots.rng(node),
                           node=node, iteration=iteration, what="learner.local_steps")
        duration = compute(work)
        value = call(sim, learner.outgoing, node, state, node=node, iteration=iteration,
                     what="learner.outgoing")
        duration = delay + duration
        ready = sim.env.now + duration
        if isinstance(value, PerNeighbour):
            missing = [j for j in neighbours if j not in value]
            if missing:
                raise sim.error(ValueError(f"PerNeighbour payload has no entry for "
                                           f"neighbours {missing}"), node=node,
                                iteration=iteration, what="learner.outgoing")
            encoded = {j: wire.encode(self.codec, value[j], rng) for j in neighbours}
            seen: Any = _PerReceiver({j: wire.decode(self.codec, encoded[j][0], value[j])
                                      for j in neighbours})
            sends.extend((ready, j, node, *encoded[j]) for j in neighbours)
        else:
            payload, bits = wire.encode(self.codec, value, rng)
            seen = wire.decode(self.codec, payload, value)
            sends.extend((ready, j, node, payload, bits) for j in neighbours)
        decoded[node] = seen
        state = call(sim, learner.sent, node, state, dict(seen) if isinstance(
            seen, _PerReceiver) else seen, node=node, iteration=iteration, what="learner.sent")
        slots.commit(node, state)
        return duration


def _over_the_air(sim: Simulation, sends: list[tuple[float, Any, Any, Any, int]],
                  iteration: int, broadcast: bool) -> Generator[simpy.Event, Any, list[bool]]:
    """Send one round's messages on the shared medium: whether each of ``sends``
    (``(ready, receiver, sender, payload, bits)``) arrived. Each sender hands its messages
    to its radio at ``ready``, in order; with ``broadcast`` a sender whose payload is the
    same for every neighbour makes one transmission."""
    net = sim.network
    assert net is not None and net.air is not None
    env, air, links = sim.env, net.air, net.links
    arrived = [False] * len(sends)
    by_sender: dict[Any, list[int]] = {}
    for i, (_, _, k, _, _) in enumerate(sends):
        by_sender.setdefault(k, []).append(i)

    def one_for_all(idx: list[int]) -> Generator[simpy.Event, Any, None]:
        ready, _, k, payload, bits = sends[idx[0]]
        if ready > env.now:
            yield env.timeout(ready - env.now)
        got = yield from air.broadcast(k, Message(k, "*", "gossip", payload, bits, iteration),
                                       [sends[i][1] for i in idx], links=links)
        for i in idx:
            arrived[i] = got[sends[i][1]]

    procs = []
    for idx in by_sender.values():
        first = sends[idx[0]][3]
        if broadcast and all(sends[i][3] is first for i in idx):
            procs.append(env.process(one_for_all(idx)))
        else:
            procs.append(_OneByOne(env, links, sends, idx, arrived).done)
    if procs:
        yield env.all_of(procs)
    return arrived


class _OneByOne:
    """One sender's unicasts of a round (``sends[i]`` for ``i`` in ``idx``) handed to its
    radio at ``ready``, in order, driven by the events' callbacks instead of a process
    running ``Link.send`` for each: the events, and their order, are those of such a
    process (its start, at ``URGENT`` priority, and its end, :attr:`done`, included), and
    each message is settled on its link (``Link.settle``: bits, energy, rows) as
    ``Link.send`` would."""

    __slots__ = ("arrived", "done", "env", "idx", "link", "links", "pos", "sends")

    def __init__(self, env: simpy.Environment, links: dict[tuple[Any, Any], Any],
                 sends: list[tuple[float, Any, Any, Any, int]], idx: list[int],
                 arrived: list[bool]) -> None:
        self.env, self.links, self.sends, self.idx = env, links, sends, idx
        self.arrived, self.pos, self.link = arrived, 0, None
        #: Triggered when the last message has ended (as a process's end would be).
        self.done = env.event()
        begin = simpy.Event(env)  # what a process's start is (simpy's Initialize)
        begin._ok, begin._value = True, None
        begin.callbacks.append(self._begin)
        env.schedule(begin, URGENT)

    def _begin(self, _: Any) -> None:
        env, ready = self.env, self.sends[self.idx[0]][0]
        if ready > env.now:
            env.timeout(ready - env.now).callbacks.append(self._next)
        else:
            self._next(None)

    def _next(self, _: Any) -> None:
        _, j, k, _, bits = self.sends[self.idx[self.pos]]
        link = self.link = self.links[(k, j)]
        radio = link.radio
        Sending(radio, [radio.medium.index[j]], checked_bits(bits), True,
                radio.attempts(link.max_attempts), self._sent).wake(None)

    def _sent(self, sending: Any) -> None:
        i, now = self.idx[self.pos], self.env.now
        delivered, start = sending.arrived(), sending.start
        self.link.settle(self.sends[i][4], (now if start is None else start, now,
                                            sending.attempts, sending.on_air, delivered),
                         "gossip")
        self.arrived[i] = delivered
        self.pos += 1
        if self.pos < len(self.idx):
            self._next(None)
        else:
            self.done.succeed()


def _checked_rows(weights: Any, nodes: list[Any], neighbours: dict[Any, list[Any]]
                  ) -> dict[Any, dict[Any, float]]:
    """Each node's weights (:func:`weight_rows`), every neighbour present (0 if absent);
    a one-line error for a weight between non-neighbours."""
    rows = weight_rows(weights, nodes)
    for k in nodes:
        adjacent = set(neighbours[k])
        bad = [j for j in rows[k] if j != k and j not in adjacent]
        if bad:
            raise ValueError(f"weights: non-zero weight between non-neighbours {k} and "
                             f"{bad[0]}")
        rows[k].update({j: 0.0 for j in adjacent if j not in rows[k]})
    return rows


#: Deliveries by end time, then start time, then the order they were handed over.
_delivery_order = itemgetter(0, 1, 2)


class _PerReceiver(dict):
    """What each neighbour decodes of a :class:`PerNeighbour` payload."""
