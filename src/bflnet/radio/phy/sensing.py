"""Carrier sense by received power: 802.11's clear channel assessment on the shared medium.

With a PHY preset (``RadioSpec.phy``) and no ``sense_range_m``, a node's carrier is
busy while

* **energy detection** (ED): the summed power of everything on the air there, the
  medium's per-node total (path loss, the pair's shadowing and the transmission's own
  block-fading draw, exactly as reception sees them; a node's own transmission is not
  in its total), is at or above the ED threshold; or
* **preamble detection** (PD): a transmission whose power there, at its start, was at or
  above the PD threshold is still on the air (the node locked on its preamble and holds
  the carrier busy for the whole frame, whatever else starts or stops meanwhile); or
* the node itself transmits (an ACK it sends freezes its own back-off).

Both thresholds are in dBm, the preset's by default (:class:`~bflnet.radio.phy.Phy`:
OFDM -82 dBm PD, -62 dBm ED; DSSS -80 dBm PD, ED by transmit power), or
``RadioSpec.pd_threshold_dbm`` / ``ed_threshold_dbm``. A busy period is *errored*
(EIFS instead of DIFS once it ends) when two transmissions the node detected (or its
own) overlapped in it; a period of energy alone is not.

Only transmitters within the medium's interference range of a node are counted (their
power elsewhere is far below any CCA threshold). Each transmission costs a few
vectorised steps over the nodes in that range: which of them detect its preamble, which
cross the ED threshold when it starts, and which fall below it when it ends; never a
step over all nodes.

Timing (:func:`window_s`): a transmission's power reaches node ``n`` after the
propagation delay ``d / c`` and the node declares the channel busy ``cca_s`` (aCCATime)
later; a station commits to transmit ``turnaround_s`` (aRxTxTurnaroundTime) before its
frame is on the air. So a station whose back-off ends within ``d / c + cca_s +
turnaround_s`` after another's frame began transmits too and the two collide (the
vulnerable window); one that ends later has sensed it and freezes. 802.11 defines the
slot as the sum of these delays and the MAC's processing delay (aSlotTime; the DSSS
maxima, 15 + 5 µs, already fill its 20 µs), so the window is capped at one slot: a
station whose back-off ends a slot or more after a frame began has sensed it, and
slot-synchronised stations collide only when they pick the same slot (Bianchi's
model). Simplified: the window applies to carrier sense only (a
transmission's power counts towards SINR at every node from its start, and leaves every
node's total at its end: no per-node arrival in reception or when the carrier turns
idle); a node already locked on a preamble still detects a later one.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from bflnet.radio.pathloss import dbm_to_mw

#: The speed of light in vacuum, m/s.
SPEED_OF_LIGHT_M_S = 299_792_458.0


def window_s(timing: Any, distance_m: float) -> float:
    """The vulnerable window at ``distance_m`` from a sender: propagation delay, aCCATime
    and aRxTxTurnaroundTime of the preset ``timing``, at most one slot (a back-off that
    ends less than this after the frame began still transmits).

    >>> from bflnet.radio.phy import phy_preset
    >>> round(window_s(phy_preset("80211a"), 300.0) * 1e6, 3)  # 1.001 + 4 + 2 µs
    7.001
    >>> round(window_s(phy_preset("80211b"), 300.0) * 1e6, 3)  # 15 + 5 + 1: one slot
    20.0
    """
    return min(distance_m / SPEED_OF_LIGHT_M_S + timing.cca_s + timing.turnaround_s,
               timing.slot_s)


class PowerSense:
    """The carrier of every node of ``medium`` by received power (module docstring):
    ``ed_dbm`` and ``pd_dbm`` thresholds. :meth:`on` when a transmission starts (after
    its power is added to the totals), :meth:`off` when it ends (after it is taken off)."""

    def __init__(self, medium: Any, ed_dbm: float, pd_dbm: float) -> None:
        self.medium = medium
        self.ed_dbm, self.pd_dbm = float(ed_dbm), float(pd_dbm)
        self.ed_mw, self.pd_mw = dbm_to_mw(ed_dbm), dbm_to_mw(pd_dbm)
        k = len(medium.ids)
        #: Per node: whether its total is at or above the ED threshold.
        self.energy = np.zeros(k, dtype=bool)
        #: Per node: the transmissions on the air it detected, its own included.
        self.detected = [0] * k
        #: ``{sender: the nodes its transmission holds busy by PD, the sender among them}``.
        self._held: dict[int, list[int]] = {}

    def on(self, tx: Any, totals: np.ndarray | None = None) -> None:
        """``tx`` started: the carriers it makes busy (PD, a crossing of ED, its sender);
        ``totals``: the medium's totals at ``tx.near`` now, if known. One pass over the
        nodes that detect it, one over those it pushes over ED: busy counts, errored
        periods, and the counting back-offs among them (frozen by the scheduler, first
        those that detect it, then the others, in node order)."""
        medium, sender, near = self.medium, tx.sender, tx.near
        up: list[int] = []
        if near is not None and near.size:
            held = near[tx.power >= self.pd_mw].tolist()  # (preamble)
            energy = self.energy
            over = (medium._total[near] if totals is None else totals) >= self.ed_mw
            rose = near[over > energy[near]]  # over and not yet above
            if rose.size:
                energy[rose] = True
                up = rose.tolist()
        else:
            held = []
        bisect.insort(held, sender)
        self._held[sender] = held
        busy, errored, detected = medium.busy_count, medium.errored, self.detected
        scheduler = medium.carrier
        cd = scheduler.counting if scheduler is not None and scheduler.waiting else None
        found = []
        for n in held:
            b = busy[n]
            if not b:  # a new busy period
                errored[n] = False
            count = detected[n] + 1
            detected[n] = count
            if count > 1:
                errored[n] = True
            busy[n] = b + 1
            if cd is not None and cd[n]:
                found.append(n)
        if found:
            scheduler.freeze(found, sender)
        if up:
            found = []
            for n in up:  # (for one that also detected it, busy is already up)
                b = busy[n]
                if not b:
                    errored[n] = False
                busy[n] = b + 1
                if cd is not None and cd[n]:
                    found.append(n)
            if found:
                scheduler.freeze(found, sender)

    def off(self, tx: Any, totals: np.ndarray | None = None) -> None:
        """``tx`` ended: the carriers it held busy, and those whose total fell below ED;
        ``totals``: the medium's totals at ``tx.near`` now, if known. A node whose
        carrier turns idle keeps the time; one in back-off resumes
        (``scheduler.wake``, those it held first)."""
        medium, near = self.medium, tx.near
        held = self._held.pop(tx.sender)
        down: list[int] = []
        if near is not None and near.size:
            energy = self.energy
            under = (medium._total[near] if totals is None else totals) < self.ed_mw
            fell = near[under & energy[near]]
            if fell.size:
                energy[fell] = False
                down = fell.tolist()
        detected, busy, idle = self.detected, medium.busy_count, medium.idle_since
        scheduler = medium.carrier
        backing = scheduler.backing if scheduler is not None and scheduler.waiting else None
        for n in held:
            detected[n] -= 1
        wake: list[int] = []
        release(held, busy, idle, tx.end, backing, wake)
        release(down, busy, idle, tx.end, backing, wake)
        if wake:
            scheduler.wake(wake)


def release(nodes: list[int], busy: list[int], idle: list[float], end: float,
            backing: list[bool] | None, wake: list[int]) -> None:
    """A transmission ending at ``end`` no longer holds the carrier of ``nodes`` busy:
    their ``busy`` counts go down; one that turns idle keeps the time (``idle``) and,
    if it is in back-off (``backing``; ``None``: nobody is), joins ``wake``."""
    for n in nodes:
        left = busy[n] - 1
        busy[n] = left
        if not left:
            idle[n] = end
            if backing is not None and backing[n]:
                wake.append(n)
