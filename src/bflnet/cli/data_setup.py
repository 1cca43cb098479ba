"""The data sets a run or the test suite needs, made sure of (:mod:`bflnet.data.ensure`).

    python -m bflnet.cli.data_setup --all                  # what `make test` runs
    python -m bflnet.cli.data_setup --for-run NAME [...]   # what `make run ARGS=...` runs
    python -m bflnet.cli.data_setup boston mnist-5k        # named data sets, as
                                                           # python -m bflnet.data.ensure

``--all`` is every data set a registered scenario reads; ``--for-run`` takes the
arguments of ``bflnet run`` and makes sure of what that run reads.
"""

from __future__ import annotations

import argparse

from bflnet.data.ensure import ensure_all, known


def datasets_of_run(args: list[str]) -> list[str]:
    """The data sets needed by the scenario that ``bflnet run`` arguments name (its first
    positional argument; the default scenario if none)."""
    from bflnet.runs.registry import DEFAULT_SCENARIO, get_scenario

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


def datasets_of_all_scenarios() -> list[str]:
    """Every data set a registered scenario reads, in registry order."""
    from bflnet.runs.registry import get_scenario, scenario_names

    return list(dict.fromkeys(d for name in scenario_names()
                              for d in get_scenario(name).datasets))


def main(argv: list[str] | None = None) -> int:
    """The command (module docstring); returns the exit status of
    :func:`bflnet.data.ensure.ensure_all`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*",
                        help=f"data sets to make sure of ({', '.join(known())})")
    parser.add_argument("--all", action="store_true",
                        help="every data set a registered scenario reads")
    parser.add_argument("--for-run", nargs=argparse.REMAINDER, default=None,
                        help="the arguments of `bflnet run`: make sure of what it needs")
    parser.add_argument("--no-install", action="store_true", help="only check")
    args = parser.parse_args(argv)
    wanted = list(args.datasets)
    if args.all:
        wanted += datasets_of_all_scenarios()
    if args.for_run is not None:
        wanted += datasets_of_run(args.for_run)
    return ensure_all(wanted, allow_install=not args.no_install)


if __name__ == "__main__":
    raise SystemExit(main())
