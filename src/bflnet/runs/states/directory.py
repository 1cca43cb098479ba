"""A state directory on disk: ``state.json``, ``arrays.npz`` and ``checksums.json``.

:func:`write_directory` writes the three files together (each to a temporary file, then
all renamed into place: a directory being read by the same run is read whole before
anything is replaced); ``checksums.json`` holds the SHA-256 of the other two.

:func:`read_state_dir` verifies both checksums before anything in them is used: a
``state.json`` edited by hand or an ``arrays.npz`` with one byte changed is refused in one
line ("... was changed after it was saved"); a directory without ``checksums.json`` (saved
by a bflnet before checksums) is refused with a line saying to save it again. Then
``state.json`` is parsed and the headers of ``arrays.npz`` are read (not its data:
:mod:`bflnet.files.npz_archive`).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bflnet.files.atomic import check_can_create, path_kind, write_files
from bflnet.files.input_files import decode_text, describe_os_error, read_bytes
from bflnet.files.npz_archive import NpzArchive, open_npz
from bflnet.validation.params import shown

STATE_FILE, ARRAYS_FILE, CHECKSUMS_FILE = "state.json", "arrays.npz", "checksums.json"
#: The format ``checksums.json`` declares.
CHECKSUMS_FORMAT = "bflnet-state-checksums/1"
#: Largest ``state.json`` read.
MAX_STATE_JSON = 64 * 2**20
#: Largest ``arrays.npz`` read.
MAX_ARRAYS_BYTES = 16 * 2**30
#: Largest ``checksums.json`` read.
MAX_CHECKSUMS_JSON = 4096


def state_path(value: Any, what: str) -> Path:
    """``value`` (``--save-state`` / ``--load-state``) as a path: a non-empty ``str`` or
    ``os.PathLike`` of text; an empty one is a one-line ``ValueError``, another type a
    ``TypeError``."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{what}: must be a directory path (str or os.PathLike of text), "
                        f"got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what}: must be a directory path, got an empty one")
    return Path(value)


def check_save_dir(path: str | Path, *, force: bool = False) -> Path:
    """Before a run: ``path`` is (or can be made as) a directory this process can write
    in, without a saved state unless ``force``. A one-line ``ValueError`` otherwise."""
    path, what = state_path(path, "--save-state"), "--save-state"
    kind = path_kind(path, what)
    if kind not in (None, "directory"):
        raise ValueError(f"{what}: {str(path)!r} exists and is not a directory")
    holds_state = kind == "directory" and any(
        path_kind(path / name, what) is not None
        for name in (STATE_FILE, ARRAYS_FILE, CHECKSUMS_FILE))
    if holds_state and not force:
        raise ValueError(f"{what}: {str(path)!r} already holds a saved state; pass "
                         f"--force to overwrite it")
    # files go into the directory itself, or into a new one made under its nearest parent
    check_can_create(path / STATE_FILE if kind == "directory" else path, what)
    return path


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``arrays`` into the ``.npz`` file ``path`` as ``numpy.savez`` writes them, but
    without the time of writing: the same arrays give the same bytes (and checksum)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def write_directory(path: str | Path, text: str, arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``state.json`` (``text``), ``arrays.npz`` (``arrays``) and their checksums
    into the directory ``path`` (created), all three files or none."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--save-state: cannot create {str(path)!r} "
                         f"({describe_os_error(exc)})") from None
    data = text.encode()
    digests: dict[str, str] = {STATE_FILE: hashlib.sha256(data).hexdigest()}

    def write_arrays(tmp: Path) -> None:
        write_npz(tmp, arrays)
        digests[ARRAYS_FILE] = _sha256_file(tmp)

    def write_checksums(tmp: Path) -> None:
        body = {"format": CHECKSUMS_FORMAT, "sha256": dict(sorted(digests.items()))}
        tmp.write_text(json.dumps(body, indent=1) + "\n")

    write_files([(path / ARRAYS_FILE, write_arrays),
                 (path / STATE_FILE, lambda tmp: tmp.write_bytes(data)),
                 (path / CHECKSUMS_FILE, write_checksums)])
    return path


