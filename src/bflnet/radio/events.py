"""SimPy events built without their layers of calls (the radio makes several a packet).

Each helper makes the very object SimPy's own call would, and schedules it under the same
queue key (time, priority, event id), so the order of events is SimPy's. They read and
write SimPy 4's ``Environment`` fields (``_now``, ``_queue``, ``_eid``) and ``Event``'s
(``_ok``, ``_value``) directly: private names, pinned by the simpy version in
constraints.txt; tests/radio/test_events.py checks every helper against SimPy's call.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL, Event, Timeout


def timeout(env: simpy.Environment, delay: float) -> Timeout:
    """``env.timeout(delay)`` for ``delay >= 0``: the same ``Timeout`` object, scheduled
    under the same key (time, priority, event id), without ``env.timeout``'s bound-class
    call, ``__init__`` and ``schedule`` (simpy 4's ``Environment`` fields)."""
    event = Timeout.__new__(Timeout)
    event.env, event.callbacks, event._value, event._delay, event._ok = \
        env, [], None, delay, True
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), event))
    return event


def pending(env: simpy.Environment) -> Event:
    """``env.event()``: an event not triggered yet."""
    event = Event.__new__(Event)
    event.env, event.callbacks = env, []
    return event


def succeed(event: Event) -> None:
    """``event.succeed()`` of an event not triggered yet (value ``None``, scheduled now)."""
    event._ok, event._value = True, None
    env = event.env
    heappush(env._queue, (env._now, NORMAL, next(env._eid), event))


def call_soon(env: simpy.Environment, callback: Callable[[Any], Any]) -> Event:
    """``e = env.event(); e.callbacks.append(callback); e.succeed()``: ``callback`` runs
    as an event scheduled now."""
    event = Event.__new__(Event)
    event.env, event.callbacks, event._ok, event._value = env, [callback], True, None
    heappush(env._queue, (env._now, NORMAL, next(env._eid), event))
    return event


def timeout_at(env: simpy.Environment, when: float, eid: int,
               callback: Callable[[Any], Any]) -> Timeout:
    """A timeout at ``when`` (``> env.now``) calling ``callback``, scheduled under the
    event id ``eid`` taken earlier (``next(env._eid)``): it comes among the events of
    its instant where a timeout made when ``eid`` was taken would have come."""
    event = Timeout.__new__(Timeout)
    event.env, event.callbacks, event._value, event._delay, event._ok = \
        env, [callback], None, when - env._now, True
    heappush(env._queue, (when, NORMAL, eid, event))
    return event
