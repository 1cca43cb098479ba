"""Medium access: when a node may put its next packet on the air.

* :class:`NoMac` — at once (overlapping transmissions collide: the medium decides).
* :class:`Aloha` — slotted ALOHA: at each slot boundary the node transmits with
  probability ``p`` (else it defers to the next slot; the default slot is the air time of
  the largest packet, with a PHY preset that of the largest frame of the run's first
  message, SIFS and its ACK, plus the guard time, :mod:`bflnet.radio.scheduling.guard`);
  the slots until it transmits are drawn at once (geometric). An attempt that deferred
  is one ``defer`` row, written when the node transmits, with the slots it skipped
  (``deferrals``).
* :class:`Tdma` — a schedule: a distance-2 greedy colouring of the interference graph
  (nodes within interference range, and the graph's links), or, with spatial reuse, the
  SINR schedule (:mod:`bflnet.radio.scheduling.sinr`: nodes share a slot while every
  receiver of each still decodes at its mean SINR), gives every node a colour; a frame
  is ``frame_slots`` (default: the number of colours) slots of ``slot_s`` (default: the
  air time of the largest packet plus the guard time), and a node transmits only at the
  start of its own slot.
* :class:`Csma` — carrier sense with binary exponential back-off (the 802.11 DCF in its
  simple form): before each attempt the node draws a back-off counter uniform in
  ``{0, ..., CW - 1}``, ``CW = min(cw_min · 2^(attempt-1), cw_max)``; the counter runs
  down one per idle ``slot_s`` and freezes while a transmitter within ``sense_range_m``
  is on the air (a deferral); at zero the node transmits. Two nodes whose counters reach
  zero in the same slot both transmit and collide. A unicast packet is dropped after
  ``retry_limit`` retries. With a PHY preset (:mod:`bflnet.radio.phy.timing`) the slot and the
  windows default to the preset's, and counting starts after DIFS or EIFS
  (:mod:`bflnet.radio.backoff`). Every back-off is one ``backoff`` row, written when it ends
  (the node transmits), with ``cw``, the ``counter`` drawn and its ``deferrals``.

The rows are ``event="mac"`` with ``kind`` (``backoff``, ``defer``, ``collision``: see
:mod:`bflnet.radio.medium`), ``node``, the ``attempt`` and what the MAC drew, stamped with
``time_s`` and ``cum_bits`` as every row: one row per attempt (CSMA: always; ALOHA: when
it deferred), not one per slot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from bflnet.radio.events import timeout
from bflnet.validation.checks import check_int, check_real
from bflnet.validation.limits import MIN_PROBABILITY, MIN_SLOT_S


class Transceiver(Protocol):
    """What a MAC reads of a node's radio (:class:`bflnet.radio.transceiver.Transceiver`,
    which imports this module, so the MAC names only the attributes it uses)."""

    env: Any
    slot_s: float
    draws: Any
    _draws: Any
    node: Any
    index: int
    medium: Any
    recorder: Any
    pending_row: dict[str, Any] | None
    colour: int
    frame_slots: int

MACS = ("none", "tdma", "csma", "aloha")
#: TDMA schedules: a distance-2 colouring, or slots shared while every SINR holds.
SCHEDULES = ("distance2", "sinr")
#: The default margin (dB) on the interference of the SINR schedule.
SINR_MARGIN_DB = 0.0
#: Slot boundaries closer than this fraction of a slot are the same boundary.
_SLOT_TOL = 1e-9


@dataclass(frozen=True)
class NoMac:
    """Transmit at once."""

    name = "none"


@dataclass(frozen=True)
class Aloha:
    """Slotted ALOHA with transmit probability ``p`` per slot; ``slot_s=None``: the air
    time of the largest packet and the guard; ``guard_s=None``: the PHY's default guard
    (:func:`bflnet.radio.scheduling.default_guard_s`; 0 without a preset)."""

    p: float = 0.1
    slot_s: float | None = None
    guard_s: float | None = None
    name = "aloha"

    def __post_init__(self) -> None:
        check_real("aloha_p", self.p, ge=MIN_PROBABILITY, le=1)
        if self.slot_s is not None:
            check_real("slot_s", self.slot_s, ge=MIN_SLOT_S, le=1e6)
        _check_guard(self.guard_s)


@dataclass(frozen=True)
class Tdma:
    """TDMA over a schedule: ``schedule="distance2"`` (a distance-2 colouring of the
    interference graph) or ``"sinr"`` (spatial reuse:
    :func:`bflnet.radio.scheduling.sinr_schedule`, interference counted ``margin_db``
    above its mean); ``None``: ``distance2`` with ``phy="ideal"``, ``sinr`` with a PHY
    preset. ``frame_slots=None``: as many slots as the schedule needs; ``slot_s=None``:
    the air time of the largest packet and the guard; ``guard_s=None``: the PHY's
    default guard (0 without a preset)."""

    frame_slots: int | None = None
    slot_s: float | None = None
    schedule: str | None = None
    margin_db: float = SINR_MARGIN_DB
    guard_s: float | None = None
    name = "tdma"

    def __post_init__(self) -> None:
        if self.frame_slots is not None:
            check_int("tdma_frame_slots", self.frame_slots, ge=1, le=10**7)
        if self.slot_s is not None:
            check_real("slot_s", self.slot_s, ge=MIN_SLOT_S, le=1e6)
        if self.schedule is not None and self.schedule not in SCHEDULES:
            raise ValueError(f"tdma_schedule: must be one of {', '.join(SCHEDULES)}, got "
                             f"{self.schedule!r}")
        check_real("tdma_margin_db", self.margin_db, ge=0, le=100)
        _check_guard(self.guard_s)

    def schedule_under(self, timing: Any) -> str:
        """The schedule this TDMA uses under the PHY preset ``timing`` (``None``: ideal)."""
        if self.schedule is not None:
            return self.schedule
        return "distance2" if timing is None else "sinr"


def _check_guard(guard_s: float | None) -> None:
    if guard_s is not None:
        check_real("guard_s", guard_s, ge=0, le=1e3)


@dataclass(frozen=True)
class Csma:
    """CSMA with binary exponential back-off; ``sense_range_m=None``: by received power
    under a PHY preset (:mod:`bflnet.radio.phy.sensing`), else the radio's nominal range
    (where the mean SNR falls to the threshold). ``slot_s``, ``cw_min`` and
    ``cw_max`` left ``None`` are the radio's PHY preset's (its slot, ``CWmin + 1`` and
    ``CWmax + 1`` values; ``ideal``: 20 µs, 16, 1024): :meth:`under`."""

    sense_range_m: float | None = None
    slot_s: float | None = None
    cw_min: int | None = None
    cw_max: int | None = None
    retry_limit: int = 7
    name = "csma"

    def __post_init__(self) -> None:
        if self.sense_range_m is not None:
            check_real("sense_range_m", self.sense_range_m, ge=0, le=1e9)
        if self.slot_s is not None:
            check_real("csma_slot_s", self.slot_s, ge=MIN_SLOT_S, le=1e3)
        if self.cw_min is not None:
            check_int("cw_min", self.cw_min, ge=1, le=2**20)
        if self.cw_max is not None:
            check_int("cw_max", self.cw_max, ge=1, le=2**20)
        if self.cw_min is not None and self.cw_max is not None and self.cw_max < self.cw_min:
            raise ValueError(f"cw_max: must be >= cw_min ({self.cw_min}), got {self.cw_max}")
        check_int("retry_limit", self.retry_limit, ge=0, le=1000)

    def under(self, timing: Any) -> Csma:
        """This MAC with the settings left ``None`` taken from the PHY preset ``timing``
        (a :class:`~bflnet.radio.phy.Phy`, or ``None``: 20 µs slots, CW 16 ... 1024)."""
        slot, low, high = ((20e-6, 16, 1024) if timing is None else
                           (timing.slot_s, timing.cw_min + 1, timing.cw_max + 1))
        cw_min = self.cw_min if self.cw_min is not None else low
        cw_max = self.cw_max if self.cw_max is not None else max(high, cw_min)
        return Csma(self.sense_range_m, self.slot_s if self.slot_s is not None else slot,
                    cw_min, cw_max, self.retry_limit)

    def window(self, attempt: int) -> int:
        """The contention window of the ``attempt``-th attempt (1-based)."""
        low = self.cw_min if self.cw_min is not None else 16
        high = self.cw_max if self.cw_max is not None else max(1024, low)
        return min(low << min(attempt - 1, 40), high)


Mac = NoMac | Aloha | Tdma | Csma

#: The attempt from which :meth:`Csma.window` no longer changes (it doubles ``cw_min`` at
#: most 40 times): :func:`csma_windows` stops there.
LAST_STEP = 41


def csma_windows(mac: Csma) -> tuple[int, ...]:
    """``mac.window(attempt)`` at index ``attempt`` for ``attempt`` 1 ... :data:`LAST_STEP`
    (index 0: unused); a later attempt's window is that of :data:`LAST_STEP`.

    >>> w = csma_windows(Csma(cw_min=16, cw_max=1024))
    >>> w[1], w[3], w[LAST_STEP] == Csma(cw_min=16, cw_max=1024).window(500)
    (16, 64, True)
    """
    return (0, *(mac.window(attempt) for attempt in range(1, LAST_STEP + 1)))


def make_mac(name: str, **params: Any) -> Mac:
    """The MAC called ``name`` (:data:`MACS`) with ``params``."""
    kinds: dict[str, Any] = {"none": NoMac, "tdma": Tdma, "csma": Csma, "aloha": Aloha}
    if name not in kinds:
        raise ValueError(f"mac: must be one of {', '.join(MACS)}, got {name!r}")
    return kinds[name](**params)


# ---------------------------------------------------------------------- TDMA schedule
def distance2_colouring(nodes: Iterable[int], edges: Iterable[tuple[int, int]],
                        frame_slots: int | None = None) -> tuple[dict[int, int], int]:
    """A greedy distance-2 colouring (largest degree first) of the interference graph
    ``(nodes, edges)`` (nodes ``0..n-1``): ``({node: colour}, number of slots in a
    frame)``. Two nodes get different colours when they are neighbours or share one.

    One-line errors when ``frame_slots`` is too few: a node and its ``Δ`` neighbours are
    pairwise within two hops, so no distance-2 colouring has fewer than ``Δ + 1``
    colours; and when the greedy colouring needs more than ``frame_slots``.

    >>> colours, slots = distance2_colouring(range(4), [(0, 1), (1, 2), (2, 3)])
    >>> slots, colours[0] != colours[2], colours[1] != colours[3]
    (3, True, True)
    """
    import numpy as np
    import scipy.sparse as sp  # lazily

    n = len(list(nodes))
    pairs = np.array([e for e in edges if e[0] != e[1]], dtype=np.int64).reshape(-1, 2)
    ones = np.ones(2 * len(pairs), dtype=np.int32)
    adj = sp.csr_matrix((ones, (np.concatenate([pairs[:, 0], pairs[:, 1]]),
                                np.concatenate([pairs[:, 1], pairs[:, 0]]))), shape=(n, n))
    adj.data[:] = 1  # duplicate pairs summed: back to 0/1
    degree = np.diff(adj.indptr)
    top = int(degree.max()) if n else 0
    if frame_slots is not None and frame_slots < top + 1:
        raise ValueError(f"tdma_frame_slots: a distance-2 colouring of this interference "
                         f"graph needs at least {top + 1} colours (node "
                         f"{int(degree.argmax())} and its {top} neighbours), got {frame_slots}")
    square = (adj + adj @ adj).tocsr()
    square.setdiag(0)
    square.eliminate_zeros()
    order = np.lexsort((np.arange(n), -np.diff(square.indptr)))  # largest first
    colour = np.full(n, -1, dtype=np.int64)
    for v in order.tolist():
        taken = colour[square.indices[square.indptr[v]:square.indptr[v + 1]]]
        taken = np.unique(taken[taken >= 0])
        # the smallest colour not taken: the first gap in the sorted taken colours
        gap = np.flatnonzero(taken != np.arange(taken.size))
        colour[v] = int(gap[0]) if gap.size else taken.size
    used = int(colour.max()) + 1 if n else 0
    if frame_slots is not None and used > frame_slots:
        raise ValueError(f"tdma_frame_slots: the greedy distance-2 colouring of this "
                         f"interference graph needs {used} colours, got {frame_slots}")
    return ({v: int(c) for v, c in enumerate(colour.tolist())},
            max(used, 1) if frame_slots is None else frame_slots)


# ---------------------------------------------------------------------- access procedures
def access(mac: Mac, radio: Transceiver, attempt: int) -> simpy.Event | None:
    """The one event to wait for before ``radio`` may start its ``attempt``-th attempt
    under ``mac`` (``None``: at once)."""
    procedure = mac_access(mac)
    return None if procedure is None else procedure(mac, radio, attempt)


def mac_access(mac: Mac) -> Callable[[Any, Transceiver, int], simpy.Event | None] | None:
    """``mac``'s access procedure, ``(mac, radio, attempt) -> event or None`` (see
    :func:`access`); ``None`` for :class:`NoMac` (transmit at once)."""
    if isinstance(mac, NoMac):
        return None
    if isinstance(mac, Tdma):
        return _tdma
    if isinstance(mac, Aloha):
        return _aloha
    return _csma


def _aloha(mac: Aloha, radio: Transceiver, attempt: int) -> simpy.Event | None:
    """The slots until the node transmits drawn at once (geometric with ``p``: the
    distribution of one draw per slot): it waits once, for the slot it transmits in, and
    its ``defer`` row (the slots it skipped) is written then, by the node's
    :class:`~bflnet.radio.transceiver.Sending` as it resumes (``radio.pending_row``: the
    first thing that happens when the wait ends, as a callback of the wait would)."""
    env, slot = radio.env, radio.slot_s
    now = env._now
    first = math.ceil(now / slot - _SLOT_TOL)
    k = first + (radio._draws or radio.draws).geometric(mac.p) - 1  # rng.geometric(p)
    t = k * slot
    if k > first:
        row = {"node": radio.node, "kind": "defer", "attempt": attempt, "deferrals": k - first}
        if t > now:  # written when the node resumes, before it transmits
            radio.pending_row = row
            return timeout(env, t - now)
        radio.recorder.record_fields("mac", row)  # the slot is now (rounding): at once
        return None
    return timeout(env, t - now) if t > now else None


def write_row(record: Any, row: dict[str, Any], _: Any) -> None:
    """A callback that writes ``row`` (``event="mac"``) with ``record``."""
    record("mac", row)


def _tdma(mac: Tdma, radio: Transceiver, attempt: int) -> simpy.Event | None:
    env, slot = radio.env, radio.slot_s
    now = env.now
    frame, offset = radio.frame_slots * slot, radio.colour * slot
    t = math.ceil((now - offset) / frame - _SLOT_TOL) * frame + offset
    return timeout(env, t - now) if t > now else None


def _csma(mac: Csma, radio: Transceiver, attempt: int) -> simpy.Event:
    # (a radio's Sending runs this inline, with the windows of csma_windows)
    window = mac.window(attempt)
    counter = (radio._draws or radio.draws).below(window)  # rng.integers(window), in blocks
    return radio.medium.carrier.backoff(radio.index, counter, attempt, window)
