"""Make sure a data set a run or the tests need is on this machine, installing it from
Debian's packages where the machine allows; otherwise say in one line what to do.

    python -m bflnet.data.ensure fashion-mnist          # what `make test` runs
    python -m bflnet.data.ensure --for-run NAME [...]   # what `make run ARGS=...` runs

Found: prints where. Missing and installable (root, ``apt-get`` present, the data set has
a Debian package): runs ``apt-get update`` and ``apt-get install <package>`` (``install
--reinstall`` when dpkg lists the package as installed but its files are gone), then checks
again. Otherwise prints one line naming the package to install or where to put the files,
and exits 0, so that a test run goes on (the tests that need the data then skip); under
``CI=true`` it exits 1 instead, since the tests would fail there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from bflnet.data.vision import (
    FASHION_MNIST,
    MNIST,
    DatasetNotFoundError,
    IdxDatasetSpec,
    find_split_files,
)

DATASETS: dict[str, IdxDatasetSpec] = {"fashion-mnist": FASHION_MNIST, "mnist": MNIST}


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


def ensure(name: str, *, allow_install: bool = True) -> tuple[bool, str]:
    """``(found, message)`` for the data set ``name`` after installing it if needed and
    possible."""
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


def datasets_of_run(args: list[str]) -> list[str]:
    """The data sets needed by the scenario that ``bflnet run`` arguments name (its first
    positional argument; the default scenario if none)."""
    from bflnet.scenarios.registry import DEFAULT_SCENARIO, get_scenario

    name, value_next = DEFAULT_SCENARIO, False
    for arg in args:
        if value_next:
            value_next = False
        elif arg.startswith("--"):
            value_next = "=" not in arg and arg not in ("--progress", "--no-progress")
        else:
            name = arg
            break
    try:
        return list(get_scenario(name).datasets)
    except ValueError:
        return []  # `bflnet run` itself reports the unknown name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*",
                        help=f"data sets to make sure of ({', '.join(DATASETS)})")
    parser.add_argument("--for-run", nargs=argparse.REMAINDER, default=None,
                        help="the arguments of `bflnet run`: make sure of what it needs")
    parser.add_argument("--no-install", action="store_true", help="only check")
    args = parser.parse_args(argv)
    wanted = list(args.datasets)
    if args.for_run is not None:
        wanted += datasets_of_run(args.for_run)
    unknown = [d for d in wanted if d not in DATASETS]
    if unknown:
        print(f"datasets: unknown {unknown[0]!r}; known: {', '.join(DATASETS)}",
              file=sys.stderr)
        return 2
    strict = os.environ.get("CI") == "true"
    status = 0
    for name in dict.fromkeys(wanted):
        found, message = ensure(name, allow_install=not args.no_install)
        if found:
            print(message, file=sys.stderr)
        elif strict:  # under CI a missing data set fails, it does not skip tests
            print(f"error: CI=true and {message}", file=sys.stderr)
            status = 1
        else:
            print(f"warning: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

