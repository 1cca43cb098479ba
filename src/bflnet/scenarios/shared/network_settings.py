"""Graph, channel and link settings shared by the scenarios, and what they build.

**No silently ignored setting.** A field a run does not read is an error when it is set:
:meth:`NetworkSettings.check_network_fields` (called by every scenario config's
``__post_init__``) rejects, in one line naming the field and what decides instead,

- a field the scenario decides elsewhere (its ``DECIDED_ELSEWHERE``: e.g. ``graph`` in
  ``gfvl-beta-bernoulli``, where the comma list ``graphs`` decides; every graph field in
  the parameter-server scenarios, which have no D2D graph);
- a field the chosen graph or channel ignores (``edge_prob`` without
  ``graph=erdos-renyi``, ``ge_*`` without ``channel=gilbert-elliott``, ``max_attempts``
  on a channel that never loses a packet, ...: :data:`USED_ONLY_WITH`).

:meth:`NetworkSettings.used_fields` is the complement: the fields the run reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.runs.config import param
from bflnet.runs.graph_size import GraphSize, estimate
from bflnet.runs.resources import EDGE_BYTES, NODE_BYTES, THREAD_BYTES, Footprint, count
from bflnet.simulator.compute import FixedStepTime

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

    from bflnet.channels import Channel

MEDIA = ("links", "shared")
MAC_NAMES = ("none", "tdma", "csma", "aloha")
LAYOUT_NAMES = ("random", "circle", "grid")
#: How the shared medium decides a packet from its SINR (``RadioSpec.reception``).
RECEPTION_NAMES = ("threshold", "per")
#: The fields of the shared medium (read only with ``medium=shared``).
SHARED_FIELDS = ("mac", "broadcast", "reception", "tx_power_dbm", "noise_figure_db",
                 "ref_loss_db", "shadowing_db", "sinr_threshold_db", "layout", "aloha_p",
                 "mac_slot_s", "tdma_frame_slots", "sense_range_m", "backoff_slot_s", "cw_min",
                 "cw_max", "retry_limit")
GRAPHS = ("complete", "star", "ring", "path", "grid", "torus", "erdos-renyi",
          "random-geometric", "file")
CHANNELS = ("ideal", "fixed", "gilbert-elliott", "rayleigh", "rician")
FADING = ("rayleigh", "rician")
#: The fields that describe the D2D graph.
GRAPH_FIELDS = ("graph", "K", "edge_prob", "radius_m", "area_m", "graph_file")
_TIMED = ("fixed", "gilbert-elliott", *FADING)
#: Most agents of a graph: NetworkX and the simulated links hold ~3 kB per node and edge,
#: and several scenarios build dense K x K matrices (the resource check refuses the
#: sizes that do not fit this machine).
MAX_K = 10**6
#: Largest distance in metres (radio range, area side, link distance): far beyond any
#: radio link, and small enough for path loss and geometry to stay finite.
MAX_METRES = 1e7


#: Bytes per pair of nodes within interference range of each other on the shared medium
#: (an entry of the mean-power table, of the neighbour index and of the TDMA pairs).
MEDIUM_PAIR_BYTES = 200
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


def _shared(s: NetworkSettings) -> bool:
    return s.medium == "shared"


def _lossy(s: NetworkSettings) -> bool:
    if _shared(s):  # ARQ of unicast packets; csma has its retry_limit, broadcast none
        return s.mac != "csma" and not s.broadcast
    return s.channel in ("gilbert-elliott", *FADING) or (s.channel == "fixed" and s.loss_prob > 0)


def _needs_distance(s: NetworkSettings) -> bool:
    graphs = s.graphs_in_use()
    return s.channel in FADING and not _shared(s) and (
        not graphs or any(g != "random-geometric" for g in graphs))


def _laid_out(s: NetworkSettings) -> bool:
    """Whether some topology has no positions of its own (the shared medium lays it out;
    no D2D graph: a parameter server's agents, laid out around the server)."""
    graphs = s.graphs_in_use()
    return _shared(s) and (not graphs or any(g not in ("random-geometric", "file")
                                             for g in graphs))


def _threshold_read(s: NetworkSettings) -> bool:
    """Whether the SINR threshold is read: it decides every packet (``reception=threshold``),
    or it sets the nominal range that is CSMA's default carrier-sense range."""
    return _shared(s) and (s.reception == "threshold"
                           or (s.mac == "csma" and s.sense_range_m is None))


def _mac_is(*names: str) -> Callable[[NetworkSettings], bool]:
    return lambda s: _shared(s) and s.mac in names


def _graph_is(*names: str) -> Callable[[NetworkSettings], bool]:
    return lambda s: any(g in names for g in s.graphs_in_use())


def _channel_is(*names: str) -> Callable[[NetworkSettings], bool]:
    return lambda s: s.channel in names


#: Field -> (is it read under these settings?, the settings that read it). A field whose
#: test fails is ignored by the run: setting it to a non-default value is an error.
USED_ONLY_WITH: dict[str, tuple[Callable[[NetworkSettings], bool], str]] = {
    "K": (lambda s: any(g != "file" for g in s.graphs_in_use()) or not s.graphs_in_use(),
          "a graph other than file (the file decides the number of agents)"),
    "edge_prob": (_graph_is("erdos-renyi"), "graph=erdos-renyi"),
    "radius_m": (_graph_is("random-geometric"), "graph=random-geometric"),
    "area_m": (lambda s: _graph_is("random-geometric")(s) or _laid_out(s),
               "graph=random-geometric, or medium=shared on a graph without positions "
               "(or a parameter server's agents)"),
    "graph_file": (_graph_is("file"), "graph=file"),
    "rate_bps": (lambda s: _channel_is("fixed", "gilbert-elliott")(s) and not _shared(s),
                 "channel=fixed or gilbert-elliott with medium=links (fading or "
                 "medium=shared: bandwidth_hz and coding_rate)"),
    "latency_s": (lambda s: _channel_is(*_TIMED)(s) or _shared(s),
                  "a channel other than ideal, or medium=shared"),
    "loss_prob": (lambda s: _channel_is("fixed")(s) and not _shared(s),
                  "channel=fixed with medium=links (medium=shared: the SINR decides)"),
    "ge_p_good_to_bad": (_channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "ge_p_bad_to_good": (_channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "ge_loss_bad": (_channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "bandwidth_hz": (lambda s: _channel_is(*FADING)(s) or _shared(s),
                     "channel=rayleigh or rician, or medium=shared"),
    "mean_snr_db": (lambda s: _channel_is(*FADING)(s) and not _shared(s),
                    "channel=rayleigh or rician with medium=links (medium=shared: "
                    "tx_power_dbm, ref_loss_db and noise_figure_db decide)"),
    "path_loss_exponent": (lambda s: _channel_is(*FADING)(s) or _shared(s),
                           "channel=rayleigh or rician, or medium=shared"),
    "coding_rate": (lambda s: _channel_is(*FADING)(s) or _shared(s),
                    "channel=rayleigh or rician, or medium=shared"),
    "distance_m": (_needs_distance, "channel=rayleigh or rician with medium=links on a graph "
                   "without node positions (random-geometric or medium=shared: the positions "
                   "decide)"),
    "rician_k": (_channel_is("rician"), "channel=rician"),
    "mtu_bits": (lambda s: _channel_is(*_TIMED)(s) or _shared(s),
                 "a channel other than ideal, or medium=shared"),
    "max_attempts": (_lossy, "a channel that loses packets (fixed with loss_prob > 0, "
                     "gilbert-elliott, rayleigh, rician) or medium=shared with unicast "
                     "(mac=csma: retry_limit decides; broadcast: no ARQ)"),
    "mac": (_shared, "medium=shared"),
    "broadcast": (_shared, "medium=shared"),
    "reception": (_shared, "medium=shared"),
    "tx_power_dbm": (_shared, "medium=shared"),
    "noise_figure_db": (_shared, "medium=shared"),
    "ref_loss_db": (_shared, "medium=shared"),
    "shadowing_db": (_shared, "medium=shared"),
    "sinr_threshold_db": (_threshold_read, "medium=shared and reception=threshold, or "
                          "mac=csma without sense_range_m (the threshold's nominal range "
                          "is the carrier-sense range)"),
    "layout": (_laid_out, "medium=shared on a graph without positions (not random-geometric "
               "or file) or a parameter server's agents"),
    "aloha_p": (_mac_is("aloha"), "medium=shared and mac=aloha"),
    "mac_slot_s": (_mac_is("aloha", "tdma"), "medium=shared and mac=aloha or tdma"),
    "tdma_frame_slots": (_mac_is("tdma"), "medium=shared and mac=tdma"),
    "sense_range_m": (_mac_is("csma"), "medium=shared and mac=csma"),
    "backoff_slot_s": (_mac_is("csma"), "medium=shared and mac=csma"),
    "cw_min": (_mac_is("csma"), "medium=shared and mac=csma"),
    "cw_max": (_mac_is("csma"), "medium=shared and mac=csma"),
    "retry_limit": (_mac_is("csma"), "medium=shared and mac=csma"),
}


@dataclass(frozen=True)
class NetworkSettings:
    """The network part of a scenario config: topology, channel, links, compute time."""

    graph: str = param("ring", "topology of the D2D graph", choices=GRAPHS)
    K: int = param(20, "number of agents (graph=file: the file decides, an error if set)", ge=2,
                   le=MAX_K)
    edge_prob: float = param(0.3, "edge probability (erdos-renyi)", gt=0, le=1)
    radius_m: float = param(40.0, "radio range in metres (random-geometric)", gt=0,
                            le=MAX_METRES)
    area_m: float = param(100.0, "side of the square area in metres (random-geometric; "
                          "medium=shared: where nodes without positions are laid out, a "
                          "server at its centre)", gt=0, le=MAX_METRES)
    graph_file: str | None = param(None, "edge list or GraphML file (graph=file)")
    channel: str = param("fixed", "channel model of every link", choices=CHANNELS)
    rate_bps: float = param(1e6, "link rate in bit/s (fixed, gilbert-elliott)", gt=0,
                            le=1e15)
    latency_s: float = param(0.005, "one-way latency per packet in seconds", ge=0, le=1e6)
    loss_prob: float = param(0.0, "i.i.d. packet loss probability (fixed)", ge=0, lt=1)
    ge_p_good_to_bad: float = param(0.01, "Gilbert-Elliott P(good -> bad)", gt=0, le=1)
    ge_p_bad_to_good: float = param(0.3, "Gilbert-Elliott P(bad -> good)", gt=0, le=1)
    ge_loss_bad: float = param(1.0, "Gilbert-Elliott loss probability in the bad state",
                               ge=0, le=1)
    bandwidth_hz: float = param(1e6, "bandwidth in Hz (fading channels)", gt=0, le=1e15)
    mean_snr_db: float = param(60.0, "mean SNR in dB at 1 m (fading channels)", ge=-300,
                               le=300)
    path_loss_exponent: float = param(3.0, "path-loss exponent (fading channels)", ge=0,
                                      le=10)
    distance_m: float = param(10.0, "link distance in metres when the graph has no positions",
                              gt=0, le=MAX_METRES)
    coding_rate: float = param(2.0, "coding rate in bit/s/Hz (fading channels)", gt=0,
                               le=1e3)
    rician_k: float = param(3.0, "Rician K factor", ge=0, le=1e6)
    mtu_bits: int = param(12_000, "maximum packet size in bits", ge=1, le=10**12)
    max_attempts: int | None = param(8, "ARQ attempts per packet (none: unlimited)", ge=1,
                                     le=10**6)
    compute_s_per_step: float = param(0.0, "simulated seconds per local step", ge=0, le=1e6)
    medium: str = param("links", "links: every link an independent pipe; shared: one radio "
                        "medium (positions, SINR, half-duplex, MAC; the channel gives the "
                        "fading: rayleigh, rician, or none for ideal / fixed)", choices=MEDIA)
    mac: str = param("csma", "medium access on the shared medium", choices=MAC_NAMES)
    broadcast: bool = param(False, "one transmission reaches every neighbour, or a "
                            "server's scheduled agents (shared medium; no ARQ: a lost "
                            "reception follows the protocol's rule for a lost message)")
    reception: str = param("threshold", "how a packet's SINR decides it (shared medium): "
                           "threshold (received iff its lowest SINR over the packet is >= "
                           "sinr_threshold_db) or per (lost with the packet error rate of "
                           "uncoded BPSK at that SINR)", choices=RECEPTION_NAMES)
    tx_power_dbm: float = param(20.0, "transmit power in dBm (shared medium)", ge=-100, le=100)
    noise_figure_db: float = param(7.0, "receiver noise figure in dB; noise = -174 dBm/Hz + "
                                   "10 log10(bandwidth_hz) + NF (shared medium)", ge=0, le=100)
    ref_loss_db: float = param(40.0, "path loss in dB at 1 m (shared medium)", ge=-100, le=300)
    shadowing_db: float = param(0.0, "log-normal shadowing std in dB, one draw per pair and "
                                "run (shared medium)", ge=0, le=50)
    sinr_threshold_db: float | None = param(None, "SINR threshold in dB (none: 2^R - 1 of "
                                            "coding_rate) (shared medium; reception=per: "
                                            "only its nominal range, CSMA's default sense "
                                            "range)", ge=-100, le=100)
    layout: str = param("random", "node layout in the area_m square for graphs without "
                        "positions (shared medium)", choices=LAYOUT_NAMES)
    aloha_p: float = param(0.1, "slotted ALOHA transmit probability per slot", gt=0, le=1)
    mac_slot_s: float | None = param(None, "ALOHA / TDMA slot in seconds (none: the air time "
                                     "of the largest packet)", gt=0, le=1e6)
    tdma_frame_slots: int | None = param(None, "TDMA slots per frame (none: the number of "
                                         "colours)", ge=1, le=10_000_000)
    sense_range_m: float | None = param(None, "CSMA carrier-sense range in metres (none: the "
                                        "radio range)", ge=0, le=1e9)
    backoff_slot_s: float = param(20e-6, "CSMA back-off slot in seconds", gt=0, le=1e3)
    cw_min: int = param(16, "CSMA smallest contention window", ge=1, le=2**20)
    cw_max: int = param(1024, "CSMA largest contention window", ge=1, le=2**20)
    retry_limit: int = param(7, "CSMA retries of a unicast packet", ge=0, le=1000)

    #: Network fields this scenario does not read, each with the parameter (or fact) that
    #: decides instead; set by the scenario configs.
    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = {}
    #: The scenario's name, for the errors.
    SCENARIO: ClassVar[str] = "this scenario"
    #: Whether the scenario's protocol runs on a shared medium (``medium=shared``).
    SHARED_MEDIUM: ClassVar[bool] = False

    def graphs_in_use(self) -> tuple[str, ...]:
        """The topologies the run builds (``()``: no D2D graph, e.g. a parameter server)."""
        return (self.graph,)

    def _setting(self, field: str) -> str:
        """How the current settings read for the error on ``field``."""
        if field in ("medium", *SHARED_FIELDS) or (field == "mean_snr_db"
                                                    and self.channel in FADING):
            if self.medium == "shared" and field == "sinr_threshold_db":
                return f"reception={self.reception} and mac={self.mac}"
            if self.medium == "shared" and field in USED_ONLY_WITH and "mac=" in \
                    USED_ONLY_WITH[field][1]:
                return f"mac={self.mac}"
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

    def _check_shared(self) -> None:
        """Shared-medium settings that cannot go together (one line each)."""
        if self.medium != "shared" or not self.SHARED_MEDIUM:
            return
        if self.channel == "gilbert-elliott":
            raise ValueError("channel: must be rayleigh, rician (the fading of every signal) "
                             "or ideal / fixed (no fading) with medium=shared, got "
                             "gilbert-elliott")
        if self.cw_max < self.cw_min:
            raise ValueError(f"cw_max: must be >= cw_min ({self.cw_min}), got {self.cw_max}")

    def medium_spec(self) -> Any:
        """The :class:`bflnet.radio.SharedMediumSpec` of ``medium=shared`` (else ``None``)."""
        if self.medium != "shared":
            return None
        from bflnet.radio import Aloha, Csma, LogDistance, NoMac, RadioSpec, SharedMediumSpec, Tdma
        radio = RadioSpec(
            tx_power_dbm=self.tx_power_dbm, bandwidth_hz=self.bandwidth_hz,
            noise_figure_db=self.noise_figure_db, coding_rate=self.coding_rate,
            sinr_threshold_db=self.sinr_threshold_db, reception=self.reception,
            pathloss=LogDistance(self.path_loss_exponent, 1.0, self.ref_loss_db,
                                 self.shadowing_db),
            fading=self.channel if self.channel in FADING else "none",
            rician_k=self.rician_k if self.channel == "rician" else 0.0,
            latency_s=self.latency_s)
        mac: Any = {
            "none": NoMac,
            "aloha": lambda: Aloha(self.aloha_p, self.mac_slot_s),
            "tdma": lambda: Tdma(self.tdma_frame_slots, self.mac_slot_s),
            "csma": lambda: Csma(self.sense_range_m, self.backoff_slot_s, self.cw_min,
                                 self.cw_max, self.retry_limit),
        }[self.mac]()
        area = self.area_m
        return SharedMediumSpec(radio, mac, layout=self.layout, area_m=area)

    def network(self, **changes: Any) -> NetworkSettings:
        """The network part of this config alone, with ``changes`` (e.g. one topology of a
        scenario whose ``graphs`` decides; no scenario check applies to it)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(NetworkSettings)}
        return NetworkSettings(**{**values, **changes})

    def graph_size(self, graph: str | None = None) -> GraphSize:
        """Upper estimates of the nodes and edges of ``graph`` (default: the first topology
        in use; none: the K agents of a parameter server), before it is built."""
        graphs = self.graphs_in_use()
        if graph is None and not graphs:
            return GraphSize(float(self.K), float(self.K), float(self.K), ("K",))
        return estimate(graph or graphs[0], self.K, edge_prob=self.edge_prob,
                        radius_m=self.radius_m, area_m=self.area_m,
                        graph_file=self.graph_file)

    def agents(self) -> float:
        """The most agents any topology of the run has (an estimate for a graph file)."""
        graphs = self.graphs_in_use() or (None,)
        return max(self.graph_size(g).nodes for g in graphs)

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
        return fp.add(f"shared medium: {count(k)} nodes x {count(near)} within interference "
                      f"range ({r:.3g} m)", ("K", "area_m", "tx_power_dbm",
                                              "path_loss_exponent"),
                      bytes=MEDIUM_PAIR_BYTES * pairs, work=MEDIUM_PAIR_WORK * pairs)

    def build_graph(self, rng: np.random.Generator) -> nx.Graph:
        """The topology (connectivity is checked by the protocol that needs it)."""
        from bflnet.protocols.graphs.topologies import make_graph  # lazily: networkx
        params: dict[str, Any] = {}
        if self.graph == "erdos-renyi":
            params["p"] = self.edge_prob
        elif self.graph == "random-geometric":
            params.update(radius_m=self.radius_m, area_m=self.area_m)
        elif self.graph == "file":
            if self.graph_file is None:
                raise ValueError("graph_file: must be set when graph=file")
            params["path"] = self.graph_file
            return make_graph("file", None, rng, **params)  # K comes from the file
        return make_graph(self.graph, self.K, rng, **params)

    def build_channel(self, graph: nx.Graph) -> Channel | Any:
        """A channel template, or a per-link factory for fading on a graph with positions."""
        from bflnet.channels import make_channel  # lazily: numpy, scipy
        from bflnet.protocols.graphs.topologies import node_distance
        name = self.channel
        if name == "ideal":
            return make_channel("ideal")
        if name == "fixed":
            return make_channel("fixed", rate_bps=self.rate_bps, latency_s=self.latency_s,
                                loss_prob=self.loss_prob)
        if name == "gilbert-elliott":
            return make_channel("gilbert-elliott", rate_bps=self.rate_bps,
                                latency_s=self.latency_s, p_good_to_bad=self.ge_p_good_to_bad,
                                p_bad_to_good=self.ge_p_bad_to_good, loss_bad=self.ge_loss_bad)
        fading: dict[str, Any] = dict(
            bandwidth_hz=self.bandwidth_hz, mean_snr_db=self.mean_snr_db,
            path_loss_exponent=self.path_loss_exponent, distance_m=self.distance_m,
            coding_rate=self.coding_rate, latency_s=self.latency_s)
        if name == "rician":
            fading["k_factor"] = self.rician_k
        template = make_channel(name, **fading)

        def per_link(src: Any, dst: Any) -> Channel:
            both_in_graph = src in graph and dst in graph
            distance = node_distance(graph, src, dst) if both_in_graph else None
            return template.with_distance(distance) if distance else template.fresh()

        return per_link

    def network_kwargs(self, graph: nx.Graph) -> dict[str, Any]:
        """Keyword arguments for ``Simulation.build_network``."""
        kwargs = dict(channel=self.build_channel(graph), mtu_bits=self.mtu_bits,
                      max_attempts=self.max_attempts,
                      compute=FixedStepTime(self.compute_s_per_step))
        if self.medium == "shared":
            kwargs["medium"] = self.medium_spec()
        return kwargs
