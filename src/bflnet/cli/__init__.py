"""The ``bflnet`` command line: the console script (:mod:`bflnet.cli.entry`, standard
library only until its signal handlers are in place), ``bflnet list`` answered without
the Typer application (:mod:`bflnet.cli.main`), the commands (:mod:`bflnet.cli.app`) and
the plot and draw commands. ``python -m bflnet.cli`` is the console script."""
