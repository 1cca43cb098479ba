"""Bursty loss: the two-state Gilbert-Elliott Markov chain."""

from __future__ import annotations

import copy

import numpy as np

from bflnet.channels.base import Channel
from bflnet.validation.checks import check_real

START_STATES = ("stationary", "good", "bad")


class GilbertElliottChannel(Channel):
    """Fixed rate and latency with losses driven by a good/bad Markov chain.

    The chain is stepped once per packet attempt: from good it moves to bad with
    ``p_good_to_bad``, from bad back to good with ``p_bad_to_good``. An attempt in state
    *s* is lost with probability ``loss_<s>``. The first attempt uses the start state
    (``"stationary"`` draws it from the stationary distribution with the attempt's ``rng``).
    The state lives on the instance; :meth:`fresh` returns a copy back at the start.
    ``duration = latency_s + bits / rate_bps``.

    >>> ch = GilbertElliottChannel(1e6, p_good_to_bad=0.1, p_bad_to_good=0.5)
    >>> round(ch.mean_loss, 4), ch.mean_burst_length
    (0.1667, 2.0)
    """

    def __init__(
        self,
        rate_bps: float,
        latency_s: float = 0.0,
        *,
        p_good_to_bad: float,
        p_bad_to_good: float,
        loss_good: float = 0.0,
        loss_bad: float = 1.0,
        start_state: str = "stationary",
    ) -> None:
        self._rate_bps = check_real("rate_bps", rate_bps, gt=0)
        self._latency_s = check_real("latency_s", latency_s, ge=0)
        self._p_gb = check_real("p_good_to_bad", p_good_to_bad, gt=0, le=1)
        self._p_bg = check_real("p_bad_to_good", p_bad_to_good, gt=0, le=1)
        self._loss_good = check_real("loss_good", loss_good, ge=0, le=1)
        self._loss_bad = check_real("loss_bad", loss_bad, ge=0, le=1)
        if self._loss_good == 1.0 and self._loss_bad == 1.0:
            raise ValueError("loss_good: must be < 1 when loss_bad is 1 (every attempt lost)")
        if start_state not in START_STATES:
            raise ValueError(
                f"start_state: must be one of {', '.join(START_STATES)}, got {start_state!r}"
            )
        self._start_state = start_state
        # With equal loss in both states the chain is irrelevant: losses are i.i.d.
        self._memoryless = self._loss_good == self._loss_bad
        self._bad: bool | None = None  # state of the most recent attempt; None before the first

    @property
    def rate_bps(self) -> float:
        """Transmission rate in bit/s."""
        return self._rate_bps

    @property
    def latency_s(self) -> float:
        """One-way latency added to every attempt, in seconds."""
        return self._latency_s

    @property
    def p_good_to_bad(self) -> float:
        """Per-attempt transition probability good -> bad."""
        return self._p_gb

    @property
    def p_bad_to_good(self) -> float:
        """Per-attempt transition probability bad -> good."""
        return self._p_bg

    @property
    def loss_good(self) -> float:
        """Loss probability of an attempt in the good state."""
        return self._loss_good

    @property
    def loss_bad(self) -> float:
        """Loss probability of an attempt in the bad state."""
        return self._loss_bad

    @property
    def start_state(self) -> str:
        """``"stationary"``, ``"good"`` or ``"bad"``."""
        return self._start_state

    @property
    def stationary_bad_prob(self) -> float:
        """Long-run fraction of attempts in the bad state, π_B = p_GB / (p_GB + p_BG)."""
        return self._p_gb / (self._p_gb + self._p_bg)

    @property
    def mean_loss(self) -> float:
        """Long-run loss rate π_B·loss_bad + π_G·loss_good."""
        pi_bad = self.stationary_bad_prob
        return pi_bad * self._loss_bad + (1.0 - pi_bad) * self._loss_good

    @property
    def mean_burst_length(self) -> float:
        """Mean number of consecutive attempts in the bad state, 1 / p_BG (in attempts).

        Equals the mean length of a run of losses when ``loss_bad == 1`` and
        ``loss_good == 0``.
        """
        return 1.0 / self._p_bg

    @property
    def state(self) -> str | None:
        """State of the most recent attempt (``"good"``/``"bad"``), ``None`` before the first
        attempt or when ``loss_good == loss_bad`` (the chain is then not simulated)."""
        if self._bad is None:
            return None
        return "bad" if self._bad else "good"

    def attempt(self, bits: int, start_s: float, rng: np.random.Generator) -> tuple[float, bool]:
        """Step the chain, then draw the loss for the new state (``start_s`` unused)."""
        duration = self._latency_s + bits / self._rate_bps
        if self._memoryless:
            p = self._loss_good
            return duration, (p > 0.0 and rng.random() < p)
        bad = self._bad
        if bad is None:
            start = self._start_state
            if start == "stationary":
                bad = rng.random() < self.stationary_bad_prob
            else:
                bad = start == "bad"
        elif bad:
            bad = not rng.random() < self._p_bg
        else:
            bad = rng.random() < self._p_gb
        self._bad = bad
        p = self._loss_bad if bad else self._loss_good
        if p <= 0.0:
            return duration, False
        if p >= 1.0:
            return duration, True
        return duration, rng.random() < p

    stateful = True

    def fresh(self) -> GilbertElliottChannel:
        """An independent copy back at the start state."""
        new = copy.copy(self)
        new._bad = None
        return new

    def __repr__(self) -> str:
        return (
            f"GilbertElliottChannel(rate_bps={self._rate_bps!r}, latency_s={self._latency_s!r}, "
            f"p_good_to_bad={self._p_gb!r}, p_bad_to_good={self._p_bg!r}, "
            f"loss_good={self._loss_good!r}, loss_bad={self._loss_bad!r}, "
            f"start_state={self._start_state!r})"
        )
