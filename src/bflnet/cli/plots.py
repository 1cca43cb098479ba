"""The ``bflnet plot`` and ``bflnet plot-network`` (alias ``draw``) commands: option parsing
only; the figures are made by :mod:`bflnet.analysis.table_plot` and
:mod:`bflnet.analysis.network_plot`, their sources read by
:mod:`bflnet.cli.network_view`."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

SIZE_HELP = "figure size in inches: W,H (default: from the number of panels)"
DPI_HELP = "dots per inch of a .png (50..600)"


def _figure_size(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    parts = text.split(",")
    try:
        w, h = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"--size: expected two numbers W,H in inches, got {text[:200]!r}") \
            from None
    if not (0.5 <= w <= 100 and 0.5 <= h <= 100):  # nan fails too
        raise ValueError(f"--size: each of W,H must be in [0.5, 100] inches, got {text[:200]!r}")
    return w, h


def _check_out(out: str, dpi: int) -> None:
    from bflnet.analysis.table_filter import FIGURE_FORMATS

    if Path(out).suffix.lower() not in FIGURE_FORMATS:
        raise ValueError(f"--out: must end in {', '.join(FIGURE_FORMATS)}, got {out!r}")
    if not 50 <= dpi <= 600:
        raise ValueError(f"--dpi: must be an integer in 50..600, got {dpi}")


def _warned(make: Callable[[], Any]) -> Any:
    """``make()``, its warnings printed as one ``bflnet: warning:`` line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = make()
    for message in dict.fromkeys(str(w.message) for w in caught):
        typer.echo(f"bflnet: warning: {' '.join(message.split())}", err=True)
    return result


def schema_of(record: dict[str, Any] | None) -> Any:
    """The schema of the scenario named in a table's record (``None``: none, or a
    scenario this version does not know): the plot's labels, units and reference."""
    from bflnet.runs.registry import get_scenario

    name = (record or {}).get("scenario")
    if not isinstance(name, str):
        return None
    try:
        return get_scenario(name).columns
    except ValueError:  # a scenario this version does not know
        return None


def plot(
    files: Annotated[list[str], typer.Argument(
        metavar="FILE",
        help="result tables (.parquet, .csv) or sweep directories, or glob patterns "
             "('runs/*.csv'). Several are drawn in one figure as one table with a column "
             "file (each file's name without its suffix) saying which a row comes from: "
             "--hue file, --col file")],
    y: Annotated[str, typer.Option(help="the value to plot (a column)")],
    out: Annotated[str, typer.Option(help="figure file: .png, .pdf or .svg")],
    x: Annotated[str | None, typer.Option(
        help="x column. An axis (time_s, cum_bits, iteration, ...): median curves over "
             "runs. A parameter (K, downtime, a swept column): each run's value (the last, "
             "for a table of curves) against it. Omitted: a table of one row per run "
             "draws the distribution of --y; a table of curves, --y against iteration",
        show_default=False)] = None,
    hue: Annotated[str | None, typer.Option(help="one line (or box) per value of this "
                                            "column, in its own colour; its name titles "
                                            "the legend")] = None,
    style: Annotated[str | None, typer.Option(help="curves: one line style (solid, dashed, "
                                              "...) per value of this column")] = None,
    col: Annotated[str | None, typer.Option(help="one panel per value of this column, side "
                                            "by side")] = None,
    row: Annotated[str | None, typer.Option(help="one panel per value of this column, one "
                                            "above the other")] = None,
    where: Annotated[list[str] | None, typer.Option(
        help="keep the rows where column=value (repeatable: different columns must all "
             "match, one column given twice matches either value)")] = None,
    kind: Annotated[str | None, typer.Option(
        help="line (curves), hist or box (a distribution over runs), points or box (a "
             "value against a parameter); default: the first that fits")] = None,
    band: Annotated[float, typer.Option(help="curves: central quantile band over runs "
                                        "(0: none)")] = 0.75,
    logx: Annotated[bool, typer.Option(help="log x axis")] = False,
    logy: Annotated[bool, typer.Option(help="log y axis")] = False,
    xlim: Annotated[str | None, typer.Option(
        help="x range lo,hi (default: where the data end)")] = None,
    ylim: Annotated[str | None, typer.Option(help="y range lo,hi")] = None,
    curve_by: Annotated[list[str] | None, typer.Option(
        help="columns that identify one run (repeatable; default: run_id, else seed, with "
             "run where the table has it)")] = None,
    average: Annotated[list[str] | None, typer.Option(
        help="a setting that varies within a line (box, point) and is pooled into it, said "
             "so in the title and legend (repeatable); without it such a setting is an "
             "error")] = None,
    stat: Annotated[str | None, typer.Option(
        help="a value per run from a table of curves (--x a parameter, or a distribution): "
             "each run's last, max, min or mean value (default: last)",
        show_default=False)] = None,
    faults: Annotated[bool, typer.Option(
        help="curves: tick the table's fault rows (event = fault) in a strip under the "
             "axes, one row per kind")] = True,
    size: Annotated[str | None, typer.Option(help=SIZE_HELP)] = None,
    dpi: Annotated[int, typer.Option(help=DPI_HELP)] = 150,
) -> None:
    """Plot result tables: median curves, or per-run values (distribution, vs a parameter)."""
    from bflnet.analysis.table_filter import check_column, parse_limits
    from bflnet.analysis.table_filter import where as keep_rows
    from bflnet.runs.result_tables import FILE_COLUMN, read_tables

    _check_out(out, dpi)
    limits = parse_limits("--xlim", xlim, logx), parse_limits("--ylim", ylim, logy)
    figsize = _figure_size(size)
    frame, records = read_tables(files)
    if where:
        frame = keep_rows(frame, where)
    for role, column in (("--y", y), ("--x", x), ("--hue", hue), ("--style", style),
                         ("--col", col), ("--row", row),
                         *(("--curve-by", c) for c in curve_by or ()),
                         *(("--average", c) for c in average or ())):
        check_column(frame, role, column)  # before matplotlib is loaded
    if len(records) > 1 and curve_by is None:  # run 0 of one file is not run 0 of another
        from bflnet.analysis.plots import curve_key

        curve_by = [FILE_COLUMN, *curve_key(frame, None)]
    schema = next((s for s in map(schema_of, records) if s is not None), None)  # the first
    from bflnet.analysis.plots import save_figure
    from bflnet.analysis.table_plot import plot_table

    placed: list[str] = []  # said once the figure is written: an error stays one line

    figure = _warned(lambda: plot_table(
        frame, y, x, hue=hue, style=style, col=col, row=row, kind=kind, band=band,
        logx=logx, logy=logy, curve_by=curve_by, average=average or (), stat=stat,
        faults=faults, xlim=limits[0], ylim=limits[1], schema=schema, figsize=figsize,
        report=placed.append))
    written = save_figure(figure, out, dpi=dpi)
    for text in placed:
        typer.echo(f"bflnet: {text}", err=True)
    typer.echo(f"wrote {written}", err=True)


