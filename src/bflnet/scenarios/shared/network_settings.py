"""Graph, channel and link settings shared by the scenarios, and what they build.

:class:`NetworkSettings` composes the three layers: the D2D graph
(:class:`~bflnet.scenarios.shared.graph_settings.GraphSettings`), the links
(:class:`~bflnet.scenarios.shared.link_settings.LinkSettings`) and the medium
(:class:`~bflnet.scenarios.shared.radio_settings.RadioSettings`); what spans the layers
lives here. The layers' names are importable from this module too.

**No silently ignored setting.** A field a run does not read is an error when it is set:
:meth:`NetworkSettings.check_network_fields` (called by every scenario config's
``__post_init__``) rejects, in one line naming the field and what decides instead,

- a field the scenario decides elsewhere (its ``DECIDED_ELSEWHERE``: e.g. ``graph`` in
  ``gfvl-beta-bernoulli``, where the comma list ``graphs`` decides; every graph field in
  the parameter-server scenarios, which have no D2D graph; one of the scenario's own
  fields, e.g. EM-TDAMP's ``likelihood``, which the task decides);
- a field the chosen graph or channel ignores (``edge_prob`` without
  ``graph=erdos-renyi``, ``ge_*`` without ``channel=gilbert-elliott``, ``max_attempts``
  on a channel that never loses a packet, ...: :data:`USED_ONLY_WITH`).

:meth:`NetworkSettings.used_fields` is the complement: the fields the run reads.
:meth:`NetworkSettings.refused_fields` are those no settings of the scenario read:
``bflnet describe`` lists them apart, with what decides instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.runs.resources import EDGE_BYTES, NODE_BYTES, THREAD_BYTES, Footprint, count
from bflnet.scenarios.shared.graph_settings import (
    GRAPH_FIELDS,
    GRAPH_USED_ONLY_WITH,
    GRAPHS,
    MAX_K,
    MAX_METRES,
    GraphSettings,
    graph_is,
)
from bflnet.scenarios.shared.link_settings import (
    _TIMED,
    CHANNELS,
    FADING,
    LINK_USED_ONLY_WITH,
    LinkSettings,
    channel_is,
)
from bflnet.scenarios.shared.radio_defaults import differing_defaults
from bflnet.scenarios.shared.radio_settings import (
    LAYOUT_NAMES,
    MAC_NAMES,
    MEDIA,
    RADIO_USED_ONLY_WITH,
    RECEPTION_NAMES,
    SHARED_FIELDS,
    RadioSettings,
    is_shared,
    reception_rule,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CHANNELS", "FADING", "GRAPHS", "GRAPH_FIELDS", "LAYOUT_NAMES", "MAC_NAMES",
           "MAX_K", "MAX_METRES", "MEDIA", "MEDIUM_PAIR_BYTES", "MEDIUM_PAIR_WORK",
           "RECEPTION_NAMES", "SERVER_ONLY", "SHARED_FIELDS", "USED_ONLY_WITH",
           "GraphSettings", "LinkSettings", "NetworkSettings", "RadioSettings", "RunNetwork",
           "ServerOnly"]

#: Bytes per pair of nodes within interference range of each other on the shared medium
#: (an entry of the mean-power table, of the neighbour index and of the TDMA pairs).
MEDIUM_PAIR_BYTES = 200
#: More bytes per such pair with fading correlated in time (a coherence time): its fade and
#: time, its slot in the pair table and in each sender's slots.
COHERENCE_PAIR_BYTES = 80
#: Set-up operations per such pair (building the tables; every packet scans its sender's
#: and receivers' neighbours).
MEDIUM_PAIR_WORK = 10


#: ``DECIDED_ELSEWHERE`` of the parameter-server scenarios, which have no D2D graph.
SERVER_ONLY: Mapping[str, str] = {
    name: "agents talk to a parameter server over their uplinks (no D2D graph); K decides "
          "the number of agents" for name in GRAPH_FIELDS if name != "K"}


class ServerOnly:
    """Mixin (first base) of a parameter-server scenario's config: the graph fields are
    decided elsewhere and no topology is built. A scenario whose protocol runs on a shared
    medium (``SHARED_MEDIUM``) reads ``area_m`` and ``layout`` with ``medium=shared``: its
    agents are laid out in the square, the server at its centre."""

    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = SERVER_ONLY

    def graphs_in_use(self) -> tuple[str, ...]:
        return ()

    @classmethod
    def decided_elsewhere(cls) -> Mapping[str, str]:
        """The graph fields, but ``area_m`` where the shared medium lays the agents out."""
        out = super().decided_elsewhere()  # type: ignore[misc]
        if getattr(cls, "SHARED_MEDIUM", False):
            return {k: v for k, v in out.items() if k != "area_m"}
        return out

    def _setting(self, field: str) -> str:
        if field in ("area_m", "layout"):
            return f"medium={getattr(self, 'medium', 'links')}"
        return super()._setting(field)  # type: ignore[misc]


def _lossy(s: NetworkSettings) -> bool:
    if is_shared(s):  # ARQ of unicast packets; csma has its retry_limit, broadcast none
        return s.mac != "csma" and not s.broadcast
    return s.channel in ("gilbert-elliott", *FADING) or (s.channel == "fixed" and s.loss_prob > 0)


def _needs_distance(s: NetworkSettings) -> bool:
    graphs = s.graphs_in_use()
    return s.channel in FADING and not is_shared(s) and (
        not graphs or any(g != "random-geometric" for g in graphs))


def _laid_out(s: NetworkSettings) -> bool:
    """Whether some topology has no positions of its own (the shared medium lays it out;
    no D2D graph: a parameter server's agents, laid out around the server)."""
    graphs = s.graphs_in_use()
    return is_shared(s) and (not graphs or any(g not in ("random-geometric", "file")
                                               for g in graphs))


#: The fields whose use depends on settings of another layer (the medium, mostly).
_ACROSS_LAYERS: dict[str, tuple[Callable[[NetworkSettings], bool], str]] = {
    "area_m": (lambda s: graph_is("random-geometric")(s) or _laid_out(s),
               "graph=random-geometric, or medium=shared on a graph without positions "
               "(or a parameter server's agents)"),
    "rate_bps": (lambda s: channel_is("fixed", "gilbert-elliott")(s) and not is_shared(s),
                 "channel=fixed or gilbert-elliott with medium=links (fading or "
                 "medium=shared: bandwidth_hz and coding_rate)"),
    "latency_s": (lambda s: channel_is(*_TIMED)(s) or is_shared(s),
                  "a channel other than ideal, or medium=shared"),
    "loss_prob": (lambda s: channel_is("fixed")(s) and not is_shared(s),
                  "channel=fixed with medium=links (medium=shared: the SINR decides)"),
    "bandwidth_hz": (lambda s: channel_is(*FADING)(s) or is_shared(s),
                     "channel=rayleigh or rician, or medium=shared"),
    "mean_snr_db": (lambda s: channel_is(*FADING)(s) and not is_shared(s),
                    "channel=rayleigh or rician with medium=links (medium=shared: "
                    "tx_power_dbm, ref_loss_db and noise_figure_db decide)"),
    "path_loss_exponent": (lambda s: channel_is(*FADING)(s) or is_shared(s),
                           "channel=rayleigh or rician, or medium=shared"),
    "coding_rate": (lambda s: channel_is(*FADING)(s) or is_shared(s),
                    "channel=rayleigh or rician, or medium=shared"),
    "distance_m": (_needs_distance, "channel=rayleigh or rician with medium=links on a graph "
                   "without node positions (random-geometric or medium=shared: the positions "
                   "decide)"),
    "mtu_bits": (lambda s: channel_is(*_TIMED)(s) or is_shared(s),
                 "a channel other than ideal, or medium=shared"),
    "max_attempts": (_lossy, "a channel that loses packets (fixed with loss_prob > 0, "
                     "gilbert-elliott, rayleigh, rician) or medium=shared with unicast "
                     "(mac=csma: retry_limit decides; broadcast: no ARQ)"),
    "layout": (_laid_out, "medium=shared on a graph without positions (not random-geometric "
               "or file) or a parameter server's agents"),
}
_EVERY_LAYER: dict[str, tuple[Callable[[NetworkSettings], bool], str]] = {
    **GRAPH_USED_ONLY_WITH, **LINK_USED_ONLY_WITH, **RADIO_USED_ONLY_WITH, **_ACROSS_LAYERS}

#: Field -> (is it read under these settings?, the settings that read it). A field whose
#: test fails is ignored by the run: setting it to a non-default value is an error.
USED_ONLY_WITH: dict[str, tuple[Callable[[NetworkSettings], bool], str]] = {
    name: _EVERY_LAYER[name] for name in (
        "K", "edge_prob", "radius_m", "area_m", "graph_file", "rate_bps", "latency_s",
        "loss_prob", "ge_p_good_to_bad", "ge_p_bad_to_good", "ge_loss_bad", "bandwidth_hz",
        "mean_snr_db", "path_loss_exponent", "coding_rate", "distance_m", "rician_k",
        "mtu_bits", "max_attempts", *SHARED_FIELDS)}


@dataclass(frozen=True)
class RunNetwork:
    """One network the runs of a config build: the D2D graph ``topology`` with the links
    or shared medium of ``settings``; ``label`` tells it from the config's other networks
    (``""``: the only one of its topology), e.g. ``"mac=tdma broadcast"``."""

    topology: str
    settings: NetworkSettings
    label: str = ""


@dataclass(frozen=True)
class NetworkSettings(RadioSettings, LinkSettings, GraphSettings):
    """The network part of a scenario config: topology, channel, links, compute time."""

    #: Network fields this scenario does not read, each with the parameter (or fact) that
    #: decides instead; set by the scenario configs.
    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = {}
    #: The scenario's name, for the errors.
    SCENARIO: ClassVar[str] = "this scenario"
    #: Whether the scenario's protocol runs on a shared medium (``medium=shared``).
    SHARED_MEDIUM: ClassVar[bool] = False
    #: Radio parameters whose default is not the shared one
    #: (:data:`~bflnet.scenarios.shared.radio_defaults.RADIO_DEFAULTS`), each with the
    #: reason; ``bflnet describe`` shows it beside the parameter.
    RADIO_EXCEPTIONS: ClassVar[Mapping[str, str]] = {}

    def _setting(self, field: str) -> str:
        """How the current settings read for the error on ``field``."""
        if field in ("medium", *SHARED_FIELDS) or (field == "mean_snr_db"
                                                    and self.channel in FADING):
            if self.medium == "shared" and field == "sinr_threshold_db":
                return f"reception={reception_rule(self)} and mac={self.mac}"
            if self.medium == "shared" and field == "data_rate":
                return f"reception={reception_rule(self)} and phy={self.phy}"
            if self.medium == "shared" and field in USED_ONLY_WITH and "mac=" in \
                    USED_ONLY_WITH[field][1]:
                return f"mac={self.mac}"
            if self.medium == "shared" and field == "fading_model" and \
                    self.channel in FADING:
                tc = self.coherence_time_s
                return f"coherence_time_s={'none' if tc is None else tc}"
            if self.medium == "shared" and field in ("coherence_time_s", "fading_model"):
                return f"channel={self.channel}"
            if self.medium == "shared" and field == "layout":
                graphs = self.graphs_in_use()
                return (f"graph={graphs[0]}" if len(graphs) == 1
                        else f"topologies {','.join(graphs)}")
            return f"medium={self.medium}"
        if field == "max_attempts" and self.channel == "fixed":
            return f"channel=fixed and loss_prob={self.loss_prob:g} (no packet is ever lost)"
        if field in GRAPH_FIELDS or (field == "distance_m" and self.channel in FADING):
            graphs = self.graphs_in_use()
            return (f"graph={graphs[0]}" if len(graphs) == 1
                    else f"topologies {','.join(graphs)}")
        return f"channel={self.channel}"

    @classmethod
    def decided_elsewhere(cls) -> Mapping[str, str]:
        """``DECIDED_ELSEWHERE``, with the shared medium's fields for a scenario whose
        protocol runs over independent links only."""
        if cls.SHARED_MEDIUM:
            return cls.DECIDED_ELSEWHERE
        links = ("its protocol runs over independent links (the channel decides each "
                 "packet)")
        return {**{n: links for n in ("medium", *SHARED_FIELDS)}, **cls.DECIDED_ELSEWHERE}

    @classmethod
    def refused_fields(cls) -> Mapping[str, str]:
        """The fields no settings of this scenario read, each with what decides instead:
        ``--set`` refuses any value but the default, and ``bflnet describe`` lists them
        apart from the parameters. ``DECIDED_ELSEWHERE``, less the fields some settings of
        the scenario read after all (a scenario whose ``used_fields`` adds some says so
        by overriding this)."""
        return dict(cls.decided_elsewhere())

    @classmethod
    def unrecorded_fields(cls) -> frozenset[str]:
        """The refused fields a result file's record leaves out (none by default: the
        record, and so a sweep's config hash, keeps them at their defaults; a scenario
        whose list parameters say what ran, where a recorded default would misstate it,
        leaves them out)."""
        return frozenset()

    @classmethod
    def default_notes(cls) -> Mapping[str, str]:
        """``{field: why its default is not the shared radio default}``, for ``bflnet
        describe``."""
        differ = differing_defaults(cls)
        return {name: f"differs from the shared radio default {differ[name][0]!r}: {reason}"
                for name, reason in cls.RADIO_EXCEPTIONS.items() if name in differ}

    def _elsewhere(self) -> Mapping[str, str]:
        return self.decided_elsewhere()

    def used_fields(self) -> frozenset[str]:
        """The network fields this scenario's run reads under the current settings."""
        names = [f.name for f in dataclasses.fields(NetworkSettings)]
        elsewhere = self._elsewhere()
        return frozenset(n for n in names if n not in elsewhere
                         and (n not in USED_ONLY_WITH or USED_ONLY_WITH[n][0](self)))

    def check_network_fields(self) -> None:
        """One-line ``ValueError`` for the first network field that is set (not its default)
        but not read: decided elsewhere, or ignored by the chosen graph or channel; and for
        shared-medium settings that cannot go together."""
        self._check_shared()
        used = self.used_fields()
        elsewhere = self._elsewhere()
        for f in dataclasses.fields(NetworkSettings):
            own = next(x for x in dataclasses.fields(self) if x.name == f.name)
            if f.name in used or getattr(self, f.name) == own.default:
                continue
            if f.name in elsewhere:
                raise ValueError(f"{f.name}: not used by {self.SCENARIO}; "
                                 f"{elsewhere[f.name]}")
            raise ValueError(f"{f.name}: not used with {self._setting(f.name)}; used only "
                             f"with {USED_ONLY_WITH[f.name][1]}")
        self.check_radio()
        network = {f.name for f in dataclasses.fields(NetworkSettings)}
        for f in dataclasses.fields(self):  # the scenario's own fields it decides itself
            if f.name in elsewhere and f.name not in network \
                    and getattr(self, f.name) != f.default:
                raise ValueError(f"{f.name}: not used by {self.SCENARIO}; "
                                 f"{elsewhere[f.name]}")

    def _check_shared(self) -> None:
        """Shared-medium settings that cannot go together (one line each)."""
        if self.medium != "shared" or not self.SHARED_MEDIUM:
            return
        if self.channel == "gilbert-elliott":
            raise ValueError("channel: must be rayleigh, rician (the fading of every signal) "
                             "or ideal / fixed (no fading) with medium=shared, got "
                             "gilbert-elliott")
        self.check_mac()

    def medium_spec(self) -> Any:
        """The :class:`bflnet.radio.SharedMediumSpec` of ``medium=shared`` (else ``None``)."""
        if self.medium != "shared":
            return None
        return self.shared_medium_spec(
            bandwidth_hz=self.bandwidth_hz, coding_rate=self.coding_rate,
            path_loss_exponent=self.path_loss_exponent,
            fading=self.channel if self.channel in FADING else "none",
            rician_k=self.rician_k if self.channel == "rician" else 0.0,
            latency_s=self.latency_s, area_m=self.area_m)

    def network(self, **changes: Any) -> NetworkSettings:
        """The network part of this config alone, with ``changes`` (e.g. one topology of a
        scenario whose ``graphs`` decides; no scenario check applies to it)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(NetworkSettings)}
        return NetworkSettings(**{**values, **changes})

    def topology_settings(self, topology: str | None = None) -> NetworkSettings:
        """The settings that build ``topology`` (default: the first in use) and its links:
        this config, or its network with ``graph=topology`` for a scenario that runs
        several topologies."""
        graphs = self.graphs_in_use()
        topology = topology or (graphs[0] if graphs else self.graph)
        return self if topology == self.graph else self.network(graph=topology)

    def run_graph(self, seed: int, topology: str | None = None) -> nx.Graph:
        """The D2D graph ``topology`` (default: the first in use) of the runs with root seed
        ``seed``, from that seed's stream ``graph``: what the runs build and ``bflnet
        draw`` draws."""
        from bflnet.simulator.rng import RngStreams  # lazily: numpy

        return self.topology_settings(topology).build_graph(RngStreams(seed).numpy("graph"))

    def run_networks(self, chosen: Mapping[str, Any] | None = None) -> list[RunNetwork]:
        """The networks the runs build, each on a root seed's
        ``Simulation(seed).build_network(graph, **settings.network_kwargs(graph))``: one
        per topology in use. ``chosen``: the setting columns of one run of a table (e.g.
        ``{"graph": "ring"}``) keep the networks of that run."""
        chosen = chosen or {}
        graphs = self.graphs_in_use()
        return [RunNetwork(g, self.topology_settings(g)) for g in graphs
                if chosen.get("graph", g) == g]

    def footprint(self) -> Footprint:
        """Memory and set-up work of the network: each topology's graph and links (the
        scenario configs add their own parts)."""
        fp = Footprint()
        for name in self.graphs_in_use() or (None,):
            size = self.graph_size(name)
            label = f"graph {name}" if name else "the agents' uplinks"
            fp = fp.add(f"{label} of {count(size.nodes)} nodes and {count(size.edges)} edges",
                        size.fields, bytes=NODE_BYTES * size.nodes + EDGE_BYTES * size.edges,
                        work=size.build_work + size.nodes + 2 * size.edges)
        if self.medium == "shared" and type(self).SHARED_MEDIUM:
            fp = self._medium_footprint(fp)
        threads = getattr(self, "threads", 1)  # the torch scenarios' own threads
        if threads > 1:
            fp = fp.add(f"{threads} threads' stacks", ("threads",),
                        bytes=THREAD_BYTES * threads)
        return fp

    def _medium_footprint(self, fp: Footprint) -> Footprint:
        """The shared medium's tables: per node, the nodes within interference range (their
        indices and mean received powers), and the TDMA colouring's pairs: about
        ``K x min(K, K pi r^2 / area)`` entries, ``r`` the interference range."""
        import math

        k = self.agents()
        r = self.medium_spec().radio.effective_interference_range_m()
        laid = self.graph != "file"  # a graph file's area is unknown: everyone in range
        share = min(1.0, math.pi * r * r / self.area_m ** 2) if laid and math.isfinite(r) \
            else 1.0
        near = min(k, max(1.0, k * share))
        pairs = k * near
        per_pair = MEDIUM_PAIR_BYTES + (COHERENCE_PAIR_BYTES if self.coherence_time_s else 0)
        return fp.add(f"shared medium: {count(k)} nodes x {count(near)} within interference "
                      f"range ({r:.3g} m)", ("K", "area_m", "tx_power_dbm",
                                              "path_loss_exponent"),
                      bytes=per_pair * pairs, work=MEDIUM_PAIR_WORK * pairs)

    def network_kwargs(self, graph: nx.Graph) -> dict[str, Any]:
        """Keyword arguments for ``Simulation.build_network``."""
        kwargs = self.link_kwargs(graph)
        if self.medium == "shared":
            kwargs["medium"] = self.medium_spec()
        return kwargs
