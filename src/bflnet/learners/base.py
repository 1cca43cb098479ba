"""Learner interfaces. Learners do the maths only: no SimPy, no graph, no channel.

Two kinds, matching the two ways state moves through a network:

* :class:`GlobalStateLearner` (DSVGD, G-FVL, FedAvg, ...): one global state travels,
  either through a parameter server or with a random-walk token; the scheduled agent
  updates it (``local_update``) and the holder folds updates in (``merge``).
* :class:`ConsensusLearner` (CD-BFL, DSGLD, CF-FL, consensus averaging): every node keeps
  its own state, sends a payload to its neighbours and mixes what it receives.

**Agent state lives at the node, not in the learner.** What an agent keeps between its
turns (a local likelihood factor, optimiser state, public copies) is an explicit value
that the protocol keeps at the agent's node and hands to the learner with the agent's own
random stream; the learner returns the new value. A learner object holds only
hyper-parameters and data handles, and its hooks are pure functions of their arguments
(plus the draws from the stream they are given). So two updates of one agent can be in
flight at once, a crashed node can lose its state, and a run can be checkpointed.

Arrays that cross the network ("wire arrays") are numpy arrays or torch tensors, or a
tuple or dict of them (a structured payload: the wire counts the bits of every part); a
learner treats arrays it receives as read-only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # torch is imported only by the learners that use it
    import numpy as np
    import torch

Array: TypeAlias = "np.ndarray | torch.Tensor"
#: What one message carries: an array, or a tuple or dict of arrays.
Payload: TypeAlias = "Array | tuple[Array, ...] | dict[str, Array]"


@dataclass(frozen=True, slots=True)
class Work:
    """Work a learner reports for one call: local steps and/or floating-point operations.
    The node's compute model turns it into simulated seconds."""

    steps: int = 0
    flops: float = 0.0

    def __add__(self, other: Work) -> Work:
        return Work(self.steps + other.steps, self.flops + other.flops)


NO_WORK = Work()


@dataclass(slots=True)
class Update:
    """What an agent's local computation produces.

    ``payload`` is sent to the state's holder; ``agent_state`` is the agent's private
    state after this update, which the protocol keeps at the agent's node once the update
    has been merged (an update lost on the way changes nothing). ``event`` names what the
    update completes, e.g. ``"forgotten"`` (recorded as a row when it is merged).
    """

    payload: Payload
    work: Work = NO_WORK
    agent: Any = None
    agent_state: Any = None
    metrics: dict[str, float] | None = None
    event: str | None = None


class Combines(StrEnum):
    """How a :class:`GlobalStateLearner`'s global state combines the agents'
    contributions: what a protocol may do with states and updates besides handing them to
    the learner's own ``merge``. A learner declares it as the class attribute
    ``combines``; the protocols read it (``GossipAdapter`` scales or averages by it, the
    parameter server merges several updates in one round only if it allows that), and
    those that need it refuse a learner that declares nothing usable, in one line.

    ================  ==============================================  ===================
    value             the global state is ...                          gossip
    ================  ==============================================  ===================
    ``ADDITIVE``      prior + the sum of the agents' contributions     increments × K,
                      (natural parameters, sufficient statistics,      then averaged: every
                      exact G-FVL); ``merge`` adds the updates         node reaches the sum
    ``AVERAGED``      an average over the agents (FedAvg's model,      averaged as is
                      EM-TDAMP's aggregated Gaussians); ``merge``
                      averages the updates' deltas
    ``PARTICLES``     a set of particles (SVGD); ``merge`` moves       refused (an average
                      them by the mean of the updates' moves           of particle sets is
                                                                       no particle set)
    ``SEQUENTIAL``    only meaningful as the learner's own ``merge``   refused
                      of one update at a time
    ================  ==============================================  ===================

    The random walk hands the state from holder to holder and merges one update at a
    time: every declaration works there, and none is needed. The parameter server
    merges one update per round with any declaration; a round of several agents needs
    ``ADDITIVE``, ``AVERAGED`` or ``PARTICLES``.

    >>> class Tally(GlobalStateLearner):  # counts: prior 0 + each agent's count
    ...     combines = Combines.ADDITIVE
    ...     def init(self, rng): return np.zeros(1)
    ...     def local_update(self, agent, state, agent_state, rng):
    ...         return Update(np.ones(1), agent=agent)
    ...     def merge(self, state, updates): return state + sum(u.payload for u in updates)
    >>> combines_of(Tally())
    <Combines.ADDITIVE: 'additive'>
    """

    ADDITIVE = "additive"
    AVERAGED = "averaged"
    PARTICLES = "particles"
    SEQUENTIAL = "sequential"


#: The declarations under which several updates merged at once mean something.
MERGES_SEVERAL = (Combines.ADDITIVE, Combines.AVERAGED, Combines.PARTICLES)


