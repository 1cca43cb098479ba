"""SimPy events built without their layers of calls (the radio makes several a packet)."""

from __future__ import annotations

from heapq import heappush

import simpy
from simpy.events import NORMAL, Timeout


def timeout(env: simpy.Environment, delay: float) -> Timeout:
    """``env.timeout(delay)`` for ``delay >= 0``: the same ``Timeout`` object, scheduled
    under the same key (time, priority, event id), without ``env.timeout``'s bound-class
    call, ``__init__`` and ``schedule`` (simpy 4's ``Environment`` fields)."""
    event = Timeout.__new__(Timeout)
    event.env, event.callbacks, event._value, event._delay, event._ok = \
        env, [], None, delay, True
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), event))
    return event
