"""Node mobility: the random waypoint model over a square area.

:class:`RandomWaypoint` is the recipe (area, speed range, pause); :meth:`RandomWaypoint.motion`
turns it into one run's :class:`Waypoints`, drawing node ``k``'s legs from its own stream
only (so adding a node never moves another node's draws, and the same seed gives the same
paths). Each leg: pick a destination uniformly in the ``area_m x area_m`` square and a speed
uniformly in ``[speed_min, speed_max]`` m/s, travel there in a straight line, pause
``pause_s`` seconds, repeat. A node with ``speed_max == 0`` never moves.

Positions of all ``K`` nodes are one ``(K, 2)`` array, computed at once for a time ``t``;
only the nodes whose leg has ended draw (a loop over those nodes, not over all).

>>> import numpy as np
>>> spec = RandomWaypoint(area_m=100.0, speed_min=1.0, speed_max=2.0)
>>> start = np.array([[10.0, 10.0], [50.0, 50.0]])
>>> motion = spec.motion(start, [np.random.default_rng(k) for k in range(2)])
>>> xy = motion.positions(5.0)
>>> xy.shape, bool(((xy >= 0) & (xy <= 100)).all())
((2, 2), True)
>>> bool((np.linalg.norm(xy - start, axis=1) <= 2.0 * 5.0 + 1e-9).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bflnet.validation.checks import check_real

#: Upper bound of every length, time and speed (rejects absurd values early).
MAX_VALUE = 1e12


@dataclass(frozen=True)
class RandomWaypoint:
    """Random waypoint mobility in the square ``[0, area_m]^2``: speeds uniform in
    ``[speed_min, speed_max]`` m/s (``speed_min > 0`` unless both are 0: a node that may
    draw speed 0 never arrives), a pause of ``pause_s`` seconds at each waypoint."""

    area_m: float
    speed_min: float
    speed_max: float
    pause_s: float = 0.0

    def __post_init__(self) -> None:
        check_real("area_m", self.area_m, gt=0, le=MAX_VALUE)
        check_real("speed_min", self.speed_min, ge=0, le=MAX_VALUE)
        check_real("speed_max", self.speed_max, ge=self.speed_min, le=MAX_VALUE)
        check_real("pause_s", self.pause_s, ge=0, le=MAX_VALUE)
        if self.speed_max > 0 and self.speed_min <= 0:
            raise ValueError(f"speed_min: must be > 0 when speed_max > 0 (a leg at speed 0 "
                             f"never ends), got {self.speed_min!r}")

    def motion(self, start: np.ndarray, rngs: Sequence[np.random.Generator]) -> Waypoints:
        """One run's paths from the ``(K, 2)`` start positions, node ``k`` drawing from
        ``rngs[k]``."""
        return Waypoints(self, start, rngs)


class Waypoints:
    """The paths of ``K`` nodes in one run: each node's current leg (origin, destination,
    departure, arrival, end of pause) as arrays; :meth:`positions` interpolates them all
    at once. Times asked must not decrease (legs are drawn as time passes)."""

    def __init__(self, spec: RandomWaypoint, start: np.ndarray,
                 rngs: Sequence[np.random.Generator]) -> None:
        start = np.array(start, dtype=np.float64)
        if start.ndim != 2 or start.shape[1] != 2 or start.shape[0] == 0:
            raise ValueError(f"start: must be a (K, 2) array of positions, got shape "
                             f"{start.shape}")
        if not np.isfinite(start).all() or (start < 0).any() or (start > spec.area_m).any():
            raise ValueError(f"start: every position must lie in [0, {spec.area_m:g}]^2 "
                             f"(area_m)")
        if len(rngs) != start.shape[0]:
            raise ValueError(f"rngs: need one stream per node ({start.shape[0]}), got "
                             f"{len(rngs)}")
        self.spec = spec
        self.rngs = list(rngs)
        k = start.shape[0]
        self.origin = start.copy()
        self.dest = start.copy()
        self.depart = np.zeros(k)
        self.arrive = np.zeros(k)
        self.leave = np.zeros(k)  # end of the pause at ``dest``
        self.speed = np.zeros(k)
        #: Legs drawn so far per node (the first leg starts at time 0 with no pause).
        self.legs = np.zeros(k, dtype=np.int64)
        self.now = 0.0
        self._new_legs(np.arange(k), first=True)

    def _new_legs(self, nodes: np.ndarray, first: bool = False) -> None:
        """Start a new leg at each of ``nodes`` from where its last one ended."""
        spec = self.spec
        for k in nodes.tolist():
            rng = self.rngs[k]
            origin = self.dest[k].copy()
            dest = rng.uniform(0.0, spec.area_m, size=2)
            speed = float(rng.uniform(spec.speed_min, spec.speed_max))
            depart = 0.0 if first else float(self.leave[k])
            if speed > 0:
                arrive = depart + math.dist(origin, dest) / speed
            else:
                dest, arrive = origin, math.inf
            self.origin[k], self.dest[k] = origin, dest
            self.depart[k], self.arrive[k], self.speed[k] = depart, arrive, speed
            self.leave[k] = arrive + spec.pause_s
            self.legs[k] += 1

    def positions(self, t: float) -> np.ndarray:
        """The ``(K, 2)`` positions at time ``t`` (not earlier than the last time asked)."""
        if not t >= self.now:
            raise ValueError(f"t: must be >= {self.now} (the last time asked), got {t}")
        self.now = t
        while True:
            done = np.flatnonzero(self.leave <= t)
            if done.size == 0:
                break
            self._new_legs(done)
        span = self.arrive - self.depart
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(span > 0, (t - self.depart) / span, 1.0)
        frac = np.clip(np.nan_to_num(frac, nan=0.0, posinf=0.0), 0.0, 1.0)
        return self.origin + (self.dest - self.origin) * frac[:, None]
