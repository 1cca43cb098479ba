"""The ``bflnet summarize`` command: option parsing only; the summary is computed by
:mod:`bflnet.analysis.summary`."""

from __future__ import annotations

from typing import Annotated

import typer


def summarize(
    table: Annotated[str, typer.Argument(help="a result table (.parquet, .csv) or a sweep "
                                         "directory")],
    target: Annotated[list[str] | None, typer.Option(
        help="a target of a column: COL<=VALUE or COL>=VALUE; VALUE% is that share of the "
             "run's first value (max_deviation<=5%). Repeatable: one row per setting and "
             "target")] = None,
    x: Annotated[list[str] | None, typer.Option(
        help="a column read where a run first meets the target (repeatable; default: "
             "time_s, cum_bits, energy_j, those the table has)")] = None,
    reference: Annotated[list[str] | None, typer.Option(
        help="the reference setting, column=value (repeatable: all must hold, e.g. "
             "--reference mac=links --reference broadcast=false): every run's x over the "
             "reference run's of the same seed and other settings")] = None,
    by: Annotated[list[str] | None, typer.Option(
        help="a setting column (repeatable; default: the columns constant within each run "
             "that vary between runs, as the first line on stderr says)")] = None,
    last: Annotated[list[str] | None, typer.Option(
        help="also summarise each run's last value of this column (repeatable; with "
             "--reference, also its difference to the reference run's)")] = None,
    where: Annotated[list[str] | None, typer.Option(
        help="keep the rows where column=value first (repeatable, as in bflnet plot)")] = None,
    run_by: Annotated[list[str] | None, typer.Option(
        help="columns that name one run (repeatable; default: run_id, else seed, with run "
             "where the table has it)")] = None,
    out: Annotated[str | None, typer.Option(
        help="write the tidy table (mean, sd and median of every measure) to FILE.csv or "
             "FILE.parquet; default: print mean ± sd")] = None,
    force: Annotated[bool, typer.Option(help="overwrite an existing --out file")] = False,
) -> None:
    """Time, bits and energy to a target per setting (mean ± sd over seeds, the share of
    runs that reached it), and their ratios to a reference setting."""
    from bflnet.analysis.summary import describe, text_table
    from bflnet.analysis.summary import summarize as summarize_table
    from bflnet.analysis.table_filter import where as keep_rows
    from bflnet.runs.output import check_output_target, write_frame
    from bflnet.runs.result_tables import read_table

    if out is not None:
        check_output_target(out, force=force)
    frame, _ = read_table(table)
    if where:
        frame = keep_rows(frame, where)
    summary = summarize_table(frame, target or [], x=x or None, by=by or None,
                              reference=reference or None, last=last or [],
                              run_by=run_by or None)
    typer.echo(f"bflnet: {describe(summary)}", err=True)
    if out is None:
        typer.echo(text_table(summary))
        return
    record = {"summary_of": table, "where": list(where or []), **summary.attrs["summary"]}
    path = write_frame(summary, out, {"summarize": record})
    typer.echo(f"wrote {len(summary)} rows to {path}", err=True)
