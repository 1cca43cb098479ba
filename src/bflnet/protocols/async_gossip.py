"""Asynchronous pairwise gossip: every node on its own Poisson clock, one neighbour a time.

Node ``k`` wakes after exponential waiting times of rate ``rate[k]`` (the waiting times
and its choice of neighbour come from its own stream ``gossip.<k>``), picks one of its
current neighbours uniformly (the live ones on a network with mobility; a node without
neighbours lets the tick pass) and starts a push-pull exchange over the real links:

1. ``i`` runs ``local_steps`` (its compute time passes), encodes ``outgoing`` and sends it
   to ``j`` (link ``i -> j``: bits, latency, loss and ARQ as in every pattern).
2. When it arrives, ``j`` encodes its own ``outgoing``, mixes at once with
   ``absorb_pair(j, ..., mine=x_j, theirs=x_i, weight)`` and sends ``x_j`` back (link
   ``j -> i``).
3. When the reply arrives, ``i`` mixes with ``absorb_pair(i, ..., mine=x_i, theirs=x_j,
   weight)``.

With ``weight = 1/2`` both ends reach ``(x_i + x_j) / 2``; any ``weight`` in ``(0, 1)``
is a symmetric pairwise update. A learner whose ``absorb_pair`` is ``x + weight · (theirs −
mine)`` (``ConsensusAveraging``) moves the two ends by exactly opposite amounts, so **the
network's sum, hence its average, is kept exactly when both messages arrive**, also when
a node is in several exchanges at once (no locking). A lost request (ARQ gave up) changes
nothing. **A lost reply breaks the average**: ``j`` has already mixed, ``i`` has not. While
a reply is in the air the same holds for a moment: metrics taken then are off by the
pending halves, which is why every row carries ``replies_in_flight`` (exchanges whose
responder has mixed and whose reply has not yet arrived); with none in flight and no reply
lost, the sum is the initial one. Each exchange is one ``exchange`` row when it ends
(``node`` = ``i``, ``peer`` = ``j``, ``outcome`` = ``ok`` / ``request_lost`` /
``reply_lost``, ``dropped`` = 0 / 1, ``replies_in_flight``, and the learner's metrics every
``eval_every`` exchanges), so the rows say which exchanges broke the average. The
iteration count is the number of exchanges ended. With ``max_time_s`` the run ends at
exactly that time with an ``end`` row (exchanges still in flight are abandoned); other
limits are checked as each exchange ends.

A message handed to a link on an edge that is live then is sent whole even if the nodes
move apart meanwhile (a fading channel's distance is the one at the last position update).

**Broadcast gossip** (``broadcast=True``, on a shared medium; Aysal, Yildiz, Sarwate and
Scaglione, "Broadcast gossip algorithms for consensus"): at each tick node ``i`` runs its
local steps and broadcasts ``outgoing`` once to all its neighbours (bits, air time and
energy counted once); every neighbour ``j`` that receives it mixes
``absorb_pair(j, ..., mine=x_j, theirs=x_i, weight)`` (``x_j`` its current value, not
encoded: it sends nothing), and ``i`` does not mix, so the network's average is kept only
in expectation, not exactly. Nobody acknowledges a broadcast: a lost reception is
skipped (that neighbour does not mix), no negative acknowledgement, no resending. Each
broadcast is one ``exchange`` row (``peer="*"``, ``outcome="broadcast"``, ``received``
and ``dropped`` receptions).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import simpy

from bflnet.learners.base import ConsensusLearner, PerNeighbour
from bflnet.protocols.base import AgentSlots, IterationLoop, call, check_eval_every, start_consensus
from bflnet.protocols.coding import wire
from bflnet.protocols.coding.wire import CodecSpec
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.message import Message
from bflnet.simulator.simulation import Outcome, Simulation
from bflnet.validation.checks import check_real

#: Largest clock rate (wake-ups per second) accepted.
MAX_RATE = 1e9


class AsyncGossipProtocol:
    """Asynchronous pairwise gossip of a :class:`ConsensusLearner` (see the module
    docstring). ``rate``: wake-ups per second, one number for every node or
    ``{node: rate}``; ``weight``: the pairwise mixing weight in ``(0, 1)``.

    >>> import networkx as nx
    >>> from bflnet.learners.gossip.averaging import ConsensusAveraging
    >>> from bflnet.simulator import Simulation
    >>> sim = Simulation(0)
    >>> _ = sim.build_network(nx.path_graph(2))
    >>> result = sim.run(AsyncGossipProtocol(ConsensusAveraging({0: 1.0, 1: 3.0}),
    ...                                      StopRule(max_iterations=1)))
    >>> [float(s.x[0]) for s in result.agent_states.values()]
    [2.0, 2.0]
    """

    def __init__(self, learner: ConsensusLearner, stop: StopRule, *,
                 rate: float | Mapping[Any, float] = 1.0, weight: float = 0.5,
                 codec: CodecSpec = None, eval_every: int = 1, progress: bool = False,
                 broadcast: bool = False) -> None:
        if not isinstance(broadcast, bool):
            raise ValueError(f"broadcast: must be True or False, got {broadcast!r}")
        self.broadcast = broadcast
        if getattr(learner, "increments", False):
            raise ValueError(f"learner: {type(learner).__name__} sends increments, which "
                             f"pairwise asynchronous gossip cannot keep consistent")
        if isinstance(rate, Mapping):
            self.rate: float | dict[Any, float] = {
                k: check_real(f"rate[{k!r}]", r, gt=0, le=MAX_RATE) for k, r in rate.items()}
        else:
            self.rate = check_real("rate", rate, gt=0, le=MAX_RATE)
        self.weight = check_real("weight", weight, gt=0, lt=1)
        self.learner = learner
        self.stop = stop
        self.codec = codec
        self.eval_every = check_eval_every(eval_every)
        self.progress = progress

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        net = sim.network
        assert net is not None
        nodes = list(net.agents)
        if self.broadcast and net.air is None:
            raise ValueError("broadcast: needs a shared medium (medium=shared); independent "
                             "links carry one message each")
        if isinstance(self.rate, dict):
            missing = [k for k in nodes if k not in self.rate]
            if missing:
                raise ValueError(f"rate: no rate for node {missing[0]!r}")
            rates = self.rate
        else:
            rates = dict.fromkeys(nodes, self.rate)
        learner = self.learner
        setup = start_consensus(sim, learner, self.stop, eval_every=self.eval_every,
                                progress=self.progress, nodes=nodes)
        run = _Run(self, sim, setup.loop, setup.agents)
        sim.recorder.record("init", **run.metrics(0, None))
        for k in nodes:
            sim.env.process(run.clock(k, rates[k]))
        if self.stop.max_time_s is not None:
            sim.env.process(run.deadline(self.stop.max_time_s))
        yield run.done
        return setup.loop.outcome(None, setup.agents)


class _Run:
    """One run's book-keeping: the clocks, the exchanges in flight, the end."""

    def __init__(self, protocol: AsyncGossipProtocol, sim: Simulation, loop: IterationLoop,
                 slots: AgentSlots) -> None:
        net = sim.network
        assert net is not None
        self.p, self.sim, self.loop, self.slots = protocol, sim, loop, slots
        self.env, self.rec, self.links = sim.env, sim.recorder, net.links
        # each node's compute time: its own stream for a model that draws, and its
        # battery charged for the work
        self.compute = {k: node.compute_time for k, node in net.nodes.items()}
        self.neighbours: Mapping[Any, tuple[Any, ...]] = (
            net.live.neighbours if net.live is not None
            else {k: tuple(net.graph.neighbors(k)) for k in net.agents})
        self.codec_rngs = {k: sim.streams.numpy(f"codec.{k}") for k in net.agents}
        self.done = sim.env.event()
        self.iteration = 0
        #: Exchanges whose responder has mixed and whose reply is still in the air.
        self.replies = 0

    def metrics(self, iteration: int, node: Any) -> dict[str, float]:
        learner = self.p.learner
        return self.loop.evaluate(iteration, lambda: learner.evaluate(self.slots.snapshot()),
                                  node=node)

    def clock(self, k: Any, rate: float) -> Generator[simpy.Event, Any, None]:
        """Node ``k``'s Poisson clock: at each tick an exchange with a uniform neighbour."""
        env, rng, scale = self.env, self.sim.streams.numpy(f"gossip.{k}"), 1.0 / rate
        neighbours, done = self.neighbours, self.done
        while True:
            yield env.timeout(rng.exponential(scale))
            if done.triggered:
                return
            nbrs = neighbours[k]
            n = len(nbrs)
            if n == 0:
                continue
            if self.p.broadcast:
                env.process(self.broadcast(k, nbrs))
                continue
            i = int(rng.random() * n)
            env.process(self.exchange(k, nbrs[i if i < n else n - 1]))

    def _publish(self, node: Any, peer: Any) -> tuple[Any, int, Any]:
        """``node``'s payload for ``peer``: ``(payload, bits, what peer decodes)``; the
        node's state after ``sent`` is kept."""
        p, sim, slots, it = self.p, self.sim, self.slots, self.iteration
        state = slots.state(node)
        value = call(sim, p.learner.outgoing, node, state, node=node, iteration=it,
                     what="learner.outgoing")
        if isinstance(value, PerNeighbour):
            value = value[peer]
        payload, bits = wire.encode(p.codec, value, self.codec_rngs[node])
        decoded = wire.decode(p.codec, payload, value)
        slots.commit(node, call(sim, p.learner.sent, node, state, decoded, node=node,
                                iteration=it, what="learner.sent"))
        return payload, bits, decoded

    def _mix(self, node: Any, peer: Any, mine: Any, theirs: Any) -> None:
        p, slots = self.p, self.slots
        slots.commit(node, call(self.sim, p.learner.absorb_pair, node, slots.state(node), peer,
                                mine, theirs, p.weight, node=node, iteration=self.iteration,
                                what="learner.absorb_pair"))

    def _local_work(self, i: Any) -> Generator[simpy.Event, Any, bool]:
        """``i``'s local steps, committed, then their compute time; False if the run ended
        meanwhile."""
        sim, slots = self.sim, self.slots
        state, work = call(sim, self.p.learner.local_steps, i, slots.state(i), slots.rng(i),
                           node=i, iteration=self.iteration, what="learner.local_steps")
        slots.commit(i, state)
        duration = self.compute[i](work)
        if duration:
            yield self.env.timeout(duration)
            if self.done.triggered:
                return False
        return True

    def exchange(self, i: Any, j: Any) -> Generator[simpy.Event, Any, None]:
        """One push-pull exchange started by ``i`` with ``j``."""
        env, done = self.env, self.done
        if not (yield from self._local_work(i)):
            return
        payload, bits, mine_i = self._publish(i, j)
        link = self.links[(i, j)]
        if link.radio is not None:  # a shared medium: decided when the packets end
            yield from self._exchange_on_air(i, j, payload, bits, mine_i)
            return
        schedule = link.schedule(bits)
        yield env.timeout(schedule[1] - env.now)
        if done.triggered:
            return
        if not link.complete(Message(i, j, "gossip", payload, bits, self.iteration), schedule,
                             deliver=False):
            self.end(i, j, "request_lost")
            return
        payload, bits, mine_j = self._publish(j, i)
        self._mix(j, i, mine_j, mine_i)
        self.replies += 1
        link = self.links[(j, i)]
        schedule = link.schedule(bits)
        yield env.timeout(schedule[1] - env.now)
        if done.triggered:
            return
        self.replies -= 1
        if not link.complete(Message(j, i, "gossip_reply", payload, bits, self.iteration),
                             schedule, deliver=False):
            self.end(i, j, "reply_lost")
            return
        self._mix(i, j, mine_i, mine_j)
        self.end(i, j, "ok")

    def broadcast(self, i: Any, nbrs: tuple[Any, ...]) -> Generator[simpy.Event, Any, None]:
        """One broadcast of ``i``'s value to ``nbrs``; each receiver mixes it in."""
        sim, slots, p, done = self.sim, self.slots, self.p, self.done
        learner, it = p.learner, self.iteration
        if not (yield from self._local_work(i)):
            return
        state = slots.state(i)
        value = call(sim, learner.outgoing, i, state, node=i, iteration=it,
                     what="learner.outgoing")
        if isinstance(value, PerNeighbour):
            raise sim.error(ValueError("broadcast: needs one payload for every neighbour, "
                                       "got a PerNeighbour payload"), node=i, iteration=it,
                            what="learner.outgoing")
        payload, bits = wire.encode(p.codec, value, self.codec_rngs[i])
        theirs = wire.decode(p.codec, payload, value)
        slots.commit(i, call(sim, learner.sent, i, state, theirs, node=i, iteration=it,
                             what="learner.sent"))
        net = sim.network
        assert net is not None and net.air is not None
        got = yield from net.air.broadcast(i, Message(i, "*", "gossip", payload, bits, it),
                                       list(nbrs), links=self.links)
        if done.triggered:
            return
        for j in nbrs:
            if got[j]:
                mine = call(sim, learner.outgoing, j, slots.state(j), node=j,
                            iteration=self.iteration, what="learner.outgoing")
                if isinstance(mine, PerNeighbour):
                    mine = mine[i]
                self._mix(j, i, mine, theirs)
        received = sum(got.values())
        self.iteration += 1
        iteration = self.rec.iteration = self.iteration
        metrics = self.metrics(iteration, i)
        if self.loop.end_iteration(iteration, "exchange", metrics, node=i, peer="*",
                                   outcome="broadcast", received=received,
                                   dropped=len(got) - received,
                                   replies_in_flight=self.replies):
            done.succeed()

    def _exchange_on_air(self, i: Any, j: Any, payload: Any, bits: int, mine_i: Any
                         ) -> Generator[simpy.Event, Any, None]:
        """The rest of an exchange on a shared medium (each message through its sender's
        radio)."""
        done = self.done
        request = yield from self.links[(i, j)].send(
            Message(i, j, "gossip", payload, bits, self.iteration), deliver=False)
        if done.triggered:
            return
        if not request.delivered:
            self.end(i, j, "request_lost")
            return
        payload, bits, mine_j = self._publish(j, i)
        self._mix(j, i, mine_j, mine_i)
        self.replies += 1
        reply = yield from self.links[(j, i)].send(
            Message(j, i, "gossip_reply", payload, bits, self.iteration), deliver=False)
        if done.triggered:
            return
        self.replies -= 1
        if not reply.delivered:
            self.end(i, j, "reply_lost")
            return
        self._mix(i, j, mine_i, mine_j)
        self.end(i, j, "ok")

    def end(self, i: Any, j: Any, outcome: str) -> None:
        """Record an exchange that ended; stop the run if the stop rule says so."""
        self.iteration += 1
        iteration = self.rec.iteration = self.iteration
        metrics = self.metrics(iteration, i)
        if self.loop.end_iteration(iteration, "exchange", metrics, node=i, peer=j,
                                   outcome=outcome, dropped=int(outcome != "ok"),
                                   replies_in_flight=self.replies):
            self.done.succeed()

    def deadline(self, max_time_s: float) -> Generator[simpy.Event, Any, None]:
        """End the run at ``max_time_s`` with an ``end`` row carrying the metrics."""
        yield self.env.timeout(max_time_s)
        yield self.env.timeout(0)  # after whatever else is due then (e.g. a position update)
        if self.done.triggered:
            return
        learner, loop = self.p.learner, self.loop
        metrics = call(self.sim, learner.evaluate, self.slots.snapshot(), node=None,
                       iteration=self.iteration, what="evaluate")
        self.rec.record("end", replies_in_flight=self.replies, **metrics)
        loop.reason = "max_time_s"
        if loop.bar is not None:
            loop.bar.close()
        self.done.succeed()
