"""A random-walk run stopped between two iterations and started again exactly.

:func:`capture` takes, between iteration ``i`` and ``i + 1`` (after the token's hand-over),
everything the rest of the run depends on: the global state, every agent's state, the
token's position, the clock, the bit counters, and the state of every random stream drawn
so far (walk, codec, agents, links, compute) and of the links' media and channels.
:func:`restore` puts it back into a fresh simulation of the same network, so the resumed
run gives the rows the uninterrupted run gives after ``i``, bit for bit.

Only what can be captured exactly is supported: no outages, mobility, batteries, and no
forget request already made (:func:`check_resumable` says which in one line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bflnet.simulator.simulation import Simulation


@dataclass
class WalkCheckpoint:
    """A random-walk run between iteration ``iteration`` and the next.

    ``state`` and ``agent_states`` are the learner's (the agents that have one);
    ``streams`` maps a stream's name (``protocol.walk``, ``codec.token``, ``agent.<k>``,
    ``compute.<k>``, ``link.<a>.<b>``) to its numpy bit-generator state; ``links`` holds
    each link's ``(a, b, medium busy until, channel chain state)``."""

    iteration: int
    now: float
    current: Any
    previous: Any
    seen: list[Any]
    covered: bool
    state: Any
    agent_states: dict[Any, Any]
    counters: dict[str, int]
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: list[list[Any]] = field(default_factory=list)


COUNTERS = ("cum_bits", "cum_bits_delivered", "cum_bits_up", "cum_bits_down")


def check_resumable(sim: Simulation) -> None:
    """A one-line ``ValueError`` if ``sim``'s network has what a checkpoint cannot hold."""
    net = sim.network
    assert net is not None
    if net.live is not None:
        raise ValueError("states: a run with mobility cannot be saved or resumed")
    if any(node.outages is not None for node in net.nodes.values()) or any(
            link.outages is not None for link in net.links.values()):
        raise ValueError("states: a run with outages cannot be saved or resumed")
    if any(node.battery is not None for node in net.nodes.values()):
        raise ValueError("states: a run with batteries (energy) cannot be saved or resumed")


def _rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return rng.bit_generator.state


def generator(state: dict[str, Any]) -> np.random.Generator:
    """A numpy ``Generator`` in the bit-generator ``state`` (a PCG64 state dict)."""
    if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
        raise ValueError("states: a random stream's state is not a PCG64 state")
    rng = np.random.Generator(np.random.PCG64(0))
    rng.bit_generator.state = state
    return rng


def capture(sim: Simulation, *, iteration: int, current: Any, previous: Any, seen: set[Any],
            covered: bool, state: Any, walk_rng: np.random.Generator,
            codec_rng: np.random.Generator | None) -> WalkCheckpoint:
    """The run's checkpoint now (nothing in the run is changed: no stream is created)."""
    net, rec = sim.network, sim.recorder
    assert net is not None
    streams = {"protocol.walk": _rng_state(walk_rng)}
    if codec_rng is not None:  # (a codec that never draws has no stream)
        streams["codec.token"] = _rng_state(codec_rng)
    agent_states = {}
    for k, node in net.nodes.items():
        if node.has_state:
            agent_states[k] = node.state
        if node.rng is not None:
            streams[f"agent.{k}"] = _rng_state(node.rng)
        if node.compute_rng is not None:
            streams[f"compute.{k}"] = _rng_state(node.compute_rng)
    links = []
    for (a, b), link in net.links.items():
        if not callable(link._rng):
            streams[f"link.{a}.{b}"] = _rng_state(link._rng)
        links.append([a, b, link.medium.busy_until, getattr(link.channel, "_bad", None)])
    return WalkCheckpoint(
        iteration=iteration, now=float(sim.env.now), current=current, previous=previous,
        seen=sorted(seen), covered=covered, state=np.array(state, copy=True),
        agent_states=agent_states, counters={c: int(getattr(rec, c)) for c in COUNTERS},
        streams=streams, links=links)


def restore(sim: Simulation, checkpoint: WalkCheckpoint
            ) -> tuple[np.random.Generator, np.random.Generator | None]:
    """Put ``checkpoint`` into ``sim`` (a fresh simulation of the same network, its clock
    still at 0: the caller then waits ``checkpoint.now``); the walk's and the codec's
    streams (``None``: the codec has none). A one-line ``ValueError`` if it does not fit
    the network."""
    net, rec = sim.network, sim.recorder
    assert net is not None
    streams = dict(checkpoint.streams)
    known = {f"link.{a}.{b}" for a, b in net.links} | {"protocol.walk", "codec.token"}
    known |= {f"{kind}.{k}" for k in net.nodes for kind in ("agent", "compute")}
    unknown = sorted(set(streams) - known)
    if unknown:
        raise ValueError(f"states: the saved stream {unknown[0]!r} has no place in this "
                         f"network")
    for k, node in net.nodes.items():
        if k in checkpoint.agent_states:
            node.state, node.has_state = checkpoint.agent_states[k], True
        if f"agent.{k}" in streams:
            node.rng = generator(streams[f"agent.{k}"])
        if f"compute.{k}" in streams:
            node.compute_rng = generator(streams[f"compute.{k}"])
    for a, b, busy, bad in checkpoint.links:
        link = net.links.get((a, b))
        if link is None:
            raise ValueError(f"states: the saved link {a}->{b} is not in this network")
        if f"link.{a}.{b}" in streams:
            link._rng = generator(streams[f"link.{a}.{b}"])
        link.medium.busy_until = float(busy)
        if bad is not None:
            link.channel._bad = bool(bad)
    for name in COUNTERS:
        setattr(rec, name, int(checkpoint.counters[name]))
    rec.iteration = checkpoint.iteration
    codec = streams.get("codec.token")
    return generator(streams["protocol.walk"]), None if codec is None else generator(codec)
