"""The links' settings: the channel model of every link, packets, ARQ and compute time.

:class:`LinkSettings` is the link layer of
:class:`bflnet.scenarios.shared.network_settings.NetworkSettings`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bflnet.runs.config import param
from bflnet.scenarios.shared.graph_settings import MAX_METRES
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.simulator.compute import FixedStepTime
from bflnet.validation.limits import (
    MIN_BANDWIDTH_HZ,
    MIN_CODING_RATE,
    MIN_METRES,
    MIN_RATE_BPS,
)

if TYPE_CHECKING:
    import networkx as nx

    from bflnet.channels import Channel

CHANNELS = ("ideal", "fixed", "gilbert-elliott", "rayleigh", "rician")
FADING = ("rayleigh", "rician")
#: The channels whose packets take time (rate or bandwidth, latency, MTU).
_TIMED = ("fixed", "gilbert-elliott", *FADING)


def channel_is(*names: str) -> Callable[[LinkSettings], bool]:
    """Whether the channel is one of ``names``."""
    return lambda s: s.channel in names


#: The link fields read only with some channels, whatever the medium: field -> (is it read
#: under these settings?, the settings that read it). The others depend on the medium too
#: (:data:`bflnet.scenarios.shared.network_settings.USED_ONLY_WITH`).
LINK_USED_ONLY_WITH: dict[str, tuple[Callable[[LinkSettings], bool], str]] = {
    "ge_p_good_to_bad": (channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "ge_p_bad_to_good": (channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "ge_loss_bad": (channel_is("gilbert-elliott"), "channel=gilbert-elliott"),
    "rician_k": (channel_is("rician"), "channel=rician"),
}


@dataclass(frozen=True)
class LinkSettings:
    """Every link's channel model (rate, latency, loss, fading), packet size, ARQ and the
    simulated compute time per step; builds the channel and the compute model."""

    channel: str = param("fixed", "channel model of every link", choices=CHANNELS)
    rate_bps: float = param(1e6, "link rate in bit/s (fixed, gilbert-elliott)",
                            ge=MIN_RATE_BPS, le=1e15)
    latency_s: float = param(radio_default("latency_s"), "one-way latency per packet in "
                             "seconds", ge=0, le=1e6)
    loss_prob: float = param(0.0, "i.i.d. packet loss probability (fixed)", ge=0, lt=1)
    ge_p_good_to_bad: float = param(0.01, "Gilbert-Elliott P(good -> bad)", gt=0, le=1)
    ge_p_bad_to_good: float = param(0.3, "Gilbert-Elliott P(bad -> good)", gt=0, le=1)
    ge_loss_bad: float = param(1.0, "Gilbert-Elliott loss probability in the bad state",
                               ge=0, le=1)
    bandwidth_hz: float = param(radio_default("bandwidth_hz"), "bandwidth in Hz (fading "
                                "channels)", ge=MIN_BANDWIDTH_HZ, le=1e12)
    mean_snr_db: float = param(radio_default("mean_snr_db"), "mean SNR in dB at 1 m (fading "
                               "channels)", ge=-300, le=300)
    path_loss_exponent: float = param(radio_default("path_loss_exponent"), "path-loss "
                                      "exponent (fading channels)", ge=0, le=10)
    distance_m: float = param(radio_default("distance_m"), "link distance in metres when the "
                              "graph has no positions", ge=MIN_METRES, le=MAX_METRES)
    coding_rate: float = param(radio_default("coding_rate"), "coding rate in bit/s/Hz "
                               "(fading channels)", ge=MIN_CODING_RATE, le=100)
    rician_k: float = param(3.0, "Rician K factor", ge=0, le=1e6)
    mtu_bits: int = param(12_000, "maximum packet size in bits", ge=1, le=10**12)
    max_attempts: int | None = param(8, "ARQ attempts per packet (none: unlimited)", ge=1,
                                     le=10**6)
    compute_s_per_step: float = param(0.0, "simulated seconds per local step", ge=0, le=1e6)

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

    def build_compute(self) -> FixedStepTime:
        """The compute model: a fixed simulated time per local step."""
        return FixedStepTime(self.compute_s_per_step)

    def link_kwargs(self, graph: nx.Graph) -> dict[str, Any]:
        """The links' keyword arguments for ``Simulation.build_network``: channel, packet
        size, ARQ and compute model."""
        return dict(channel=self.build_channel(graph), mtu_bits=self.mtu_bits,
                    max_attempts=self.max_attempts, compute=self.build_compute())