class GlobalStateLearner(ABC):
    """A learner whose global state is updated by one scheduled agent at a time.

    Besides its hooks a learner declares how its state combines the agents'
    contributions (``combines``, a :class:`Combines`; the protocols read it) and whether
    it draws from the agents' streams (``uses_agent_streams``).

    >>> import numpy as np
    >>> class Mean(GlobalStateLearner):  # running mean of the agents' numbers
    ...     combines = Combines.SEQUENTIAL  # [sum, count]: only merge() combines it
    ...     def __init__(self, values): self.values = values
    ...     def init(self, rng): return np.zeros(2)          # [sum, count]
    ...     def local_update(self, agent, state, agent_state, rng):
    ...         return Update(np.array([self.values[agent], 1.0]), Work(steps=1), agent)
    ...     def merge(self, state, updates):
    ...         return state + sum(u.payload for u in updates)
    >>> learner = Mean({0: 1.0, 1: 3.0})
    >>> s = learner.init(None)
    >>> for agent in (0, 1): s = learner.merge(s, [learner.local_update(agent, s, None, None)])
    >>> s[0] / s[1]
    np.float64(2.0)
    """

    #: ``False`` for a learner that never draws from the agents' streams: the protocols
    #: then hand ``None`` as ``rng`` to ``init_agent`` and ``local_update`` and skip
    #: making the streams (a saving in Monte-Carlo studies of many short runs).
    uses_agent_streams: bool = True
    #: How the global state combines the agents' contributions (:class:`Combines`);
    #: ``None``: not declared, and the protocols that need it (gossip, a parameter-server
    #: round of several agents) refuse the learner.
    combines: Combines | None = None
    #: ``True`` if several updates merge as the state plus the plain mean of their
    #: payloads (one array of one shape each), so that a protocol may hand
    #: :meth:`merge_mean` an estimate of that mean instead, noise and all (an
    #: over-the-air uplink); else ``False`` or a short reason why not, which the
    #: protocols quote when they refuse the learner (:func:`needs_mean_merge`).
    merges_mean: bool | str = False

    @abstractmethod
    def init(self, rng: np.random.Generator) -> Any:
        """The initial global state; ``rng`` is the learner's own stream."""

    def init_agent(self, agent: Any, rng: np.random.Generator) -> Any:
        """Agent ``agent``'s initial private state (``None``: the agent keeps nothing);
        ``rng`` is the agent's own stream."""
        return None

    @abstractmethod
    def local_update(self, agent: Any, state: Any, agent_state: Any,
                     rng: np.random.Generator) -> Update:
        """Agent ``agent``'s computation on the global ``state`` it received, from its own
        ``agent_state``, drawing from its own stream ``rng``. Returns the payload and the
        agent's new state in an :class:`Update`; must not change ``agent_state``."""

    @abstractmethod
    def merge(self, state: Any, updates: Sequence[Update]) -> Any:
        """The new global state from the old one and the updates that arrived."""

    def merge_weighted(self, state: Any, updates: Sequence[Update],
                       weights: Sequence[float]) -> Any:
        """:meth:`merge` with update ``i`` counted with weight ``weights[i]`` (an
        asynchronous server's staleness weights); for a learner that averages deltas,
        ``state + (1/n) Σ_i weights[i] Δ_i``. Learners for which a weighted merge means
        nothing do not override it, and a protocol that needs it refuses them (see
        :func:`supports_weighted_merge`)."""
        raise NotImplementedError(f"{type(self).__name__} has no weighted merge")

    def merge_mean(self, state: Any, mean: Any, channel_var: float,
                   rng: np.random.Generator) -> tuple[Any, float]:
        """For a learner with ``merges_mean``: the new state from an estimate ``mean`` of
        the updates' mean payload carrying Gaussian noise of variance ``channel_var`` per
        coordinate, with the server's stream ``rng`` for what the learner adds; returns
        ``(state, variance added)``. By default :meth:`merge` of one update whose payload
        is ``mean`` (the state plus the mean), nothing added."""
        return self.merge(state, [Update(mean)]), 0.0

    def evaluate(self, state: Any) -> dict[str, float]:
        """Metrics of ``state`` (recorded as columns); none by default."""
        return {}

    def forget(self, agent: Any, agent_state: Any) -> Any:
        """A forget request reached ``agent``: its new private state, which makes its next
        updates unlearn its data (learners that support unlearning override)."""
        raise NotImplementedError(f"{type(self).__name__} does not support unlearning")


def combines_of(learner: GlobalStateLearner) -> Combines | None:
    """``learner``'s declaration (:class:`Combines`; its string value is accepted too), or
    ``None`` if it declares nothing usable."""
    value = getattr(learner, "combines", None)
    if isinstance(value, Combines):
        return value
    try:
        return Combines(value) if isinstance(value, str) else None
    except ValueError:
        return None


def learner_label(learner: Any) -> str:
    """How errors name ``learner``: a plugin's name and origin (its ``label``), else its
    class."""
    label = getattr(learner, "label", None)
    return label if isinstance(label, str) and label else \
        f"learner {type(learner).__name__}"


