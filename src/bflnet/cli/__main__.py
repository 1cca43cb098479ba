"""``python -m bflnet.cli``: the console script's entry point (:mod:`bflnet.cli.entry`), so
Ctrl-C or SIGTERM during the imports ends in one line here too."""

import sys

from bflnet.cli.entry import main

sys.exit(main())
