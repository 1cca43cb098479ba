"""The radio's direct SimPy events (:mod:`bflnet.radio.events`) are SimPy's own: the same
objects, processed in the same order among events made by SimPy's calls."""

from __future__ import annotations

import simpy
from simpy.events import Event, Timeout

from bflnet.radio.events import call_soon, pending, succeed, timeout, timeout_at


def order(direct: bool) -> list[str]:
    """Events at the same instants made in turn by SimPy's calls and by the helpers
    (``direct``) or by SimPy's calls only: the order their callbacks run in."""
    env = simpy.Environment()
    seen: list[str] = []

    def note(name):
        return lambda _: seen.append(name)

    def mark(name, event):
        event.callbacks.append(note(name))
        return event

    def body():
        mark("a", env.timeout(2.0))
        mark("b", timeout(env, 2.0) if direct else env.timeout(2.0))
        if direct:
            eid = next(env._eid)  # a timeout's place taken now, queued later
        mark("c", env.timeout(2.0))
        e = pending(env) if direct else env.event()
        mark("d", e)
        mark("e", env.timeout(0.0))
        succeed(e) if direct else e.succeed()
        if direct:
            call_soon(env, note("f"))
        else:
            f = env.event()
            f.callbacks.append(note("f"))
            f.succeed()
        mark("g", env.timeout(0.0))
        yield env.timeout(1.0)
        if direct:
            timeout_at(env, 2.0, eid, note("h"))
        mark("i", env.timeout(1.0))

    if not direct:  # the timeout "h" made where its id was taken (after "b")
        def plain():
            mark("a", env.timeout(2.0))
            mark("b", env.timeout(2.0))
            mark("h", env.timeout(2.0))
            mark("c", env.timeout(2.0))
            e = mark("d", env.event())
            mark("e", env.timeout(0.0))
            e.succeed()
            f = env.event()
            f.callbacks.append(note("f"))
            f.succeed()
            mark("g", env.timeout(0.0))
            yield env.timeout(1.0)
            mark("i", env.timeout(1.0))
        env.process(plain())
    else:
        env.process(body())
    env.run()
    return seen


def test_direct_events_come_in_simpys_order():
    assert order(True) == order(False) == list("edfgabhci")


def test_direct_events_are_simpys_objects():
    env = simpy.Environment()
    t = timeout(env, 1.5)
    assert type(t) is Timeout and t._delay == 1.5 and t.triggered and t.ok
    e = pending(env)
    assert type(e) is Event and not e.triggered
    succeed(e)
    assert e.triggered and e.ok and e.value is None
    c = call_soon(env, lambda _: None)
    assert c.triggered and c.ok
    late = timeout_at(env, 3.0, next(env._eid), lambda _: None)
    assert type(late) is Timeout and late._delay == 3.0
    env.run()
    assert env.now == 3.0 and e.processed and c.processed and late.processed
