"""The digital baseline's rounds with rate adaptation (:mod:`bflnet.radio.digital_uplink`)
under the over-the-air server protocol
(:class:`~bflnet.protocols.aircomp_server.AirCompServerProtocol`): its digital round, given
a :class:`RateAdaptiveUplink`, sends each device's change at the bits its channel supports.

A round: the fading amplitudes (stream ``aircomp.fading``), the plan
(:func:`~bflnet.radio.digital_uplink.plan_digital_round`: each device's payload and
energy), then each device heard encodes its change (stream ``codec.up.<k>``, which the
server shares: it draws the subset of a sparse payload and the quantiser's rounding) with
the unbiased stochastic quantiser at its bits (:func:`unbiased_payload`); the slots take
the plan's air time, the server averages what arrived and the learner adds all of its
Langevin noise (the quantisation noise is extra). A round with nobody heard is a
``silent_round`` row and leaves the sample as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from bflnet.protocols.aircomp_server import AirCompServerProtocol, DigitalUplink
from bflnet.protocols.coding.codecs import StochasticQuantizer
from bflnet.radio.aircomp import draw_amplitudes
from bflnet.radio.digital_uplink import DigitalLink, Payload, plan_digital_round
from bflnet.simulator.node import SERVER
from bflnet.simulator.simulation import Simulation


@dataclass(frozen=True)
class RateAdaptiveUplink(DigitalUplink):
    """The digital uplink whose bits follow each device's channel (``link``); ``codec``
    is unused (the quantiser's bits are chosen per device and round)."""

    codec: Any = None
    link: DigitalLink = field(default_factory=DigitalLink)


def unbiased_payload(x: np.ndarray, payload: Payload, rng: np.random.Generator
                     ) -> np.ndarray:
    """What the server decodes of ``x`` sent as ``payload``: every coordinate through the
    stochastic quantiser at ``payload.bits_per_coordinate`` bits, or a random subset of
    ``payload.coordinates`` of them at 2 bits scaled by ``d / m`` (unbiased either way).

    >>> x = np.array([0.5, -1.0, 0.25, 0.0])
    >>> est = [unbiased_payload(x, Payload(2, 2, 36), np.random.default_rng(s))
    ...        for s in range(4000)]
    >>> np.allclose(np.mean(est, axis=0), x, atol=0.1)
    True
    """
    d = x.shape[-1]
    quantiser = StochasticQuantizer(payload.bits_per_coordinate)
    if payload.coordinates >= d:
        return quantiser.decode(quantiser.encode(x, rng))
    keep = rng.choice(d, size=payload.coordinates, replace=False)
    out = np.zeros(d, dtype=np.float64)
    out[keep] = quantiser.decode(quantiser.encode(x[keep], rng)) * (d / payload.coordinates)
    return out


class RateAdaptiveProtocol(AirCompServerProtocol):
    """:class:`~bflnet.protocols.aircomp_server.AirCompServerProtocol` whose digital round
    is the rate-adaptive one (module docstring) when its uplink is a
    :class:`RateAdaptiveUplink`."""

    def _digital(self, sim: Simulation, theta: np.ndarray, deltas: np.ndarray,
                 rngs: tuple[np.random.Generator, np.random.Generator,
                             list[np.random.Generator]],
                 cum_energy: float) -> Generator[simpy.Event, Any, Any]:
        up = self.uplink
        if not isinstance(up, RateAdaptiveUplink):
            return (yield from super()._digital(sim, theta, deltas, rngs, cum_energy))
        fading_rng, learner_rng, codec_rngs = rngs
        rec, learner, K, d = sim.recorder, self.learner, self.learner.K, self.dim
        amps = draw_amplitudes(fading_rng, up.mean_gains, up.spec.fading)
        plan = plan_digital_round(amps, up.spec, d, up.link)
        got = [unbiased_payload(deltas[k], plan.payloads[k], codec_rngs[k])
               for k in range(K) if plan.heard[k]]
        yield sim.env.timeout(plan.airtime_s)
        rec.count_bits(plan.bits, delivered=True, direction="up")
        energy = plan.energy / up.spec.bandwidth_hz
        round_energy = float(energy.sum())
        cum_energy += round_energy
        if not got:
            rec.record("silent_round", node=SERVER, **self._zeros(K, cum_energy, 0))
            return theta, cum_energy
        theta, added = learner.merge(theta, np.mean(got, axis=0), 0.0, learner_rng)
        rec.record("round", node=SERVER, k_active=len(got), silent=K - len(got), scale=1.0,
                   channel_var=0.0, added_var=added, clipped=0, round_energy_j=round_energy,
                   max_device_energy_j=float(energy.max()), cum_energy_j=cum_energy,
                   cum_channel_uses=0)
        return theta, cum_energy


def run_digital(learner: Any, rounds: int, dim: int, *, seed: int,
                uplink: RateAdaptiveUplink,
                on_round: Callable[[int, np.ndarray], None] | None = None,
                name: str = "digital") -> Any:
    """One run of ``learner`` over ``uplink`` on a star of ``learner.K`` devices and a
    server (as :func:`~bflnet.protocols.aircomp_server.run_fald`): the frame."""
    import networkx as nx

    sim = Simulation(seed, name=name)
    graph = nx.Graph()
    graph.add_nodes_from(range(learner.K))
    sim.build_network(graph, server=True)
    return sim.run(RateAdaptiveProtocol(learner, rounds, dim, uplink=uplink,
                                        on_round=on_round)).frame
