"""The ``bflnet`` console script: Ctrl-C (SIGINT) or SIGTERM at any moment, the start-up's
imports included, ends the command with one line and exit code 128 + the signal (130,
143), as everywhere else in the command line.

This module imports nothing but the standard library: it installs its handlers first,
then imports the command line (:mod:`bflnet.scenarios.cli`, whose application takes a few
tenths of a second to import, and the scenarios' heavy libraries later) and runs it. Once
the application runs it installs its own handlers (:mod:`bflnet.scenarios.interrupt`);
this module's are back after it returns. A signal handled inside a finalizer during the
start-up (a generator closed by the garbage collector), whose exception Python drops, is
sent again (:mod:`bflnet.signal_resend`, standard library only, imported once the handlers
are in place), as inside the application.
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
    raise StartupInterrupted(signum)


def main() -> int:
    """Entry point of the console script: :func:`bflnet.scenarios.cli.main` with SIGINT
    and SIGTERM turned into one line and exit code 128 + signal from the start."""
    for s in SIGNALS:  # whatever the inherited disposition (see bflnet.scenarios.interrupt)
        signal.signal(s, _handler)
    try:
        from bflnet.signal_resend import resend_dropped

        with resend_dropped(StartupInterrupted):
            from bflnet.scenarios.cli import main as cli_main

            return cli_main()
    except StartupInterrupted as exc:
        print(f"bflnet: {exc}", file=sys.stderr)
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
