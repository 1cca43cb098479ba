"""IDX files (the MNIST / Fashion-MNIST format), gzipped or not.

Layout: two zero bytes, a type code, the number of dimensions ``ndim``, then ``ndim``
big-endian ``uint32`` sizes, then the values in big-endian C order.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny-idx1-ubyte.gz"
>>> write_idx(path, np.array([3, 1, 4], dtype=np.uint8))
>>> read_idx(path)
array([3, 1, 4], dtype=uint8)
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import zlib
from pathlib import Path

import numpy as np

from bflnet.files.input_files import describe_os_error, read_bytes

#: IDX type code -> numpy dtype (big-endian, as stored).
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dtype.newbyteorder("="): code for code, dtype in IDX_DTYPES.items()}
_GZIP_MAGIC = b"\x1f\x8b"
#: Largest IDX file read, gzipped or not (Fashion-MNIST's training images: 47 MB).
MAX_IDX_BYTES = 2**30


def gunzip(raw: bytes, path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The gzip data ``raw`` decompressed; a one-line ``ValueError`` naming ``path`` if it
    is not gzip, is corrupt or truncated, or holds more than ``max_bytes``."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as handle:
            data = handle.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{path}: not gzip data, or corrupt or truncated ({reason})") from None
    if len(data) > max_bytes:
        raise ValueError(f"{path}: holds more than {max_bytes} bytes once decompressed")
    return data


def parse_idx(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """Parse the bytes of an (uncompressed) IDX file; ``name`` appears in errors.

    Returns a read-only array in native byte order with the stored shape.
    """
    if len(data) < 4:
        raise ValueError(f"{name}: not an IDX file (only {len(data)} bytes)")
    if data[0] != 0 or data[1] != 0 or data[2] not in IDX_DTYPES:
        raise ValueError(f"{name}: bad IDX magic number 0x{data[:4].hex()} "
                         f"(expected 0x0000TTNN with type TT in "
                         f"{{{', '.join(f'{c:02x}' for c in IDX_DTYPES)}}})")
    dtype, ndim = IDX_DTYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{name}: truncated IDX header ({len(data)} bytes, "
                         f"{ndim} dimensions need {header})")
    shape = tuple(int(s) for s in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "trailing bytes in"
        raise ValueError(f"{name}: {what} IDX file: shape {shape} of {dtype.name} needs "
                         f"{expected} bytes, got {len(data)}")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    if dtype.byteorder == ">":  # multi-byte types: to native order (a copy)
        array = array.astype(dtype.newbyteorder("="))
    array.flags.writeable = False
    return array


def read_idx(path: str | os.PathLike[str], *, cache: bool = True) -> np.ndarray:
    """Read an IDX file (gzip is detected from its magic bytes, not the file name).

    The result is read-only; with ``cache`` it is cached in-process, keyed on the resolved
    path, size and modification time, so a rewritten file is read again.
    """
    p = Path(path).resolve()
    try:
        stat = p.stat()
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{p}: cannot read IDX file ({exc.strerror})") from exc
    except OSError as exc:
        raise ValueError(f"{p}: cannot read IDX file ({describe_os_error(exc)})") from None
    if not cache:
        return _read(str(p), stat.st_size, stat.st_mtime_ns)
    return _read_cached(str(p), stat.st_size, stat.st_mtime_ns)


def _read(path: str, size: int, mtime_ns: int) -> np.ndarray:
    raw = read_bytes(path, "data set", MAX_IDX_BYTES)
    if raw[:2] == _GZIP_MAGIC:
        raw = gunzip(raw, path, MAX_IDX_BYTES)
    return parse_idx(raw, path)


_read_cached = functools.lru_cache(maxsize=16)(_read)


def clear_idx_cache() -> None:
    """Forget the arrays cached by :func:`read_idx`."""
    _read_cached.cache_clear()


def write_idx(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Write ``array`` as an IDX file, gzipped when ``path`` ends in ``.gz``."""
    array = np.asarray(array)
    code = _CODES.get(array.dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"array: IDX cannot store dtype {array.dtype}")
    if array.ndim > 255:
        raise ValueError(f"array: IDX allows at most 255 dimensions, got {array.ndim}")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    body = np.ascontiguousarray(array, dtype=IDX_DTYPES[code]).tobytes()
    data = header + body
    path = Path(path)
    path.write_bytes(gzip.compress(data, compresslevel=1, mtime=0) if path.suffix == ".gz"
                     else data)
