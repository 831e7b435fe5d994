"""The commands that read the database: `bench runs`, `sql`, `compare`, `model`, `advise`,
`references` and `fleet`."""

from __future__ import annotations

import functools
import inspect
import sys

import click
import pandas as pd

from harness import output
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU
from harness.cli.app import (
    Finite, RUN_ID, DB_HELP, EXIT_DIFFERENCES, COMPARE_COLUMNS, table_options, print_frame, say, cli, open_store,
)


@cli.command()
@click.option("--db", default=None, help=DB_HELP)
@table_options
def runs(db, fmt, wide):
    """List the stored runs, newest last.

    \b
    Example:
      bench runs --format markdown
    """
    frame = open_store(db).runs()
    if fmt == "table":
        frame["started_at"] = pd.to_datetime(frame.started_at, format="mixed")
    print_frame(frame, fmt, wide, first=("run", "started_at", "status", "gpu", "suite", "cases", "invalid",
                                         "faults", "resumes", "git_commit", "filter"))


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("query")
@click.option("--db", default=None, help=DB_HELP)
@table_options
@click.option("--write", is_flag=True, help="allow the statement to change the database")
@click.option("--max-rows", default=10_000, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="print at most this many rows (0: all; csv and json stream, a table holds its rows)")
@click.option("--timeout", default=600, show_default=True, type=Finite(0, 86400), metavar="SECONDS",
              help="stop the statement after this long (0: no limit)")
def sql(query, db, fmt, wide, write, max_rows, timeout):
    """Run one SQL statement on the results database (views: results). Read-only unless --write.

    Exactly one statement runs, on SQLite and on PostgreSQL. Rows are streamed: csv and json are
    written as they come, so any result fits in memory; --max-rows bounds what is printed (a note on
    stderr says when rows were left). Ctrl-C stops a running statement.

    \b
    Examples:
      bench sql "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles'"
      bench sql "SELECT gpu_name, n, value FROM results WHERE metric='throughput_tflops'" --format csv
      bench sql "SELECT * FROM measurement_rows" --format csv --max-rows 0 > all.csv
      bench sql --write "UPDATE runs SET status='interrupted' WHERE id=7"
    """
    if not query.strip():
        raise click.BadParameter("is empty: give one SQL statement", param_hint="QUERY")
    if "\x00" in query:
        raise click.BadParameter("contains a NUL character", param_hint="QUERY")
    store = open_store(db, write=write, upgrade=False)
    with store.stream(query, write=write, timeout_s=timeout or None) as rows:
        if write and not rows.columns:
            count = rows.rowcount if rows.rowcount is not None and rows.rowcount >= 0 else 0
            message = f"{count} row{'s' if count != 1 else ''} changed"
        else:
            if not rows.columns:
                list(rows.chunks)
            written, more = output.write_rows(rows.columns, rows.chunks, fmt, max_rows or None, click.echo,
                                              lambda frame: print_frame(frame, fmt, wide))
            message = None
    if message:
        click.echo(message)
    elif more:
        click.echo(f"note: stopped after {written} rows (--max-rows {max_rows}); the statement has more: "
                   "narrow it, or pass --max-rows 0 with --format csv", err=True)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="run to compare (default: the newest complete run)")
@click.option("--against", default="paper", show_default=True, metavar="paper|model|RUN_ID",
              help="the paper's H800 figures, the model's predictions, or another run")
