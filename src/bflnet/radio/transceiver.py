"""A node's radio on the shared medium: one packet on the air at a time, its MAC, ARQ.

Every message a node sends (over any of its links, or as a broadcast) queues for the
node's one radio in FIFO order. A message is cut into packets of at most ``mtu_bits``;
each packet waits for the MAC, goes on the air for its air time, and is decided by the
medium when it ends; the sender learns a unicast packet's outcome ``latency_s`` later
(the radio waits for it: stop-and-wait). A broadcast frees the radio when its last
packet ends, and its receivers have it ``latency_s`` later. A unicast packet
that is lost is sent again (stop-and-wait ARQ) up to ``max_attempts`` attempts in all
(``None``: until it arrives, given up after :data:`UNLIMITED_ATTEMPTS` losses in a row;
under CSMA the MAC's ``retry_limit`` decides instead); a packet that fails them all drops
the message. A broadcast packet is sent once (nobody acknowledges it): each receiver gets
the message iff it received every packet.

With a PHY preset (``RadioSpec.phy``, :mod:`bflnet.radio.phy.timing`) a packet is a data frame
(preamble, MAC header and FCS included; with ``reception="mcs"`` at the MCS the medium
picks for it, :meth:`SharedMedium.data_mcs`) and a unicast one is acknowledged on the air:
SIFS after it ends, its receiver, if it decoded it and is not transmitting, sends an ACK
at the basic rate (a transmission of the medium: it can collide, and it keeps the
carrier busy); the sender learns the outcome when that ACK ends (or, without one, at the
ACK timeout, the same instant), and the packet arrived iff the ACK did. A node whose
back-off ends while its own ACK is on the air waits for the ACK to end and takes the
MAC's access again, for the same attempt.

One message on the radio is a :class:`Sending`, a state machine run either by a SimPy
process (:meth:`Transceiver.transmit`, a generator; ``Link.send`` runs the same loop over
:meth:`Transceiver.unicast`'s itself) or by the callbacks of the events it waits on
(:meth:`Transceiver.send_then`, or a :class:`Sending` built directly): the same events in
the same order either way, without a process per message in the second.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Generator, Sequence
from functools import partial
from typing import Any

import numpy as np
import simpy

from bflnet.radio.draws import BlockDraws
from bflnet.radio.events import timeout
from bflnet.radio.mac import LAST_STEP, Csma, Mac, csma_windows, mac_access, write_row
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
        self._draws: BlockDraws | None = None
        self.slot_s, self.colour, self.frame_slots = slot_s, colour, frame_slots
        #: Whether a message holds the radio; the messages waiting for it, in order.
        self.holding = False
        self._queue: deque[simpy.Event] = deque()
        self.latency_s = medium.spec.latency_s
        #: The DCF timing (``None``: ``phy="ideal"``).
        self.timing = medium.timing
        #: The ACK's air time (with a PHY preset; a plain float, read per exchange).
        self.ack_s = medium.timing.ack_s if medium.timing is not None else 0.0
        #: SIFS and the ACK's bits (with a PHY preset; plain values read per exchange).
        self.sifs_s = medium.timing.sifs_s if medium.timing is not None else 0.0
        self.ack_bits = medium.timing.ack_bits if medium.timing is not None else 0
        #: The MAC's access procedure (``None``: transmit at once) and, under CSMA, the
        #: attempts a packet gets (its ``retry_limit`` + 1; ``None``: the link's).
        self._access = mac_access(mac)
        self._cap = mac.retry_limit + 1 if isinstance(mac, Csma) else None
        #: Under CSMA, the contention window of each attempt (:func:`csma_windows`): the
        #: access (``mac._csma``) is run inline by :class:`Sending`; ``None``: other MACs.
        self._windows = csma_windows(mac) if isinstance(mac, Csma) else None
        #: A ``mac`` row to write when the node resumes from its access wait (ALOHA's
        #: ``defer`` row), or ``None``.
        self.pending_row: dict[str, Any] | None = None
        #: The largest packet (bits) the ALOHA / TDMA slot holds, and, until the run's
        #: first message has fitted the slot (a PHY preset without ``slot_s``), the
        #: function that fits it (``Air.fit_slot``).
        self.slot_bits = sys.maxsize
        self.fit_slot: Callable[[int], None] | None = None

    @property
    def mac_rng(self) -> np.random.Generator:
        """The node's MAC stream ``mac.<node>`` (made on first use)."""
        if callable(self._mac_rng):
            self._mac_rng = self._mac_rng()
        return self._mac_rng

    @property
    def draws(self) -> BlockDraws:
        """The MAC's draws from :attr:`mac_rng`, in blocks (the values of numpy's calls)."""
        draws = self._draws
        if draws is None:
            draws = self._draws = BlockDraws(self.mac_rng)
        return draws

    def _give(self) -> None:
        """Hand the radio to the next message waiting, in order, or free it."""
        if self._queue:
            self._queue.popleft().succeed()
        else:
            self.holding = False

    def _targets(self, receivers: Sequence[Any]) -> list[int]:
        index = self.medium.index
        return [index[r] for r in receivers]

    def attempts(self, max_attempts: int | None) -> int:
        """The attempts a packet gets: the MAC's (CSMA), else the link's ``max_attempts``
        (``None``: :data:`UNLIMITED_ATTEMPTS`)."""
        if self._cap is not None:
            return self._cap
        return max_attempts if max_attempts is not None else UNLIMITED_ATTEMPTS

    def transmit(self, receivers: Sequence[Any], bits: int, *, acknowledged: bool,
                 max_attempts: int | None
                 ) -> Generator[simpy.Event, Any, tuple[float, int, int, dict[Any, bool]]]:
        """SimPy process body: send ``bits`` to ``receivers`` (node ids); returns ``(start,
        attempts, bits_on_air, {receiver: arrived})``, ``start`` the first packet's time on
        the air (a :class:`Sending` driven by this process)."""
        op = Sending(self, self._targets(receivers), bits, acknowledged,
                     self.attempts(max_attempts))
        try:
            wait = op.advance()
            while wait is not None:
                yield wait
                wait = op.advance()
        except BaseException:
            op.abort()
            raise
        return op.result()

    def unicast(self, receiver: Any, bits: int, max_attempts: int | None) -> Sending:
        """The acknowledged :class:`Sending` of ``bits`` to ``receiver`` (a node id), not
        started: the caller's process drives it as :meth:`transmit` does (``Link.send``:
        one generator fewer to resume at every event)."""
        cap = self._cap
        if cap is None:
            cap = max_attempts if max_attempts is not None else UNLIMITED_ATTEMPTS
        return Sending(self, [self.medium.index[receiver]], bits, True, cap)

    def send_then(self, receivers: Sequence[Any], bits: int, *, acknowledged: bool,
                  max_attempts: int | None, then: Callable[[Sending], Any]) -> None:
        """:meth:`transmit` without a process: ``then(sending)`` is called when it ends
        (:meth:`Sending.result`, :meth:`Sending.arrived`), from the callback of the event
        the process would have resumed on, so the events and their order are those of
        :meth:`transmit`."""
        Sending(self, self._targets(receivers), bits, acknowledged,
                self.attempts(max_attempts), then).wake(None)


