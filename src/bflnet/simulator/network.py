"""The network: nodes and directed links built from a NetworkX graph."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import networkx as nx
import numpy as np
import simpy

from bflnet.channels.base import Channel
from bflnet.channels.ideal import IdealChannel
from bflnet.faults.availability import UnionTimeline
from bflnet.faults.energy import battery_specs, joules_per_bit
from bflnet.simulator.compute import ComputeModel, FixedStepTime
from bflnet.simulator.link import Link, Medium
from bflnet.simulator.live_graph import LiveGraph, Mobility
from bflnet.simulator.node import SERVER, Node
from bflnet.simulator.recorder import Recorder
from bflnet.simulator.rng import RngStreams

ChannelSpec = Channel | Callable[[Any, Any], Channel]

#: Distances below this (metres) are taken as this by distance-dependent channels of
#: moving nodes (two nodes at one point would otherwise have no path loss defined).
MIN_DISTANCE_M = 1e-3


def _channel_for(spec: ChannelSpec, src: Any, dst: Any) -> Channel:
    if isinstance(spec, Channel):
        return spec.fresh()
    channel = spec(src, dst)
    if not isinstance(channel, Channel):
        raise TypeError(f"channel factory returned {type(channel).__name__}, not a Channel")
    return channel


class Network:
    """Agents (the graph's nodes), an optional server, and one :class:`Link` per direction.

    Every graph edge gives two D2D links. With ``server=True`` each agent also gets an
    uplink to and a downlink from the server; ``shared_uplink=True`` makes all uplinks
    share one medium (TDMA at the server). ``channel`` is a channel template (each link
    gets a fresh copy) or a ``(src, dst) -> Channel`` factory, e.g. for distance-dependent
    fading.

    ``compute``: one compute model for every node, or a ``node -> ComputeModel`` factory;
    a model that draws (:class:`~bflnet.simulator.compute.LogNormalTime`) uses the node's
    stream ``compute.<node>``, and a model with per-run state (a trace) starts afresh in
    every run (:meth:`rebind`).

    ``link_outages``: when links are down (:mod:`bflnet.faults.availability`): one
    availability for every link, or a mapping from node pairs ``(u, v)`` (either order;
    ``(agent, SERVER)`` for an agent's server links) to availabilities. Both directions of
    a pair share one timeline, drawn from the stream ``fault.link.<u>.<v>`` (redrawn for
    each run by :meth:`rebind`). ``node_outages``: likewise for the agents (one
    availability for all, or ``{agent: availability}``; stream ``fault.node.<k>``); a link
    is down while either of its ends is. ``None``: nothing fails (no cost). Each change of
    a failing component is a ``fault`` row (``node_down``/``node_up``,
    ``link_down``/``link_up`` with ``peer``), written as the run passes it.
    ``keep_state``: whether an agent keeps its private learner state through a
    ``node_down`` (a reboot that keeps its memory) or loses it (a crash: the row says
    ``lost="agent_state"``, and the protocol initialises the agent afresh,
    ``learner.init_agent``, the next time it is scheduled); the agent's stream goes on.

    ``mobility`` (a :class:`~bflnet.simulator.live_graph.Mobility`, or ``None``: nodes stay
    put, no cost): the agents move from the graph's positions and :attr:`live` is the run's
    :class:`~bflnet.simulator.live_graph.LiveGraph`; a pair that comes within range gets
    its two D2D links then (channel from ``channel``, streams ``link.<src>.<dst>`` as
    always), and a distance-dependent channel (fading) is moved to the live distance of
    its ends at every position update. Per-pair ``link_outages`` are not supported with
    mobility.

    ``energy`` (a :class:`~bflnet.faults.energy.Battery` for every agent, or
    ``{agent: Battery}``; ``None``: mains power, no cost): each run gives those agents a
    full battery, drained by the bits they send (``tx_power_w / rate_bps`` joules a bit)
    and the work they compute; an agent whose battery is empty is down for good from then
    on (a ``battery_empty`` row).

    ``medium`` (a :class:`bflnet.radio.SharedMediumSpec`; ``None``: independent links, the
    default, at no cost): the nodes share one radio medium (:attr:`air`): every node gets
    a position and one half-duplex radio with a MAC, links send through their sender's
    radio, and the medium decides each packet at its end from the SINR at the receiver.
    """

    def __init__(
        self,
        env: simpy.Environment,
        graph: nx.Graph,
        streams: RngStreams,
        recorder: Recorder,
        *,
        channel: ChannelSpec | None = None,
        server: bool = False,
        uplink_channel: ChannelSpec | None = None,
        downlink_channel: ChannelSpec | None = None,
        shared_uplink: bool = False,
        compute: ComputeModel | Callable[[Any], ComputeModel] | None = None,
        mtu_bits: int = 12_000,
        max_attempts: int | None = 8,
        link_outages: Any = None,
        node_outages: Any = None,
        keep_state: bool = True,
        mobility: Mobility | None = None,
        energy: Any = None,
        medium: Any = None,
    ) -> None:
        if not isinstance(keep_state, bool):
            raise ValueError(f"keep_state: must be True or False, got {keep_state!r}")
        self.keep_state = keep_state
        if mobility is not None and not isinstance(mobility, Mobility):
            raise ValueError(f"mobility: must be a Mobility or None, got "
                             f"{type(mobility).__name__}")
        if mobility is not None and link_outages is not None:
            raise ValueError("link_outages: not supported with mobility (node_outages are)")
        if medium is not None and (link_outages is not None or node_outages is not None):
            raise ValueError("medium: link_outages and node_outages are not supported on a "
                             "shared medium yet")
        self.env = env
        self.recorder = recorder
        self.graph = graph
        self.mtu_bits = mtu_bits
        #: How the network's air is built (``None``: independent links, the default).
        self._medium_spec = medium
        #: The run's shared medium (:class:`bflnet.radio.Air`), or ``None``.
        self.air: Any = None
        channel = channel if channel is not None else IdealChannel()
        compute = compute if compute is not None else FixedStepTime(0.0)
        self.nodes: dict[Any, Node] = {}
        #: Each node's compute model as built (each run uses its ``for_node`` copy).
        self._compute_models: dict[Any, ComputeModel] = {}
        for node_id in [*graph.nodes, *([SERVER] if server else [])]:
            model = compute(node_id) if callable(compute) and not isinstance(
                compute, ComputeModel) else compute
            if not isinstance(model, ComputeModel):
                raise ValueError(f"compute: must be a ComputeModel or a factory of them, got "
                                 f"{type(model).__name__} for node {node_id!r}")
            self._compute_models[node_id] = model
            node = self.nodes[node_id] = Node(node_id, simpy.Store(env), model.for_node(node_id))
            if model.draws:
                node.compute_stream = partial(streams.numpy, f"compute.{node_id}")
        self.links: dict[tuple[Any, Any], Link] = {}
        self._adjacency: dict[Any, frozenset[Any]] | None = None

        #: Each link's channel as built, before any attempt (see :meth:`rebind`).
        self._initial_channels: dict[tuple[Any, Any], Channel] = {}

        def add(src: Any, dst: Any, spec: ChannelSpec, direction: str,
                medium: Medium | None = None) -> None:
            channel = _channel_for(spec, src, dst)
            self._initial_channels[(src, dst)] = channel.fresh()
            self.links[(src, dst)] = Link(
                env, src, dst, channel, partial(streams.numpy, f"link.{src}.{dst}"),
                recorder, inbox=self.nodes[dst].inbox, mtu_bits=mtu_bits,
                max_attempts=max_attempts, medium=medium, direction=direction)

        self._mobility = mobility
        #: The run's live graph of moving nodes (``None`` without mobility).
        self.live: LiveGraph | None = None
        if mobility is not None:
            self._d2d_spec, self._link_kwargs = channel, dict(mtu_bits=mtu_bits,
                                                               max_attempts=max_attempts)
        for u, v in graph.edges:
            add(u, v, channel, "d2d")
            add(v, u, channel, "d2d")
        if server:
            up_medium = Medium() if shared_uplink else None
            for agent in graph.nodes:
                add(agent, SERVER, uplink_channel if uplink_channel is not None else channel,
                    "up", up_medium)
                add(SERVER, agent,
                    downlink_channel if downlink_channel is not None else IdealChannel(), "down")
        self._outage_specs = outage_specs(link_outages, self.links)
        self._node_outage_specs = node_outage_specs(node_outages, list(graph.nodes))
        self._battery_specs = battery_specs(energy, list(graph.nodes))
        self._draw_outages(streams)
        if mobility is not None:
            self._static_links = frozenset(self.links)
            self._start_moving(streams)
        if medium is not None:
            self._share_air(streams)

    def _share_air(self, streams: RngStreams) -> None:
        """This run's shared medium: every link sends through its sender's radio."""
        from bflnet.radio.air import Air, SharedMediumSpec  # lazily: off by default

        if not isinstance(self._medium_spec, SharedMediumSpec):
            raise ValueError(f"medium: must be a SharedMediumSpec or None, got "
                             f"{type(self._medium_spec).__name__}")
        self.air = Air(self, self._medium_spec, streams, SERVER)

    def _start_moving(self, streams: RngStreams) -> None:
        """This run's live graph, with the network listening to its changes."""
        assert self._mobility is not None
        self._streams = streams
        self.live = LiveGraph(self.graph, self._mobility, streams)
        self._fading = any(link.channel.distance_dependent for link in self.links.values())
        self.live.listeners.append(self._follow)

    def _follow(self, added: np.ndarray, removed: np.ndarray, moved: np.ndarray) -> None:
        """Links for pairs seen in range for the first time; fading channels of the live
        pairs with a moving end moved to their new distance."""
        for u, v in added.tolist():
            if (u, v) not in self.links:
                self._add_d2d(u, v)
                self._add_d2d(v, u)
        if not self._fading:
            return
        live = self.live
        assert live is not None
        u, v = live.edges()
        pick = moved[u] | moved[v]
        u, v = u[pick], v[pick]
        dist = np.maximum(np.hypot(*(live.positions[u] - live.positions[v]).T), MIN_DISTANCE_M)
        for a, b, d in zip(u.tolist(), v.tolist(), dist.tolist(), strict=True):
            for link in (self.links[(a, b)], self.links[(b, a)]):
                if link.channel.distance_dependent:
                    link.channel = link.channel.with_distance(d)

    def _add_d2d(self, src: Any, dst: Any) -> None:
        """A D2D link ``src -> dst`` for a pair that came within range (mobility)."""
        channel = _channel_for(self._d2d_spec, src, dst)
        self._fading = self._fading or channel.distance_dependent
        lines = [line for line in (self.nodes[src].outages, self.nodes[dst].outages)
                 if line is not None]
        self.links[(src, dst)] = Link(
            self.env, src, dst, channel, partial(self._streams.numpy, f"link.{src}.{dst}"),
            self.recorder, inbox=self.nodes[dst].inbox, direction="d2d",
            outages=None if not lines else lines[0] if len(lines) == 1 else
            UnionTimeline(lines), **self._link_kwargs)
        self.links[(src, dst)].energy = self._link_energy(src, channel)
        if self.air is not None:
            self.air.attach(self.links[(src, dst)])

    def _draw_outages(self, streams: RngStreams) -> None:
        """Each failing node's and pair's timeline for this run; each link is down while
        its pair or either end is."""
        if not (self._outage_specs or self._node_outage_specs or self._battery_specs):
            return
        self._pair_lines, self._node_lines = {}, {}
        for node in self.nodes.values():  # (a rebound network: last run's lines are gone)
            node.outages, node.battery = None, None
        for node_id, spec in self._node_outage_specs.items():
            line = spec.timeline(streams.numpy(f"fault.node.{node_id}"))
            self._node_lines[node_id] = self.nodes[node_id].outages = line
        for node_id, battery in self._battery_specs.items():
            node = self.nodes[node_id]
            node.battery = battery.tank(node_id, self.recorder, self.env)
            node.outages = (node.battery if node.outages is None
                            else UnionTimeline([node.outages, node.battery]))
        for (a, b), spec in self._outage_specs.items():
            self._pair_lines[(a, b)] = spec.timeline(streams.numpy(f"fault.link.{a}.{b}"))
        for (src, dst), link in self.links.items():
            pair = self._pair_lines.get((src, dst), self._pair_lines.get((dst, src)))
            lines = [line for line in (pair, self.nodes[src].outages, self.nodes[dst].outages)
                     if line is not None]
            link.outages = (None if not lines else lines[0] if len(lines) == 1
                            else UnionTimeline(lines))
            link.energy = self._link_energy(src, link.channel)

    def _link_energy(self, src: Any, channel: Any) -> tuple[Any, float] | None:
        """``(tank, joules_per_bit)`` for a link whose sender has a battery."""
        tank = self.nodes[src].battery
        return None if tank is None else (tank, joules_per_bit(tank.spec, channel))

    def start_fault_records(self) -> None:
        """Start the processes that write a ``fault`` row at each change of a failing node
        or link pair (called by :meth:`Simulation.run_outcome`)."""
        for node_id in self._node_outage_specs:
            self.env.process(self._changes(self._node_lines[node_id], "node", node_id, None))
        for (a, b) in self._outage_specs:
            self.env.process(self._changes(self._pair_lines[(a, b)], "link", a, b))
        if self.live is not None:
            self.env.process(self.live.process(self.env, self.recorder))

    def _changes(self, line: Any, what: str, node: Any, peer: Any
                 ) -> Iterator[simpy.Event]:
        env, where = self.env, ({} if peer is None else {"peer": peer})
        t = env.now
        while True:
            up = line.is_up(t)
            if not up:
                lost = {}
                if what == "node" and not self.keep_state:
                    crashed = self.nodes[node]
                    crashed.state, crashed.has_state = None, False
                    lost = {"lost": "agent_state"}
                self.recorder.record("fault", node=node, kind=f"{what}_down", **where, **lost)
            t = line.next_change(t)
            if t == float("inf"):
                return
            yield env.timeout(t - env.now)
            if not up:
                self.recorder.record("fault", node=node, kind=f"{what}_up", **where)

    def rebind(self, env: simpy.Environment, streams: RngStreams, recorder: Recorder
               ) -> None:
        """Make this network as built for another run (another clock, root seed and
        record): empty inboxes, no agent state or streams, idle media, every channel in
        its initial state, each link's stream drawn from ``streams``. A run on the
        rebound network gives the same record as one on a network built afresh; building
        once saves the set-up of many short Monte-Carlo runs."""
        self.env, self.recorder = env, recorder
        if self._mobility is not None:  # the pairs met in range last run are gone
            self.links = {key: link for key, link in self.links.items()
                          if key in self._static_links}
        for node_id, node in self.nodes.items():
            node.inbox = simpy.Store(env)
            node.state, node.has_state, node.rng = None, False, None
            model = self._compute_models[node_id]
            node.compute, node.compute_rng = model.for_node(node_id), None
            if model.draws:
                node.compute_stream = partial(streams.numpy, f"compute.{node_id}")
        numpy, nodes, initial = streams.numpy, self.nodes, self._initial_channels
        media = set()
        for key, link in self.links.items():
            link.env, link.recorder = env, recorder
            link.inbox = nodes[key[1]].inbox
            link._rng = partial(numpy, link.stream_name)
            link.channel = initial[key].fresh()
            media.add(link.medium)
        for medium in media:  # idle again (links that shared one still do)
            medium.busy_until = 0.0
        self._draw_outages(streams)
        if self._mobility is not None:
            self._start_moving(streams)
        if self._medium_spec is not None:
            self._share_air(streams)

    def adjacency(self) -> dict[Any, frozenset[Any]]:
        """Each node's neighbours in the graph the network was built from (made once: the
        links were built from that graph)."""
        if self._adjacency is None:
            self._adjacency = {k: frozenset(self.graph.neighbors(k)) for k in self.graph.nodes}
        return self._adjacency

    @property
    def agents(self) -> list[Any]:
        """Agent ids in graph order."""
        return list(self.graph.nodes)

    @property
    def has_server(self) -> bool:
        return SERVER in self.nodes

    def link(self, src: Any, dst: Any) -> Link:
        """The link ``src -> dst``; a one-line error if the graph has no such edge."""
        try:
            return self.links[(src, dst)]
        except KeyError:
            raise ValueError(f"no link {src} -> {dst} in this network") from None

    def neighbours(self, node: Any) -> Iterator[Any]:
        """The node's neighbours (the live ones with mobility)."""
        if self.live is not None:
            return iter(self.live.neighbours[node])
        return iter(self.graph.neighbors(node))


def outage_specs(link_outages: Any, links: dict[tuple[Any, Any], Link]
                 ) -> dict[tuple[Any, Any], Any]:
    """``{(u, v): availability}`` over the node pairs that have links (one key per pair,
    ordered as the first of its links), from one availability for all or a mapping."""
    if link_outages is None:
        return {}
    pairs: dict[frozenset, tuple[Any, Any]] = {}
    for src, dst in links:
        pairs.setdefault(frozenset((src, dst)), (src, dst))
    if not isinstance(link_outages, Mapping):
        if not callable(getattr(link_outages, "timeline", None)):
            raise ValueError("link_outages: must be an availability (OnOff, Trace) or a "
                             f"mapping of node pairs to them, got {type(link_outages).__name__}")
        return {pair: link_outages for pair in pairs.values()}
    out = {}
    for key, spec in link_outages.items():
        if not (isinstance(key, tuple) and len(key) == 2 and frozenset(key) in pairs):
            raise ValueError(f"link_outages: {key!r} is not a pair of nodes with a link")
        if not callable(getattr(spec, "timeline", None)):
            raise ValueError(f"link_outages[{key!r}]: must be an availability (OnOff, Trace), "
                             f"got {type(spec).__name__}")
        out[pairs[frozenset(key)]] = spec
    return out


def node_outage_specs(node_outages: Any, agents: list[Any]) -> dict[Any, Any]:
    """``{agent: availability}`` from one availability for all agents or a mapping."""
    if node_outages is None:
        return {}
    if not isinstance(node_outages, Mapping):
        if not callable(getattr(node_outages, "timeline", None)):
            raise ValueError("node_outages: must be an availability (OnOff, Trace) or a "
                             f"mapping of agents to them, got {type(node_outages).__name__}")
        return dict.fromkeys(agents, node_outages)
    known = set(agents)
    for key, spec in node_outages.items():
        if key not in known:
            raise ValueError(f"node_outages: {key!r} is not an agent of the graph")
        if not callable(getattr(spec, "timeline", None)):
            raise ValueError(f"node_outages[{key!r}]: must be an availability (OnOff, Trace), "
                             f"got {type(spec).__name__}")
    return dict(node_outages)
