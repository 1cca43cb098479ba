"""A node's radio on the shared medium: one packet on the air at a time, its MAC, ARQ.

Every message a node sends (over any of its links, or as a broadcast) queues for the
node's one radio in FIFO order. A message is cut into packets of at most ``mtu_bits``;
each packet waits for the MAC, goes on the air for its air time, and is decided by the
medium when it ends; the sender learns the outcome ``latency_s`` later. A unicast packet
that is lost is sent again (stop-and-wait ARQ) up to ``max_attempts`` attempts in all
(``None``: until it arrives, given up after :data:`UNLIMITED_ATTEMPTS` losses in a row;
under CSMA the MAC's ``retry_limit`` decides instead); a packet that fails them all drops
the message. A broadcast packet is sent once (nobody acknowledges it): each receiver gets
the message iff it received every packet.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import simpy

from bflnet.radio.mac import Csma, Mac, mac_access
from bflnet.radio.medium import SharedMedium

#: Losses in a row after which unlimited ARQ gives a packet up (a receiver out of range
#: would otherwise be tried for ever).
UNLIMITED_ATTEMPTS = 1000


class Transceiver:
    """Node ``node``'s radio (index ``index`` in the medium)."""

    def __init__(self, env: simpy.Environment, node: Any, index: int, medium: SharedMedium,
                 mac: Mac, mac_rng: Any, recorder: Any, *, mtu_bits: int,
                 slot_s: float = 0.0, colour: int = 0, frame_slots: int = 1) -> None:
        self.env, self.node, self.index, self.medium = env, node, index, medium
        self.mac, self.recorder, self.mtu_bits = mac, recorder, mtu_bits
        self._mac_rng = mac_rng
        self.slot_s, self.colour, self.frame_slots = slot_s, colour, frame_slots
        #: Whether a message holds the radio; the messages waiting for it, in order.
        self.holding = False
        self._queue: deque[simpy.Event] = deque()
        self.latency_s = medium.spec.latency_s
        #: The MAC's access procedure (``None``: transmit at once) and, under CSMA, the
        #: attempts a packet gets (its ``retry_limit`` + 1; ``None``: the link's).
        self._access = mac_access(mac)
        self._cap = mac.retry_limit + 1 if isinstance(mac, Csma) else None

    @property
    def mac_rng(self) -> np.random.Generator:
        """The node's MAC stream ``mac.<node>`` (made on first use)."""
        if callable(self._mac_rng):
            self._mac_rng = self._mac_rng()
        return self._mac_rng

    def _take(self) -> Generator[simpy.Event, Any, None]:
        """Wait for the radio (at once, without an event, when it is free)."""
        if not self.holding:
            self.holding = True
            return
        turn = self.env.event()
        self._queue.append(turn)
        try:
            yield turn
        except BaseException:
            if turn.triggered:  # handed over, but not taken: pass it on
                self._give()
            else:
                self._queue.remove(turn)
            raise

    def _give(self) -> None:
        """Hand the radio to the next message waiting, in order, or free it."""
        if self._queue:
            self._queue.popleft().succeed()
        else:
            self.holding = False

    def transmit(self, receivers: Sequence[Any], bits: int, *, acknowledged: bool,
                 max_attempts: int | None
                 ) -> Generator[simpy.Event, Any, tuple[float, int, int, dict[Any, bool]]]:
        """Send ``bits`` to ``receivers`` (node ids): ``(start, attempts, bits_on_air,
        {receiver: arrived})``, ``start`` the first packet's time on the air."""
        env, medium = self.env, self.medium
        index = medium.index
        targets = [index[r] for r in receivers]
        got = dict.fromkeys(targets, True)
        mtu = self.mtu_bits
        if bits <= mtu:
            sizes = [bits]
        else:
            full, rest = divmod(bits, mtu)
            sizes = [mtu] * full + ([rest] if rest else [])
        cap = self._cap
        if cap is None:
            cap = max_attempts if max_attempts is not None else UNLIMITED_ATTEMPTS
        start, attempts, on_air = None, 0, 0
        if self.holding:
            yield from self._take()
        else:  # free: taken without an event
            self.holding = True
        mac, access, me, latency = self.mac, self._access, self.index, self.latency_s
        rate = medium.spec.rate_bps
        first = targets[0]
        try:
            for size in sizes:
                airtime = size / rate
                tries = 0
                while True:
                    tries += 1
                    if access is not None:
                        wait = access(mac, self, tries)
                        if wait is not None:
                            yield wait
                    tx = medium.start(me, targets, airtime, size, {"attempt": tries})
                    if start is None:
                        start = tx.start
                    yield env.timeout(airtime)
                    outcome = tx.outcome
                    if outcome is None:
                        outcome = medium.finish(tx)
                    on_air += size
                    if latency:
                        yield env.timeout(latency)
                    if not acknowledged:
                        for r, ok in outcome.items():
                            got[r] = got[r] and ok
                        break
                    if outcome[first]:
                        break
                    if tries >= cap:
                        got[first] = False
                        break
                attempts += tries
                if acknowledged and not got[first]:
                    break
        finally:
            self._give()
        ids = medium.ids
        return (env.now if start is None else start), attempts, on_air, {
            ids[r]: ok for r, ok in got.items()}
