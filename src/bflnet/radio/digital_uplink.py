"""A digital uplink under the same energy budget, channel-use convention and bandwidth as
the analog one (:mod:`bflnet.radio.aircomp`): each device sends a quantised payload alone
in its own slot (orthogonal access, TDMA), at the rate its channel supports.

**Channel uses.** Both sides count real channel uses, ``bandwidth_hz`` of them per second,
with noise power N_0 per real channel use. The analog side sends its d coordinates as d
real symbols; a digital device's slot is d real channel uses too (one per coordinate, the
analog round's length), and a real AWGN channel at power P per use carries

    r(P) = ½ log2(1 + P h² / (Γ N_0))   bits per real channel use,

``h`` the device's amplitude and Γ = 10^(gap_db/10) the gap of a practical modulation and
code to capacity (0 dB: Shannon). Complex symbols would carry twice the bits in half the
uses: the convention is the same on both sides either way.

**Rate adaptation.** Per device and round, what the full budget E = d P̄ carries in the
slot, at constant power P̄ (optimal: r is concave), is ``⌊d r(P̄)⌋`` bits; the payload
(:func:`payload_for`) is the largest that fits: a 32-bit scale and ``b`` bits per
coordinate (an unbiased stochastic quantiser, ``2 <= b <= 32``); below 2 bits per
coordinate, ``m`` coordinates drawn at random (from randomness the server shares) at 2
bits each, scaled by ``d / m`` (unbiased); a device whose budget carries no coordinate
(fewer than 34 bits) stays silent.

**Operating points** (:class:`DigitalLink`):

* ``full``: every device that sends spends its whole budget E and sends the bits its
  channel supports;
* ``min-energy``: a device sends at most ``target_bits`` bits per coordinate (the
  quantiser's target precision; fewer if its channel supports fewer), with the least
  energy that carries its ``B`` payload bits in its d uses: inverting r,

      e(B) = d Γ N_0 / h² · (2^(2B/d) − 1)   ≤ E

  (constant power is optimal again, and e falls as the slot grows: at a fixed air time
  this is the minimum). Both points take the same air time.

A round lasts ``(devices heard) · d / bandwidth_hz + latency_s`` (one slot after the
other: the analog round's air time once per device heard), and device k spends
``e_k / bandwidth_hz``.

>>> round(bits_per_use(3.0), 12)  # ½ log2(4)
1.0
>>> round(energy_for(bits=100.0, uses=100.0, amplitude=1.0, noise_power=1.0), 12)  # 2^2 − 1
300.0
>>> payload_for(budget_bits=5 * 1000 + 32, dim=1000)
Payload(bits_per_coordinate=5, coordinates=1000, bits=5032)
>>> payload_for(budget_bits=1032, dim=1000)  # 1 bit per coordinate: 500 of them at 2 bits
Payload(bits_per_coordinate=2, coordinates=500, bits=1032)
>>> payload_for(budget_bits=33, dim=1000).coordinates  # silent
0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bflnet.radio.aircomp import AirCompSpec
from bflnet.validation.checks import check_real

#: Most channel uses a device may take in a round (:func:`channel_uses_for`).
MAX_USES = 1e15
#: Operating points of the digital uplink (module docstring).
OPERATING_POINTS = ("full", "min-energy")
#: Bits of the scale sent with each payload (a float32).
SIDE_BITS = 32
#: Fewest and most bits per coordinate of the quantiser (sign + one magnitude bit; float32).
MIN_BITS, MAX_BITS = 2, 32


def bits_per_use(snr: float, gap: float = 1.0) -> float:
    """Bits per real channel use at per-use SNR ``P h² / N_0``: ``½ log2(1 + snr / gap)``."""
    return 0.5 * math.log2(1.0 + snr / gap)


def energy_for(bits: float, uses: float, amplitude: float, noise_power: float,
               gap: float = 1.0) -> float:
    """Least energy (power x channel uses) carrying ``bits`` in ``uses`` real channel uses:
    ``uses Γ N_0 / h² (2^(2 bits / uses) − 1)`` (``inf`` for a zero amplitude)."""
    if bits <= 0:
        return 0.0
    if not amplitude > 0:
        return math.inf
    return uses * gap * noise_power / amplitude ** 2 * math.expm1(2.0 * bits / uses
                                                                     * math.log(2.0))


def _bits_in(n: float, snr_energy: float) -> float:
    return 0.5 * n * math.log2(1.0 + snr_energy / n)


def channel_uses_for(bits: float, energy: float, amplitude: float,
                     noise_power: float, gap: float = 1.0) -> float:
    """The fewest real channel uses ``n`` with ``n ½ log2(1 + energy h² / (n Γ N_0)) >=
    bits`` (``inf`` if none, or more than :data:`MAX_USES`: the left side grows with n
    towards ``energy h² / (2 Γ N_0 ln 2)``).

    >>> round(channel_uses_for(bits=10.0, energy=30.0, amplitude=1.0, noise_power=1.0), 6)
    10.0
    >>> channel_uses_for(bits=100.0, energy=10.0, amplitude=1.0, noise_power=1.0)
    inf
    """
    c = energy * amplitude ** 2 / (noise_power * gap)
    if bits <= 0:
        return 0.0
    if not c > 0 or bits >= c / (2.0 * math.log(2.0)):
        return math.inf
    lo, hi = 0.0, max(1.0, bits)
    while _bits_in(hi, c) < bits:
        lo, hi = hi, 2.0 * hi
        if hi > MAX_USES:
            return math.inf
    for _ in range(200):  # bisection to full precision
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if mid > 0 and _bits_in(mid, c) >= bits:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Payload:
    """A device's payload in a round: ``coordinates`` sent (0: silent; fewer than d: a
    random subset), each at ``bits_per_coordinate``, ``bits`` in all with the scale."""

    bits_per_coordinate: int
    coordinates: int
    bits: int


def payload_for(budget_bits: float, dim: int, max_bits: int = MAX_BITS) -> Payload:
    """The largest payload of at most ``budget_bits`` (module docstring): ``b`` bits per
    coordinate for all ``dim`` (at most ``max_bits``), else a subset at 2 bits each."""
    free = math.floor(budget_bits) - SIDE_BITS
    b = min(free // dim, max_bits) if free > 0 else 0
    if b >= MIN_BITS:
        return Payload(int(b), dim, int(dim * b + SIDE_BITS))
    m = min(free // MIN_BITS, dim) if free > 0 else 0
    if m < 1:
        return Payload(0, 0, 0)
    return Payload(MIN_BITS, int(m), int(m * MIN_BITS + SIDE_BITS))


@dataclass(frozen=True)
class DigitalLink:
    """The digital uplink's settings (module docstring): the ``operating_point``, the
    ``target_bits`` per coordinate of ``min-energy`` and the ``gap_db`` to capacity."""

    operating_point: str = "full"
    target_bits: int = 4
    gap_db: float = 0.0

    def __post_init__(self) -> None:
        if self.operating_point not in OPERATING_POINTS:
            raise ValueError(f"operating_point: must be one of {', '.join(OPERATING_POINTS)}"
                             f", got {self.operating_point!r}")
        if not (isinstance(self.target_bits, int) and MIN_BITS <= self.target_bits <= MAX_BITS):
            raise ValueError(f"target_bits: must be an integer in [{MIN_BITS}, {MAX_BITS}], "
                             f"got {self.target_bits!r}")
        check_real("gap_db", self.gap_db, ge=0, le=30)

    @property
    def gap(self) -> float:
        """Γ = 10^(gap_db/10)."""
        return 10.0 ** (self.gap_db / 10.0)


@dataclass(frozen=True)
class DigitalPlan:
    """One digital round: each device's ``payloads``, its ``energy`` (power x channel uses;
    0 when silent), who is ``heard`` and the round's ``airtime_s``."""

    payloads: tuple[Payload, ...]
    energy: np.ndarray
    heard: np.ndarray
    airtime_s: float

    @property
    def bits(self) -> int:
        """Payload bits sent in the round."""
        return sum(p.bits for p in self.payloads)


def plan_digital_round(amplitudes: np.ndarray, spec: AirCompSpec, dim: int,
                       link: DigitalLink) -> DigitalPlan:
    """Rate adaptation and energy of one round (module docstring) for the fading
    ``amplitudes`` under ``spec`` (its ``tx_power`` P̄, ``noise_power``, ``bandwidth_hz``
    and ``latency_s``)."""
    p_bar, n0 = float(spec.tx_power), float(spec.noise_power)
    budget = dim * p_bar
    payloads, energy = [], np.zeros(len(amplitudes))
    for k, h in enumerate(np.asarray(amplitudes, dtype=np.float64)):
        most = dim * bits_per_use(p_bar * h * h / n0, link.gap)
        cap = link.target_bits if link.operating_point == "min-energy" else MAX_BITS
        payload = payload_for(most, dim, cap)
        payloads.append(payload)
        if payload.coordinates:
            energy[k] = (budget if link.operating_point == "full" else
                         min(budget, energy_for(payload.bits, dim, float(h), n0, link.gap)))
    heard = energy > 0
    airtime = int(heard.sum()) * dim / spec.bandwidth_hz + spec.latency_s
    return DigitalPlan(tuple(payloads), energy, heard, float(airtime))
