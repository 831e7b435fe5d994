"""The commands that read the database as it is: `bench runs`, `sql`, `export` and `references` (comparing.py:
compare; fleet.py: fleet; modelling.py: model and advise)."""

from __future__ import annotations

import functools
import sys

import click
import pandas as pd

from harness import output
from harness.cli.app import Finite, RUN_ID, DB_HELP, table_options, print_frame, say, cli, open_store


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
    from harness.db.statements import only_comments

    if only_comments(query):
        raise click.BadParameter("holds only comments: give one SQL statement", param_hint="QUERY")
    store = open_store(db, write=write, upgrade=False)
    with store.stream(query, write=write, timeout_s=timeout or None) as rows:
        if write and not rows.columns:
            count = rows.rowcount if rows.rowcount is not None and rows.rowcount >= 0 else 0
            message = f"{count} row{'s' if count != 1 else ''} changed"
        else:
            if not rows.columns:
                list(rows.chunks)
            # color=True: click would strip what looks like ANSI codes from values into a file or pipe
            # (csv and json keep every value whole); on a terminal write_rows writes them out itself
            written, more = output.write_rows(rows.columns, rows.chunks, fmt, max_rows or None,
                                              functools.partial(click.echo, color=True),
                                              lambda frame: print_frame(frame, fmt, wide, keep=whole_columns(frame)),
                                              terminal=sys.stdout.isatty())
            message = None
    if message:
        click.echo(message)
    elif more:
        click.echo(f"note: stopped after {written} rows (--max-rows {max_rows}); the statement has more: "
                   "narrow it, or pass --max-rows 0 with --format csv", err=True)


def whole_columns(frame) -> list[str]:
    """The columns of `bench sql`'s answer a terminal table folds but never cuts (issue 46, item 5): those whose
    every value is one word of at most MAX_WORD characters (case ids, GPU names without spaces, hashes), so that an
    id stays whole; prose is still cut at output.TABLE_CELL."""
    kept = []
    for name in frame.columns:
        values = frame[name].dropna()
        if len(values) and all(isinstance(v, str) and " " not in v and len(v) <= MAX_WORD for v in values):
            kept.append(name)
    return kept


MAX_WORD = 160  # characters: longer than any case id (spec.MAX_CASE_ID, 128)


@cli.command()
@click.option("--unmapped", is_flag=True, help="the figures that map to none of our cases or metrics, and why")
@click.option("--all", "every_row", is_flag=True,
              help="with --unmapped, every figure (default: a table, the count of each reason first)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def references(unmapped, every_row, db, fmt, wide):
    """The published figures shipped with the harness (paper tables, the article's, datasheets).

    \b
    Examples:
      bench references
      bench references --unmapped
      bench references --unmapped --all --format csv
    """
    store = open_store(db)
    if not unmapped:
        frame = store.query("SELECT source, gpu_name, metric, COUNT(*) AS figures, COUNT(also_in) AS also_printed_elsewhere "
                            "FROM reference_values GROUP BY source, gpu_name, metric ORDER BY source, gpu_name")
        print_frame(frame, fmt, wide, first=("source", "gpu_name", "metric", "figures"))
        return
    frame = store.query("SELECT source, source_table, gpu, metric AS mapped_metric, value, unit, unmapped_reason "
                        "FROM reference_figures WHERE case_id IS NULL ORDER BY id")
    if fmt != "table":  # a program gets every figure, whole
        print_frame(frame, fmt, wide)
        return
    # a figure in the unit a person reads: "108 SMs", not a column of mixed magnitudes in exponents
    frame["figure"] = [f"{output.readable(v)} {u or ''}".strip() if v == v else (u or "")
                       for v, u in zip(frame.value, frame.unit)]
    frame["reason"] = frame.unmapped_reason.fillna("").map(lambda r: " ".join(r.split()))
    import re

    # one line a kind of reason: the shapes a reason quotes ('block 8x8; 1 blocks/SM') differ figure by figure
    kind = frame.reason.map(lambda r: re.sub(r"'[^']*'", "'...'", r))
    short = frame.source.map(lambda s: "authors' repo" if s.startswith("repo ") else s)
    summary = (pd.DataFrame({"reason": kind, "source": short}).groupby("reason", sort=False)
               .agg(figures=("source", "size"), sources=("source", lambda s: ", ".join(sorted(set(s)))))
               .reset_index().sort_values("figures", ascending=False, kind="stable"))
    say(f"{len(frame)} published figures map to no case or metric of ours; the reasons, most figures first:")
    print_frame(summary[["figures", "reason", "sources"]], fmt, wide, keep=("figures", "reason"), cut=0)
    if every_row:
        click.echo("")
        print_frame(frame[["source_table", "figure", "reason", "source", "gpu", "mapped_metric"]], fmt, wide,
                    keep=("source_table", "figure", "reason"), cut=0)
    else:
        click.echo("(--all lists every figure with its table; --format csv gives them whole)", err=True)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="the run (default: the newest)")
@click.option("--family", default=None, help="one family's cases (default: every case of the run)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def export(run_id, family, db, fmt, wide):
    """A run's results one row per case: its configuration as columns (the case's own fields, parsed from its
    id: for a GEMM tile, stages, cluster, schedule, dtype, ...), then each metric's value as a column, `metric`
    or `metric {launch}` where a case measures one several ways. For spreadsheets and pandas: --format csv|json.

    \b
    Examples:
      bench export --run 126 --family gemm --format csv > fp8.csv
      bench export --run 122 --family attention --format json
    """
    from harness.db.frames import results
    from harness.errors import SpecError
    from harness.registry import parse_case_id

    store = open_store(db)
    runs = store.runs()
    if runs.empty:
        raise click.UsageError("the database holds no runs")
    run_id = int(runs.run.max()) if run_id is None else run_id
    if run_id not in set(runs.run.astype(int)):
        raise click.UsageError(f"no run {run_id} (runs {int(runs.run.min())}..{int(runs.run.max())})")
    frame = results(store, run_id=run_id)
    families = sorted(frame.family.dropna().unique())
    if family is not None:
        if family not in families:
            raise click.UsageError(f"run {run_id} has no {family} cases (it has: {', '.join(families) or 'none'})")
        frame = frame[frame.family == family]
    frame = frame[frame.value.notna()]
    if frame.empty:
        raise click.UsageError(f"run {run_id} holds no measured values" + (f" of {family}" if family else ""))
    # a metric a case measures several ways (a TMA latency from L2 and from HBM) gets a column per way, named
    # by its launch's keys; else the metric's name alone
    several = set(frame.groupby(["case_id", "metric"]).launch_key.nunique().loc[lambda n: n > 1]
                  .index.get_level_values("metric"))
    frame = frame.assign(column=[m if m not in several or not launch else
                                 f"{m} [{', '.join(f'{k}={v}' for k, v in sorted(launch.items()))}]"
                                 for m, launch in zip(frame.metric, frame.launch)])
    values = frame.pivot_table(index="case_id", columns="column", values="value", aggfunc="first", sort=False)
    fields = {}
    for case_id in values.index:
        try:
            fields[case_id] = {k: v for k, v in parse_case_id(case_id).params().items() if k != "case_id"}
        except SpecError:  # an id of an older harness: its values, no fields
            fields[case_id] = {}
    names = list(dict.fromkeys(name for case in fields.values() for name in case))  # every field, then metrics
    table = pd.DataFrame([{"case_id": case_id, **{n: fields[case_id].get(n) for n in names},
                           **measured.dropna().to_dict()} for case_id, measured in values.iterrows()])
    print_frame(table, fmt, wide, keep=("case_id",))
