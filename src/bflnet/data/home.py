"""bflnet's own data directory: where ``python -m bflnet.data.ensure`` puts the small data
sets it fetches, and where the loaders look for them.

In order of precedence:

1. ``$BFLNET_DATA_HOME`` when set;
2. ``<environment>/share/bflnet/data`` when Python runs in a virtual environment (the
   project's ``.venv`` after ``make``: ``make clean`` removes it with the environment);
3. ``$XDG_DATA_HOME/bflnet`` (``~/.local/share/bflnet`` when ``XDG_DATA_HOME`` is unset).

Only files a data set's loader names are read from it; nothing there is downloaded at run
time (the ensure step fills it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["HOME_VAR", "data_home"]

HOME_VAR = "BFLNET_DATA_HOME"


def data_home() -> Path:
    """The data directory (module docs); it may not exist yet."""
    override = os.environ.get(HOME_VAR, "")
    if override:
        return Path(override).expanduser()
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix) / "share" / "bflnet" / "data"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "bflnet"