def needs_combines(learner: GlobalStateLearner, protocol: str,
                   allowed: Sequence[Combines], why: str) -> Combines:
    """``learner``'s declaration if it is one of ``allowed``; else a one-line
    ``ValueError`` naming the learner, the ``protocol`` and ``why`` it needs one."""
    declared = combines_of(learner)
    if declared in allowed:
        return declared  # type: ignore[return-value]
    raw = getattr(learner, "combines", None)
    has = "declares nothing (no combines attribute)" if raw is None else \
        f"declares combines = {raw!r}"
    raise ValueError(f"{protocol}: {learner_label(learner)} {has}; {why} needs combines = "
                     f"{' or '.join(f'Combines.{c.name}' for c in allowed)} "
                     f"(bflnet.learners.base.Combines)")


def needs_mean_merge(learner: GlobalStateLearner, uplink: str) -> None:
    """A one-line ``ValueError`` naming ``learner`` and the reason it declares, unless
    it takes the mean of its updates (``merges_mean``, :class:`GlobalStateLearner`)."""
    declared = getattr(learner, "merges_mean", False)
    if declared is not True:
        raise ValueError(mean_merge_refusal(learner_label(learner), declared, uplink))


def mean_merge_refusal(label: str, declared: Any, uplink: str) -> str:
    """The one-line refusal of a learner (named ``label``) that declares ``merges_mean =
    declared`` (not ``True``) on ``uplink``."""
    why = declared if isinstance(declared, str) and declared else \
        "it does not declare that its merge is the state plus the mean of the updates " \
        "(merges_mean)"
    return (f"uplink: {uplink} cannot carry {label}: it cannot take a noisy mean of the "
            f"updates: {why}")


def supports_weighted_merge(learner: GlobalStateLearner) -> bool:
    """Whether ``learner`` overrides :meth:`GlobalStateLearner.merge_weighted`."""
    return type(learner).merge_weighted is not GlobalStateLearner.merge_weighted


class PerNeighbour(dict):
    """A consensus payload that differs per neighbour: ``{neighbour: payload}``."""


class ConsensusLearner(ABC):
    """A learner in which every node keeps a state and mixes it with its neighbours'.

    The protocol calls ``init`` once and ``init_node`` on every node. Per round it calls,
    on every node with its own state and stream,
    ``local_steps`` and ``outgoing``; it moves the payloads over the links, tells the
    sender what its neighbours will decode (``sent``), then calls ``absorb`` with the
    payloads that arrived (or the last ones received, when a message was lost) and mixing
    weights that sum to one. Each hook returns the node's new state.

    >>> import numpy as np
    >>> class Average(ConsensusLearner):
    ...     def init_node(self, node, rng, common): return float(node)
    ...     def outgoing(self, node, state): return np.array([state])
    ...     def absorb(self, node, state, received, weights):
    ...         return weights[node] * state + sum(weights[j] * float(v[0])
    ...                                            for j, v in received.items())
    >>> Average().absorb(0, 0.0, {1: np.array([2.0])}, {0: 0.5, 1: 0.5})
    1.0
    """

    def init(self, rng: np.random.Generator) -> Any:
        """What every node starts from (e.g. one common initial model), drawn from the
        learner's own stream; ``None`` by default."""
        return None

    @abstractmethod
    def init_node(self, node: Any, rng: np.random.Generator, common: Any) -> Any:
        """Node ``node``'s initial state, from ``common`` (what :meth:`init` gave) and its
        own stream ``rng``."""

    def local_steps(self, node: Any, state: Any, rng: np.random.Generator) -> tuple[Any, Work]:
        """Local computation before the exchange: ``(new state, work)``; none by default."""
        return state, NO_WORK

    @abstractmethod
    def outgoing(self, node: Any, state: Any) -> Payload | PerNeighbour:
        """What ``node`` sends this round: one payload for every neighbour, or a
        :class:`PerNeighbour` mapping."""

    def sent(self, node: Any, state: Any, decoded: Any) -> Any:
        """``decoded`` is what the neighbours decode of ``node``'s payload (a mapping per
        neighbour for a :class:`PerNeighbour` payload): the sender's new state. By default
        the state is unchanged (compressed gossip keeps public copies here)."""
        return state

    @abstractmethod
    def absorb(self, node: Any, state: Any, received: Mapping[Any, Any],
               weights: Mapping[Any, float]) -> Any:
        """Mix: ``weights[node]`` is the self weight, ``weights[j]`` that of neighbour ``j``;
        returns the node's new state."""

    def absorb_pair(self, node: Any, state: Any, peer: Any, mine: Any, theirs: Any,
                    weight: float) -> Any:
        """Pairwise gossip (asynchronous mode): ``node`` and ``peer`` swapped payloads;
        ``mine`` is what ``peer`` decoded of ``node``'s, ``theirs`` what ``node`` decoded of
        ``peer``'s. The new state moves ``weight`` of the way towards ``theirs``. By default
        ``absorb`` with weights ``{node: 1 - weight, peer: weight}`` on the current state;
        a learner that overrides this with ``state + weight * (theirs - mine)`` keeps the
        pair's sum exact even when the state changed since it sent ``mine``."""
        return self.absorb(node, state, {peer: theirs}, {node: 1.0 - weight, peer: weight})

    def evaluate(self, states: Mapping[Any, Any]) -> dict[str, float]:
        """Metrics of the nodes' current states; none by default."""
        return {}
