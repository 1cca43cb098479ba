"""The ``bflnet`` command line as a Typer application: list, describe, run and sweep
scenarios; rerun a result file; plot results. The entry point is
:func:`bflnet.cli.main.main`."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from bflnet.cli.plots import plot, plot_network
from bflnet.cli.summarize import summarize
from bflnet.runs.config import ValidationBug, describe_fields, describe_groups
from bflnet.runs.config_file import run_request, sweep_request
from bflnet.runs.provenance import run_record
from bflnet.runs.registry import DEFAULT_SCENARIO, get_scenario, scenario_lines
from bflnet.runtime.interrupt import Interrupted, catch_signals
from bflnet.validation.errors import PluginError, SimulationError, SweepError, WriteError
from bflnet.validation.renames import old_names

#: The exit codes, as ``bflnet --help`` lists them (see :func:`main`).
EXIT_CODES = ("Exit codes: 0 done; 1 a run or sweep failed, a result could not be written or a "
              "rerun's rows differ; 2 a bad argument, value or input file; 3 a bug in "
              "bflnet; 4 a plugin failed, exited or returned the wrong thing; 130 / 143 "
              "interrupted (Ctrl-C / SIGTERM).")

app = typer.Typer(help="bflnet: wireless network simulator with Bayesian federated learning.",
                  epilog=EXIT_CODES, add_completion=False, pretty_exceptions_enable=False,
                  no_args_is_help=True)


def _print_version(value: bool) -> None:
    if value:
        import bflnet

        typer.echo(f"bflnet {bflnet.__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="print bflnet's version and exit")] = False) -> None:
    """bflnet: wireless network simulator with Bayesian federated learning."""


@app.command("list")
def list_scenarios() -> None:
    """List the registered scenarios."""
    for line in scenario_lines():
        typer.echo(line)


@app.command()
def describe(name: Annotated[str, typer.Argument(help="scenario name")],
             columns: Annotated[bool, typer.Option(
                 "--columns", help="list the output columns instead: name, unit, the "
                 "event rows that carry it, meaning")] = False) -> None:
    """Show a scenario's parameters, defaults and allowed values (or its output columns)."""
    scenario = get_scenario(name)
    typer.echo(f"{scenario.name}: {scenario.description}")
    if columns:
        if scenario.columns is None:
            raise ValueError(f"{name}: declares no output columns")
        typer.echo("\ncolumns (name, unit, [event rows that carry it], meaning):")
        for line in scenario.columns.lines():
            typer.echo(line)
        typer.echo("(a sweep's table adds the swept parameters, seed, run_id and "
                   "config_hash)")
        return
    if scenario.datasets:
        typer.echo(f"reads the data sets: {', '.join(scenario.datasets)} "
                   f"(python -m bflnet.data.ensure {' '.join(scenario.datasets)})")
    typer.echo("")
    rows = describe_fields(scenario.config_cls)
    settable = [r for r in rows if r["decided"] is None]
    width = max((len(r["name"]) for r in settable), default=0)
    for r in settable:
        old = old_names(scenario.config_cls, r["name"])
        formerly = f" (old name, deprecated: {', '.join(old)})" if old else ""
        note = f" Its default {r['note']}." if r["note"] else ""
        typer.echo(f"  {r['name']:<{width}}  default {r['default']!r}; {r['allowed']}. "
                   f"{r['help']}{formerly}{note}")
    _describe_groups(scenario.config_cls, name)
    _describe_decided(rows, name)
    axes = getattr(scenario.config_cls, "LIST_AXES", {})
    if axes:
        typer.echo("\ncomma lists that run several settings in one call, and --grid:")
        for field, text in axes.items():
            typer.echo(f"  {field}: {text}")
    if scenario.server_schedule is not None:
        typer.echo(f"\nparameter server's agent selection: {scenario.server_schedule}")
    if scenario.state_free is not None:
        typer.echo(f"\nsaves and loads states (--save-state DIR, --load-state DIR); a run "
                   f"that loads takes the other settings and the seed from the saved "
                   f"state and may change: {', '.join(scenario.state_free)}")
    if scenario.columns is not None:
        typer.echo(f"\n(bflnet describe {name} --columns: what its output columns mean)")


