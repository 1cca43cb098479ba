"""Scenario ``consensus-averaging``: gossip averaging of one number per node.

It exercises the graph builders, the mixing matrices, the links (rate, latency, loss and
ARQ) and the recorder end to end; with a lossless channel the deviation from the true mean
falls geometrically at the rate set by the mixing matrix's spectral gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from bflnet.protocols.stopping import StopRule
from bflnet.runs.config import param, validate
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT64, ROW_BYTES, Footprint, count
from bflnet.runs.schema import (
    BASE,
    DROPPED,
    MEDIUM_COLUMNS,
    MESSAGE_COLUMNS,
    NODE,
    Schema,
    col,
)
from bflnet.scenarios.shared.network_settings import NetworkSettings

if TYPE_CHECKING:
    import pandas as pd

NAME = "consensus-averaging"


@dataclass(frozen=True)
class ConsensusAveragingConfig(NetworkSettings):
    """Parameters of ``consensus-averaging``."""

    SCENARIO: ClassVar[str] = NAME
    SHARED_MEDIUM: ClassVar[bool] = True
    DECIDED_ELSEWHERE: ClassVar[dict[str, str]] = {
        "compute_s_per_step": "averaging does no local computation (rounds and the channel "
                              "decide the time)"}

    rounds: int = param(300, "number of gossip rounds", ge=1, le=10**8)
    mixing: str = param("metropolis-hastings", "mixing-matrix rule",
                        choices=("metropolis-hastings", "max-degree", "uniform"))
    codec: str = param("raw64", "payload encoding", choices=("raw32", "raw64"))
    init: str = param("normal", "distribution of the initial values",
                      choices=("normal", "uniform"))
    tolerance: float = param(0.0, "stop early once max_deviation <= tolerance (0: never)", ge=0,
                             le=1e6)
    record_messages: bool = param(False, "also record one row per message")
    round_jitter_s: float = param(0.0, "each node starts each round a delay uniform in "
                                  "[0, round_jitter_s) seconds after the round begins (its "
                                  "own random stream; 0: all at once)", ge=0, le=1e6)

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()

    def footprint(self) -> Footprint:
        """The graph and links, the dense K x K mixing matrix (and the copies its spectral
        gap needs), one row per round (and per message with ``record_messages``)."""
        size = self.graph_size()
        k = size.nodes
        fp = super().footprint().add(
            f"dense {count(k)} x {count(k)} mixing matrix and its spectral gap", size.fields,
            bytes=4 * FLOAT64 * k * k, work=k * k, flops=10 * k ** 3)
        rows = self.rounds + 1.0
        if self.record_messages:
            rows *= 1.0 + 2.0 * size.edges
        return fp.add(f"{rows:.3g} recorded rows",
                      ("rounds", "record_messages") if self.record_messages else ("rounds",),
                      bytes=ROW_BYTES * rows)


#: The message columns, some also on the shared medium's rows.
_MESSAGES = tuple(
    c.on("message", "mac").means(c.meaning + "; mac rows: backoff, defer or collision")
    .only_when("record_messages=true or medium=shared") if c.name == "kind" else
    c.on("message", "tx").means(c.meaning + "; tx rows: the packet's")
    if c.name in ("bits", "start_s") else c
    for c in MESSAGE_COLUMNS)

SCHEMA = Schema.of(
    *BASE,
    col("max_deviation", "1", "largest |value - true mean| over the nodes", "init", "round"),
    col("mean_value", "1", "mean of the nodes' values (drifts from the true mean only "
        "when messages are lost)", "init", "round"),
    NODE.means("message, mac and tx rows: the sender").on("message", "mac", "tx")
    .only_when("record_messages=true or medium=shared"),
    col("peer", "index", "message rows: the receiver (* for a broadcast); mac collision "
        "rows: the receiver that lost the packet", "message", "mac",
        when="record_messages=true or medium=shared"),
    *_MESSAGES,
    DROPPED.on("round", "message"),
    *MEDIUM_COLUMNS,
    col("spectral_gap", "1", "1 - second largest |eigenvalue| of the mixing matrix (same "
        "on every row)"),
)


@register(NAME, ConsensusAveragingConfig,
          "Gossip averaging of one number per node; records the max deviation from the true "
          "mean per round.", columns=SCHEMA)
def run(config: ConsensusAveragingConfig, *, seed: int = 0,
        progress: bool = False) -> pd.DataFrame:
    from bflnet.learners.gossip.averaging import ConsensusAveraging
    from bflnet.protocols.coding.codecs import make_codec
    from bflnet.protocols.consensus import DENSE_MAX, ConsensusProtocol
    from bflnet.protocols.graphs.mixing import make_mixing, spectral_gap
    from bflnet.protocols.graphs.topologies import require_connected
    from bflnet.simulator.simulation import Simulation
    sim = Simulation(seed, name=NAME, record_messages=config.record_messages)
    graph = config.run_graph(seed)
    require_connected(graph)
    sim.build_network(graph, **config.network_kwargs(graph))
    # sparse on large graphs, as the protocol builds them (the same weights)
    weights = make_mixing(config.mixing, graph,
                          sparse=graph.number_of_nodes() > DENSE_MAX)
    stop = StopRule(max_iterations=config.rounds,
                    until=(lambda m: m["max_deviation"] <= config.tolerance)
                    if config.tolerance > 0 else None)
    protocol = ConsensusProtocol(ConsensusAveraging(distribution=config.init), weights, stop,
                                 codec=make_codec(config.codec), progress=progress,
                                 broadcast=config.broadcast,
                                 round_jitter_s=config.round_jitter_s)
    frame = sim.run(protocol).frame
    frame["spectral_gap"] = spectral_gap(weights)
    return frame
