"""Writing result files whole or not at all.

:func:`write_files` writes each file to a temporary file in its own directory, flushes it
to the disk, and only when every one is complete renames them over their targets
(``os.replace``, atomic within a directory). If anything fails — a full disk, a read-only
directory, Ctrl-C — the temporary files are removed and the targets are left as they were
(absent, or their old content): never a truncated table, never a table without its
sidecar. The error is a :class:`WriteError` naming the target file and the reason.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
>>> write_files([(target, lambda tmp: tmp.write_text("hello"))])
>>> target.read_text()
'hello'
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bflnet.files.input_files import describe_os_error
from bflnet.validation.errors import WriteError

__all__ = ["WriteError", "check_can_create", "path_kind", "temporary_name", "write_files"]

#: The usual limit on a file name, in bytes.
NAME_MAX = 255


def temporary_name(path: Path) -> Path:
    """A fresh hidden name next to ``path``: ``.<name>.<random>.tmp``, the name cut when
    needed so that it fits a 255-byte file-name limit wherever the target's name does."""
    token = secrets.token_hex(4)
    name = path.name
    while len(os.fsencode(f".{name}.{token}.tmp")) > NAME_MAX:
        name = name[:-1]
    return path.with_name(f".{name}.{token}.tmp")


def _sync(path: Path) -> None:
    """Flush ``path`` to the disk (where a full disk may only now be noticed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_files(files: Sequence[tuple[Path, Callable[[Path], object]]]) -> None:
    """For each ``(target, write)``, ``write(tmp)`` fills a temporary file next to
    ``target``; then all are renamed over their targets. A :class:`WriteError` naming the
    target and the reason if any step fails, with nothing left behind."""
    temporaries: list[Path] = []
    target, renamed = Path(), 0
    try:
        for target, write in files:
            target = Path(target)
            tmp = temporary_name(target)
            temporaries.append(tmp)
            write(tmp)
            _sync(tmp)
        for (target, _), tmp in zip(files, temporaries, strict=True):
            os.replace(tmp, target)
            renamed += 1
    except OSError as exc:
        done = ("nothing was written" if not renamed else
                f"only {renamed} of its {len(files)} files were replaced")
        raise WriteError(f"cannot write {str(target)!r}: {describe_os_error(exc)}; "
                         f"{done}") from exc
    finally:
        for tmp in temporaries:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def path_kind(path: Path, what: str) -> str | None:
    """``"file"``, ``"directory"``, ``"other"``, or ``None`` where nothing is at ``path``;
    a one-line ``ValueError`` naming ``what`` if the system cannot look."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ValueError(f"{what}: cannot look at {str(path)!r} "
                         f"({describe_os_error(exc)})") from None
    return {0o100000: "file", 0o040000: "directory"}.get(mode & 0o170000, "other")


def check_can_create(path: Path, what: str) -> None:
    """Before a run: the nearest existing parent of ``path`` is a directory this process
    can create files in (a real probe, so read-only file systems are caught as root too).
    A one-line ``ValueError`` naming ``what`` otherwise."""
    parent = path.parent
    while path_kind(parent, what) is None and parent != parent.parent:
        parent = parent.parent
    if path_kind(parent, what) != "directory":
        raise ValueError(f"{what}: cannot create {str(path)!r}: {str(parent)!r} is not a "
                         f"directory")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise ValueError(f"{what}: cannot write in {str(parent)!r} "
                         f"({describe_os_error(exc)})") from None
