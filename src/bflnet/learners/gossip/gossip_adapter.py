"""Run a :class:`GlobalStateLearner` under gossip: consensus on its global state.

Every node keeps its own copy of the learner's global state next to its agent state. In
each round a node updates its copy as a parameter server would with one agent
(``local_update`` on its copy, then ``merge``), sends the copy to its neighbours and
mixes the copies it receives with the weights of the mixing matrix. No second learner
class is needed; the adapter needs only that a weighted average of global states means
something (an array, or a tuple or dict of arrays).

Which consensus it reaches follows how the learner's state combines the agents'
contributions, as the learner declares it (``combines``,
:class:`~bflnet.learners.base.Combines`):

* ``Combines.AVERAGED``: the nodes average their states. Right for learners whose global
  state is itself an average (FedAvg-style models).
* ``Combines.ADDITIVE``: the node multiplies its merge's increment by ``K`` (``agents``)
  before mixing. For a learner whose global state *adds* the agents' contributions
  (natural parameters of a conjugate posterior: prior + Σ_k η_k; G-FVL's exact
  updates), doubly stochastic mixing keeps the nodes' mean at prior + (1/K) Σ_k K η_k =
  prior + Σ_k η_k, so every node converges to the global-state learner's result (the
  consensus-based BFL scaling of the local likelihood by K). Needs array states (numpy
  or torch).
* anything else (``PARTICLES``, ``SEQUENTIAL``, nothing declared): refused in one line
  naming the learner, since an average of two nodes' states would mean nothing.

``evaluate`` reports every metric of the learner per node: ``m`` is the median over the
nodes of each node's own ``m`` (so a metric such as a KL is not 0 while the nodes still
disagree), ``m_max`` the largest, ``m_spread`` the largest less the smallest, and
``m_at_mean`` the metric of the nodes' mean state; and ``disagreement``.

>>> import numpy as np
>>> from bflnet.learners.base import Combines, GlobalStateLearner, Update
>>> class Sum(GlobalStateLearner):  # state = prior 0 + each agent's number, added once
...     combines = Combines.ADDITIVE
...     def init(self, rng): return np.zeros(1)
...     def init_agent(self, agent, rng): return False
...     def local_update(self, agent, state, added, rng):
...         return Update(np.zeros(1) if added else np.array([agent + 1.0]), agent=agent,
...                       agent_state=True)
...     def merge(self, state, updates): return state + sum(u.payload for u in updates)
>>> gossip = GossipAdapter(Sum(), agents=2)
>>> s = {k: gossip.init_node(k, None, gossip.init(None)) for k in (0, 1)}
>>> s = {k: gossip.local_steps(k, s[k], None)[0] for k in (0, 1)}
>>> mixed = gossip.absorb(0, s[0], {1: gossip.outgoing(1, s[1])}, {0: 0.5, 1: 0.5})
>>> float(mixed.state[0])  # 1 + 2: the sum, as one global state would hold it
3.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bflnet.learners.base import (
    Combines,
    ConsensusLearner,
    GlobalStateLearner,
    Work,
    learner_label,
    needs_combines,
)

#: The declarations gossip can mix (a weighted average of states means something).
MIXABLE = (Combines.ADDITIVE, Combines.AVERAGED)
#: The per-node statistics ``evaluate`` adds to each learner metric ``m``.
SUFFIXES = ("_max", "_spread", "_at_mean")


@dataclass(frozen=True, slots=True)
class NodeCopy:
    """A node's copy of the global ``state`` and its agent's private ``agent_state``."""

    state: Any
    agent_state: Any


def _combine(parts: list[tuple[float, Any]]) -> Any:
    """``Σ w_i x_i`` of arrays, or of tuples or dicts of arrays (part by part)."""
    first = parts[0][1]
    if isinstance(first, tuple):
        return tuple(_combine([(w, x[i]) for w, x in parts]) for i in range(len(first)))
    if isinstance(first, dict):
        return {key: _combine([(w, x[key]) for w, x in parts]) for key in first}
    total = first * parts[0][0]
    for w, x in parts[1:]:
        total = total + x * w
    return total


def _scaled_increment(old: Any, new: Any, scale: float) -> Any:
    """``old + scale · (new − old)``, part by part."""
    if scale == 1:
        return new
    if isinstance(new, tuple):
        return tuple(_scaled_increment(o, n, scale) for o, n in zip(old, new, strict=True))
    if isinstance(new, dict):
        return {key: _scaled_increment(old[key], new[key], scale) for key in new}
    return old + (new - old) * scale


class GossipAdapter(ConsensusLearner):
    """``learner`` (a :class:`GlobalStateLearner`) as a :class:`ConsensusLearner`: every
    node holds a :class:`NodeCopy`. The learner's ``combines`` declaration decides the
    mixing (module docs); ``agents``, the number of agents ``K``, is needed for an
    additive state. ``evaluate`` reports the learner's metrics per node (their median,
    largest value and spread), of the nodes' mean state (``m_at_mean``) and
    ``disagreement``, the largest distance (max norm) of a node's state from that mean;
    ``per_node=False`` evaluates only the mean state (one evaluation a round instead of
    K), its metrics under their own names."""

    def __init__(self, learner: GlobalStateLearner, *, agents: int | None = None,
                 per_node: bool = True) -> None:
        if not isinstance(learner, GlobalStateLearner):
            raise TypeError(f"learner: must be a GlobalStateLearner, got "
                            f"{type(learner).__name__}")
        combines = needs_combines(learner, "gossip", MIXABLE,
                                  "mixing the nodes' copies of its state")
        if agents is not None and (isinstance(agents, bool) or not isinstance(agents, int)
                                   or agents < 1):
            raise ValueError(f"agents: must be an integer >= 1, got {agents!r}")
        if combines is Combines.ADDITIVE and agents is None:
            raise ValueError(f"agents: gossip needs the number of agents K for "
                             f"{learner_label(learner)}, whose state is additive (each "
                             f"node's increment is scaled by K)")
        if not isinstance(per_node, bool):
            raise ValueError(f"per_node: must be True or False, got {per_node!r}")
        self.learner = learner
        self.combines = combines
        self.increment_scale = float(agents) if combines is Combines.ADDITIVE else 1.0
        self.per_node = per_node

    def init(self, rng: Any) -> Any:
        """The learner's initial global state: every node's first copy."""
        return self.learner.init(rng)

    def init_node(self, node: Any, rng: Any, common: Any) -> NodeCopy:
        return NodeCopy(common, self.learner.init_agent(node, rng))

    def local_steps(self, node: Any, state: NodeCopy, rng: Any) -> tuple[NodeCopy, Work]:
        update = self.learner.local_update(node, state.state, state.agent_state, rng)
        merged = self.learner.merge(state.state, [update])
        new = _scaled_increment(state.state, merged, self.increment_scale)
        return NodeCopy(new, update.agent_state), update.work

    def outgoing(self, node: Any, state: NodeCopy) -> Any:
        return state.state

    def absorb(self, node: Any, state: NodeCopy, received: Mapping[Any, Any],
               weights: Mapping[Any, float]) -> NodeCopy:
        parts = [(weights[node], state.state)]
        parts += [(weights[j], payload) for j, payload in received.items()]
        return NodeCopy(_combine(parts), state.agent_state)

    def evaluate(self, states: Mapping[Any, NodeCopy]) -> dict[str, float]:
        import numpy as np

        copies = [s.state for s in states.values()]
        if self.combines is Combines.ADDITIVE and len(copies) != self.increment_scale:
            raise ValueError(f"agents: {int(self.increment_scale)} given to gossip, but it "
                             f"runs on {len(copies)} nodes (one agent each)")
        mean = _combine([(1.0 / len(copies), c) for c in copies])
        flat = [np.concatenate([np.ravel(np.asarray(p, dtype=float)) for p in _parts(c)])
                for c in copies]
        centre = np.concatenate([np.ravel(np.asarray(p, dtype=float)) for p in _parts(mean)])
        spread = max(float(np.max(np.abs(f - centre))) if f.size else 0.0 for f in flat)
        at_mean = self.learner.evaluate(mean)
        if not self.per_node:
            return {**at_mean, "disagreement": spread}
        nodes = list(states)
        per_node = [self.learner.evaluate(copy) for copy in copies]
        out: dict[str, float] = {}
        for name in at_mean:
            clash = [name + end for end in SUFFIXES if name + end in at_mean]
            if clash:
                raise ValueError(f"gossip: {learner_label(self.learner)} reports metrics "
                                 f"{name!r} and {clash[0]!r}; gossip names the per-node "
                                 f"statistics of {name!r} "
                                 f"{', '.join(name + e for e in SUFFIXES)}")
            values = []
            for node, metrics in zip(nodes, per_node, strict=True):
                if name not in metrics:
                    raise ValueError(f"gossip: {learner_label(self.learner)} reports "
                                     f"{name!r} for the mean state but not for node {node!r}")
                values.append(float(metrics[name]))
            out[name] = float(np.median(values))
            out[name + "_max"] = max(values)
            out[name + "_spread"] = max(values) - min(values)
            out[name + "_at_mean"] = float(at_mean[name])
        return {**out, "disagreement": spread}


def _parts(state: Any) -> list[Any]:
    if isinstance(state, tuple):
        return [p for s in state for p in _parts(s)]
    if isinstance(state, dict):
        return [p for key in state for p in _parts(state[key])]
    return [state.detach().cpu().numpy() if hasattr(state, "detach") else state]
