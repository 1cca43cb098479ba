"""Parameter-server rounds whose uplink is analog over-the-air aggregation (``uplink=aircomp``)
or ideal digital links, for learners of the FALD kind (:class:`~bflnet.learners.langevin.fald.FALD`)
and for FedAvg through :class:`~bflnet.learners.federated.ota_fedavg.AnalogFedAvg` (whose
``noise_target`` is ``None``: the power rule then spends the whole budget).

A round: the server's sample θ reaches every device (ideal downlink: the papers' set-up),
each device computes its change from its own stream, then

* ``aircomp``: the fading amplitudes of the round are drawn (stream ``aircomp.fading``),
  power control picks the silent devices and the scaling (:func:`~bflnet.radio.aircomp.
  plan_round`, with the learner's ``noise_target`` as the Langevin cap), the active
  devices transmit at once for ``d / bandwidth + latency`` seconds, the server receives
  the noisy sum (noise from ``aircomp.noise``) and hands the learner the estimated mean
  and the variance of the channel noise on it;
* ideal links (``uplink=None``): the exact mean of every device's change, channel noise 0,
  no time on the air, ``payload_bits`` per coordinate per device counted as uplink bits.

The learner then adds the remainder of its Gaussian noise (stream ``learner``). A round in
which no device transmits (every amplitude below the threshold) is a ``silent_round`` row
and leaves θ unchanged.

**Common random numbers** (``common_noise=True``): the channel's noise is drawn from the
stream ``learner``, the very standard normals ideal links' Langevin noise takes there
(one array of θ's shape per round, drawn in a silent round too), and the learner's
remainder from ``learner.remainder``; so runs of one seed over ideal links and over the
air differ only where the channel does (noise level, truncation, clipping). Off (the
default): channel noise from ``aircomp.noise``.

Rows: ``init``, then one ``round`` (or ``silent_round``) per round with ``k_active``,
``silent``, ``scale``, ``channel_var``, ``added_var``, ``clipped``, ``round_energy_j``,
``max_device_energy_j``, ``cum_energy_j``, ``cum_channel_uses``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from bflnet.learners.langevin.fald import FALD
from bflnet.radio.aircomp import AirCompSpec, draw_amplitudes, plan_round, transmit
from bflnet.simulator.node import SERVER
from bflnet.simulator.simulation import Outcome, Simulation


@dataclass(frozen=True)
class AirCompUplink:
    """The analog uplink: its ``spec``, each device's mean power gain to the server
    (``mean_gains``, e.g. :func:`~bflnet.radio.aircomp.mean_gains_to_server`) and the
    payload ``clip`` norm of the power control."""

    spec: AirCompSpec
    mean_gains: np.ndarray
    clip: float


@dataclass(frozen=True)
class DigitalUplink:
    """The digital baseline (:mod:`bflnet.radio.digital_uplink`): each device quantises
    its change with ``codec`` (e.g. a stochastic quantiser) and sends it alone in its
    slot with the energy budget of ``spec`` (``spec.energy_budget(d)``), under the same
    fading as the analog uplink (``mean_gains``). The server averages what arrived; the
    quantisation noise is not Gaussian, so the learner adds all of its Langevin noise."""

    spec: AirCompSpec
    mean_gains: np.ndarray
    codec: Any


class AirCompServerProtocol:
    """``rounds`` rounds of ``learner`` (module docstring) on a ``dim``-dimensional sample;
    ``on_round(round, theta)`` sees each new sample. ``chains > 0`` runs that many
    independent chains at once (``theta`` of shape ``(chains, dim)``) under the same
    fading draws, each with its own noise; ``0``: one chain, ``theta`` of shape
    ``(dim,)``. Energies on the rows are then summed over the chains. ``common_noise``:
    the channel's noise shares the ideal links' draws (module docstring)."""

    def __init__(self, learner: FALD, rounds: int, dim: int, *,
                 uplink: AirCompUplink | DigitalUplink | None = None,
                 payload_bits: int = 32,
                 on_round: Callable[[int, np.ndarray], None] | None = None,
                 chains: int = 0, common_noise: bool = False) -> None:
        if uplink is not None and len(uplink.mean_gains) != learner.K:
            raise ValueError(f"mean_gains: one per device ({learner.K}), got "
                             f"{len(uplink.mean_gains)}")
        if isinstance(uplink, DigitalUplink) and chains:
            raise ValueError("chains: the digital uplink runs one chain")
        self.learner = learner
        self.rounds = int(rounds)
        self.dim = int(dim)
        self.uplink = uplink
        self.payload_bits = int(payload_bits)
        self.on_round = on_round
        self.shape = (int(dim),) if chains == 0 else (int(chains), int(dim))
        self.common_noise = bool(common_noise)

    def process(self, sim: Simulation) -> Generator[simpy.Event, Any, Outcome]:
        env, rec, learner, K, d = sim.env, sim.recorder, self.learner, self.learner.K, self.dim
        learner_rng = sim.streams.numpy("learner")
        agent_rngs = [sim.streams.numpy(f"agent.{k}") for k in range(K)]
        fading_rng = sim.streams.numpy("aircomp.fading")
        noise_rng = sim.streams.numpy("aircomp.noise")
        merge_rng = learner_rng
        if self.common_noise and isinstance(self.uplink, AirCompUplink):
            noise_rng, merge_rng = learner_rng, sim.streams.numpy("learner.remainder")
        codec_rngs = ([sim.streams.numpy(f"codec.up.{k}") for k in range(K)]
                      if isinstance(self.uplink, DigitalUplink) else [])
        theta = learner.init(learner_rng, self.shape)
        copies = 1 if len(self.shape) == 1 else self.shape[0]
        cum_energy, uses = 0.0, 0
        rec.record("init", node=SERVER, **self._zeros(K, 0.0, 0))
        for r in range(1, self.rounds + 1):
            rec.iteration = r
            deltas = learner.local_updates(theta, agent_rngs)
            if self.uplink is None:
                bits = K * d * self.payload_bits * copies
                rec.count_bits(bits, delivered=True, direction="up")
                theta, added = learner.merge(theta, deltas.mean(axis=-2), 0.0, learner_rng)
                rec.record("round", node=SERVER, k_active=K, silent=0, scale=1.0,
                           channel_var=0.0, added_var=added, clipped=0, round_energy_j=0.0,
                           max_device_energy_j=0.0, cum_energy_j=0.0, cum_channel_uses=0)
            elif isinstance(self.uplink, DigitalUplink):
                theta, cum_energy = yield from self._digital(
                    sim, theta, deltas, (fading_rng, learner_rng, codec_rngs), cum_energy)
            else:
                up = self.uplink
                amps = draw_amplitudes(fading_rng, up.mean_gains, up.spec.fading)
                plan = plan_round(amps, up.spec, dim=d, clip=up.clip,
                                  target_var=learner.noise_target)
                yield env.timeout(up.spec.airtime_s(d))
                uses += d
                if plan.k_active == 0:
                    if self.common_noise:  # the receiver's noise, heard and dropped
                        noise_rng.standard_normal(theta.shape)
                    rec.record("silent_round", node=SERVER,
                               **self._zeros(K, cum_energy, uses))
                    if self.on_round is not None:
                        self.on_round(r, theta)
                    continue
                rx = transmit(plan, amps, deltas, up.spec, noise_rng, clip=up.clip)
                theta, added = learner.merge(theta, rx.mean, plan.noise_var, merge_rng)
                energy = float(rx.energy.sum())
                cum_energy += energy
                rec.record("round", node=SERVER, k_active=plan.k_active,
                           silent=K - plan.k_active, scale=plan.scale,
                           channel_var=plan.noise_var, added_var=added, clipped=rx.clipped,
                           round_energy_j=energy, max_device_energy_j=float(
                               rx.energy.reshape(-1, K).sum(axis=0).max()),
                           cum_energy_j=cum_energy, cum_channel_uses=uses)
            if self.on_round is not None:
                self.on_round(r, theta)
        return Outcome(state=theta, reason="max_iterations")

    def _digital(self, sim: Simulation, theta: np.ndarray, deltas: np.ndarray,
                 rngs: tuple[np.random.Generator, np.random.Generator,
                             list[np.random.Generator]],
                 cum_energy: float) -> Generator[simpy.Event, Any, Any]:
        """One digital round (:class:`DigitalUplink`): slots one after the other."""
        fading_rng, learner_rng, codec_rngs = rngs
        from bflnet.radio.digital_uplink import channel_uses_for

        up, rec, learner, K, d = self.uplink, sim.recorder, self.learner, self.learner.K, self.dim
        assert isinstance(up, DigitalUplink)
        amps = draw_amplitudes(fading_rng, up.mean_gains, up.spec.fading)
        energy = up.spec.energy_budget(d)
        got, slot_uses, bits_sent = [], 0.0, 0
        for k in range(K):
            encoded = up.codec.encode(deltas[k], codec_rngs[k])
            n = channel_uses_for(encoded.bits, energy, float(amps[k]), up.spec.noise_power)
            if math.isfinite(n):
                got.append(up.codec.decode(encoded))
                slot_uses += n
                bits_sent += encoded.bits
        yield sim.env.timeout(slot_uses / up.spec.bandwidth_hz + up.spec.latency_s)
        rec.count_bits(bits_sent, delivered=True, direction="up")
        round_energy = energy / up.spec.bandwidth_hz * len(got)
        cum_energy += round_energy
        if not got:
            rec.record("silent_round", node=SERVER, **self._zeros(K, cum_energy, 0))
            return theta, cum_energy
        theta, added = learner.merge(theta, np.mean(got, axis=0), 0.0, learner_rng)
        rec.record("round", node=SERVER, k_active=len(got), silent=K - len(got), scale=1.0,
                   channel_var=0.0, added_var=added, clipped=0, round_energy_j=round_energy,
                   max_device_energy_j=energy / up.spec.bandwidth_hz,
                   cum_energy_j=cum_energy, cum_channel_uses=0)
        return theta, cum_energy

    @staticmethod
    def _zeros(K: int, cum_energy: float, uses: int) -> dict[str, Any]:
        return {"k_active": 0, "silent": K, "scale": 0.0, "channel_var": 0.0,
                "added_var": 0.0, "clipped": 0, "round_energy_j": 0.0,
                "max_device_energy_j": 0.0, "cum_energy_j": cum_energy,
                "cum_channel_uses": uses}


def run_fald(learner: FALD, rounds: int, dim: int, *, seed: int,
             uplink: AirCompUplink | DigitalUplink | None = None,
             on_round: Callable[[int, np.ndarray], None] | None = None,
             chains: int = 0, name: str = "fald", common_noise: bool = False
             ) -> tuple[Any, np.ndarray]:
    """One run on a star of ``learner.K`` devices and a server: ``(frame, final sample)``;
    ``common_noise``: :class:`AirCompServerProtocol`'s."""
    import networkx as nx

    sim = Simulation(seed, name=name)
    graph = nx.Graph()
    graph.add_nodes_from(range(learner.K))
    sim.build_network(graph, server=True)
    result = sim.run(AirCompServerProtocol(learner, rounds, dim, uplink=uplink,
                                           on_round=on_round, chains=chains,
                                           common_noise=common_noise))
    return result.frame, result.state