def plot_network(
    source: Annotated[str, typer.Argument(
        help="a scenario name (its graph from its config, --set and --seed; nothing is "
             "learnt), a result table written by bflnet (.parquet, .csv, sweep directory: "
             "the graph of its stored config and one run's walk, exchanges and outages), "
             "or a graph file (.graphml, .gml, .txt, .edgelist)")],
    out: Annotated[str, typer.Option(help="figure file: .png, .pdf or .svg")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="a scenario: override a parameter, key=value (repeatable)")] = None,
    seed: Annotated[int, typer.Option(help="a scenario: its seed (the graph's random "
                                      "stream, as in bflnet run)")] = 0,
    where: Annotated[list[str] | None, typer.Option(
        help="a table: keep the rows where column=value (repeatable)")] = None,
    run: Annotated[int, typer.Option(help="a table: which of the runs left (0: the first)")]
        = 0,
    steps: Annotated[int, typer.Option(
        help="a table: the walk's moves or gossip exchanges drawn (the first N)")] = 40,
    node: Annotated[int | None, typer.Option(
        help="a shared medium: draw this node's radio, carrier-sense and interference "
             "ranges")] = None,
    size: Annotated[str | None, typer.Option(help=SIZE_HELP)] = None,
    dpi: Annotated[int, typer.Option(help=DPI_HELP)] = 150,
) -> None:
    """Draw a network: graph, link quality, the walk or gossip exchanges, outages; on a
    shared medium the packets sent and lost per node, the TDMA slots and a node's
    ranges."""
    from bflnet.analysis.network_plot import draw_network
    from bflnet.analysis.plots import save_figure
    from bflnet.cli.network_view import (
        graph_file_pictures,
        scenario_pictures,
        source_kind,
        table_pictures,
    )
    from bflnet.runs.config_file import run_request

    _check_out(out, dpi)
    figsize = _figure_size(size)
    if not 1 <= steps <= 100_000:
        raise ValueError(f"--steps: must be an integer in 1..100000, got {steps}")
    if seed < 0:
        raise ValueError(f"--seed: must be a non-negative integer, got {seed}")
    kind = source_kind(source)
    table_only = {"--where": where, "--run": run != 0}
    if kind != "table":
        for name, given in table_only.items():
            if given:
                raise ValueError(f"{name}: only for a result table, not a {kind}")
    if kind != "scenario" and (set_ or seed):
        raise ValueError(f"--set/--seed: only for a scenario name (a {kind} has its own)")
    if kind == "graph-file" and node is not None:
        raise ValueError("--node: draws a node's ranges on a shared medium, not on a graph "
                         "file")
    note = ""
    if kind == "scenario":
        request = run_request(source, None, set_ or [], seed, None)
        pictures = scenario_pictures(request.scenario, request.overrides, request.seed,
                                     node=node)
    elif kind == "graph-file":
        pictures = graph_file_pictures(source)
    else:
        pictures, note = table_pictures(source, where or [], run, node=node)
    figure = _warned(lambda: draw_network(pictures, steps=steps, figsize=figsize))
    for text in dict.fromkeys(t for p in pictures for t in p.notes):
        typer.echo(f"bflnet: {text}", err=True)
    if note:
        typer.echo(f"bflnet: {note}", err=True)
    typer.echo(f"wrote {save_figure(figure, out, dpi=dpi)}", err=True)
