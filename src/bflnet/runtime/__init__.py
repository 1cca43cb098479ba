"""How a run computes and stops: torch devices and threads, and Ctrl-C / SIGTERM as one
exception (standard library only at import, for the console script's start-up)."""
