"""Lazy package exports (PEP 562): a package names what it exports and in which module,
and a name's module is imported on first use. So ``import bflnet.protocols.graphs.walks`` or
``bflnet list`` does not load SimPy, pandas or torch through a package's ``__init__``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``, whose name ``n`` lives in
    the submodule ``homes[n]`` (or in the module ``homes[n]`` when that starts with
    ``bflnet.``); a loaded name is cached in the package's ``namespace``."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith("bflnet.") else f"{package}.{home}"
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    names = sorted(homes)
    return getattr_, lambda: names, names