@dataclass
class SavedState:
    """A state directory read and its checksums verified: ``record`` (the parsed
    ``state.json``, not yet checked against a schema) and ``arrays`` (``arrays.npz``,
    open, its headers read and its data not). Close it when done."""

    path: Path
    record: Any
    arrays: NpzArchive

    def close(self) -> None:
        """Close ``arrays.npz``."""
        self.arrays.close()


def _checksums(path: Path, what: str) -> dict[str, str]:
    """The digests ``checksums.json`` holds."""
    file = path / CHECKSUMS_FILE
    if path_kind(file, what) is None:
        raise ValueError(f"{what}: {str(path)!r} has no {CHECKSUMS_FILE} (saved by an "
                         f"older bflnet, or not by bflnet): save the state again with "
                         f"--save-state")
    text = decode_text(read_bytes(file, what, MAX_CHECKSUMS_JSON), file, what)
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{what}: {str(file)!r} is not JSON ({exc})") from None
    digests = body.get("sha256") if isinstance(body, dict) else None
    if (not isinstance(body, dict) or body.get("format") != CHECKSUMS_FORMAT
            or set(body) != {"format", "sha256"} or not isinstance(digests, dict)
            or set(digests) != {STATE_FILE, ARRAYS_FILE}
            or not all(isinstance(v, str) and len(v) == 64 for v in digests.values())):
        raise ValueError(f"{what}: {str(file)!r} was changed after it was saved (it must "
                         f"hold the SHA-256 of {STATE_FILE} and {ARRAYS_FILE}, format "
                         f"{CHECKSUMS_FORMAT})")
    return digests


def _read_record(path: Path, what: str) -> tuple[Any, dict[str, str]]:
    """``state.json`` of the state directory ``path``, parsed once its checksum is
    verified, and the digests ``checksums.json`` holds."""
    kind = path_kind(path, what)
    if kind is None:
        raise ValueError(f"{what}: {str(path)!r} does not exist")
    if kind != "directory":
        raise ValueError(f"{what}: {str(path)!r} is not a directory")
    for name in (STATE_FILE, ARRAYS_FILE):
        if path_kind(path / name, what) != "file":
            raise ValueError(f"{what}: {str(path)!r} holds no saved state ({name} is "
                             f"missing; write one with --save-state)")
    digests = _checksums(path, what)
    data = read_bytes(path / STATE_FILE, what, MAX_STATE_JSON)
    if hashlib.sha256(data).hexdigest() != digests[STATE_FILE]:
        raise ValueError(f"{what}: {str(path / STATE_FILE)!r} was changed after it was "
                         f"saved (its SHA-256 is not the one in {CHECKSUMS_FILE})")
    text = decode_text(data, path / STATE_FILE, what)
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{what}: {str(path / STATE_FILE)!r} is not JSON "
                         f"({shown(str(exc), 120)})") from None
    return record, digests


def read_state_record(path: str | Path) -> Any:
    """The parsed ``state.json`` of the state directory ``path`` (its checksum verified,
    ``arrays.npz`` not read): what a loading run takes its settings from. A one-line
    ``ValueError`` as :func:`read_state_dir`'s."""
    what = "--load-state"
    return _read_record(state_path(path, what), what)[0]


def read_state_dir(path: str | Path) -> SavedState:
    """The state directory ``path``, its checksums verified; a one-line ``ValueError`` if
    it is missing, not a directory, unreadable, changed after it was saved or not a
    bflnet state."""
    what = "--load-state"
    path = state_path(path, what)
    record, digests = _read_record(path, what)
    file = path / ARRAYS_FILE

    def check(digest: str) -> None:
        if digest != digests[ARRAYS_FILE]:
            raise ValueError(f"{what}: {str(file)!r} was changed after it was saved (its "
                             f"SHA-256 is not the one in {CHECKSUMS_FILE})")

    return SavedState(path, record, open_npz(file, what, MAX_ARRAYS_BYTES, check))
