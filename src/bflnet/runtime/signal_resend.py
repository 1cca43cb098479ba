"""A signal's exception that was lost before anyone handled it, sent again as the signal.

Python runs a signal's handler at the next bytecode of the main thread, wherever that is,
and three kinds of places lose the exception the handler raises:

* a finalizer (a generator the garbage collector closes, such as a SimPy process left
  suspended, or a ``__del__``): Python drops the exception ("Exception ignored in ...");
* compiled code that calls Python code and clears whatever error it raised: the modules
  Cython builds do so in some of their import-time steps (pandas' first import runs
  them), and C code that calls ``PyErr_Clear`` after a failed call in general;
* code that wraps it in an exception of another type: Python 3.11 turns an exception
  raised in ``__set_name__`` (a class body's ``functools.cached_property``) into a
  ``RuntimeError`` whose cause it is.

The program would then go on as if the signal never came, or fail with another error.
Inside :func:`resend_lost`, an exception a handler raised is :func:`watched`: should it be
freed before it leaves the block (the way a handled exception leaves it, to the code that
reports it), it was lost, and the same signal is sent again a moment later, to be raised
at the next bytecode elsewhere (and sent again should that one be lost too). One that is
lost but kept alive somewhere is sent again when the block ends; an error (``Exception``)
that leaves the block with one in its chain of causes and contexts is replaced by it. Both sets of
handlers use it: the console script's during the start-up (:mod:`bflnet.cli.entry`) and the
application's (:mod:`bflnet.runtime.interrupt`).

Standard library only: the console script imports it before the command line.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any, TypeVar

#: Seconds before a signal whose exception was lost is sent again (module docs).
RESEND_DELAY_S = 0.01

Signalled = TypeVar("Signalled", bound=BaseException)

#: The watched exceptions not handled yet: token -> (signal, weak reference).
_outstanding: dict[int, tuple[int, weakref.ref[BaseException]]] = {}
_tokens = itertools.count()


class _Blocks:
    """How many :func:`resend_lost` blocks are open."""

    depth = 0


_blocks = _Blocks()


def in_main_thread() -> bool:
    """Whether the caller runs in the main thread (the one Python runs handlers in)."""
    return threading.current_thread() is threading.main_thread()


def watched(exc: Signalled) -> Signalled:
    """``exc`` (raised for a signal; it has the signal's number as ``signum``), watched
    while a :func:`resend_lost` block is open: freed before it leaves the block, it is
    sent again as its signal (module docs)."""
    if _blocks.depth:
        token = next(_tokens)
        _outstanding[token] = (exc.signum, weakref.ref(exc, _freed_callback(token)))
    return exc


@contextlib.contextmanager
def resend_lost(kind: type[BaseException]) -> Iterator[None]:
    """In the block, a :func:`watched` exception lost before it leaves the block is sent
    again as its signal (module docs). Python's report of a dropped exception of type
    ``kind`` in the main thread is silenced (its signal comes again); any other goes to
    the ``sys.unraisablehook`` that was there before, which comes back after the block."""
    previous = sys.unraisablehook
    sys.unraisablehook = _silence(kind, previous)
    _blocks.depth += 1
    try:
        yield
        lost = _take_outstanding()
        if lost:  # lost, yet kept alive somewhere: raised here, by the handler
            signal.raise_signal(lost[0])
    except BaseException as exc:
        _outstanding.clear()  # what leaves the block is handled by the caller
        # wrapped in an error on its way out (an exit, SystemExit, is a decision: kept)
        inner = _inside(exc, kind) if isinstance(exc, Exception) else None
        if inner is not None:
            raise inner from None
        raise
    finally:
        _blocks.depth -= 1
        sys.unraisablehook = previous


def _inside(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of type ``kind`` among ``exc``'s causes and contexts."""
    seen: set[int] = set()
    chain = [exc]
    while chain:
        link = chain.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        if isinstance(link, kind):
            return link
        chain.extend(e for e in (link.__cause__, link.__context__) if e is not None)
    return None


def _take_outstanding() -> list[int]:
    """The signals of the watched exceptions not handled yet, forgotten."""
    signums = [signum for signum, _ in _outstanding.values()]
    _outstanding.clear()
    return signums


def _freed_callback(token: int) -> Any:
    def freed(_: Any) -> None:
        entry = _outstanding.pop(token, None)
        if entry is not None:
            # from another thread, a moment later: this runs wherever the exception was
            # freed (inside the code that lost it), where a new one would be lost too
            threading.Thread(target=_send_later, args=(entry[0],),
                             name="bflnet-resend-signal", daemon=True).start()

    return freed


def _send_later(signum: int) -> None:
    time.sleep(RESEND_DELAY_S)
    os.kill(os.getpid(), signum)


def _silence(kind: type[BaseException], hook: Any) -> Any:
    """``sys.unraisablehook`` that drops ``kind`` quietly in the main thread and hands
    anything else to ``hook``."""

    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, kind) and in_main_thread():
            return  # freed after this returns, and sent again (module docs)
        hook(info)

    return unraisable
