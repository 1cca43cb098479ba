"""``did you mean 'x'?`` for a mistyped name: the closest allowed name, if one is close.

>>> did_you_mean("d2d-mediun", ["d2d-medium", "consensus-averaging"])
"did you mean 'd2d-medium'? "
>>> did_you_mean("k", ["K", "graph"]), did_you_mean("zzz", ["K", "graph"])
("did you mean 'K'? ", '')
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

#: How close (difflib's ratio, 0..1) a name must be to be suggested.
CUTOFF = 0.6


def closest(word: Any, allowed: Iterable[Any]) -> str | None:
    """The allowed name closest to ``word`` (case aside), or ``None`` if none is close."""
    names = [str(a) for a in allowed]
    lowered: dict[str, str] = {}
    for name in names:
        lowered.setdefault(name.lower(), name)
    text = str(word)
    if len(text) > 200:  # a pasted blob is no typo
        return None
    found = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=CUTOFF)
    return lowered[found[0]] if found else None


def did_you_mean(word: Any, allowed: Iterable[Any]) -> str:
    """``"did you mean 'x'? "`` (with a trailing space, to go before the list of allowed
    names), or ``""`` when no allowed name is close to ``word``."""
    name = closest(word, allowed)
    return f"did you mean {name!r}? " if name is not None else ""
