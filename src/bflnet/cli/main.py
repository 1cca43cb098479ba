"""The ``bflnet`` command line's entry point.

The commands are a Typer application (:mod:`bflnet.cli.app`). ``bflnet list``,
typed as it is, is answered without loading it: Typer and pydantic take longer to import
than the listing itself takes.

``python -m bflnet.cli`` runs the console script's entry point
(:mod:`bflnet.cli.entry`): Ctrl-C or SIGTERM during the imports ends in one line too.
"""

from __future__ import annotations

import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``bflnet [command] [options]``; returns the exit code (see
    :func:`bflnet.cli.app.main`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["list"]:
        from bflnet.runs.registry import scenario_lines
        from bflnet.runtime.interrupt import Interrupted, catch_signals

        try:  # the errors and signals as the application reports them
            with catch_signals():
                sys.stdout.write("\n".join(scenario_lines()) + "\n")
                sys.stdout.flush()
        except Interrupted as exc:
            print(f"bflnet: {exc}", file=sys.stderr)
            return exc.exit_code
        except OSError as exc:  # a closed pipe, a full disk
            print(f"bflnet: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
        return 0
    from bflnet.cli.app import main as run_app

    return run_app(args)


def __getattr__(name: str) -> Any:
    if name == "app":  # the Typer application, loaded on first use
        from bflnet.cli.app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