class Sending:
    """One message on a radio, as a state machine: :meth:`advance` runs it until the next
    event it must wait for (returned) or to its end (``None``). A process drives it
    (:meth:`Transceiver.transmit`), or the events' callbacks do
    (:meth:`Transceiver.send_then`)."""

    __slots__ = ("acknowledged", "again", "attempts", "cap", "first", "got", "k", "on_air",
                 "outcome", "radio", "sizes", "start", "state", "targets", "then", "tries",
                 "turn", "tx", "wait")

    #: states: the radio to take, waiting for the radio, the MAC's access, on the air,
    #: the outcome's latency over, done; with a PHY preset: SIFS after a unicast frame,
    #: its ACK on the air; a broadcast's latency, the radio already free
    _TAKE, _TURN, _ACCESS, _START, _AIR, _LATE, _DONE, _SIFS, _ACK, _TAIL = range(10)

    def __init__(self, radio: Transceiver, targets: list[int], bits: int,
                 acknowledged: bool, cap: int,
                 then: Callable[[Sending], Any] | None = None) -> None:
        """``targets``: the receivers' node indices in the medium; ``cap``: the attempts a
        packet gets (:meth:`Transceiver.attempts`); ``then``: called with this sending
        when it ends, if it is driven by :meth:`wake`."""
        self.radio, self.acknowledged, self.targets = radio, acknowledged, targets
        self.first = targets[0]
        self.got = dict.fromkeys(targets, True)
        mtu = radio.mtu_bits
        if bits <= mtu:
            self.sizes = (bits,)
        else:
            full, rest = divmod(bits, mtu)
            self.sizes = (mtu,) * full + ((rest,) if rest else ())
        self.cap = cap
        self.start: float | None = None
        self.attempts = self.on_air = self.k = self.tries = 0
        self.state = 0  # _TAKE
        self.turn: simpy.Event | None = None
        self.tx: Any = None
        self.wait: simpy.Event | None = None  # the MAC's access wait in progress
        self.outcome: dict[int, bool] | None = None
        self.then = then
        self.again = False  # the access to take again for the same attempt

    def wake(self, _: Any) -> None:
        """Advance; wait for the next event by its callback, or call ``then``."""
        wait = self.advance()
        if wait is None:
            self.then(self)  # type: ignore[misc]
        else:
            wait.callbacks.append(self.wake)

    def advance(self) -> simpy.Event | None:
        """Run until the next event to wait for (returned), or to the end (``None``)."""
        # The hot path of every exchange: the radio's fields are read once per call, and
        # ``mac._csma`` is inlined (the very calls it makes, in the same order: the draws
        # and the event ids are its).
        radio = self.radio
        state = self.state
        if state == 0:  # _TAKE
            if radio.holding:  # wait for the radio, in order
                self.turn = radio.env.event()
                radio._queue.append(self.turn)
                self.state = self._TURN
                return self.turn
            radio.holding = True  # free: taken without an event
            state = 2  # _ACCESS
        elif state == 1:  # _TURN: handed over
            self.turn = None
            state = 2  # _ACCESS
        elif state == 9:  # _TAIL over: the message has arrived
            self.state = 6  # _DONE
            return None
        arrived = True  # a unicast's (first receiver's) outcome of the attempt
        while True:
            if state == 2:  # _ACCESS
                if self.again:
                    self.again = False
                else:
                    self.tries += 1
                windows = radio._windows
                if windows is not None:  # CSMA (no slot to fit): mac._csma, inlined
                    tries = self.tries
                    window = windows[tries] if tries <= LAST_STEP else windows[LAST_STEP]
                    counter = (radio._draws or radio.draws).below(window)
                    wait = radio.medium.carrier.backoff(radio.index, counter, tries, window)
                    self.state, self.wait = 3, wait
                    return wait
                if radio.fit_slot is not None:  # the run's first message fits the slot
                    radio.fit_slot(self.sizes[0])
                access = radio._access
                state = 3
                if access is not None:
                    wait = access(radio.mac, radio, self.tries)
                    if wait is not None:
                        self.state, self.wait = 3, wait
                        return wait
            if state == 3:  # _START
                row = radio.pending_row
                if row is not None:  # the access wait's row, as it ends
                    radio.pending_row = None
                    radio.recorder.record_fields("mac", row)
                medium = radio.medium
                size = self.sizes[self.k]
                if size > radio.slot_bits:
                    raise ValueError(
                        f"mac_slot_s: the slot was fitted to the run's first message "
                        f"({radio.slot_bits} bits, {radio.slot_s:g} s); a {size}-bit packet "
                        f"does not fit: set mac_slot_s for the largest packet")
                env = radio.env
                index = radio.index
                mcs = None
                if radio.timing is None:
                    airtime = size / medium.rate_bps
                else:
                    now = env._now
                    medium.settle(now)
                    busy_until = medium.active.get(index)
                    if busy_until is not None:  # its own ACK is on the air: access again
                        self.state, self.again, self.wait = 2, True, None
                        return timeout(env, max(busy_until.end - now, 0.0))
                    mcs = medium.data_mcs(index, self.targets, size, self.acknowledged)
                    airtime = medium.frame_s(size, medium.rate_bps if mcs is None
                                             else mcs.rate_bps)
                tx = self.tx = medium.start(index, self.targets, airtime, size,
                                            {"attempt": self.tries}, mcs=mcs)
                if self.start is None:
                    self.start = tx.start
                self.state = 4  # _AIR
                return timeout(env, airtime)
            if state == 4:  # _AIR: decided at its end
                tx, self.tx = self.tx, None
                outcome = tx.outcome
                if outcome is None:
                    outcome = radio.medium.finish(tx)
                self.on_air += self.sizes[self.k]
                if self.acknowledged:
                    if radio.timing is not None:
                        self.outcome, self.state = outcome, 7  # _SIFS
                        return timeout(radio.env, radio.sifs_s)
                    if radio.latency_s:  # the outcome's way back
                        self.outcome, self.state = outcome, 5  # _LATE
                        return timeout(radio.env, radio.latency_s)
                    arrived = outcome[self.first]
                else:
                    got = self.got
                    for r, ok in outcome.items():
                        got[r] = got[r] and ok
            elif state == 7:  # _SIFS over: the receiver acknowledges what it decoded
                medium, first = radio.medium, self.first
                if self.outcome[first] and not medium.tx_count[first]:  # type: ignore[index]
                    medium.acks += 1
                    self.tx = medium.start(first, [radio.index], radio.ack_s, radio.ack_bits,
                                           {"attempt": self.tries, "frame": "ack"})
                else:
                    self.tx = None
                self.state = 8  # _ACK
                return timeout(radio.env, radio.ack_s)
            elif state == 8:  # _ACK over (or the ACK timeout)
                ack = self.tx
                self.tx = self.outcome = None
                arrived = ack is not None and radio.medium.finish(ack)[radio.index]
                if radio.latency_s:
                    self.outcome, self.state = {self.first: arrived}, 5  # _LATE
                    return timeout(radio.env, radio.latency_s)
            else:  # _LATE: the outcome is known to the sender
                outcome, self.outcome = self.outcome, None
                assert outcome is not None
                if self.acknowledged:
                    arrived = outcome[self.first]
                else:
                    got = self.got
                    for r, ok in outcome.items():
                        got[r] = got[r] and ok
            if not arrived:  # a unicast attempt lost
                if self.tries < self.cap:  # again
                    state = 2
                    continue
                self.got[self.first] = False
            self.attempts += self.tries
            self.tries = 0
            self.k += 1
            if not arrived or self.k == len(self.sizes):
                self.state = 6  # _DONE
                radio._give()
                if radio.latency_s and not self.acknowledged:
                    # the radio is free; the receivers have the message latency_s later
                    self.state = 9  # _TAIL
                    return timeout(radio.env, radio.latency_s)
                return None
            state = 2
            arrived = True

    def result(self) -> tuple[float, int, int, dict[Any, bool]]:
        """``(start, attempts, bits_on_air, {receiver: arrived})`` of a finished sending
        (``start``: the first packet's time on the air, or the end if none went)."""
        radio = self.radio
        ids = radio.medium.ids
        return ((radio.env.now if self.start is None else self.start), self.attempts,
                self.on_air, {ids[r]: ok for r, ok in self.got.items()})

    def arrived(self) -> bool:
        """Whether the (first) receiver got the message."""
        return self.got[self.first]

    def abort(self) -> None:
        """The driving process was interrupted: give the radio back (or the turn up)."""
        radio, turn = self.radio, self.turn
        row = radio.pending_row
        if row is not None and self.state == self._START and self.wait is not None:
            # interrupted in its access wait: the wait's row is still written when it ends
            radio.pending_row = None
            self.wait.callbacks.append(partial(write_row, radio.recorder.record_fields, row))
        if self.state == self._TURN and turn is not None:
            if turn.triggered:  # handed over, but not taken: pass it on
                radio._give()
            else:
                radio._queue.remove(turn)
        elif self.state not in (self._TAKE, self._DONE, self._TAIL):
            radio._give()
        self.state = self._DONE
