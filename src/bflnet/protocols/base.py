"""What the three communication patterns share: the learner's set-up with errors that say
where, the agents' states and streams kept at their nodes, interventions (forget
requests), evaluation cadence, stopping, progress and the outcome of a run."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.progress import progress_bar
from bflnet.protocols.stopping import StopRule
from bflnet.simulator.simulation import Outcome, Simulation

NO_METRICS: dict[str, float] = {}


def check_eval_every(eval_every: int) -> int:
    if isinstance(eval_every, bool) or int(eval_every) != eval_every or eval_every < 1:
        raise ValueError(f"eval_every: must be an integer >= 1, got {eval_every!r}")
    return int(eval_every)


def check_merges_several(learner: Any, protocol: str, per_merge: int) -> None:
    """A one-line ``ValueError`` naming ``learner`` and ``protocol`` if ``protocol`` merges
    ``per_merge`` > 1 updates at once and the learner does not declare that this means
    something (``combines``: :data:`~bflnet.learners.base.MERGES_SEVERAL`)."""
    from bflnet.learners.base import MERGES_SEVERAL, needs_combines

    if per_merge > 1:
        needs_combines(learner, protocol, MERGES_SEVERAL,
                       f"merging {per_merge} updates at once")


def check_interventions(interventions: Iterable[Any]) -> tuple[ForgetRequest, ...]:
    out = tuple(interventions)
    for item in out:
        if not isinstance(item, ForgetRequest):
            raise ValueError(f"interventions: must be ForgetRequest events, got {item!r}")
    return out


class AgentSlots:
    """The agents' private states and random streams, kept at their nodes.

    Agent ``k``'s stream is the simulation's stream ``agent.<k>`` (independent of every
    other agent's and of the order of visits); its state is ``init(k, rng)`` on first use.
    """

    def __init__(self, sim: Simulation, init: Callable[[Any, Any], Any],
                 agents: Sequence[Any], *, streams: bool = True) -> None:
        assert sim.network is not None
        self.nodes = sim.network.nodes
        self.streams = sim.streams
        self.init = init
        self.agents = tuple(agents)
        self.uses_streams = streams

    def rng(self, agent: Any) -> Any:
        """Agent ``agent``'s own numpy ``Generator`` (``None`` if the learner uses no
        agent streams)."""
        if not self.uses_streams:
            return None
        node = self.nodes[agent]
        if node.rng is None:
            node.rng = self.streams.numpy(f"agent.{agent}")
        return node.rng

    def state(self, agent: Any) -> Any:
        """Agent ``agent``'s current private state."""
        node = self.nodes[agent]
        if not node.has_state:
            node.state = self.init(agent, self.rng(agent))
            node.has_state = True
        return node.state

    def commit(self, agent: Any, state: Any) -> None:
        """Keep ``state`` as agent ``agent``'s private state."""
        node = self.nodes[agent]
        node.state, node.has_state = state, True

    def snapshot(self) -> dict[Any, Any]:
        """Every agent's current state (initialising those never used)."""
        return {k: self.state(k) for k in self.agents}


