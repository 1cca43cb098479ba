"""Links: FIFO serialisation, packetisation, per-packet loss and ARQ over a channel."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from bflnet.channels.base import Channel
from bflnet.simulator.message import Delivery, Message
from bflnet.simulator.recorder import Recorder


class Medium:
    """What serialises transmissions: one message on the air at a time.

    Every link has its own medium by default; links that share one (e.g. all agents'
    uplinks to a server under TDMA) queue behind each other in FIFO order.
    """

    __slots__ = ("busy_until",)

    def __init__(self) -> None:
        self.busy_until = 0.0


#: Attempts lost in an outage after which unlimited ARQ (``max_attempts=None``) gives a
#: message up (an outage of hours would otherwise be simulated attempt by attempt).
OUTAGE_ATTEMPTS = 1000


class Interrupted(tuple):
    """A schedule ``(start, end, attempts, bits_on_air, ok=False)`` whose message an outage
    of the link stopped: ``reason`` is ``"lost_in_outage"`` (attempts made while the link
    was down were lost, and ARQ gave up) or ``"cut_mid_air"`` (an outage began mid-air:
    the transmission ends there, ``end``, with the bits already on the air counted)."""

    reason: str


def interrupted(schedule: tuple[float, float, int, int, bool], reason: str) -> Interrupted:
    out = Interrupted(schedule)
    out.reason = reason
    return out


class Link:
    """A directed link ``src -> dst`` over a channel.

    A message is cut into packets of at most ``mtu_bits`` (a zero-bit message is one
    empty packet: it still pays the latency). Each packet is sent with stop-and-wait ARQ:
    up to ``max_attempts`` attempts (``None``: unlimited), each lasting what the channel
    says; a packet that fails every attempt drops the whole message. The attempts are
    drawn when the message is handed to the link (FIFO order), so one SimPy timeout
    covers the whole transmission. ``rng`` may be a zero-argument factory, called on the
    first transmission (networks with many idle links then build fast).

    ``outages`` (a :class:`bflnet.faults.availability.Timeline`, or ``None``: never down)
    makes the link fail while it is down: an attempt made then is lost (the sender cannot
    tell; ARQ goes on), and a message in flight when an outage begins is cut there, its
    packet in flight counting on the air in proportion to the airtime it had
    (:class:`Interrupted`; :meth:`complete` records a ``fault`` row). Without outages
    nothing of this runs.

    >>> import simpy
    >>> from bflnet.channels import FixedRateChannel
    >>> env = simpy.Environment()
    >>> link = Link(env, 0, 1, FixedRateChannel(1e6, 0.005), np.random.default_rng(0),
    ...             Recorder(env), mtu_bits=1000)
    >>> def proc():
    ...     d = yield from link.send(Message(0, 1, "x", None, bits=1500))
    ...     print(d.end_s, d.attempts)
    >>> _ = env.process(proc()); env.run()
    0.0115 2
    """

    def __init__(
        self,
        env: simpy.Environment,
        src: Any,
        dst: Any,
        channel: Channel,
        rng: np.random.Generator | Callable[[], np.random.Generator],
        recorder: Recorder,
        *,
        inbox: simpy.Store | None = None,
        mtu_bits: int = 12_000,
        max_attempts: int | None = 8,
        medium: Medium | None = None,
        direction: str = "d2d",
        outages: Any = None,
    ) -> None:
        if int(mtu_bits) != mtu_bits or mtu_bits < 1:
            raise ValueError(f"mtu_bits: must be an integer >= 1, got {mtu_bits!r}")
        if max_attempts is not None and (int(max_attempts) != max_attempts or max_attempts < 1):
            raise ValueError(f"max_attempts: must be an integer >= 1 or None, got {max_attempts!r}")
        if direction not in ("d2d", "up", "down"):
            raise ValueError(f"direction: must be one of d2d, up, down, got {direction!r}")
        self.env = env
        self.src = src
        self.dst = dst
        self.channel = channel
        self._rng = rng
        self.recorder = recorder
        self.inbox = inbox
        self.mtu_bits = int(mtu_bits)
        self.max_attempts = max_attempts
        self.medium = medium if medium is not None else Medium()
        self.direction = direction
        self.outages = outages
        #: The name of the link's random stream in the simulation's ``RngStreams``.
        self.stream_name = f"link.{src}.{dst}"
        #: ``(tank, joules_per_bit)`` of a sender with a battery (``faults.energy``), or None.
        self.energy: tuple[Any, float] | None = None
        #: The sender's transceiver on a shared medium (``bflnet.radio``), or ``None``:
        #: an independent link (the channel decides each attempt when it is handed over).
        self.radio: Any = None

    @property
    def rng(self) -> np.random.Generator:
        """The link's own stream (created on first use when given as a factory)."""
        if callable(self._rng):
            self._rng = self._rng()
        return self._rng

    def schedule(self, bits: int, at: float | None = None
                 ) -> tuple[float, float, int, int, bool]:
        """Draw one message's transmission: ``(start, end, attempts, bits_on_air, ok)``,
        handed to the link now or at the (later) time ``at``.

        Reserves the medium until ``end``; the caller waits until ``end`` and then calls
        :meth:`complete` (:meth:`send` does both). On a shared medium the outcome is known
        only when each packet ends: use :meth:`send`.
        """
        if self.radio is not None:
            raise ValueError(f"link {self.src} -> {self.dst}: on a shared medium a message's "
                             f"fate is decided when its packets end; use send()")
        if bits.__class__ is not int:
            if int(bits) != bits or bits < 0:
                raise ValueError(f"bits: must be a non-negative integer, got {bits!r}")
            bits = int(bits)
        elif bits < 0:
            raise ValueError(f"bits: must be a non-negative integer, got {bits!r}")
        now = self.env.now if at is None or at < self.env.now else at
        busy = self.medium.busy_until
        start = busy if busy > now else now
        channel, line = self.channel, self.outages
        attempt, rng = channel.attempt, (self.rng if channel.draws else None)
        first = None
        if bits <= self.mtu_bits:  # the common case: one packet
            first = attempt(bits, start, rng)
            if not first[1] and line is None:
                end = start + first[0]
                self.medium.busy_until = end
                return start, end, 1, bits, True
            sizes = [bits]
        else:
            full, rest = divmod(bits, self.mtu_bits)
            if line is None and channel.fixed_attempts:
                return self._fixed_schedule(start, full, rest, bits)
            sizes = [self.mtu_bits] * full + ([rest] if rest else [])
        t, attempts, on_air, delivered, cap = start, 0, 0, True, self.max_attempts
        in_outage = 0  # attempts lost because the link was down
        for size in sizes:
            tries = 0
            while True:
                step, lost = first if first is not None else attempt(size, t, rng)
                first = None
                if line is not None:
                    # an attempt started while down is lost (the sender cannot tell: ARQ
                    # goes on); an outage beginning during an attempt cuts the message
                    up, change = line.is_up(t), line.next_change(t)
                    if up and t + step > change:
                        on_air += int(size * (change - t) / step) if step > 0 else 0
                        self.medium.busy_until = change
                        return interrupted((start, change, attempts + tries + 1, on_air,
                                            False), "cut_mid_air")
                    if not up:
                        lost, in_outage = True, in_outage + 1
                        if step <= 0 or change == math.inf or (
                                cap is None and in_outage >= OUTAGE_ATTEMPTS):
                            # no time passes, never up again, or unlimited ARQ gives up
                            t += max(step, 0.0)
                            self.medium.busy_until = t
                            return interrupted((start, t, attempts + tries + 1,
                                                on_air + size, False), "lost_in_outage")
                t += step
                tries += 1
                on_air += size
                if not lost:
                    break
                if cap is not None and tries >= cap:
                    delivered = False
                    break
            attempts += tries
            if not delivered:
                break
        self.medium.busy_until = t
        schedule = (start, t, attempts, on_air, delivered)
        return interrupted(schedule, "lost_in_outage") if in_outage and not delivered \
            else schedule

    def _fixed_schedule(self, start: float, full: int, rest: int, bits: int
                        ) -> tuple[float, float, int, int, bool]:
        """:meth:`schedule` of ``full`` packets of ``mtu_bits`` and one of ``rest`` bits
        (if any) over a channel with ``fixed_attempts`` and no outages: each packet takes
        one attempt of the channel's fixed duration, and the end is the same sum as the
        attempt-by-attempt loop's, added left to right (``numpy.add.accumulate`` is a
        sequential sum: the same float64 roundings, bit for bit)."""
        step = self.channel.attempt(self.mtu_bits, start, None)[0] if full else 0.0
        durations = np.full(1 + full + (1 if rest else 0), step, dtype=np.float64)
        durations[0] = start
        if rest:
            durations[-1] = self.channel.attempt(rest, start, None)[0]
        end = float(np.add.accumulate(durations)[-1])
        self.medium.busy_until = end
        return start, end, full + (1 if rest else 0), bits, True

    def complete(self, message: Message, schedule: tuple[float, float, int, int, bool],
                 deliver: bool = True) -> bool:
        """Account for a transmission that has ended (bits, record row, inbox delivery);
        returns whether the message arrived."""
        delivered = self.settle(message.bits, schedule, message.kind)
        if delivered and deliver and self.inbox is not None:
            self.inbox.put(message)
        return delivered

    def settle(self, bits: int, schedule: tuple[float, float, int, int, bool],
               kind: str) -> bool:
        """:meth:`complete` without the message itself (a protocol that hands the
        payload over directly): the bits, energy and record rows of an ended transmission
        of a ``bits``-bit message of ``kind``; returns whether it arrived."""
        start, _, attempts, on_air, delivered = schedule
        recorder = self.recorder
        if schedule.__class__ is Interrupted:
            recorder.record("fault", node=self.src, peer=self.dst, kind=schedule.reason,
                            bits=bits, bits_on_air=on_air, start_s=start)
        # Recorder.count_bits, inlined (this is on every hop's path)
        recorder.cum_bits += on_air
        if delivered:
            recorder.cum_bits_delivered += bits
        direction = self.direction
        if direction == "up":
            recorder.cum_bits_up += on_air
        elif direction == "down":
            recorder.cum_bits_down += on_air
        if self.energy is not None:
            tank, per_bit = self.energy
            tank.spend(on_air * per_bit, self.env.now, "send")
        if recorder.record_messages:
            recorder.record(
                "message", node=self.src, peer=self.dst, kind=kind, bits=bits,
                bits_on_air=on_air, attempts=attempts, dropped=int(not delivered),
                start_s=start)
        return delivered

    def send(self, message: Message, *, deliver: bool = True
             ) -> Generator[simpy.Event, Any, Delivery]:
        """SimPy process body: transmit ``message``; if it arrives and ``deliver`` is set,
        put it in the receiver's inbox (single-process protocols take the returned
        :class:`Delivery` instead). On a shared medium the message queues for the
        sender's radio and each packet is decided by the medium when it ends."""
        radio = self.radio
        if radio is not None:  # through the sender's transceiver
            # Transceiver.transmit's loop, run here: one generator fewer at every event
            bits = message.bits
            if bits.__class__ is not int or bits < 0:  # (checked_bits' test, inline)
                bits = checked_bits(bits)
            op = radio.unicast(self.dst, bits, self.max_attempts)
            try:
                wait = op.advance()
                while wait is not None:
                    yield wait
                    wait = op.advance()
            except BaseException:
                op.abort()
                raise
            end = self.env.now
            start = end if op.start is None else op.start
            attempts, on_air, delivered = op.attempts, op.on_air, op.got[op.first]
            # complete(), inlined
            self.settle(message.bits, (start, end, attempts, on_air, delivered), message.kind)
            if delivered and deliver and self.inbox is not None:
                self.inbox.put(message)
            return Delivery(message, delivered, attempts, on_air, start, end)
        schedule = self.schedule(message.bits)
        yield self.env.timeout(schedule[1] - self.env.now)
        delivered = self.complete(message, schedule, deliver)
        start, end, attempts, on_air, _ = schedule
        return Delivery(message, delivered, attempts, on_air, start, end)


def checked_bits(bits: Any) -> int:
    """``bits`` as an ``int`` (a one-line error unless a non-negative integer)."""
    if bits.__class__ is not int or bits < 0:
        if int(bits) != bits or bits < 0:
            raise ValueError(f"bits: must be a non-negative integer, got {bits!r}")
        bits = int(bits)
    return bits
