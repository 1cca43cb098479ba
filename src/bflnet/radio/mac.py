"""Medium access: when a node may put its next packet on the air.

* :class:`NoMac` — at once (overlapping transmissions collide: the medium decides).
* :class:`Aloha` — slotted ALOHA: at each slot boundary the node transmits with
  probability ``p`` (else it defers to the next slot: a ``defer`` row).
* :class:`Tdma` — a conflict-free schedule: a distance-2 greedy colouring of the
  interference graph (nodes within interference range, and the graph's links) gives every
  node a colour; a frame is ``frame_slots`` (default: the number of colours) slots of
  ``slot_s`` (default: the air time of the largest packet), and a node transmits only at
  the start of its own slot.
* :class:`Csma` — carrier sense with binary exponential back-off (the 802.11 DCF in its
  simple form): before each attempt the node draws a back-off counter uniform in
  ``{0, ..., CW - 1}`` (a ``backoff`` row), ``CW = min(cw_min · 2^(attempt-1), cw_max)``;
  the counter runs down one per idle ``slot_s`` and freezes while a transmitter within
  ``sense_range_m`` is on the air (a ``defer`` row); at zero the node transmits. Two nodes
  whose counters reach zero in the same slot both transmit and collide. A unicast packet
  is dropped after ``retry_limit`` retries.

The rows are ``event="mac"`` with ``kind`` (``backoff``, ``defer``, ``collision``: see
:mod:`bflnet.radio.medium`), ``node``, the ``attempt`` and what the MAC drew, stamped with
``time_s`` and ``cum_bits`` as every row.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from bflnet.checks import check_int, check_real

if TYPE_CHECKING:
    from bflnet.radio.transceiver import Transceiver

MACS = ("none", "tdma", "csma", "aloha")
#: Slot boundaries closer than this fraction of a slot are the same boundary.
_SLOT_TOL = 1e-9


@dataclass(frozen=True)
class NoMac:
    """Transmit at once."""

    name = "none"


@dataclass(frozen=True)
class Aloha:
    """Slotted ALOHA with transmit probability ``p`` per slot; ``slot_s=None``: the air
    time of the largest packet."""

    p: float = 0.1
    slot_s: float | None = None
    name = "aloha"

    def __post_init__(self) -> None:
        check_real("aloha_p", self.p, gt=0, le=1)
        if self.slot_s is not None:
            check_real("slot_s", self.slot_s, gt=0, le=1e6)


@dataclass(frozen=True)
class Tdma:
    """TDMA over a distance-2 colouring; ``frame_slots=None``: as many slots as colours;
    ``slot_s=None``: the air time of the largest packet."""

    frame_slots: int | None = None
    slot_s: float | None = None
    name = "tdma"

    def __post_init__(self) -> None:
        if self.frame_slots is not None:
            check_int("tdma_frame_slots", self.frame_slots, ge=1, le=10**7)
        if self.slot_s is not None:
            check_real("slot_s", self.slot_s, gt=0, le=1e6)


@dataclass(frozen=True)
class Csma:
    """CSMA with binary exponential back-off; ``sense_range_m=None``: the radio's nominal
    range (where the mean SNR falls to the threshold)."""

    sense_range_m: float | None = None
    slot_s: float = 20e-6
    cw_min: int = 16
    cw_max: int = 1024
    retry_limit: int = 7
    name = "csma"

    def __post_init__(self) -> None:
        if self.sense_range_m is not None:
            check_real("sense_range_m", self.sense_range_m, ge=0, le=1e9)
        check_real("csma_slot_s", self.slot_s, gt=0, le=1e3)
        check_int("cw_min", self.cw_min, ge=1, le=2**20)
        check_int("cw_max", self.cw_max, ge=1, le=2**20)
        if self.cw_max < self.cw_min:
            raise ValueError(f"cw_max: must be >= cw_min ({self.cw_min}), got {self.cw_max}")
        check_int("retry_limit", self.retry_limit, ge=0, le=1000)

    def window(self, attempt: int) -> int:
        """The contention window of the ``attempt``-th attempt (1-based)."""
        return min(self.cw_min << min(attempt - 1, 40), self.cw_max)


Mac = NoMac | Aloha | Tdma | Csma


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
def access(mac: Mac, radio: Transceiver, attempt: int) -> Generator[simpy.Event, Any, None]:
    """Wait until ``radio`` may start its ``attempt``-th attempt under ``mac``."""
    if isinstance(mac, NoMac):
        return
    if isinstance(mac, Aloha):
        yield from _aloha(mac, radio, attempt)
    elif isinstance(mac, Tdma):
        yield from _tdma(radio)
    else:
        yield from _csma(mac, radio, attempt)


def _wait_until(env: simpy.Environment, t: float) -> simpy.Event | None:
    return env.timeout(t - env.now) if t > env.now else None


def _aloha(mac: Aloha, radio: Transceiver, attempt: int
           ) -> Generator[simpy.Event, Any, None]:
    env, slot, rng = radio.env, radio.slot_s, radio.mac_rng
    k = math.ceil(env.now / slot - _SLOT_TOL)
    while True:
        wait = _wait_until(env, k * slot)
        if wait is not None:
            yield wait
        if rng.random() < mac.p:
            return
        radio.record_mac("defer", attempt=attempt, slot=k)
        k += 1


def _tdma(radio: Transceiver) -> Generator[simpy.Event, Any, None]:
    env, slot = radio.env, radio.slot_s
    frame, offset = radio.frame_slots * slot, radio.colour * slot
    f = math.ceil((env.now - offset) / frame - _SLOT_TOL)
    wait = _wait_until(env, f * frame + offset)
    if wait is not None:
        yield wait


def _csma(mac: Csma, radio: Transceiver, attempt: int) -> Generator[simpy.Event, Any, None]:
    window = mac.window(attempt)
    counter = int(radio.mac_rng.integers(window))
    radio.record_mac("backoff", attempt=attempt, cw=window, counter=counter)
    done = radio.env.event()
    _Backoff(radio, mac.slot_s, counter, attempt, done).begin()
    yield done


class _Backoff:
    """One CSMA back-off, run by event callbacks (the node's process wakes only when it
    may transmit): count ``counter`` idle slots down, freeze while the carrier is busy."""

    __slots__ = ("attempt", "counter", "done", "radio", "slot", "t0")

    def __init__(self, radio: Transceiver, slot: float, counter: int, attempt: int,
                 done: simpy.Event) -> None:
        self.radio, self.slot, self.counter, self.attempt = radio, slot, counter, attempt
        self.done, self.t0 = done, 0.0

    def begin(self, _: Any = None) -> None:
        """Start (or resume) the countdown, or defer until the carrier is idle."""
        radio = self.radio
        env, medium, me = radio.env, radio.medium, radio.index
        # a node whose counter is zero transmits unless it hears a transmission that began
        # before this instant (two that decide in the same slot both transmit)
        if self.counter == 0 and not medium.busy(me, hear_now=False):
            self.done.succeed()
            return
        if medium.busy(me):
            radio.record_mac("defer", attempt=self.attempt, counter=self.counter)
            medium.on_idle(me).callbacks.append(self.begin)
            return
        self.t0 = env.now
        # one wake-up event for "the counter ran out" and "the carrier became busy"
        wake = env.event()
        env.timeout(self.counter * self.slot).callbacks.append(
            lambda _, wake=wake: None if wake.triggered else wake.succeed())
        medium.on_busy(me, wake).callbacks.append(self.woke)

    def woke(self, _: Any) -> None:
        """Slots that ran out idle count (a slot cut by a transmission does not); when
        the counter ends in the slot in which another node starts, both transmit."""
        radio = self.radio
        elapsed = math.floor((radio.env.now - self.t0) / self.slot + 1e-6)
        if elapsed >= self.counter:
            radio.medium.cancel_waits(radio.index)
            self.done.succeed()
            return
        self.counter -= elapsed
        self.begin()
