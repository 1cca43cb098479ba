"""A signal handled while a SimPy process other than the protocol's own runs (a sender on
the shared medium, a server's job): SimPy re-raises a failed process's exception in the
process that waits for it as ``type(exc)(*exc.args)``, so :class:`Interrupted` must
survive that copy (it became ``ValueError: 'interrupted (SIGTERM)' is not a valid
Signals``, exit code 2, before)."""

import os
import pickle
import signal
import sys
import time

import pytest
import simpy

from bflnet.cli.entry import StartupInterrupted
from bflnet.runtime.interrupt import Interrupted, catch_signals
from bflnet.runtime.signal_resend import resend_lost


@pytest.mark.parametrize("exc", [Interrupted(signal.SIGTERM), Interrupted(2, "sweep stopped"),
                                 StartupInterrupted(signal.SIGINT)])
def test_copies_are_the_same_exception(exc):
    for copy in (type(exc)(*exc.args), pickle.loads(pickle.dumps(exc))):
        assert type(copy) is type(exc)
        assert copy.signum == exc.signum and str(copy) == str(exc)


def test_interrupted_message_and_exit_code():
    exc = Interrupted(signal.SIGTERM)
    assert str(exc) == "interrupted (SIGTERM)" and exc.exit_code == 143
    assert str(StartupInterrupted(signal.SIGINT)) == "interrupted (SIGINT)"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_a_waited_for_process_reaches_the_caller(signum):
    env = simpy.Environment()

    def sender():
        yield env.timeout(1)
        os.kill(os.getpid(), signum)  # handled at the next bytecode, in this process
        for _ in range(10**6):  # (never reached: the handler raises first)
            pass
        yield env.timeout(1)

    def protocol():
        yield env.all_of([env.process(sender()), env.process(sender())])

    done = env.process(protocol())
    with pytest.raises(Interrupted) as caught, catch_signals():
        env.run(until=done)
    assert caught.value.signum == signum
    assert str(caught.value) == f"interrupted ({signal.Signals(signum).name})"


def suspended_with_finally(work):
    """A started generator whose ``finally`` calls ``work`` when it is closed."""
    def body():
        try:
            yield
        finally:
            work()
    gen = body()
    next(gen)
    return gen


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_handled_inside_a_finalizer_is_not_lost(signum):
    """The handler runs inside a generator's ``finally`` while the generator is being
    finalized (as the garbage collector does with a SimPy process left suspended); Python
    drops the exception raised there, so the signal is sent again and comes out after."""
    def work():
        os.kill(os.getpid(), signum)
        for _ in range(1000):  # bytecodes: the handler runs here, inside the finalizer
            pass

    deadline = time.monotonic() + 30.0
    with pytest.raises(Interrupted) as caught, catch_signals():
        gen = suspended_with_finally(work)
        del gen  # finalized here: GeneratorExit, then the finally
        while time.monotonic() < deadline:  # the program goes on: the signal comes here
            pass
    assert caught.value.signum == signum
    assert time.monotonic() < deadline


def test_other_dropped_exceptions_reach_the_previous_hook_which_comes_back(monkeypatch):
    """The re-send hook (one for the console script's start-up and the application) takes
    only its own kind of exception; the rest goes on to the hook that was there before."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_value))
    before = sys.unraisablehook

    def fail():
        raise ValueError("in a finalizer")

    with resend_lost(Interrupted):
        assert sys.unraisablehook is not before
        gen = suspended_with_finally(fail)
        del gen
    assert sys.unraisablehook is before
    assert [type(e) for e in seen] == [ValueError]