@click.option("--metric", default=None, help="only this metric (e.g. issue_interval_cycles)")
@click.option("--disagreements", is_flag=True, help="only the rows that disagree (or differ from the other run)")
@click.option("--include-flagged", is_flag=True, help="keep measurements taken while throttled or shared")
@click.option("--exit-zero", is_flag=True, help="exit 0 even where rows differ (default: exit 3, for CI)")
@click.option("--tolerance", default=DEFAULT_TOLERANCE, show_default=True, type=Finite(0, 10),
              help="relative difference allowed on top of the measurement's spread")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def compare(run_id, against, metric, disagreements, include_flagged, exit_zero, tolerance, db, fmt, wide):
    """Compare a run with the paper, the model, or another run: one row per case and metric.

    Cycle metrics compare directly; TFLOPS compare per cycle per SM (ours by the SM clock measured in
    the kernel, the paper's by the clock it printed, else the clock its figure implies), and the
    note names the reason of every verdict but "agrees". Run against run says "same" when the
    difference is within the noise of either. --disagreements keeps the rows that differ beyond
    the noise and have no reason given (DISAGREES, slower, faster).

    \b
    A line on stderr names both sides and counts the verdicts. Exit status: 0 when no row is
    DISAGREES (against the paper or the model) or slower (against a run); 3 when one is, so a CI
    job can gate on it (--exit-zero: 0 regardless); 4 when two runs share no case and metric.

    \b
    Examples:
      bench compare
      bench compare --run 5 --against 4 --disagreements
      bench compare --against model --metric issue_interval_cycles --format markdown
    """
    from harness.analysis.compare import BadArgument, comparison, parse_against, run_label

    try:
        parse_against(against)  # before the database is opened
        store = open_store(db)
        result = comparison(store, run_id, against, metric, disagreements, include_flagged, tolerance)
    except BadArgument as exc:
        raise click.BadParameter(str(exc), param_hint=f"--{exc.parameter}") from None
    if result.no_model:
        click.echo("note: no model prediction for this run (its GPU has no row in gpu_specs.csv, or its "
                   "families have no model): the model columns are empty", err=True)
    print_frame(result.frame, fmt, wide, first=COMPARE_COLUMNS[against if against in COMPARE_COLUMNS else "run"])
    other = f"run {result.against} ({run_label(store, result.against)})" if isinstance(result.against, int) else \
        (f"the paper ({PAPER_GPU})" if against == "paper" else "the model")
    counts = ", ".join(f"{n} {verdict}" for verdict, n in result.counts().items()) or "no rows"
    click.echo(f"run {result.run_id} ({run_label(store, result.run_id)}) against {other}: {counts}", err=True)
    if result.failed and not exit_zero:
        sys.exit(EXIT_DIFFERENCES)


@cli.command()
@click.option("--gpu", default=PAPER_GPU, show_default=True, help="a GPU of gpu_specs.csv (H100 SXM5, H800 PCIe, H20, ...)")
@click.option("--clock", type=click.FloatRange(100, 5000), default=None,
              help="SM clock in MHz for the predicted TFLOPS (default: the datasheet's boost clock)")
@click.option("--run", "run_id", default=None, type=RUN_ID,
              help="fit every family's model to this run instead, with residuals")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def model(gpu, clock, run_id, db, fmt, wide):
    """Predict from a GPU's datasheet parameters (each family whose model can), or fit every family's
    model to a run: its parameters, and each measurement beside the fit (residuals).

    \b
    Examples:
      bench model --gpu H20
      bench model --gpu H800 --clock 1560
      bench model --run 4
    """
    if run_id is None:
        from harness.registry import FAMILIES

        models = [(name, model) for name, f in FAMILIES.items()
                  if (model := f.model) is not None and hasattr(model, "datasheet_table")]
        for name, family_model in models:
            line, table = family_model.datasheet_table(gpu, clock)
            say(f"{name}: {line}" if len(models) > 1 else line)
            print_frame(table, fmt, wide)
        return
    from harness.analysis.compare import natural_key
    from harness.analysis.models import fit_run

    for family, report in fit_run(open_store(db), run_id).items():
        click.echo(f"{family}:")
        print_frame(report.parameters, fmt, wide)
        residuals = report.residuals
        if "case_id" in residuals and len(residuals):  # m64n8 before m64n104: numbers as numbers
            residuals = residuals.iloc[sorted(range(len(residuals)),
                                              key=lambda i: natural_key(str(residuals.case_id.iloc[i])))]
        print_frame(residuals.reset_index(drop=True), fmt, wide,
                    first=("case_id", "metric", "measured", "fitted", "residual", "relative"))


class AdvisorGroup(click.Group):
    """A group whose commands are the families' advisors, made when first asked for (so that other
    commands never import the families for them)."""

    @functools.cached_property
    def advisors(self) -> dict[str, click.Command]:
        from harness.registry import FAMILIES

        return {advisor.name: advice_command(family, advisor)
                for family in FAMILIES.values() for advisor in family.advisors}

    def list_commands(self, ctx):
        return sorted(self.advisors)

    def get_command(self, ctx, name):
        return self.advisors.get(name)


@cli.group(cls=AdvisorGroup)
def advise():
    """Instruction-choice advice from a family's model (one command per advisor a family offers).

    \b
    Example:
      bench advise swapab --m 16 --n 64 --k 16 --gpu H20
    """


