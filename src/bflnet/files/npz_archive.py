"""An ``.npz`` archive read without trusting it: every member's header (dtype, shape)
is read and checked before any of its data is, so that a header claiming 10^12 elements
costs nothing; a member's data are read only when asked for, as raw bytes of exactly the
size its header announced (never unpickled).

:func:`open_npz` opens the file once and keeps that one handle: its SHA-256 (taken
while opening), its headers and the data read later all come from the same bytes, even
if the file is replaced meanwhile.

>>> import io, tempfile, pathlib, numpy as np
>>> path = pathlib.Path(tempfile.mkdtemp()) / "a.npz"
>>> np.savez(path, x=np.arange(3.0))
>>> with open_npz(path, "arrays") as npz:
...     (npz.headers["x"].shape, str(npz.headers["x"].dtype), npz.read("x").tolist())
((3,), 'float64', [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import hashlib
import math
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
from numpy.lib import format as npy

from bflnet.files.input_files import describe_os_error

__all__ = ["ArrayHeader", "NpzArchive", "open_npz"]

#: Most members read from one archive.
MAX_MEMBERS = 10**6
#: Largest ``.npy`` header read (numpy's own default bound).
MAX_HEADER = 10_000
#: Most dimensions of one array.
MAX_NDIM = 32
#: Array kinds read: bool, integers, floats, complex numbers (no objects, text or bytes).
KINDS = "biufc"
_CHUNK = 2**20


@dataclass(frozen=True)
class ArrayHeader:
    """A member's header: its dtype, shape and memory order, and the bytes its data take."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran: bool
    nbytes: int
    #: Where the data start in the member.
    offset: int


class NpzArchive:
    """An open ``.npz`` file: its ``sha256`` (hex), its members' ``headers`` (by array
    name) and :meth:`read`. Close it (or use it in a ``with``) when done."""

    def __init__(self, path: Path, what: str, handle: IO[bytes], sha256: str) -> None:
        self.path, self.what, self.sha256 = path, what, sha256
        self._handle = handle
        try:
            self._zip = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
            raise self._error(_reason(exc)) from None
        self.headers: dict[str, ArrayHeader] = {}
        infos = self._zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise self._error(f"more than {MAX_MEMBERS} members")
        for info in infos:
            if not info.filename.endswith(".npy") or info.is_dir():
                raise self._error(f"the member {_short(info.filename)} is not an array")
            name = info.filename[:-4]
            if name in self.headers:
                raise self._error(f"the array {_short(name)} is there twice")
            self.headers[name] = self._header(name, info)

    def _error(self, reason: str) -> ValueError:
        return ValueError(f"{self.what}: cannot read {str(self.path)!r} ({reason})")

    def _header(self, name: str, info: zipfile.ZipInfo) -> ArrayHeader:
        """The header of member ``info``, checked: a dtype of numbers, a shape whose data
        take exactly the bytes the member holds after its header."""
        try:
            fp = self._zip.open(info)
        except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError,
                RuntimeError) as exc:
            raise self._error(f"the array {_short(name)}: {_reason(exc)}") from None
        with fp:
            try:
                version = npy.read_magic(fp)
                if version == (1, 0):
                    shape, fortran, dtype = npy.read_array_header_1_0(fp, MAX_HEADER)
                elif version == (2, 0):
                    shape, fortran, dtype = npy.read_array_header_2_0(fp, MAX_HEADER)
                else:
                    raise ValueError(f"format version {version} is not read")
            except (ValueError, EOFError, SyntaxError, TypeError, OSError,
                    zipfile.BadZipFile) as exc:
                raise self._error(f"the array {_short(name)} has a bad header: "
                                  f"{_reason(exc)}") from None
            offset = fp.tell()
        if dtype.hasobject or dtype.kind not in KINDS or dtype.fields is not None:
            raise self._error(f"the array {_short(name)} holds {dtype}, not numbers")
        if len(shape) > MAX_NDIM:
            raise self._error(f"the array {_short(name)} has {len(shape)} dimensions")
        nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
        if nbytes != info.file_size - offset:
            raise self._error(f"the array {_short(name)}'s header claims {dtype} of shape "
                              f"{_dims(shape)} ({nbytes} bytes), its data are "
                              f"{max(info.file_size - offset, 0)} bytes")
        return ArrayHeader(name, dtype, tuple(shape), bool(fortran), nbytes, offset)

    def read(self, name: str) -> np.ndarray:
        """The data of array ``name`` (its header checked on opening: exactly
        ``headers[name].nbytes`` bytes are read)."""
        header = self.headers[name]
        data = bytearray()
        try:
            with self._zip.open(f"{name}.npy") as fp:
                fp.seek(header.offset)
                while len(data) < header.nbytes:
                    chunk = fp.read(min(_CHUNK, header.nbytes - len(data)))
                    if not chunk:
                        raise self._error(f"the array {_short(name)} is cut short")
                    data += chunk
        except OSError as exc:
            raise self._error(describe_os_error(exc)) from None
        except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError,
                RuntimeError) as exc:
            raise self._error(_reason(exc)) from None
        flat = np.frombuffer(bytes(data), dtype=header.dtype, count=math.prod(header.shape))
        return flat.reshape(header.shape, order="F" if header.fortran else "C").copy()

    def close(self) -> None:
        """Close the file."""
        self._zip.close()
        self._handle.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def open_npz(path: str | os.PathLike[str], what: str, max_bytes: int = 2**40,
             check_digest: Callable[[str], None] | None = None) -> NpzArchive:
    """The archive at ``path``, its SHA-256 taken (and handed to ``check_digest``, which
    may refuse it, before anything else is read) and its headers read and checked; a
    one-line ``ValueError`` naming ``what`` if it cannot be read, is larger than
    ``max_bytes`` or is not an archive of arrays."""
    path = Path(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (kept open by the archive)
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {str(path)!r} "
                         f"({describe_os_error(exc)})") from None
    try:
        digest, size = hashlib.sha256(), 0
        while chunk := handle.read(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise ValueError(f"{what}: {str(path)!r} is larger than {max_bytes} bytes")
            digest.update(chunk)
        if check_digest is not None:
            check_digest(digest.hexdigest())
        handle.seek(0)
        return NpzArchive(path, what, handle, digest.hexdigest())
    except OSError as exc:
        handle.close()
        raise ValueError(f"{what}: cannot read {str(path)!r} "
                         f"({describe_os_error(exc)})") from None
    except BaseException:
        handle.close()
        raise


def _reason(exc: BaseException) -> str:
    """An exception's text on one line, cut to 160 characters (its type if it has none)."""
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def _short(name: str) -> str:
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."


def _dims(shape: tuple[int, ...]) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 60 else text[:57] + "..."
