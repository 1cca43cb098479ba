"""A signal whose exception is lost before anyone handles it (freed by code that clears
errors, as some compiled import-time code does, or kept alive somewhere) is sent again,
and a handled one is not."""

import os
import signal
import sys
import time

import pytest

from bflnet.runtime.interrupt import Interrupted, catch_signals

SIGNUMS = [signal.SIGINT, signal.SIGTERM]


def signal_and_lose(signum, keep=None):
    """Send ``signum`` to this process and lose the exception its handler raises, as
    compiled code that clears errors does (``keep``: a list that keeps it alive)."""
    try:
        os.kill(os.getpid(), signum)
        for _ in range(10**6):  # the handler runs at one of these bytecodes
            pass
    except Interrupted as exc:
        if keep is not None:
            keep.append(exc)
        return True
    return False


@pytest.mark.parametrize("signum", SIGNUMS)
def test_an_interrupt_cleared_and_freed_comes_again(signum):
    deadline = time.monotonic() + 30.0
    with pytest.raises(Interrupted) as caught, catch_signals():
        assert signal_and_lose(signum)  # lost once
        while time.monotonic() < deadline:  # the program goes on: the signal comes here
            pass
    assert caught.value.signum == signum
    assert time.monotonic() < deadline


@pytest.mark.parametrize("signum", SIGNUMS)
def test_an_interrupt_lost_but_kept_alive_comes_at_the_end_of_the_block(signum):
    kept = []
    with pytest.raises(Interrupted) as caught, catch_signals():
        assert signal_and_lose(signum, kept)
        time.sleep(0.1)  # not sent again while it is alive
    assert caught.value.signum == signum and caught.value is not kept[0]


def test_a_handled_interrupt_is_not_sent_again():
    """Caught outside the block (as the command line does) and freed: no second signal."""
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(Interrupted), catch_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):
                pass
        time.sleep(0.2)  # a re-sent signal would come to the handler outside the block
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == []


def test_blocks_without_signals_leave_the_hooks_as_they_were():
    hook, handler = sys.unraisablehook, signal.getsignal(signal.SIGTERM)
    with catch_signals(), catch_signals():
        assert sys.unraisablehook is not hook
        assert signal.getsignal(signal.SIGTERM) is not handler
    assert sys.unraisablehook is hook and signal.getsignal(signal.SIGTERM) is handler


class WithSetName:
    """A descriptor whose ``__set_name__`` runs Python code (``functools.cached_property``
    is one): Python 3.11 wraps what it raises in a ``RuntimeError``."""

    def __init__(self, work):
        self.work = work

    def __set_name__(self, owner, name):
        self.work()


@pytest.mark.parametrize("signum", SIGNUMS)
def test_an_interrupt_wrapped_in_another_exception_leaves_the_block_as_itself(signum):
    def work():
        os.kill(os.getpid(), signum)
        for _ in range(10**6):
            pass

    def wrapped():
        try:
            type("Made", (), {"attribute": WithSetName(work)})
        except Interrupted as exc:  # Python 3.12 and later do not wrap it
            raise RuntimeError("wrapped, as Python 3.11 does") from exc

    with pytest.raises(Interrupted) as caught, catch_signals():
        wrapped()
    assert caught.value.signum == signum


def test_an_exit_decided_on_an_interrupt_is_kept():
    """Code that handles the interrupt by an exit (``SystemExit``) keeps it."""
    with pytest.raises(SystemExit) as caught, catch_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):
                pass
        except Interrupted as exc:
            raise SystemExit(exc.exit_code) from None
    assert caught.value.code == 143
