"""A signal's exception that Python dropped inside a finalizer, sent again as the signal.

Python runs a signal's handler at the next bytecode of the main thread, which can be a
finalizer: a generator the garbage collector closes (a SimPy process left suspended, whose
``finally`` runs), a ``__del__``. Python drops an exception raised there ("Exception
ignored in ...") and the program would go on. Inside :func:`resend_dropped` such a dropped
exception of the given kind is sent again as the same signal, and is raised at the next
bytecode outside the finalizer. Both sets of handlers use it: the console script's during
the start-up (:mod:`bflnet.entry`) and the application's (:mod:`bflnet.scenarios.interrupt`).

Standard library only: the console script imports it before the command line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: Seconds before a signal whose exception Python dropped is sent again (module docs).
RESEND_DELAY_S = 0.01


def in_main_thread() -> bool:
    """Whether the caller runs in the main thread (the one Python runs handlers in)."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def resend_dropped(kind: type[BaseException]) -> Iterator[None]:
    """In the block, an exception of type ``kind`` (raised by a signal handler; it has the
    signal's number as ``signum``) that Python drops in the main thread is sent again as
    that signal (module docs); any other unraisable exception goes to the hook that was
    there before, which comes back after the block."""
    previous = sys.unraisablehook
    sys.unraisablehook = _resend(kind, previous)
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _send_later(signum: int) -> None:
    time.sleep(RESEND_DELAY_S)
    os.kill(os.getpid(), signum)


def _resend(kind: type[BaseException], hook: Any) -> Any:
    """``sys.unraisablehook`` that sends a dropped ``kind`` again as its signal and hands
    anything else to ``hook``."""

    def unraisable(info: Any) -> None:
        exc = info.exc_value
        if isinstance(exc, kind) and in_main_thread():
            # from another thread, a moment later: sent from here, the handler would run
            # inside this hook, whose exceptions are dropped too (and should it still
            # come inside a finalizer, it is dropped and sent again)
            threading.Thread(target=_send_later, args=(exc.signum,),
                             name="bflnet-resend-signal", daemon=True).start()
            return
        hook(info)

    return unraisable
