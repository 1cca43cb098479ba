"""Analog over-the-air aggregation (AirComp) on a multiple-access uplink.

K devices each hold a d-dimensional payload ``x_k`` and transmit it as d analog symbols
in the same d channel uses; the server receives, per coordinate,

    y = Σ_k h_k p_k x_k + z,        z ~ N(0, N_0),

with ``h_k`` the device's fading amplitude (block fading: one draw per round, mean power
gain from the path loss at its distance to the server, Rayleigh or no small-scale
fading), ``p_k`` its transmit scaling and ``N_0`` the noise power per channel use. The
phase of ``h_k`` is assumed known at the device and compensated, so amplitudes are real.

**Power control** (truncated channel inversion, as in Zhu, Wang and Huang, "Broadband
Analog Aggregation for Low-Latency Federated Edge Learning", and in Liu and Simeone,
"Wireless Federated Langevin Monte Carlo"): a device whose amplitude is below the round's
threshold ``g`` stays silent; every other device inverts its channel,
``p_k = sqrt(a) / h_k``, so that the server receives ``sqrt(a) Σ_active x_k + z`` and
estimates the mean of the active payloads as ``y / (sqrt(a) K_a)``, with noise variance
``N_0 / (a K_a²)`` per coordinate. Payloads are clipped to norm ``clip`` before sending,
so a device spends at most ``a clip² / h_k²`` per round; with a per-round energy budget
``E = d P̄`` (``P̄`` the average power per channel use) the largest common scaling is
``a_max = min_active h_k² E / clip²``. Rules for ``a``:

* ``"langevin"`` (the Langevin papers' rule): ``a = min(a_max, N_0 / (v K_a²))`` for a
  target noise variance ``v`` on the mean: transmit no louder than needed for the channel
  noise to be exactly the Langevin noise (the receiver adds nothing); louder is wasted
  energy, and at low SNR the channel noise exceeds ``v``;
* ``"full"``: ``a = a_max`` (the least channel noise the budget allows).

**Threshold.** ``gain_threshold`` (an amplitude) fixes ``g``; ``None`` picks it per round
among the candidates ``g = h_(j)`` (amplitudes sorted ascending, ``k = K − j + 1`` devices
at or above) by minimising a bound on the error of the aggregate, by one of two rules
(``truncation``):

* ``"authors"`` (the WFLMC authors' code): ``N_0 K² / (E k² h_(j)²) + 4 (K − k)²``;
* ``"consistent"``: ``d N_0 K² / (E k² h_(j)²) + 4 (K − k)² = N_0 K² / (P̄ k² h_(j)²) +
  4 (K − k)²``.

Derivation (both per ``clip²``): at the full budget the weakest active device sets
``a = h_(j)² E / clip²``, so each coordinate of the sum estimate ``y / sqrt(a)`` carries
noise of variance ``N_0 / a = N_0 clip² / (h_(j)² E)``, and rescaled from k devices to K
(the factor ``K² / k²``) ``N_0 K² clip² / (E k² h_(j)²)`` per coordinate. The K − k silent
payloads, each of norm at most ``clip``, bias the whole d-vector by at most
``4 (K − k)² clip²`` in squared norm (the authors' bound). The authors' rule adds the
noise of **one coordinate** to the bias of **the whole vector**; the consistent rule adds
the noise of the whole vector (d times one coordinate's) to it, i.e. it bounds
``E ‖estimate − sum‖²``. With ``E = d P̄`` the consistent rule does not depend on d (the
per-use SNR decides who is cut), while under the authors' rule the noise term falls as
``1 / d``: at d = 5 (the WFLMC experiment) the two rarely differ, at d ~ 10⁵ the
authors' rule never silences a device, however deep its fade.

**Air time and energy.** A round takes ``d / bandwidth_hz + latency_s`` seconds whatever
K is (one symbol per channel use, all devices at once); device k spends
``p_k² ||x_k||² / bandwidth_hz`` (power units times seconds; joules when powers are in
watts).

>>> import numpy as np
>>> spec = AirCompSpec(tx_power=1.0, noise_power=1.0, gain_threshold=0.5)
>>> plan = plan_round(np.array([1.0, 0.4, 2.0]), spec, dim=4, clip=1.0)
>>> plan.active.tolist(), plan.k_active, plan.scale  # a = 1² * 4 * 1 / 1²
([True, False, True], 2, 4.0)
>>> plan.noise_var  # 1 / (4 * 2²)
0.0625

A device in a deep fade, d = 100 000 coordinates at 10 dB: the authors' rule keeps it
(its noise, counted on one coordinate, looks small), the consistent rule cuts it.

>>> deep = np.array([0.001, 0.1, 0.1])
>>> plan_round(deep, AirCompSpec(tx_power=10.0), dim=100_000, clip=1.0).k_active
3
>>> plan_round(deep, AirCompSpec(tx_power=10.0, truncation="consistent"), dim=100_000,
...            clip=1.0).k_active
2
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bflnet.validation.checks import check_real
from bflnet.validation.limits import MIN_BANDWIDTH_HZ

POWER_RULES = ("langevin", "full")
#: Rules for the truncation threshold when ``gain_threshold`` is ``None`` (module docstring).
TRUNCATIONS = ("authors", "consistent")
AIRCOMP_FADINGS = ("rayleigh", "none")


def tx_power_from_snr_db(snr_db: float, noise_power: float = 1.0) -> float:
    """The average transmit power per channel use ``P̄ = 10^(snr_db/10) N_0`` (the SNR of
    the WFLMC code: transmit power over noise power, before the channel's gain)."""
    snr_db = check_real("snr_db", snr_db, ge=-100, le=100)
    return 10.0 ** (snr_db / 10.0) * noise_power


@dataclass(frozen=True)
class AirCompSpec:
    """The AirComp uplink (module docstring): ``tx_power`` P̄ (average power per channel
    use, the units of ``noise_power``), ``noise_power`` N_0, ``bandwidth_hz`` (channel
    uses per second), ``latency_s`` per round, ``gain_threshold`` (``None``: picked per
    round by the ``truncation`` rule), ``power_rule`` and ``fading``."""

    tx_power: float = 1.0
    noise_power: float = 1.0
    bandwidth_hz: float = 1e6
    latency_s: float = 0.0
    gain_threshold: float | None = None
    power_rule: str = "langevin"
    fading: str = "rayleigh"
    truncation: str = "authors"

    def __post_init__(self) -> None:
        check_real("tx_power", self.tx_power, gt=0, le=1e30)
        check_real("noise_power", self.noise_power, gt=0, le=1e30)
        check_real("bandwidth_hz", self.bandwidth_hz, ge=MIN_BANDWIDTH_HZ, le=1e12)
        check_real("latency_s", self.latency_s, ge=0, le=1e6)
        if self.gain_threshold is not None:
            check_real("gain_threshold", self.gain_threshold, ge=0, le=1e30)
        if self.power_rule not in POWER_RULES:
            raise ValueError(f"power_rule: must be one of {', '.join(POWER_RULES)}, got "
                             f"{self.power_rule!r}")
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation: must be one of {', '.join(TRUNCATIONS)}, got "
                             f"{self.truncation!r}")
        if self.fading not in AIRCOMP_FADINGS:
            raise ValueError(f"fading: must be one of {', '.join(AIRCOMP_FADINGS)}, got "
                             f"{self.fading!r}")

    def airtime_s(self, dim: int) -> float:
        """Seconds one round takes: ``dim / bandwidth_hz + latency_s`` (any K)."""
        return dim / self.bandwidth_hz + self.latency_s

    def energy_budget(self, dim: int) -> float:
        """Largest energy a device may spend in a round, in power x channel uses:
        ``dim * tx_power``."""
        return dim * self.tx_power


