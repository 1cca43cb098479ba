"""Ctrl-C and ``kill``: SIGINT and SIGTERM turned into one exception, :class:`Interrupted`.

Inside :func:`catch_signals` either signal raises :class:`Interrupted` in the main thread,
so ``finally`` blocks and context managers run (temporary files are removed, worker
processes stopped) and the command line can end with one line and exit code
``128 + signal``. Code that must not be cut in the middle (writing a part and its
manifest line) runs inside :func:`deferred`: a signal that arrives there is raised when the
block ends. :func:`children_ignore_signals` starts child processes (Dask workers) that do
not see a terminal's Ctrl-C (or a SIGTERM to the process group), so that only the parent
decides how they stop.

Python runs a signal's handler at the next bytecode of the main thread, which can be a
place that loses the exception raised (a finalizer, or compiled code that clears errors);
inside :func:`catch_signals` such a lost :class:`Interrupted` is sent again as the same
signal (:mod:`bflnet.runtime.signal_resend`) and is raised elsewhere.

Signals are caught whatever the inherited disposition: a shell starts a background job
(``bflnet sweep ... &``) with SIGINT ignored, yet ``kill -INT`` is then an explicit request
to stop.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

from bflnet.runtime.signal_resend import in_main_thread, resend_lost, watched

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The process was sent SIGINT (Ctrl-C) or SIGTERM; ``exit_code`` is 128 + signal."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = int(signum)
        self.message = message or f"interrupted ({signal.Signals(signum).name})"
        # ``args`` rebuild it: SimPy re-raises a failed process's exception in the
        # process waiting for it as ``type(exc)(*exc.args)`` (and pickle does the same)
        super().__init__(self.signum, self.message)

    def __str__(self) -> str:
        return self.message

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    """The signal that arrived inside a deferred block, and how deep the nesting is."""

    pending: int | None = None
    depth = 0


_state = _State()


def _handler(signum: int, frame: Any) -> None:
    if _state.depth:
        _state.pending = _state.pending or signum
        return
    raise watched(Interrupted(signum))


@contextlib.contextmanager
def catch_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the block (main thread only;
    elsewhere the block runs unchanged); the previous handlers come back after it."""
    if not in_main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handler) for s in SIGNALS}
    try:
        with resend_lost(Interrupted):
            yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A block a signal does not cut: it is raised, as :class:`Interrupted`, at the end."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
    if not _state.depth and _state.pending is not None:
        signum, _state.pending = _state.pending, None
        raise watched(Interrupted(signum))


@contextlib.contextmanager
def children_ignore_signals() -> Iterator[None]:
    """Processes started in the block (from any thread started in it) keep SIGINT and
    SIGTERM blocked: a terminal's Ctrl-C, or a ``kill`` of the whole process group,
    reaches the parent only, which then stops them (SIGKILL still works). Either signal
    sent to this process during the block is delivered when it ends."""
    if not in_main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(SIGNALS))
