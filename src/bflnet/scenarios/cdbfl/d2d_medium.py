"""Scenario ``d2d-medium``: CD-BFL and consensus averaging on one shared radio medium,
under each MAC, with unicast or broadcast gossip, against independent links.

K devices on a random geometric graph of constant density (the area grows with K so that
a device away from the edges has ``degree`` neighbours on average) run, from the same
data, initial state and positions,

* the reference, ``mac=links``: every link an independent Rayleigh-fading pipe (the
  ``medium=links`` default of every other scenario), at the same mean SNR per distance
  as the shared medium;
* for each MAC in ``macs`` (none, tdma, csma, aloha) and each of ``broadcasts``, the
  shared medium (``medium=shared``): overlapping transmissions interfere, radios are
  half-duplex, and a gossip round is one unicast per neighbour (with ARQ) or one
  broadcast per device (no ARQ: a lost reception is a missed message).

Tasks (``tasks``): ``cdbfl``, CD-BFL with top-k compressed gossip (a small MLP and a
short run by default, see :mod:`bflnet.scenarios.cdbfl.common`), whose test accuracy is
recorded every ``eval_every`` rounds; ``consensus``, gossip averaging of one number per
device (float64 messages), whose largest deviation from the true mean is recorded every
round. Both use Metropolis-Hastings weights.

The radio is the shared one (:mod:`bflnet.scenarios.shared.radio_defaults`: 20 dBm, 1 MHz,
coding rate 2, path-loss exponent 3, 40 dB at 1 m, noise figure 7 dB; radius 40 m), but
with no latency after a packet (``latency_s = 0``: the reason is in ``RADIO_EXCEPTIONS``).
The study of docs/wireless-medium.md sets 0 dBm, exponent 3.5 and radius 30 m
(scripts/reproduce_d2d_medium.py), where the nominal range is twice the radius.

A result file's record leaves out the refused fields (``medium``, ``mac``,
``broadcast``, the area, ...): ``macs`` and ``broadcasts`` say what ran.

TDMA and ALOHA slots default to the air time of one message (the largest packet: the
packets are at most ``min(mtu_bits, message bits)``, so a message that fits in
``mtu_bits`` is still one packet).

Each round row also carries, so far in that run: the packets put on the air
(``transmissions``), the packet receptions attempted (``receptions``: one per receiver of
each packet), those lost to interference or half-duplex (``collisions``), the CSMA
back-offs drawn (``backoffs``) and the deferrals (``deferrals``: CSMA freezes, ALOHA
slots skipped), and ``collision_rate`` = collisions / receptions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import CDBFLParams
from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT32, ROW_BYTES, Footprint, count
from bflnet.runs.schema import (
    ACCURACY,
    BASE,
    DROPPED,
    ECE,
    NLL,
    RUN_ID,
    Schema,
    col,
)
from bflnet.scenarios.cdbfl.common import CDBFLSettings, codec_for, workspace
from bflnet.scenarios.shared.network_settings import (
    GRAPHS,
    MAC_NAMES,
    MAX_METRES,
    USED_ONLY_WITH,
    NetworkSettings,
    RunNetwork,
)
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.validation.limits import MIN_METRES, MIN_STEP
from bflnet.validation.params import param, subset, validate

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "d2d-medium"
TASKS = ("cdbfl", "consensus")
#: ``macs`` values: the independent-links reference, then the MACs of the shared medium.
MAC_CHOICES = ("links", *MAC_NAMES)
BROADCAST_CHOICES = ("false", "true")
ROW_EVENTS = ("init", "round")
#: The medium's counts on every round row (so far in the run).
COUNTS = ("transmissions", "receptions", "collisions", "backoffs", "deferrals")

#: The fields every task reads (beyond the network's).
_OWN = ("tasks", "macs", "broadcasts", "degree", "rounds", "round_jitter_s")
#: Fields that say how a run computes, not what: accepted whatever the tasks (``bflnet run
#: --threads`` fills ``threads``; the consensus task computes without torch).
_HOW = ("threads",)
_DECIDED = {
    "graph": "d2d-medium runs on a random geometric graph whose radius_m and degree decide "
             "it",
    "area_m": "degree and radius_m decide the area (constant density)",
    "medium": "macs decides (links: the independent-links reference; the others: "
              "medium=shared)",
    "mac": "macs decides (one run per MAC)",
    "broadcast": "broadcasts decides (one run per value)",
    "mean_snr_db": "the links reference has the shared medium's mean SNR at 1 m, "
                   "tx_power_dbm - ref_loss_db - noise",
    "rate_bps": "bandwidth_hz and coding_rate decide the rate",
    "loss_prob": "the SINR (shared medium) or the fading of the channel (links) decides "
                 "each packet",
    "distance_m": "the positions of the random geometric graph (radius_m, degree) decide "
                  "the distances",
    "layout": "the random geometric graph gives the positions (radius_m, degree)",
    **dict.fromkeys(("edge_prob", "graph_file"), "the graph is always random geometric "
                    "(radius_m, degree)"),
    **dict.fromkeys(("ge_p_good_to_bad", "ge_p_bad_to_good", "ge_loss_bad"),
                    "channel gives the fading of every signal (rayleigh, rician, or none: no "
                    "Gilbert-Elliott channel)"),
}
#: Why ``latency_s`` is not the shared radio default here (``RADIO_EXCEPTIONS``).
_NO_LATENCY = ("the study measures what the air costs: 5 ms after each packet would be 150 "
               "times a 32 µs consensus packet and hide the MACs' differences")


@dataclass(frozen=True)
class D2DMediumConfig(CDBFLSettings):
    """Parameters of ``d2d-medium``."""

    SCENARIO: ClassVar[str] = NAME
    DECIDED_ELSEWHERE: ClassVar[dict[str, str]] = _DECIDED
    RADIO_EXCEPTIONS: ClassVar[dict[str, str]] = {"latency_s": _NO_LATENCY}

    graph: str = param("random-geometric", "topology of the D2D graph (this scenario: a "
                       "random geometric graph)", choices=GRAPHS)
    K: int = param(10, "number of devices (the area grows with K: constant density)", ge=2,
                   le=4096)
    radius_m: float = param(radio_default("radius_m"), "edge radius of the random "
                            "geometric graph in metres", ge=MIN_METRES, le=MAX_METRES)
    degree: float = param(8.0, "mean number of neighbours away from the edges: the area's "
                          "side is radius_m * sqrt(pi K / degree)", gt=0, le=1e4)
    channel: str = param("rayleigh", "fading of every signal (rayleigh or rician; ideal / "
                         "fixed: none)", choices=("ideal", "fixed", "rayleigh", "rician"))
    latency_s: float = param(0.0, "seconds after a packet before its sender learns the "
                             "outcome (and may send the next)", ge=0, le=1e6)
    tasks: str = param("cdbfl,consensus", "comma list of tasks: cdbfl (CD-BFL, accuracy), "
                       "consensus (averaging, max_deviation)")
    macs: str = param("links,none,tdma,csma,aloha", "comma list: links (independent links, "
                      "the reference) and the shared medium's MACs (none, tdma, csma, aloha)")
    broadcasts: str = param("false,true", "comma list of broadcast settings on the shared "
                            "medium (false: one unicast per neighbour with ARQ; true: one "
                            "broadcast per device and round)")
    hidden: int = param(16, "hidden units of the MLP (time and memory grow linearly)", ge=1,
                        le=4096)
    points_per_agent: int = param(20, "training examples per device", ge=1, le=60_000)
    eval_size: int = param(300, "test examples the predictive is measured on", ge=1,
                           le=10_000)
    rounds: int = param(40, "rounds of each run (CD-BFL and consensus)", ge=1, le=10**6)
    round_jitter_s: float = param(0.0, "each device starts each round a delay uniform in "
                                  "[0, round_jitter_s) seconds after the round begins (its "
                                  "own random stream; 0: all at once)", ge=0, le=1e6)
    burn_in: int = param(20, "CD-BFL rounds whose samples are discarded", ge=0, le=10**6)
    lr: float = param(5e-3, "CD-BFL learning rate eta", ge=MIN_STEP, le=1e3)
    local_steps: int = param(4, "CD-BFL local steps L per round", ge=1, le=10**6)
    eval_every: int = param(5, "evaluate CD-BFL every this many rounds (and the last)",
                            ge=1, le=10**6)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.settings()
        self.area()
        if "cdbfl" in self.task_list():
            self.check_rounds()
            self.check_data_fields()
            return
        network = {f.name for f in dataclasses.fields(NetworkSettings)}
        for f in dataclasses.fields(self):
            if (f.name in network or f.name in _OWN or f.name in _HOW
                    or getattr(self, f.name) == f.default):
                continue
            raise ValueError(f"{f.name}: only read with tasks including cdbfl, got "
                             f"tasks={self.tasks}")

    @classmethod
    def unrecorded_fields(cls) -> frozenset[str]:
        """Every refused field: ``macs`` and ``broadcasts`` say which media, MACs and
        broadcast settings ran, and the area, mean SNR and rate follow from the other
        settings (a record holding ``medium: links, mac: csma`` would misstate them)."""
        return frozenset(cls.refused_fields())

    def used_fields(self) -> frozenset[str]:
        """The network fields some run of this config reads (the union over ``macs``)."""
        used: set[str] = set()
        elsewhere = self._elsewhere()
        names = [f.name for f in dataclasses.fields(NetworkSettings)]
        for mac in self.mac_list():
            for b in (False, True) if mac != "links" else (False,):
                net = self.network(medium="links" if mac == "links" else "shared",
                                   mac="csma" if mac == "links" else mac, broadcast=b,
                                   graph="random-geometric")
                used |= {n for n in names if n not in USED_ONLY_WITH
                         or USED_ONLY_WITH[n][0](net)}
        return frozenset(n for n in used if n not in elsewhere)

    def _setting(self, field: str) -> str:
        if field in ("coherence_time_s", "fading_model") and self.mac_list() != ["links"]:
            return self.network(medium="shared")._setting(field)  # the channel decides
        if field in USED_ONLY_WITH and ("medium=" in USED_ONLY_WITH[field][1]):
            return f"macs={self.macs}"
        return super()._setting(field)

    def _check_shared(self) -> None:
        if self.cw_max < self.cw_min:
            raise ValueError(f"cw_max: must be >= cw_min ({self.cw_min}), got {self.cw_max}")

    def task_list(self) -> list[str]:
        return comma_list("tasks", self.tasks, TASKS)

    def mac_list(self) -> list[str]:
        return comma_list("macs", self.macs, MAC_CHOICES)

    def settings(self) -> list[tuple[str, bool]]:
        """The runs of one task: ``(mac, broadcast)``, the links reference first."""
        macs = self.mac_list()
        casts = [b == "true" for b in comma_list("broadcasts", self.broadcasts,
                                                 BROADCAST_CHOICES)]
        out = [("links", False)] if "links" in macs else []
        return out + [(m, b) for m in macs if m != "links" for b in casts]

    def area(self) -> float:
        """The side of the square area: ``radius_m * sqrt(pi K / degree)``."""
        side = self.radius_m * math.sqrt(math.pi * self.K / self.degree)
        if not side <= MAX_METRES:
            raise ValueError(f"degree: radius_m * sqrt(pi K / degree) = {side:.3g} m exceeds "
                             f"{MAX_METRES:g} m; raise degree or lower radius_m")
        if not side >= MIN_METRES:
            raise ValueError(f"radius_m: radius_m * sqrt(pi K / degree) = {side:.3g} m is "
                             f"below {MIN_METRES:g} m; raise radius_m or lower degree")
        return side

    def noise_dbm(self) -> float:
        from bflnet.radio.pathloss import noise_dbm

        return noise_dbm(self.bandwidth_hz, self.noise_figure_db)

    def topology_settings(self, topology: str | None = None) -> NetworkSettings:
        """The random geometric graph of every run, in the area of constant density."""
        return self.network(graph="random-geometric", area_m=self.area())

    def run_networks(self, chosen: Mapping[str, Any] | None = None) -> list[RunNetwork]:
        """One network per setting ``(mac, broadcast)`` (the links reference first), or
        those of ``chosen``'s ``mac`` and ``broadcast``; packets of ``chosen``'s
        ``message_bits`` (default: ``mtu_bits``, which sets only the ALOHA and TDMA slots)."""
        chosen = chosen or {}
        bits = int(chosen.get("message_bits", self.mtu_bits))
        return [RunNetwork("random-geometric", self.run_network(mac, cast, bits),
                           _setting_words(mac, cast))
                for mac, cast in self.settings()
                if chosen.get("mac", mac) == mac and bool(chosen.get("broadcast", cast)) == cast]

    def run_network(self, mac: str, broadcast: bool, message_bits: int) -> NetworkSettings:
        """The network settings of one run."""
        shared = mac != "links"
        return self.network(
            graph="random-geometric", area_m=self.area(),
            medium="shared" if shared else "links", mac=mac if shared else "csma",
            broadcast=broadcast,
            mean_snr_db=self.tx_power_dbm - self.ref_loss_db - self.noise_dbm(),
            rate_bps=self.bandwidth_hz * self.coding_rate,
            mtu_bits=max(1, min(self.mtu_bits, message_bits)))

    def footprint(self) -> Footprint:
        """The graph and links, the shared medium's tables, the data and model (CD-BFL),
        and the kept rows (the medium's rows are counted, not kept)."""
        view = self.topology_settings()
        fp = view.footprint()
        if any(m != "links" for m in self.mac_list()):
            fp = view.network(medium="shared")._medium_footprint(fp)
        k = float(self.K)
        rows = len(self.settings()) * len(self.task_list()) * (self.rounds + 1.0)
        fp = fp.add(f"{rows:.3g} recorded rows", ("rounds", "macs", "broadcasts", "tasks"),
                    bytes=ROW_BYTES * rows)
        if "cdbfl" in self.task_list():
            d = 784.0 * self.hidden + 11.0 * self.hidden + 10.0
            data = (k * self.points_per_agent + self.eval_size) * 784.0 * FLOAT32
            fp = fp.add(f"{count(k)} devices' copies of a {count(d)}-parameter MLP and the "
                        f"data", ("K", "hidden", "points_per_agent"),
                        bytes=8 * FLOAT32 * k * d + data, work=k * d / 100.0)
        return fp


def _setting_words(mac: str, broadcast: bool) -> str:
    """``mac=tdma broadcast``, ``mac=csma unicast``, ``mac=links``: one run's setting."""
    return f"mac={mac}" if mac == "links" else \
        f"mac={mac} {'broadcast' if broadcast else 'unicast'}"


def _counting_recorder(env: Any, *, links: bool) -> Any:
    """A recorder that counts the medium's rows (``tx``, ``mac``, ``message``) instead of
    keeping them, and stamps every other row with the counts so far (:data:`COUNTS`):
    a run keeps a few rows per round however many packets it sends."""
    from bflnet.simulator.recorder import Recorder  # lazily: simpy, pandas

    class CountingRecorder(Recorder):
        def record(self, event: str, **fields: Any) -> None:
            c = counts
            if event == "tx":
                c["transmissions"] += 1
                c["receptions"] += fields["receivers"]
            elif event == "mac":  # one row per back-off, deferring attempt or loss
                kind = fields.get("kind")
                if kind == "collision":
                    c["collisions"] += 1
                elif kind == "backoff":
                    c["backoffs"] += 1
                    c["deferrals"] += fields["deferrals"]
                elif kind == "defer":
                    c["deferrals"] += fields["deferrals"]
            elif event == "message":
                if links:  # every attempt is one packet to one receiver
                    c["transmissions"] += fields["attempts"]
                    c["receptions"] += fields["attempts"]
            else:
                super().record(event, **fields, **c)

        def record_fields(self, event: str, fields: dict[str, Any]) -> None:
            self.record(event, **fields)

    counts = dict.fromkeys(COUNTS, 0)
    return CountingRecorder(env, record_messages=True)


def _summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """The init and round rows of a run, with ``collision_rate``."""
    import numpy as np

    rows = frame.loc[frame["event"].isin(ROW_EVENTS)].reset_index(drop=True)
    for name in COUNTS:
        rows[name] = rows[name].astype(np.int64)
    received = rows["receptions"].to_numpy()
    rows["collision_rate"] = rows["collisions"].to_numpy() / np.maximum(received, 1)
    return rows


def run_label(config: D2DMediumConfig, task: str, mac: str, broadcast: bool) -> str:
    """The name of one run's progress bar: ``d2d-medium task=consensus K=30 mac=csma
    broadcast``."""
    from bflnet.protocols.progress import run_label as label

    return label(NAME, {"task": task, "K": config.K}, _setting_words(mac, broadcast))


def _run_one(config: D2DMediumConfig, seed: int, graph: nx.Graph, learner: Any, codec: Any,
             message_bits: int, mac: str, broadcast: bool, eval_every: int | None,
             progress: bool, task: str) -> pd.DataFrame:
    """One run of ``learner`` under ``(mac, broadcast)``: its init and round rows."""
    from bflnet.protocols.consensus import ConsensusProtocol
    from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
    from bflnet.protocols.stopping import StopRule
    from bflnet.simulator.simulation import Simulation

    net = config.run_network(mac, broadcast, message_bits)
    sim = Simulation(seed, name=run_label(config, task, mac, broadcast))
    sim.recorder = _counting_recorder(sim.env, links=mac == "links")
    sim.build_network(graph, **net.network_kwargs(graph))
    kwargs: dict[str, Any] = {} if eval_every is None else {"eval_every": eval_every}
    protocol = ConsensusProtocol(learner, metropolis_hastings_weights(graph, sparse=True),
                                 StopRule(max_iterations=config.rounds), codec=codec,
                                 progress=progress, broadcast=broadcast,
                                 round_jitter_s=config.round_jitter_s, **kwargs)
    return _summarise(sim.run(protocol).frame)


def _check_slots(config: D2DMediumConfig, seed: int, graph: nx.Graph, bits: int) -> None:
    """Build the TDMA and ALOHA networks once before any run, so that a TDMA frame too
    short for the colouring, or a slot shorter than a packet, is a one-line error at once,
    not after the other runs."""
    from bflnet.simulator.simulation import Simulation

    for mac in ("tdma", "aloha"):
        if mac in config.mac_list():
            net = config.run_network(mac, False, bits)
            Simulation(seed, name=NAME).build_network(graph, **net.network_kwargs(graph))


#: Columns of a task's rows, in table order (after the run columns and BASE).
_TASK_COLUMNS = {
    "consensus": ("max_deviation", "mean_value"),
    "cdbfl": ("accuracy", "ece", "nll", "consensus_error", "kept_samples",
              "missed_increments"),
}
_RUN_COLS = ("task", "mac", "broadcast", "run_id", "message_bits", "area_m")
_ROUNDS = ("init", "round")

SCHEMA = Schema.of(
    col("task", "label", "cdbfl (CD-BFL) or consensus (averaging)"),
    col("mac", "label", "links (independent links: the reference) or the shared medium's "
        "MAC: none, tdma, csma, aloha", reference="links"),
    col("broadcast", "flag", "one broadcast per device and round (true) or one unicast per "
        "neighbour (false)"),
    RUN_ID,
    col("message_bits", "bits", "size of one gossip message"),
    col("area_m", "1", "side of the square area in metres (radius_m * sqrt(pi K / degree))"),
    *BASE,
    col("max_deviation", "1", "consensus: largest |value - true mean| over the devices",
        *_ROUNDS, when="tasks includes consensus"),
    col("mean_value", "1", "consensus: mean of the devices' values (drifts from the true "
        "mean only when messages are lost)", *_ROUNDS, when="tasks includes consensus"),
    ACCURACY.means("CD-BFL: the devices' mean test accuracy of their posterior predictives "
                   "(NaN between evaluations)").on(*_ROUNDS).only_when("tasks includes cdbfl"),
    ECE.means("CD-BFL: the devices' mean test ECE").on(*_ROUNDS)
    .only_when("tasks includes cdbfl"),
    NLL.means("CD-BFL: the devices' mean test NLL").on(*_ROUNDS)
    .only_when("tasks includes cdbfl"),
    col("consensus_error", "1", "CD-BFL: RMS distance of the devices' samples to their mean",
        *_ROUNDS, when="tasks includes cdbfl"),
    col("kept_samples", "count", "CD-BFL: samples each device has kept so far", *_ROUNDS,
        when="tasks includes cdbfl"),
    col("missed_increments", "count", "CD-BFL: compressed increments lost so far, over the "
        "devices", *_ROUNDS, when="tasks includes cdbfl"),
    DROPPED.on("round"),
    col("transmissions", "count", "packets put on the air so far, with a PHY preset its ACK "
        "frames too (links: attempts)"),
    col("receptions", "count", "packet receptions attempted so far: one per receiver of "
        "each packet"),
    col("collisions", "count", "receptions lost so far to interference or half-duplex "
        "(0 on independent links)"),
    col("backoffs", "count", "CSMA back-off counters drawn so far"),
    col("deferrals", "count", "deferrals so far: CSMA countdowns frozen by a busy carrier, "
        "ALOHA slots skipped"),
    col("collision_rate", "fraction", "collisions / receptions so far"),
)

_COLOURS = {"links": "black", "none": "tab:red", "tdma": "tab:blue", "csma": "tab:green",
            "aloha": "tab:orange"}


def default_plot(frame: pd.DataFrame) -> Figure:
    """Per task (a row of panels): CD-BFL accuracy or consensus deviation against
    simulated seconds and against bits, both on log axes (the rows at 0 s and 0 bits, the
    initial state, are off them and left out: said in the title); one curve per MAC
    (colour) and unicast (solid) or broadcast (dashed), the links reference in black; the
    first seed's runs. Labels from the scenario's columns."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bflnet.analysis.labels import ColumnFacts

    facts = ColumnFacts.of(SCHEMA)
    tasks = [t for t in TASKS if t in set(frame["task"])]
    fig = Figure(figsize=(10, 3.4 * len(tasks)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(tasks), 2, squeeze=False)
    seeds = sorted(set(frame["seed"])) if "seed" in frame else []
    for row, task in zip(axes, tasks, strict=True):
        metric = "accuracy" if task == "cdbfl" else "max_deviation"
        runs = frame[frame["task"] == task].dropna(subset=[metric])
        if seeds:
            runs = runs[runs["seed"] == seeds[0]]
        for (mac, cast), run in runs.groupby(["mac", "broadcast"], sort=False):
            label = "links" if mac == "links" else f"{mac}, {'broadcast' if cast else 'unicast'}"
            style = dict(color=_COLOURS.get(str(mac), "grey"), ls="--" if cast else "-",
                         lw=1.2, label=label)
            for ax, x in zip(row, ("time_s", "cum_bits"), strict=True):
                on_axis = run[run[x] > 0]  # 0 s and 0 bits are off a log axis
                ax.plot(on_axis[x], on_axis[metric], **style)
        name = "CD-BFL" if task == "cdbfl" else "consensus averaging"
        for ax, x in zip(row, ("time_s", "cum_bits"), strict=True):
            ax.set(xlabel=facts.label(x), ylabel=facts.label(metric), title=name,
                   xscale="log", yscale="log" if task == "consensus" else "linear")
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=7)
    which = f"seed {format_seed(seeds)}" if seeds else "one seed"
    fig.suptitle(f"{which}, one run per line; the initial state (0 s, 0 bits) is off the "
                 f"log axes", fontsize="medium")
    return fig


def format_seed(seeds: list[Any]) -> str:
    """The first of ``seeds``, and how many there are beside it."""
    more = len(seeds) - 1
    return f"{seeds[0]}" + (f" (of {len(seeds)} seeds)" if more else "")


@register(NAME, D2DMediumConfig,
          "CD-BFL and consensus averaging on a shared radio medium (K devices on a random "
          "geometric graph) under each MAC x unicast/broadcast, against independent links: "
          "accuracy or deviation against seconds and bits, with collision, back-off and "
          "deferral counts.", plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA)
def run(config: D2DMediumConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """Every task x setting of ``config`` (module docstring), one tidy frame."""
    import pandas as pd

    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.protocols.progress import setup_bar
    from bflnet.simulator.rng import RngStreams

    tasks = config.task_list()
    streams = RngStreams(seed)
    graph = config.run_graph(seed)
    require_connected(graph)
    frames = []
    for task in tasks:
        eval_every: int | None = None
        if task == "cdbfl":
            setup = setup_bar(NAME, None, progress)
            setup.set_postfix_str("loading torch and data")
            import torch

            from bflnet.learners.langevin.cdbfl import CDBFL

            torch.set_num_threads(config.threads)
            space = workspace(config, streams.numpy("data"))
            setup.close()
            d = space.model.d
            codec = codec_for(config, d)
            bits = codec.bits_for((1, d)) if codec is not None else 64 * d
            params = subset(CDBFLParams, config)
            eval_every = config.eval_every

            def make(space: Any = space, params: CDBFLParams = params) -> Any:
                return CDBFL(space.model, space.nodes, params, eval_sets=space.eval_sets)
        else:
            from bflnet.learners.gossip.averaging import ConsensusAveraging
            from bflnet.protocols.coding.codecs import RawCodec

            codec = RawCodec(64)
            bits = codec.bits_for((1,))

            def make() -> Any:
                return ConsensusAveraging(distribution="normal")
        _check_slots(config, seed, graph, bits)
        for mac, broadcast in config.settings():
            rows = _run_one(config, seed, graph, make(), codec, bits, mac, broadcast,
                            eval_every, progress, task)
            cast = "broadcast" if broadcast else "unicast"
            frames.append(rows.assign(task=task, mac=mac, broadcast=broadcast,
                                      run_id=f"{task}-{mac}-{cast}-s{seed}",
                                      message_bits=bits, area_m=config.area()))
    frame = pd.concat(frames, ignore_index=True)
    metric_cols = [c for t in tasks for c in _TASK_COLUMNS[t]]
    ordered = [*_RUN_COLS, *(c.name for c in BASE), *metric_cols, "dropped", *COUNTS,
               "collision_rate"]
    return frame[[c for c in ordered if c in frame.columns]]