def mean_gains_to_server(positions: np.ndarray, server_xy: np.ndarray,
                         pathloss: object) -> np.ndarray:
    """Each device's mean power gain to the server: ``pathloss.gains`` (a
    :class:`~bflnet.radio.pathloss.LogDistance`) at its distance."""
    xy = np.asarray(positions, dtype=np.float64)
    distances = np.hypot(*(xy - np.asarray(server_xy, dtype=np.float64)).T)
    return pathloss.gains(distances)  # type: ignore[attr-defined]


def draw_amplitudes(rng: np.random.Generator, mean_gains: np.ndarray,
                    fading: str = "rayleigh") -> np.ndarray:
    """One round's fading amplitudes ``|h_k|``: ``sqrt(mean_gain * E)``, E ~ Exp(1)
    (Rayleigh: ``|h|²`` of a circular complex normal), or ``sqrt(mean_gain)``."""
    g = np.asarray(mean_gains, dtype=np.float64)
    if fading == "none":
        return np.sqrt(g)
    return np.sqrt(g * rng.standard_exponential(g.shape))


def wflmc_threshold(amplitudes: np.ndarray, energy_budget: float,
                    noise_power: float, *, noise_coordinates: float = 1.0) -> float:
    """The amplitude threshold minimising ``noise_coordinates · N_0 K² / (E k² h_(j)²) +
    4 (K − k)²`` over the sorted amplitudes: 1 coordinate is the WFLMC authors' rule, d
    the consistent one (module docstring)."""
    tt = np.sort(np.asarray(amplitudes, dtype=np.float64))
    K = tt.size
    k = np.arange(K, 0, -1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        error = (noise_coordinates * noise_power * K ** 2 / (energy_budget * k ** 2 * tt ** 2)
                 + 4.0 * (K - k) ** 2)
    return float(tt[int(np.argmin(error))])


def truncation_threshold(amplitudes: np.ndarray, spec: AirCompSpec, dim: int) -> float:
    """The round's amplitude threshold: ``spec.gain_threshold`` if set, else the
    ``spec.truncation`` rule's (module docstring) for a ``dim``-coordinate payload."""
    if spec.gain_threshold is not None:
        return float(spec.gain_threshold)
    coordinates = float(dim) if spec.truncation == "consistent" else 1.0
    return wflmc_threshold(amplitudes, spec.energy_budget(dim), spec.noise_power,
                           noise_coordinates=coordinates)


@dataclass(frozen=True)
class RoundPlan:
    """One round's power control: who transmits (``active``), the common scaling ``a``
    (``scale``; 0 when nobody transmits), ``noise_var`` = N_0 / (a K_a²), the channel's
    noise variance per coordinate on the estimated mean (``inf`` when nobody transmits),
    and the amplitude ``threshold`` used."""

    active: np.ndarray
    k_active: int
    scale: float
    noise_var: float
    threshold: float


def plan_round(amplitudes: np.ndarray, spec: AirCompSpec, *, dim: int, clip: float,
               target_var: float | None = None, scale_cap: float | None = None) -> RoundPlan:
    """Truncation and scaling for one round (module docstring); ``target_var`` is the
    noise variance per coordinate the receiver wants on the mean (the ``"langevin"``
    rule's cap; ignored by ``"full"``); ``scale_cap`` a further cap on ``a`` from outside
    the round (a power allocation over the rounds, e.g. a privacy budget:
    :mod:`bflnet.radio.privacy`; ``None``: none)."""
    clip = check_real("clip", clip, gt=0, le=1e30)
    h = np.asarray(amplitudes, dtype=np.float64)
    if not np.isfinite(h).all() or (h < 0).any():
        raise ValueError("amplitudes: must be finite and >= 0")
    energy = spec.energy_budget(dim)
    threshold = truncation_threshold(h, spec, dim)
    active = (h >= threshold) & (h > 0)
    k_a = int(active.sum())
    if k_a == 0:
        return RoundPlan(active, 0, 0.0, math.inf, float(threshold))
    a = float(h[active].min()) ** 2 * energy / clip ** 2
    if spec.power_rule == "langevin" and target_var is not None:
        target_var = check_real("target_var", target_var, gt=0, le=1e30)
        a = min(a, spec.noise_power / (target_var * k_a ** 2))
    if scale_cap is not None:
        a = min(a, check_real("scale_cap", scale_cap, ge=0, le=1e300))
    if not a > 0:  # underflow of a tiny gain: nobody can be heard
        return RoundPlan(np.zeros_like(active), 0, 0.0, math.inf, float(threshold))
    return RoundPlan(active, k_a, a, spec.noise_power / (a * k_a ** 2), float(threshold))


@dataclass(frozen=True)
class Reception:
    """What one round delivers: the received ``signal`` (``(..., d)``), its ``noiseless``
    part ``Σ h_k p_k x_k``, the server's ``mean`` estimate ``signal / (sqrt(a) K_a)``,
    each device's ``energy`` (``(..., K)``) and how many payloads were ``clipped``."""

    signal: np.ndarray
    noiseless: np.ndarray
    mean: np.ndarray
    energy: np.ndarray
    clipped: int


def clip_rows(payloads: np.ndarray, clip: float) -> tuple[np.ndarray, int]:
    """Each payload (last axis) scaled to norm at most ``clip``; how many were scaled."""
    norms = np.linalg.norm(payloads, axis=-1, keepdims=True)
    over = norms > clip
    factor = np.where(over, clip / np.where(over, norms, 1.0), 1.0)
    return payloads * factor, int(over.sum())


def transmit(plan: RoundPlan, amplitudes: np.ndarray, payloads: np.ndarray,
             spec: AirCompSpec, rng: np.random.Generator, *, clip: float) -> Reception:
    """One round on the air: ``payloads`` of shape ``(..., K, d)`` (leading axes: independent
    copies under the same fading, e.g. parallel chains), clipped to ``clip``, sent with
    ``p_k = sqrt(a) / h_k`` by the active devices; noise from ``rng``."""
    if plan.k_active == 0:
        raise ValueError("transmit: no device transmits this round (record it, do not send)")
    x, clipped = clip_rows(np.asarray(payloads, dtype=np.float64), clip)
    h = np.asarray(amplitudes, dtype=np.float64)
    p = np.zeros_like(h)
    p[plan.active] = math.sqrt(plan.scale) / h[plan.active]
    noiseless = np.einsum("k,...kd->...d", h * p, x)
    z = math.sqrt(spec.noise_power) * rng.standard_normal(noiseless.shape)
    signal = noiseless + z
    energy = p ** 2 * np.einsum("...kd,...kd->...k", x, x) / spec.bandwidth_hz
    mean = signal / (math.sqrt(plan.scale) * plan.k_active)
    return Reception(signal, noiseless, mean, energy, clipped)
