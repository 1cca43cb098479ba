"""The ``bflnet`` console script: Ctrl-C (SIGINT) or SIGTERM at any moment, the start-up's
imports included, ends the command with one line and exit code 128 + the signal (130,
143), as everywhere else in the command line.

This module imports nothing but the standard library: it installs its handlers first,
then imports the command line (:mod:`bflnet.cli.main`, whose application takes a few
tenths of a second to import, and the scenarios' heavy libraries later) and runs it. Once
the application runs it installs its own handlers (:mod:`bflnet.runtime.interrupt`);
this module's are back after it returns. A signal whose exception is lost during the
start-up (handled inside a finalizer, or inside compiled code that clears errors, as some
of pandas' import-time steps do) is sent again (:mod:`bflnet.runtime.signal_resend`, standard
library only, imported once the handlers are in place), as inside the application.

An interrupted command then leaves at once (:func:`leave_at_once`): the ``finally``
blocks and context managers have run (temporary files removed, a sweep's workers stopped
and its finished parts kept), the ``atexit`` callbacks run and the output is flushed, but
the interpreter's tear-down, which frees every module and object one by one, is skipped.
It took 0.3 s of CPU after a run of a few seconds with the scenarios' libraries loaded, and
grew with the run's records (a long run's heap is freed object by object): the time from
Ctrl-C to the prompt grew with the run's length.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StartupInterrupted(BaseException):
    """A signal outside the application's own handlers (during the imports)."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(self.signum)  # ``type(exc)(*exc.args)`` is the same exception

    def __str__(self) -> str:
        return f"interrupted ({signal.Signals(self.signum).name})"


def _handler(signum: int, frame: Any) -> None:
    exc = StartupInterrupted(signum)
    # watched once bflnet.runtime.signal_resend is imported (not during its own import)
    watched = getattr(sys.modules.get("bflnet.runtime.signal_resend"), "watched", None)
    raise exc if watched is None else watched(exc)


def main() -> int:
    """Entry point of the console script: :func:`bflnet.cli.main.main` with SIGINT
    and SIGTERM turned into one line and exit code 128 + signal from the start; an
    interrupted command ends the process here (:func:`leave_at_once`)."""
    for s in SIGNALS:  # whatever the inherited disposition (see bflnet.runtime.interrupt)
        signal.signal(s, _handler)
    try:
        from bflnet.runtime.signal_resend import resend_lost

        with resend_lost(StartupInterrupted):
            from bflnet.cli.main import main as cli_main

            code = cli_main()
    except StartupInterrupted as exc:
        print(f"bflnet: {exc}", file=sys.stderr)
        code = 128 + exc.signum
    if code in INTERRUPTED_CODES:
        leave_at_once(code)
    return code


#: The exit codes of a command ended by SIGINT or SIGTERM.
INTERRUPTED_CODES = frozenset(128 + s for s in SIGNALS)


def leave_at_once(code: int) -> None:
    """End the process with ``code`` as the interpreter would once ``main`` returned (the
    ``atexit`` callbacks run, standard output and error are flushed), without its
    tear-down (module docs). Returns, for the interpreter to end it, while a thread that
    is not a daemon runs: the interpreter waits for it, so does this."""
    import atexit
    import contextlib
    import os
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive()
           for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream (or none at all): nothing more can be written there
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