def advice_command(family, advisor) -> click.Command:
    """`bench advise NAME` from a family's Advisor (harness/families/base.py): its options, and --gpu,
    --run and --db, which choose the model's parameters."""

    def run_advisor(gpu, run_id, db, **values):
        if gpu and run_id is not None:
            raise click.UsageError("give --gpu or --run, not both")
        fit = None
        if run_id is not None:
            from harness.analysis.models import fit_run

            fits = fit_run(open_store(db), run_id)
            if family.name not in fits:
                raise click.UsageError(f"run {run_id} has no {family.name} measurements its model fits")
            fit = fits[family.name]
        for line in advisor.advise(values, fit, gpu):
            click.echo(line)

    options = [click.Option([f"--{o.name}", o.name], help=o.help,
                            type=click.Choice(o.choices) if o.choices else click.IntRange(o.low, o.high),
                            # click 8.3 counts default=None as a default: a required option passes none
                            **({"required": True} if o.default is None else {"default": o.default,
                                                                              "show_default": True}))
               for o in advisor.options]
    options += [click.Option(["--gpu"], default=None, help="predict with this GPU's datasheet parameters"),
                click.Option(["--run", "run_id"], default=None, type=RUN_ID,
                             help="predict with the parameters fitted to this run"),
                click.Option(["--db"], default=None, help=DB_HELP)]
    return click.Command(advisor.name, callback=run_advisor, params=options, help=inspect.cleandoc(advisor.help))


@cli.command()
@click.option("--unmapped", is_flag=True, help="list the figures that map to none of our cases or metrics, and why")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def references(unmapped, db, fmt, wide):
    """The published figures shipped with the harness (paper tables, the article's, datasheets).

    \b
    Examples:
      bench references
      bench references --unmapped --format csv
    """
    store = open_store(db)
    if unmapped:
        frame = store.query("SELECT source, source_table, gpu, metric AS mapped_metric, value, unit, unmapped_reason "
                            "FROM reference_figures WHERE case_id IS NULL ORDER BY id")
    else:
        frame = store.query("SELECT source, gpu_name, metric, COUNT(*) AS figures, COUNT(also_in) AS also_printed_elsewhere "
                            "FROM reference_values GROUP BY source, gpu_name, metric ORDER BY source, gpu_name")
    print_frame(frame, fmt, wide, first=("source_table", "value", "unit", "unmapped_reason"), cut=0)


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
    row). Time-based metrics compare per cycle (divided by the clock measured in the kernel); the
    clock is a row of its own. GPUs are named as `bench runs` names them.

    \b
    Examples:
      bench fleet
      bench fleet --metric issue_interval_cycles --all
      bench fleet --case '*m64n256k16*' --db postgresql+psycopg://bench@db/fleet
    """
    from harness.analysis.fleet import table

    rows, outliers = table(open_store(db), case_glob, metric, tolerance)
    if fmt != "table":
        print_frame(rows if every_row else rows[rows.outlier], fmt)
        return
    gpus = rows.groupby(["gpu", "git_commit"]).agg(rows=("case_id", "size"), rows_apart=("outlier", "sum")).reset_index()
    say(f"{rows.gpu.nunique()} GPUs, {len(rows)} rows; siblings share a model and a harness commit")
    for row in outliers.itertuples(index=False):
        say(f"outlier: {row.gpu}: {row.rows_apart} of {row.of_rows} rows apart; most on {row.worst_case} "
            f"{row.worst_metric} ({row.worst_difference:+.1%} against its siblings' median)")
    if outliers.empty:
        say("no GPU stands apart from its siblings (a GPU needs at least 2 siblings of its model and commit)")
    print_frame(gpus, fmt, wide)
    shown = rows if every_row else rows[rows.outlier]
    if shown.empty:
        return
    side = shown.pivot_table(index=["case_id", "metric", "launch"], columns="gpu", values="value", aggfunc="first")
    apart = rows[rows.outlier].groupby(["case_id", "metric", "launch"]).gpu.agg(lambda g: ", ".join(sorted(g)))
    side = side.join(apart.rename("apart"), how="left").reset_index()
    click.echo("")
    print_frame(side, fmt, wide, first=("case_id", "metric", "launch", "apart"))
    if not every_row:
        click.echo("(the rows where a GPU stands apart; --all shows every row)", err=True)
