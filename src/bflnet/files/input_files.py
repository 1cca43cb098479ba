"""Reading the files a user names (configs, traces, graphs, data sets) with bounded size
and one-line errors.

Every reader of a user-given file goes through :func:`read_bytes` or :func:`read_text`, so
the failures the operating system or the file itself can cause end the same way: a
``ValueError`` of one line naming what the file is for, the file and the reason, never a
traceback. In particular

- a file larger than the reader's bound (or an endless one such as ``/dev/zero``) is
  refused after reading at most ``max_bytes + 1`` bytes;
- a directory, a missing file or one that cannot be opened (permission denied, a loop of
  symbolic links, ...) names the reason the operating system gives;
- text that is not UTF-8, or holds NUL bytes (a binary file), is refused.

:func:`exists` answers "is there a file here?" while searching directories, turning any
error other than "no such file" into the same one-line ``ValueError`` (an unreadable
directory on a search path is reported, not silently skipped).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
>>> _ = path.write_bytes(b"caf\\xe9")
>>> read_text(path, "trace")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: trace: ... is not UTF-8 text (byte 0xe9 at offset 3)
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_TEXT_BYTES", "csv_rows", "decode_text", "describe_os_error", "exists",
           "read_bytes", "read_text"]

#: Default bound on a text input file (traces, graph edge lists): 64 MiB.
MAX_TEXT_BYTES = 64 * 2**20
_CHUNK = 2**20
#: "No such file" errors while searching: the file is simply not there.
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


def describe_os_error(exc: OSError) -> str:
    """The reason an ``OSError`` gives, in words (``strerror``, else its text), one line."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(reason.split())


def _fail(what: str, path: Path, reason: str) -> ValueError:
    return ValueError(f"{what}: cannot read {str(path)!r} ({reason})")


def read_bytes(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The bytes of the file at ``path``; a one-line ``ValueError`` naming ``what`` (e.g.
    ``"--config"``) if it cannot be read or is larger than ``max_bytes``."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            chunks, size = [], 0
            while size <= max_bytes:
                chunk = handle.read(min(_CHUNK, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except IsADirectoryError:
        raise _fail(what, path, "it is a directory") from None
    except OSError as exc:
        raise _fail(what, path, describe_os_error(exc)) from None
    if size > max_bytes:
        raise ValueError(f"{what}: {str(path)!r} is larger than {max_bytes} bytes")
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], what: str,
              max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the file at ``path`` (a leading byte-order mark is dropped); a
    one-line ``ValueError`` naming ``what`` for a file :func:`read_bytes` refuses, a
    binary file or one that is not UTF-8."""
    raw = read_bytes(path, what, max_bytes)
    return decode_text(raw, path, what)


def decode_text(raw: bytes, path: str | os.PathLike[str], what: str) -> str:
    """``raw`` decoded as UTF-8 text (see :func:`read_text`)."""
    nul = raw.find(b"\0")
    if nul >= 0:
        raise ValueError(f"{what}: {str(path)!r} is a binary file, not text (a NUL byte at "
                         f"offset {nul})")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}: {str(path)!r} is not UTF-8 text (byte "
                         f"0x{raw[exc.start]:02x} at offset {exc.start})") from None


def exists(path: str | os.PathLike[str], what: str) -> bool:
    """Whether a regular file is at ``path``: ``False`` when nothing is there, a one-line
    ``ValueError`` naming ``what`` when the operating system will not say (e.g. a
    directory on the way that cannot be read)."""
    path = Path(path)
    try:
        return path.stat().st_mode & 0o170000 == 0o100000
    except OSError as exc:
        if exc.errno in _ABSENT:
            return False
        raise _fail(what, path, describe_os_error(exc)) from None
    except ValueError:  # e.g. a NUL character in the name
        return False


@contextlib.contextmanager
def csv_rows(path: str | os.PathLike[str], what: str,
             max_bytes: int = MAX_TEXT_BYTES) -> Iterator[csv.DictReader]:  # type: ignore[type-arg]
    """A ``csv.DictReader`` over the text file at ``path`` (read with :func:`read_text`);
    a malformed line (e.g. a field longer than the ``csv`` module's limit) gives a
    one-line ``ValueError`` naming ``what``, the file and the line, before any row."""
    path = Path(path)
    text = read_text(path, what, max_bytes)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for _ in reader:
            pass
    except csv.Error as exc:
        raise ValueError(f"{what} {path.name}, line {reader.line_num}: not a valid CSV "
                         f"line ({' '.join(str(exc).split())})") from None
    yield csv.DictReader(io.StringIO(text, newline=""))