def _describe_decided(rows: list[dict[str, Any]], name: str) -> None:
    """The fields the scenario decides itself (no settings read them), grouped by what
    decides instead."""
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r["decided"] is not None:
            reasons.setdefault(r["decided"], []).append(r["name"])
    if not reasons:
        return
    typer.echo(f"\ndecided by {name}, not parameters (--set refuses any value but the "
               f"default):")
    for reason, names in reasons.items():
        typer.echo(f"  {', '.join(names)}: {reason}")


def _describe_groups(cls: type, name: str) -> None:
    """The settings of the config's groups (a learner's), under each choice's name."""
    groups = describe_groups(cls)
    for prefix in dict.fromkeys(g[0] for g in groups):
        typer.echo(f"\n{prefix} settings (--set {prefix}.NAME=VALUE, a [{prefix}] table in "
                   f"--config, --grid {prefix}.NAME=V1,V2), for each {prefix}:")
        for _, choice, rows in (g for g in groups if g[0] == prefix):
            if isinstance(rows, str):
                typer.echo(f"  {choice}: cannot be loaded: {rows}")
                continue
            if not rows:
                typer.echo(f"  {choice}: no settings")
                continue
            typer.echo(f"  {choice}:")
            width = max(len(r["name"]) for r in rows)
            for r in rows:
                typer.echo(f"    {r['name']:<{width}}  default {r['default']!r}; "
                           f"{r['allowed']}. {r['help']}")


CONFIG_HELP = ("a TOML file: scenario, its \\[params] table, seed and out (the command line "
               "overrides it)")
LOAD_STATE_HELP = ("start from the states saved in this directory, with the settings and "
                   "seed they were saved with: --set may change only the settings of the "
                   "request and after it (bflnet describe NAME lists them); learn once, "
                   "unlearn many")


def _saved_scenario(name: str | None, load_state: str | None) -> str | None:
    """The scenario that saved the states in ``load_state``, when no ``name`` is given
    (``None``: a name, or no load)."""
    if name is not None or load_state is None:
        return None
    from bflnet.runs.states import saved_scenario

    return saved_scenario(load_state)


@app.command()
def run(
    name: Annotated[str | None, typer.Argument(
        help=f"scenario name (default: the --config file's, else the --load-state's, "
             f"else {DEFAULT_SCENARIO})")] = None,
    config: Annotated[Path | None, typer.Option(help=CONFIG_HELP)] = None,
    seed: Annotated[int | None, typer.Option(help="root random seed (default 0)")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="override a parameter: key=value (repeatable)")] = None,
    out: Annotated[str | None, typer.Option(help="write the results to FILE.csv or "
                                            "FILE.parquet")] = None,
    force: Annotated[bool, typer.Option(help="overwrite an existing --out file")] = False,
    progress: Annotated[bool, typer.Option(help="progress bar on long runs")] = True,
    threads: Annotated[int | None, typer.Option(
        help="torch and BLAS threads of the run, and the scenario's threads parameter "
             "where it has one (unless --set gives it). Default: the pools as torch and "
             "the BLAS start them (the CPUs this machine has), the scenarios' threads "
             "parameter (1; the EM-TDAMP scenarios: 0, torch's count). More than one "
             "thread can change the last bits of torch results (sums in another order), "
             "except for EM-TDAMP, where threads is how many groups of clients compute "
             "at once, torch on one thread",
             show_default=False)] = None,
    save_state: Annotated[str | None, typer.Option(
        help="also save the learnt states (global and every agent's) with the config and "
             "seed into this directory (--force: over a saved one)")] = None,
    load_state: Annotated[str | None, typer.Option(
        help=LOAD_STATE_HELP + " (the scenario too, when none is named)")] = None,
) -> None:
    """Run a scenario and print a summary (or write the full table with --out)."""
    from bflnet.runs.output import check_output_target, summary, write_frame
    from bflnet.runtime.threads import check_threads, set_threads
    from bflnet.validation.params import field_names

    if threads is not None:
        check_threads(threads)
    request = run_request(name, config, set_ or [], seed, out, _saved_scenario(name, load_state))
    if request.out is not None:  # before the run: a bad path must not waste it
        check_output_target(request.out, force=force)
    scenario = get_scenario(request.scenario)
    overrides = dict(request.overrides)
    if threads is not None and "threads" in field_names(scenario.config_cls) \
            and "threads" not in overrides \
            and (load_state is None or "threads" in (scenario.state_free or ())):
        overrides["threads"] = threads
    if load_state is None:
        settings, run_seed = scenario.config(overrides), request.seed
    else:
        settings, run_seed = scenario.load_config(
            load_state, overrides, request.seed if request.seed_given else None)
    if threads is not None:
        set_threads(threads)
    from bflnet.cli.plots import _warned  # the run's warnings: one line each

    frame = _warned(lambda: scenario.run(settings, seed=run_seed, progress=progress,
                                         save_state=save_state, load_state=load_state,
                                         force=force))
    if save_state is not None:
        typer.echo(f"saved the states to {save_state}", err=True)
    if request.out is not None:
        path = write_frame(frame, request.out,
                           run_record(scenario.name, settings, run_seed,
                                      None if load_state is None
                                      else str(Path(load_state).resolve())))
        typer.echo(f"wrote {len(frame)} rows to {path}", err=True)
    else:
        typer.echo(summary(frame))
        typer.echo(f"({len(frame)} rows; --out FILE.csv writes them all)", err=True)


