"""The channel interface: how long one transmission attempt takes and whether it is lost."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod

import numpy as np


class Channel(ABC):
    """A channel model for one directed link.

    Subclasses implement :meth:`attempt`. Stateful channels (e.g. Gilbert-Elliott) keep
    their state on the instance, set ``stateful = True`` and make :meth:`fresh` return an
    independent copy, so every link gets its own state.

    >>> from bflnet.channels import FixedRateChannel
    >>> ch = FixedRateChannel(rate_bps=1e6, latency_s=0.005)
    >>> ch.attempt(1000, 0.0, np.random.default_rng(0))
    (0.006, False)
    """

    @abstractmethod
    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Send one packet of ``bits`` starting at ``start_s``.

        Returns ``(duration_s, lost)``: the time the attempt occupies the link (airtime
        plus latency, i.e. until the sender learns the outcome) and whether it was lost.
        """

    #: Whether attempts change the instance (then every link needs its own copy).
    stateful: bool = False

    @property
    def draws(self) -> bool:
        """Whether :meth:`attempt` may draw from its ``rng``; a channel that never does
        (an ideal or lossless fixed-rate link) lets the link skip creating its stream."""
        return True

    @property
    def fixed_attempts(self) -> bool:
        """Whether every attempt of a packet of a given size takes the same time whenever
        it starts and is never lost, drawing nothing (an ideal or lossless fixed-rate
        link): a link then adds up a message's packets without calling :meth:`attempt`
        for each (the same times, bit for bit). False unless a channel says so."""
        return False

    #: Whether the channel depends on the transmitter-receiver distance (then
    #: :meth:`with_distance` gives it at another distance, e.g. of moving nodes).
    distance_dependent: bool = False

    def with_distance(self, distance_m: float) -> Channel:
        """This channel at distance ``distance_m`` (the hook through which moving nodes
        set a link's live distance); the channel itself when it does not depend on it."""
        return self

    def fresh(self) -> Channel:
        """An instance for one more link: a copy with initial state if the channel is
        stateful, else the channel itself (stateless channels are safe to share)."""
        return copy.deepcopy(self) if self.stateful else self

    def describe(self) -> str:
        """A short human-readable description."""
        return repr(self)
