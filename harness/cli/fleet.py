"""`bench fleet`: the GPUs of the database side by side, those that stand apart from their siblings first."""

from __future__ import annotations

import click

from harness.paper import DEFAULT_TOLERANCE
from harness.cli.app import DB_HELP, Finite, cli, open_store, print_frame, say, table_options


@cli.command()
@click.option("--case", "case_glob", default=None, help="comma-separated globs on the case id (default: every case)")
@click.option("--metric", default=None, help="only this metric (or sm_clock_mhz, each GPU's measured clock)")
@click.option("--tolerance", default=DEFAULT_TOLERANCE, show_default=True, type=Finite(0, 10),
              help="relative difference allowed on top of the noise (as bench compare's)")
@click.option("--all", "every_row", is_flag=True,
              help="every case side by side on every GPU (default: only the rows where a GPU stands apart)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def fleet(case_glob, metric, tolerance, every_row, db, fmt, wide):
    """The GPUs in the database side by side: first the GPUs that stand apart from their siblings (same
    model, same harness commit) by more than the noise, then the rows where one does (--all: every
    row). Time-based metrics compare per cycle (divided by the clock measured in the kernel); a library
    call's (cuBLAS, cuBLASLt, cuDNN: no clock of its own) per second; the clock is a row of its own.
    Column `basis` says which. GPUs are named as `bench runs` names them.

    \b
    Examples:
      bench fleet
      bench fleet --metric issue_interval_cycles --all
      bench fleet --case '*m64n256k16*' --db postgresql+psycopg://bench@db/fleet
    """
    from harness.analysis.fleet import compared_note, table

    rows, outliers = table(open_store(db), case_glob, metric, tolerance)
    if fmt != "table":
        print_frame(rows if every_row else rows[rows.outlier], fmt)
        return
    gpus = rows.groupby(["gpu", "git_commit"]).agg(rows=("case_id", "size"), rows_apart=("outlier", "sum")).reset_index()
    say(f"{rows.gpu.nunique()} GPUs, {len(rows)} rows; siblings share a model and a harness commit")
    say(compared_note(rows))
    for row in outliers.itertuples(index=False):
        say(f"outlier: {row.gpu}: {row.rows_apart} of {row.of_rows} rows apart; most on {row.worst_case} "
            f"{row.worst_metric} ({row.worst_difference:+.1%} {row.worst_basis} against its siblings' median)")
    if outliers.empty:
        say("no GPU stands apart from its siblings (a GPU needs at least 2 siblings of its model and commit)")
    print_frame(gpus, fmt, wide)
    shown = rows if every_row else rows[rows.outlier]
    if shown.empty:
        return
    side = shown.pivot_table(index=["case_id", "metric", "launch"], columns="gpu", values="value", aggfunc="first")
    apart = rows[rows.outlier].groupby(["case_id", "metric", "launch"]).gpu.agg(lambda g: ", ".join(sorted(g)))
    # the GPUs' values as measured, side by side; `basis`: what was compared (per cycle, per second, ...)
    basis = shown.groupby(["case_id", "metric", "launch"]).basis.agg(lambda b: ", ".join(sorted(set(b))))
    side = side.join(apart.rename("apart"), how="left").join(basis, how="left").reset_index()
    click.echo("")
    print_frame(side, fmt, wide, first=("case_id", "metric", "launch", "apart", "basis"))
    if not every_row:
        click.echo("(the rows where a GPU stands apart; --all shows every row)", err=True)
