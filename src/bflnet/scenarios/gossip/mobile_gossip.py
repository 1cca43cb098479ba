"""Scenario ``mobile-gossip``: consensus averaging while the nodes move.

``K`` agents start on a random geometric graph (``radius_m`` in an ``area_m`` square) and
move by the random waypoint model (speeds uniform in ``[s(1 - speed_spread), s(1 +
speed_spread)]`` m/s, pauses of ``pause_s``); every ``update_s`` seconds the edges follow
the distances (a ``fault`` row per edge that appears or vanishes, ``cause="mobility"``).
They average one number each, by asynchronous pairwise gossip (``mode=async``: Poisson
clocks of ``rate`` per node) or synchronous rounds (``mode=sync``: the mixing matrix
recomputed at each change of the graph). One run of ``duration_s`` simulated seconds per
speed of ``speeds`` (same seed: same start graph, values and clocks; speed 0 is the
static network), rows tagged with ``speed``; ``max_deviation`` from the true mean against
``time_s`` (and ``cum_bits``) shows what mobility does to mixing.

**Shared medium** (``medium=shared``, the settings of ``consensus-averaging``): the
nodes' live positions place them on one radio medium (interference, half-duplex radios,
the ``mac``: none, csma or aloha; ``tdma`` only with every speed 0, since its schedule is
coloured once). With ``broadcast=true`` a wake-up (``mode=async``) or a round
(``mode=sync``) is one transmission per node to all its current neighbours: async gossip
becomes broadcast gossip (the neighbours that receive it mix it in, the sender does not;
an ``exchange`` row with ``peer="*"``, ``received`` and ``dropped``), and a lost reception
is skipped (no acknowledgement, no resending).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import float_list
from bflnet.runs.registry import register
from bflnet.runs.resources import ROW_BYTES, Footprint
from bflnet.runs.schema import (
    BASE,
    DROPPED,
    MEDIUM_COLUMNS,
    MESSAGE_COLUMNS,
    NODE,
    Schema,
    col,
)
from bflnet.scenarios.shared.network_settings import GRAPHS, NetworkSettings

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "mobile-gossip"
#: Largest node speed accepted, m/s.
MAX_SPEED = 1e4
#: Most position updates (``duration_s / update_s``) a run may take.
MAX_UPDATES = 10**7
#: The fields each mode reads alone.
MODE_FIELDS = {"rate": "async", "weight": "async", "mixing": "sync"}


@dataclass(frozen=True)
class MobileGossipConfig(NetworkSettings):
    """Parameters of ``mobile-gossip``."""

    SCENARIO: ClassVar[str] = NAME
    SHARED_MEDIUM: ClassVar[bool] = True
    DECIDED_ELSEWHERE: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("graph", "edge_prob", "graph_file"),
                        "mobility needs positions: the start graph is always "
                        "random-geometric (K, radius_m, area_m)"),
        "distance_m": "the nodes' positions decide the link distances (radius_m, area_m)",
        "layout": "the random geometric graph gives the positions (radius_m, area_m)",
        "compute_s_per_step": "averaging does no local computation (the clocks, rounds and "
                              "the channel decide the time)"}

    graph: str = param("random-geometric", "topology at the start (always random-geometric: "
                       "mobility needs positions)", choices=GRAPHS)
    speeds: str = param("0,1,5", "comma list of node speeds in m/s, one run each (0: static)")
    speed_spread: float = param(0.5, "each leg's speed uniform in [s(1-spread), s(1+spread)]",
                                ge=0, lt=1)
    pause_s: float = param(1.0, "pause at each waypoint in seconds", ge=0, le=1e6)
    update_s: float = param(0.1, "period of the position updates in seconds", gt=0, le=1e6)
    duration_s: float = param(20.0, "simulated seconds per speed", gt=0, le=1e6)
    mode: str = param("async", "gossip mode", choices=("async", "sync"))
    rate: float = param(1.0, "wake-ups per second per node (mode=async)", gt=0, le=1e3)
    weight: float = param(0.5, "pairwise mixing weight (mode=async; 0.5: both take the "
                          "average)", gt=0, lt=1)
    mixing: str = param("metropolis-hastings", "mixing rule, recomputed on each change "
                        "(mode=sync)", choices=("metropolis-hastings", "max-degree"))
    codec: str = param("raw64", "payload encoding", choices=("raw32", "raw64"))
    init: str = param("normal", "distribution of the initial values",
                      choices=("normal", "uniform"))
    record_messages: bool = param(False, "also record one row per message")

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.speed_list()
        if self.duration_s / self.update_s > MAX_UPDATES:
            raise ValueError(f"update_s: duration_s / update_s must be <= {MAX_UPDATES:g} "
                             f"position updates, got {self.duration_s / self.update_s:.3g}")
        if self.medium == "shared" and self.mac == "tdma" and any(self.speed_list()):
            raise ValueError(f"mac: not used as tdma with moving nodes (a TDMA schedule is "
                             f"coloured once, for nodes that stay put); set every one of "
                             f"speeds to 0 or another mac, got speeds={self.speeds}")
        if self.mode == "sync" and self.channel == "ideal" and self.medium == "links":
            raise ValueError("channel: synchronous rounds over channel=ideal take no "
                             "simulated time, so duration_s is never reached (rounds without "
                             "end); use a timed channel or mode=async")
        defaults = {f: type(self).__dataclass_fields__[f].default for f in MODE_FIELDS}
        for field, mode in MODE_FIELDS.items():
            if self.mode != mode and getattr(self, field) != defaults[field]:
                raise ValueError(f"{field}: not used with mode={self.mode}; used only with "
                                 f"mode={mode}")

    def graphs_in_use(self) -> tuple[str, ...]:
        """Always a random geometric graph (its positions start the motion)."""
        return ("random-geometric",)

    def round_s(self) -> float:
        """A lower bound on a synchronous round's simulated time: the latency and one
        32-bit value at the link rate (0 for the ideal channel)."""
        if self.channel == "ideal" and self.medium == "links":
            return 0.0
        rate = (self.rate_bps if self.channel in ("fixed", "gilbert-elliott")
                and self.medium == "links" else self.bandwidth_hz * self.coding_rate)
        return self.latency_s + 32.0 / rate

    def footprint(self) -> Footprint:
        """The graph and links, and the rows of every speed's run: the exchanges (mode
        async: ``rate`` per node per second) or rounds (mode sync: ``duration_s`` over a
        round's least time), the link changes of moving nodes, the position updates."""
        size = self.graph_size()
        speeds = self.speed_list()
        k = size.nodes
        if self.mode == "async":
            rows, fields = self.duration_s * self.rate * k, ("duration_s", "rate", "K")
        else:
            rows = self.duration_s / max(self.round_s(), 1e-300)
            fields = ("duration_s", "rate_bps", "latency_s")
        degree = 2.0 * size.edges / max(k, 1.0)
        moving = sum(s > 0 for s in speeds)
        changes = (self.duration_s * k * degree * max(speeds) * (1 + self.speed_spread)
                   / self.radius_m + self.duration_s / self.update_s) if moving else 0.0
        total = len(speeds) * rows + moving * changes
        if self.record_messages:
            total *= 3.0
        return super().footprint().add(
            f"{total:.3g} recorded rows over {len(speeds)} speeds", (*fields, "speeds"),
            bytes=ROW_BYTES * total)

    def speed_list(self) -> list[float]:
        """The speeds of ``speeds``, in m/s."""
        return float_list("speeds", self.speeds, maximum=MAX_SPEED, allow_zero=True)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Max deviation from the true mean against simulated time, one line per speed."""
    from bflnet.analysis.plots import plot_metric

    fig = plot_metric(frame, "time_s", "max_deviation", hue="speed", logy=True,
                      schema=SCHEMA)  # the legend titled "speed (m/s)"
    fig.axes[0].set(xlabel="simulated time (s)", ylabel="max |x_k - mean|",
                    title="gossip averaging on moving nodes")
    return fig


def _run_speed(config: MobileGossipConfig, speed: float, seed: int,
               progress: bool) -> pd.DataFrame:
    """One run at ``speed`` m/s (0: no mobility)."""
    from bflnet.faults.mobility import RandomWaypoint
    from bflnet.learners.gossip.averaging import ConsensusAveraging
    from bflnet.protocols.async_gossip import AsyncGossipProtocol
    from bflnet.protocols.coding.codecs import make_codec
    from bflnet.protocols.consensus import ConsensusProtocol
    from bflnet.protocols.stopping import StopRule
    from bflnet.simulator.live_graph import Mobility
    from bflnet.simulator.simulation import Simulation
    sim = Simulation(seed, name=run_label(NAME, {"speed": float(speed)}),
                     record_messages=config.record_messages)
    graph = config.run_graph(seed)
    mobility = None
    if speed > 0:
        model = RandomWaypoint(config.area_m, speed * (1 - config.speed_spread),
                               speed * (1 + config.speed_spread), config.pause_s)
        mobility = Mobility(model, config.radius_m, config.update_s)
    sim.build_network(graph, mobility=mobility, **config.network_kwargs(graph))
    learner = ConsensusAveraging(distribution=config.init)
    stop = StopRule(max_time_s=config.duration_s)
    codec = make_codec(config.codec)
    protocol: Any
    if config.mode == "async":
        protocol = AsyncGossipProtocol(learner, stop, rate=config.rate, weight=config.weight,
                                       codec=codec, progress=progress,
                                       broadcast=config.broadcast)
    else:
        protocol = ConsensusProtocol(learner, config.mixing, stop, codec=codec,
                                     progress=progress, broadcast=config.broadcast)
    frame = sim.run(protocol).frame
    frame["speed"] = speed
    return frame


SCHEMA = Schema.of(
    *BASE,
    col("max_deviation", "1", "largest |value - true mean| over the nodes", "init", "round",
        "exchange", "end"),
    col("mean_value", "1", "mean of the nodes' values", "init", "round", "exchange", "end"),
    NODE.means("exchange rows: the node that woke up; fault rows: one end of the link; "
               "message, tx and mac rows: the sender").on("exchange", "fault", "message",
                                                          "tx", "mac"),
    col("peer", "index", "exchange rows: its partner (* for a broadcast); fault rows: the "
        "other end of the link; message rows: the receiver (* for a broadcast); mac "
        "collision rows: the receiver that lost the packet", "exchange", "fault", "message",
        "mac"),
    col("outcome", "label", "exchange rows: ok, or why the exchange failed (broadcast: "
        "one broadcast)", "exchange", when="mode=async"),
    DROPPED.on("exchange", "round", "message"),
    col("replies_in_flight", "count", "exchange and end rows: replies not yet delivered",
        "exchange", "end", when="mode=async"),
    col("speed", "m/s", "the run's node speed (speeds)"),
    col("kind", "label", "fault rows: link_up or link_down; message rows: what the message "
        "carries; mac rows: backoff, defer or collision", "fault", "message", "mac",
        when="a speed > 0, record_messages=true or medium=shared"),
    col("cause", "label", "fault rows: why (mobility: the nodes moved apart or closer); mac "
        "collision rows: collision (interference) or half_duplex (the receiver was "
        "transmitting)", "fault", "mac", when="a speed > 0 or medium=shared"),
    *(c.on("message", "tx").means(c.meaning + "; tx rows: the packet's")
      if c.name in ("bits", "start_s") else c for c in MESSAGE_COLUMNS[1:]),
    *(c.on("exchange", *c.events).means(c.meaning + "; broadcast exchange rows: neighbours "
                                        "that got it").only_when(
          "medium=shared and (broadcast=true or record_messages=true)")
      if c.name == "received" else c
      for c in MEDIUM_COLUMNS if c.name != "cause"),
)


@register(NAME, MobileGossipConfig,
          "Consensus averaging on nodes moving by random waypoint (asynchronous pairwise "
          "gossip or synchronous rounds): max deviation from the mean against time, one "
          "run per speed.", plot=default_plot, columns=SCHEMA)
def run(config: MobileGossipConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    import pandas as pd
    frames = [_run_speed(config, speed, seed, progress) for speed in config.speed_list()]
    return pd.concat(frames, ignore_index=True)