@app.command()
def sweep(
    name: Annotated[str | None, typer.Argument(
        help="scenario name (default: the --config file's, else the --load-state's)")] = None,
    config: Annotated[Path | None, typer.Option(
        help="a TOML file: scenario, its \\[params] and \\[grid] tables, seeds and out "
             "(the command line overrides it)")] = None,
    out: Annotated[str | None, typer.Option(help="a directory (parts, manifest, "
                                            "table.parquet) or FILE.parquet (parts in "
                                            "FILE.parts/)")] = None,
    grid: Annotated[list[str] | None, typer.Option(
        help="sweep a parameter: key=v1,v2,... (repeatable; the grid is their product)")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="fix a parameter: key=value (repeatable)")] = None,
    seeds: Annotated[int | None, typer.Option(
        help="seeds 0..N-1 for every grid point (default 1)")] = None,
    workers: Annotated[int | None, typer.Option(
        help="local worker processes, one run at a time each (default: min(2, CPUs))")] = None,
    scheduler: Annotated[str | None, typer.Option(
        help="address of an existing Dask scheduler, e.g. tcp://host:8786 "
             "(then --workers is ignored)")] = None,
    progress: Annotated[bool, typer.Option(help="progress bar")] = True,
    load_state: Annotated[str | None, typer.Option(
        help=LOAD_STATE_HELP + "; every run starts there, with the saved seed only "
             "(--seeds 1)")] = None,
) -> None:
    """Run a grid of parameters x seeds on local worker processes (or a Dask cluster) into
    one table; re-running resumes."""
    from bflnet.runs.sweep import sweep as run_sweep
    request = sweep_request(name, config, grid or [], set_ or [], seeds, out,
                            _saved_scenario(name, load_state))
    table = run_sweep(request.scenario, request.grid, request.seeds, request.out,
                      fixed=request.fixed, workers=workers, scheduler=scheduler,
                      progress=progress, load_state=load_state,
                      warn=lambda text: typer.echo(f"bflnet: warning: {text}", err=True))
    info = table.attrs["sweep"]
    for failure in info["failed"]:
        typer.echo(f"failed: {failure['params']} seed {failure['seed']}: {failure['error']}",
                   err=True)
    typer.echo(f"{info['runs']} runs: {info['computed']} computed, {info['skipped']} "
               f"already done, {len(info['failed'])} failed; wrote {len(table)} rows to "
               f"{info['table']}", err=True)


