"""A digital uplink under the same energy budget as the analog one: each device sends its
quantised payload alone in its own slot (orthogonal access, TDMA), at a Shannon rate.

With an energy budget E per round (power x channel uses, as in
:mod:`bflnet.radio.aircomp`), amplitude h and noise power N_0, sending ``b`` bits in n
channel uses at power ``E / n`` is possible iff ``n log2(1 + E h² / (n N_0)) >= b``. The
left side grows with n towards ``E h² / (N_0 ln 2)``: a device picks the fewest channel
uses that carry its bits with all of its energy (:func:`channel_uses_for`), and a device
whose bits exceed that limit cannot deliver them this round and stays silent. A round
lasts ``Σ_k n_k / bandwidth_hz + latency_s`` (one device after the other), every device
that sends spends ``E / bandwidth_hz``.

>>> round(channel_uses_for(bits=10.0, energy=10.0, amplitude=1.0, noise_power=1.0), 6)
10.0
>>> channel_uses_for(bits=100.0, energy=10.0, amplitude=1.0, noise_power=1.0)  # > 10/ln 2
inf
"""

from __future__ import annotations

import math

#: Most channel uses a device may take in a round.
MAX_USES = 1e15


def _bits_in(n: float, snr_energy: float) -> float:
    return n * math.log2(1.0 + snr_energy / n)


def channel_uses_for(bits: float, energy: float, amplitude: float,
                     noise_power: float) -> float:
    """The fewest channel uses ``n`` with ``n log2(1 + energy h² / (n N_0)) >= bits``
    (``inf`` if none, or more than :data:`MAX_USES`)."""
    c = energy * amplitude ** 2 / noise_power
    if bits <= 0:
        return 0.0
    if not c > 0 or bits >= c / math.log(2.0):
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
