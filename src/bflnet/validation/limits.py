"""The smallest values of physical and numerical quantities whose arithmetic the
simulator survives, derived once here and shared by the radio's objects, the learners and
the scenarios' settings (their bounds: ``param(..., ge=MIN_...)``).

A positive bound ``> 0`` lets through ``5e-324``, the smallest positive float, and with it
divisions that overflow, products that underflow to 0 and counts that are infinite. Each
minimum below is far beneath any value a study would use, and large enough that every
quantity computed from it stays a finite, normal number (the derivations beside each).
"""

from __future__ import annotations

#: Shortest distance in metres (an area's side, a radio or link distance, a radius): a
#: millimetre. Path loss is flat inside its 1 m reference distance, so nothing physical
#: changes below it; an area's side squared (the shared medium divides by it) stays
#: above 1e-6, and a random geometric graph's area of ``K <= 10^6`` nodes at this radius
#: is still a normal number.
MIN_METRES = 1e-3

#: Narrowest bandwidth in Hz: one channel use per second. With the noise power
#: (-174 dBm/Hz + 10 log10 B) finite and an air time of the largest packet
#: (``mtu_bits <= 10^12`` at the slowest rate below) of at most 1e15 s, a run's clock
#: stays finite.
MIN_BANDWIDTH_HZ = 1.0

#: Smallest coding rate in bit/s/Hz (a rate ``bandwidth x coding_rate`` of at least
#: :data:`MIN_RATE_BPS`).
MIN_CODING_RATE = 1e-3

#: Slowest link rate in bit/s: the air time of the largest packet, ``mtu_bits / rate``,
#: is at most 1e15 s (finite, and a clock of many rounds of it is still finite).
MIN_RATE_BPS = 1e-3

#: Shortest MAC slot in seconds (ALOHA, TDMA, a CSMA back-off slot): a nanosecond,
#: shorter than any packet a radio sends; a slot of ``5e-324`` s vanishes in the clock's
#: rounding at any time after 0.
MIN_SLOT_S = 1e-9
#: The range of a carrier-sense (energy / preamble detection) threshold, dBm.
MIN_CCA_DBM, MAX_CCA_DBM = -150.0, 30.0

#: Shortest coherence time of the fading in seconds (besides 0, off): a nanosecond; a
#: time divided by a much shorter one loses the blocks and lags it counts in rounding.
MIN_COHERENCE_S = 1e-9

#: Smallest slotted-ALOHA transmit probability: the slots a node skips are drawn at
#: once as ``ceil(E / -log(1 - p))`` with ``E`` a standard exponential (at most about 745
#: in float64), so at most 7.5e11 slots: an exact integer, and ``slots x slot`` a finite
#: time. At ``p = 5e-324`` the count is infinite.
MIN_PROBABILITY = 1e-9

#: Smallest step size or learning rate (Langevin's η, SGD's step): ``2η`` is the variance
#: the over-the-air power control divides by (``N0 / (2η K^2)``) and ``sqrt(2η)`` the
#: noise a step adds; at 1e-12 both are normal numbers and their reciprocals finite (at
#: ``5e-324`` the power control's scale is infinite), while a chain moving 1e-6 a step
#: already barely moves in a million rounds.
MIN_STEP = 1e-12

#: Smallest norm clip of a payload or a gradient: the over-the-air power control's scale
#: is ``h^2 E / clip^2`` (``E`` up to about 3e16 J, ``h`` a fading amplitude), finite for
#: a clip of at least 1e-6 times the smallest step (``η K clip`` is the payload clip of a
#: Langevin round: at least 1e-18).
MIN_CLIP = 1e-6
