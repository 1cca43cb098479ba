"""Where torch computes: the ``device`` setting of the torch scenarios (``cpu``, ``cuda``,
``auto``) resolved to a :class:`torch.device`, with a one-line error naming the field."""

from __future__ import annotations

from typing import Any

#: The values of a ``device`` setting.
DEVICES = ("cpu", "cuda", "auto")


def resolve_device(name: Any, field: str = "device") -> Any:
    """``torch.device`` for ``name``: ``cpu``; ``cuda`` (the current CUDA device; an error
    when torch sees none); ``auto`` (``cuda`` when available, else ``cpu``)."""
    if not isinstance(name, str) or name not in DEVICES:
        raise ValueError(f"{field}: must be one of {', '.join(DEVICES)}, got {name!r}")
    import torch  # lazily: `bflnet list` stays fast

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{field}: 'cuda' asked, but torch sees no CUDA device on this "
                         "machine; use cpu or auto")
    return torch.device(name)


__all__ = ["DEVICES", "resolve_device"]