class IterationLoop:
    """Book-keeping of one protocol run: records one row per iteration, applies forget
    requests when they are due, decides when to stop."""

    def __init__(self, sim: Simulation, stop: StopRule, *, eval_every: int, progress: bool,
                 desc: str, interventions: Sequence[ForgetRequest] = ()) -> None:
        self.sim = sim
        self.stop = stop
        self.eval_every = eval_every
        self.bar = progress_bar(stop, progress, desc) if progress else None
        self.reason: str | None = None
        self.waiting = sorted(interventions, key=lambda r: (
            r.after_iteration is None, r.after_iteration or 0, r.at_time_s or 0.0))
        self.requested: dict[Any, int] = {}
        self.pending: set[Any] = set()
        self.covered = False

    def due(self, iteration: int) -> bool:
        """Whether metrics are computed at ``iteration``."""
        return iteration % self.eval_every == 0 or iteration == self.stop.max_iterations

    def evaluate(self, iteration: int, metrics: Callable[[], dict[str, float]], *,
                 node: Any, what: str = "evaluate") -> dict[str, float]:
        """Metrics at ``iteration`` if it is an evaluation iteration (else ``{}``)."""
        if not self.due(iteration):
            return NO_METRICS
        try:
            return metrics()
        except Exception as exc:
            raise self.sim.error(exc, node=node, iteration=iteration, what=what) from exc

    def due_requests(self, iteration: int) -> list[ForgetRequest]:
        """The forget requests that happen at the boundary after ``iteration``."""
        now = self.sim.env.now
        ready = [r for r in self.waiting if r.due(iteration, now)]
        for r in ready:
            self.waiting.remove(r)
        return ready

    def apply_forget(self, request: ForgetRequest, forget: Callable[[Any], None],
                     iteration: int) -> None:
        """Hand every agent of ``request`` to ``forget`` and record the request."""
        for agent in request.agents:
            try:
                forget(agent)
            except Exception as exc:
                raise self.sim.error(exc, node=agent, iteration=iteration,
                                     what="learner.forget") from exc
            if agent not in self.requested:
                self.requested[agent] = iteration
            self.pending.add(agent)
            self.sim.recorder.record("forget_request", node=agent)

    def merged(self, update: Any) -> None:
        """Record what a merged update completes (``update.event``)."""
        if update.event is None:
            return
        if update.event == "forgotten":
            self.pending.discard(update.agent)
        self.sim.recorder.record(update.event, node=update.agent)

    def end_iteration(self, iteration: int, event: str, metrics: dict[str, float],
                      **fields: Any) -> bool:
        """Record the iteration's row; True when the run must stop."""
        rec = self.sim.recorder
        if self.requested:
            metrics = {**metrics, "forget_pending": float(len(self.pending))}
        rec.record(event, **fields, **metrics)
        if self.bar is not None:
            self.bar.update(1)
        self.reason = self.stop.reason(
            iteration=iteration, time_s=self.sim.env.now, cum_bits=rec.cum_bits,
            metrics=metrics, covered=self.covered,
            forgotten=bool(self.requested) and not self.pending and not self.waiting)
        if self.reason is not None:
            if self.bar is not None:
                self.bar.close()
            return True
        return False

    def outcome(self, state: Any, agents: AgentSlots | None) -> Outcome:
        """What the run gives back."""
        return Outcome(state=state, agent_states=agents.snapshot() if agents else {},
                       reason=self.reason)


@dataclass
class RunSetup:
    """A started run: its loop and the agents' slots."""

    loop: IterationLoop
    agents: AgentSlots


def start_run(sim: Simulation, stop: StopRule, *, eval_every: int, progress: bool,
              interventions: Sequence[ForgetRequest], init_agent: Callable[[Any, Any], Any],
              agents: Sequence[Any], agent_streams: bool = True) -> RunSetup:
    """The loop and agent slots every pattern starts with (``agent_streams=False``: the
    learner draws from no agent stream, see ``GlobalStateLearner.uses_agent_streams``)."""
    if sim.network is None:
        raise ValueError("network: build_network() must be called before run()")
    loop = IterationLoop(sim, stop, eval_every=eval_every, progress=progress, desc=sim.name,
                         interventions=interventions)
    return RunSetup(loop, AgentSlots(sim, init_agent, agents, streams=agent_streams))


def start_consensus(sim: Simulation, learner: Any, stop: StopRule, *, eval_every: int,
                    progress: bool, nodes: Sequence[Any]) -> RunSetup:
    """The set-up of a consensus run: ``learner.init`` (from the stream ``learner``), the
    loop and slots, and every node's ``init_node`` from that common start, in node order."""
    common = call(sim, learner.init, sim.streams.numpy("learner"), node=None,
                  iteration=0, what="learner.init")
    setup = start_run(sim, stop, eval_every=eval_every, progress=progress, interventions=(),
                      init_agent=lambda k, rng: learner.init_node(k, rng, common),
                      agents=nodes)
    for k in nodes:
        call(sim, setup.agents.state, k, node=k, iteration=0, what="learner.init_node")
    return setup


def call(sim: Simulation, fn: Callable[..., Any], *args: Any, node: Any, iteration: int,
         what: str) -> Any:
    """``fn(*args)``; an exception becomes a ``SimulationError`` naming node and iteration."""
    try:
        return fn(*args)
    except Exception as exc:
        raise sim.error(exc, node=node, iteration=iteration, what=what) from exc