@app.command()
def rerun(
    file: Annotated[str, typer.Argument(help="a result file written by bflnet (.csv with its "
                                        ".csv.json, .parquet, or a sweep's table)")],
    out: Annotated[str | None, typer.Option(
        help="write the new file here (default: print a summary)")] = None,
    strict_version: Annotated[bool, typer.Option(
        help="error, not warn, if the file was made by another bflnet version")] = False,
    force: Annotated[bool, typer.Option(help="overwrite an existing --out file")] = False,
    workers: Annotated[int | None, typer.Option(
        help="for a sweep table: local worker processes")] = None,
    progress: Annotated[bool, typer.Option(help="progress bar on long runs")] = True,
) -> None:
    """Make a result file again from the config, seed and version stored in it."""
    from bflnet.runs.output import summary
    from bflnet.runs.rerun import DIFFERENT, IDENTICAL, SAME_ROWS
    from bflnet.runs.rerun import rerun as rerun_file

    result = rerun_file(file, out, strict_version=strict_version, force=force,
                        workers=workers, progress=progress,
                        warn=lambda text: typer.echo(f"bflnet: warning: {text}", err=True))
    if result.written is None:
        typer.echo(summary(result.frame))
    else:
        typer.echo(f"wrote {len(result.frame)} rows to {result.written}", err=True)
    verdict = {IDENTICAL: f"reproduces {file} byte for byte",
               SAME_ROWS: f"same rows as {file}; the bytes differ",
               DIFFERENT: f"differs from {file}",
               None: f"same run as {file}, in another format"}[result.comparison]
    typer.echo(f"bflnet: {verdict}", err=True)
    if result.comparison == DIFFERENT:
        raise typer.Exit(1)


app.command()(plot)
app.command("plot-network")(plot_network)
app.command("draw", help="Same as plot-network.")(plot_network)
app.command()(summarize)


#: Longest error line printed (a longer one is cut, saying so).
MAX_ERROR_CHARS = 3000
#: Longest run of non-blank characters kept whole in an error line (a path is shorter;
#: an echoed value this long is cut where it is made, this is the safety net).
MAX_WORD_CHARS = 1000


def _one_line(message: str) -> str:
    """``message`` on one line, each run of more than :data:`MAX_WORD_CHARS` non-blank
    characters cut to 200 (an echoed value), and the whole to :data:`MAX_ERROR_CHARS`.

    >>> _one_line("got '" + "x" * 5000 + "'")[-40:]
    'xxxxxxxxxxxxxxxxxxx... (5002 characters)'
    """
    text = " ".join(message.split())
    text = re.sub(rf"\S{{{MAX_WORD_CHARS + 1},}}",
                  lambda m: f"{m[0][:200]}... ({len(m[0])} characters)", text)
    if len(text) > MAX_ERROR_CHARS:
        text = f"{text[:MAX_ERROR_CHARS - 40]}... (cut: {len(text)} characters in all)"
    return text


def main(argv: list[str] | None = None) -> int:
    """Run the application: user errors become one line on stderr and exit code 2; an exception
    other than ``ValueError`` from a config's validation is a bug in bflnet: one line,
    exit code 3. A result that could not be written (a full disk, ...) is one line naming
    the file and the reason, exit code 1; any other error of the operating system one line,
    exit code 2. A plugin that failed, exited or returned the wrong thing: one line naming
    it, the hook and what it raised or returned, exit code 4. Ctrl-C (SIGINT) or SIGTERM:
    one line, exit code 128 + the signal (130, 143)."""
    try:
        with catch_signals():
            result = app(args=argv, prog_name="bflnet", standalone_mode=False)
    except Interrupted as exc:
        print(f"bflnet: {exc}", file=sys.stderr)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, EOFError):  # typer turns any EOFError into Abort
            detail = _one_line(str(cause)) or "EOFError"
            print(f"bflnet: error: unexpected end of data ({detail})", file=sys.stderr)
            return 2
        print("bflnet: aborted", file=sys.stderr)
        return 130
    except typer.TyperException as exc:  # usage errors from the command-line parser
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message())
            return 0
        message = " ".join(exc.format_message().split())
        print(f"bflnet: error: {message}", file=sys.stderr)
        return 2
    except PluginError as exc:
        print(f"bflnet: {_one_line(str(exc))}", file=sys.stderr)
        return 4
    except ValidationBug as exc:
        print(f"bflnet: {exc} (please report it)", file=sys.stderr)
        return 3
    except ValueError as exc:
        print(f"bflnet: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except WriteError as exc:
        print(f"bflnet: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. a data set not found, or unreadable
        name = str(exc.filename)
        name = name if len(name) <= 120 else f"{name[:60]}...{name[-40:]}"
        where = f"{name!r}: " if exc.filename else ""
        reason = exc.strerror if exc.strerror and exc.filename else str(exc)
        print(f"bflnet: error: {where}{_one_line(reason)}", file=sys.stderr)
        return 2
    except SimulationError as exc:
        print(f"bflnet: run failed: {exc}", file=sys.stderr)
        return 1
    except SweepError as exc:
        print(f"bflnet: sweep failed: {exc}", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0
