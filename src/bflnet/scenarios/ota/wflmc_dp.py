"""The WFLMC chains under a privacy budget (``wflmc-gaussian``'s ``wflmc-opt-dp``,
``wflmc-equal-dp`` and ``noiseless-dp``): a power allocation planned over the whole run,
then the rounds.

The allocations of :mod:`bflnet.scenarios.ota.wflmc_power` need the run's fading before
its first round (as in the authors' code), so the run is played here, round by round, with
the same random numbers as :func:`~bflnet.protocols.parameter_server.run_fald` with
``common_noise``: the same named streams of the run's seed (``learner`` for θ_0 and the
Langevin noise, ``agent.k``, ``aircomp.fading`` one draw per round,
``learner.remainder``), :func:`~bflnet.radio.aircomp.plan_round` and
:func:`~bflnet.radio.aircomp.transmit`. Without a cap (``scale_caps`` of ``inf``) the chain
is ``run_fald``'s ``wflmc`` draw for draw (a test holds them equal).

``noiseless-dp`` is Langevin over ideal links with the privacy noise the same budget
calls for, added to the exact mean update: in round s, noise of variance
``σ_s² = N_0 / (a_s K²)`` per coordinate on the mean (``N_0 / a_s`` on the sum of the
K clipped payloads, the Gaussian mechanism of :mod:`bflnet.radio.privacy` with every
device in every round, as if the K devices' share of it summed at an aggregator: the
authors' ``NoiselessDP_LMC``), drawn from the Langevin noise's standard normals; the
learner adds ``max(0, 2η − σ_s²)`` more (none when ``a_s`` is at most the Langevin level
``N_0 / (2η K²)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bflnet.learners.langevin.fald import FALD
from bflnet.radio.aircomp import (
    AirCompSpec,
    RoundPlan,
    draw_amplitudes,
    plan_round,
    transmit,
)
from bflnet.radio.privacy import device_rho, epsilon_of
from bflnet.scenarios.ota.wflmc_power import LangevinBound, equal_scales, optimise_scales
from bflnet.simulator.rng import RngStreams

#: The methods under the privacy budget.
DP_METHODS = ("wflmc-opt-dp", "wflmc-equal-dp", "noiseless-dp")


@dataclass
class RunRecord:
    """Per round of one run: devices heard, the scaling, the channel (or privacy) noise
    variance on the mean, the variance the learner added, the energy of all devices, and
    who transmitted (``(S, K)``)."""

    k_active: np.ndarray
    scale: np.ndarray
    channel_var: np.ndarray
    added_var: np.ndarray
    energy: np.ndarray
    active: np.ndarray


@dataclass(frozen=True)
class Allocation:
    """The power allocations of one experiment: the authors' ``bound``, the privacy
    ``budget`` R_dp per device, the payloads' ``clip``, ``noise_power`` N_0, ``burn_in``
    and the K devices."""

    bound: LangevinBound
    budget: float
    clip: float
    noise_power: float
    burn_in: int
    K: int

    @property
    def rho_unit(self) -> float:
        """ρ per unit of scaling of a transmitting device: ``2 clip² / N_0``."""
        return 2.0 * self.clip ** 2 / self.noise_power

    def air_scales(self, method: str, base: list[RoundPlan]) -> np.ndarray:
        """The rounds' scalings of ``wflmc-equal-dp`` or ``wflmc-opt-dp`` from the rounds'
        plans without privacy (``base``: who transmits, and the caps)."""
        caps = np.array([p.scale for p in base])
        k_a = np.array([p.k_active for p in base], dtype=np.float64)
        active = np.array([p.active for p in base], dtype=bool)
        if method == "wflmc-equal-dp":
            return equal_scales(caps, active, rho_unit=self.rho_unit, budget=self.budget)
        coef = np.where(k_a > 0, self.noise_power / np.maximum(k_a, 1.0) ** 2, 0.0)
        bias = 4.0 * (self.clip / self.K) ** 2 * (self.K - k_a) ** 2
        return optimise_scales(self.bound, noise_coef=coef, bias=bias, caps=caps,
                               charged=active, rho_unit=self.rho_unit, budget=self.budget,
                               burn_in=self.burn_in)

    def noiseless_var(self, rounds: int) -> np.ndarray:
        """``noiseless-dp``'s privacy noise per round on the mean update, ``N_0 / (a_s K²)``,
        from the optimised allocation with every device in every round, capped at the
        Langevin level ``a_s ≤ N_0 / (2η K²)``."""
        K, n0 = self.K, self.noise_power
        caps = np.full(rounds, n0 / (2.0 * self.bound.eta * K ** 2))
        a = optimise_scales(self.bound, noise_coef=np.full(rounds, n0 / K ** 2),
                            bias=np.zeros(rounds), caps=caps,
                            charged=np.ones((rounds, 1), dtype=bool),
                            rho_unit=self.rho_unit, budget=self.budget,
                            burn_in=self.burn_in)
        return n0 / (a * K ** 2)

    def epsilon(self, rec: RunRecord, delta: float) -> float:
        """The largest ε any device spent in the run ``rec`` at ``delta`` (over the air:
        each device's rounds; ``noiseless-dp``: every round)."""
        scale = np.where(rec.scale > 0, rec.scale, 0.0)
        rho = device_rho(scale, rec.active, self.clip, self.noise_power)
        return epsilon_of(float(rho.max()), delta) if rho.size else 0.0


def fading(seed: int, mean_gains: np.ndarray, rounds: int, kind: str) -> np.ndarray:
    """The run's amplitudes ``(rounds, K)``: the draws ``run_fald`` makes from the stream
    ``aircomp.fading`` of ``seed``, one round after the other."""
    rng = RngStreams(seed).numpy("aircomp.fading")
    return np.stack([draw_amplitudes(rng, mean_gains, kind) for _ in range(rounds)])


def plans(amps: np.ndarray, spec: AirCompSpec, *, dim: int, clip: float,
          target_var: float, scale_caps: np.ndarray | None = None) -> list[RoundPlan]:
    """Each round's :func:`~bflnet.radio.aircomp.plan_round` (its ``scale`` without
    ``scale_caps`` is the cap of the allocations: the energy budget and the Langevin
    level)."""
    caps = [None] * len(amps) if scale_caps is None else [
        None if math.isinf(c) else float(c) for c in scale_caps]
    return [plan_round(h, spec, dim=dim, clip=clip, target_var=target_var, scale_cap=c)
            for h, c in zip(amps, caps, strict=True)]


def run_air(learner: FALD, amps: np.ndarray, spec: AirCompSpec, *, dim: int, clip: float,
            seed: int, scale_caps: np.ndarray, on_round: Callable[[int, np.ndarray], None]
            ) -> RunRecord:
    """One over-the-air run of ``len(amps)`` rounds whose scaling in round s is capped at
    ``scale_caps[s]`` (module docstring); ``on_round(s, θ)`` sees every sample."""
    streams = RngStreams(seed)
    learner_rng = streams.numpy("learner")
    agent_rngs = [streams.numpy(f"agent.{k}") for k in range(learner.K)]
    merge_rng = streams.numpy("learner.remainder")
    S, K = amps.shape
    rec = _empty(S, K)
    theta = learner.init(learner_rng, (dim,))
    round_plans = plans(amps, spec, dim=dim, clip=clip,
                        target_var=learner.noise_target, scale_caps=scale_caps)
    for s, (h, plan) in enumerate(zip(amps, round_plans, strict=True)):
        deltas = learner.local_updates(theta, agent_rngs)
        if plan.k_active == 0:
            learner_rng.standard_normal(theta.shape)  # the receiver's noise, dropped
        else:
            rx = transmit(plan, h, deltas, spec, learner_rng, clip=clip)
            theta, added = learner.merge(theta, rx.mean, plan.noise_var, merge_rng)
            rec.k_active[s], rec.scale[s] = plan.k_active, plan.scale
            rec.channel_var[s], rec.added_var[s] = plan.noise_var, added
            rec.energy[s], rec.active[s] = float(rx.energy.sum()), plan.active
        on_round(s + 1, theta)
    return rec


def run_noiseless_dp(learner: FALD, privacy_var: np.ndarray, *, dim: int, seed: int,
                     on_round: Callable[[int, np.ndarray], None],
                     noise_power: float = 1.0) -> RunRecord:
    """One run over ideal links with privacy noise of variance ``privacy_var[s]`` per
    coordinate on round s's mean update (module docstring); the record's ``scale`` is the
    equivalent ``a_s = N_0 / (σ_s² K²)``."""
    streams = RngStreams(seed)
    learner_rng = streams.numpy("learner")
    agent_rngs = [streams.numpy(f"agent.{k}") for k in range(learner.K)]
    merge_rng = streams.numpy("learner.remainder")
    S, K = len(privacy_var), learner.K
    rec = _empty(S, K)
    theta = learner.init(learner_rng, (dim,))
    for s, var in enumerate(privacy_var):
        mean = learner.local_updates(theta, agent_rngs).mean(axis=-2)
        noisy = mean + math.sqrt(var) * learner_rng.standard_normal(theta.shape)
        theta, added = learner.merge(theta, noisy, float(var), merge_rng)
        rec.k_active[s], rec.channel_var[s], rec.added_var[s] = K, var, added
        rec.scale[s] = noise_power / (var * K ** 2)
        rec.active[s] = True
        on_round(s + 1, theta)
    return rec


def _empty(S: int, K: int) -> RunRecord:
    return RunRecord(np.zeros(S, dtype=np.int64), np.zeros(S), np.zeros(S), np.zeros(S),
                     np.zeros(S), np.zeros((S, K), dtype=bool))
