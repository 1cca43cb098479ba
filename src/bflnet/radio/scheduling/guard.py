"""Guard times of TDMA and ALOHA slots.

A slot holds one frame (with a PHY preset: the data frame, SIFS and its ACK) and a guard
time after it, so that a frame that reaches a far node late, or a radio still turning
from receive to transmit, does not run into the next slot. Without a PHY preset
(``phy="ideal"``) the default guard is 0 (a slot is the frame: the medium as it was).
With a preset it is the propagation delay over the interference range (the farthest a
transmission still counts) plus the Rx/Tx turnaround time ``aRxTxTurnaroundTime`` of the
PHY (IEEE Std 802.11-2020: at most 5 µs for DSSS, Clause 15; 2 µs for OFDM and ERP,
Clauses 17 and 18).

>>> round(default_guard_s("80211b", 158.0) * 1e6, 3)  # 158 m / c + 5 µs
5.527
>>> default_guard_s("ideal", 158.0)
0.0
"""

from __future__ import annotations

import math

from bflnet.radio.phy.sensing import SPEED_OF_LIGHT_M_S
from bflnet.radio.phy.timing import phy_preset


def default_guard_s(phy: str, interference_range_m: float) -> float:
    """The default guard time of a slot under the PHY preset ``phy`` (module docstring:
    the preset's ``turnaround_s``); an infinite interference range counts no
    propagation delay."""
    timing = phy_preset(phy)
    if timing is None:  # ideal
        return 0.0
    reach = interference_range_m if math.isfinite(interference_range_m) else 0.0
    return reach / SPEED_OF_LIGHT_M_S + timing.turnaround_s
