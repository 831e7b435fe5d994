"""`bench report` and `bench site`: what a run, and every run, say, as pages."""

from __future__ import annotations


import click

from harness.cli.app import RUN_ID, DB_HELP, cli, fail, open_store

# What a different --out can mend (no permission, a read-only file system, a place that cannot be made, a file in a
# folder's place, a name too long); any other failure (a full disk, an I/O error) is no fault of the option: one
# line, exit 1, not exit 2.
_OPTION_FAULTS = {"EACCES", "EPERM", "EROFS", "ENOENT", "ENOTDIR", "EISDIR", "EEXIST", "ENAMETOOLONG", "ELOOP"}


def _cannot_write(what: str, out, exc: OSError):
    """A failure to write the report or the site under `out`, in one line with the status its cause deserves."""
    import errno

    message = f"cannot write the {what} under {out}: {exc.strerror or exc}"
    if errno.errorcode.get(exc.errno) in _OPTION_FAULTS:
        raise click.BadParameter(message, param_hint="--out") from None
    fail(message, 1)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="run to report (default: the newest complete run)")
@click.option("--out", "out", default="bench-reports", show_default=True, type=click.Path(file_okay=False),
              help="directory that receives <gpu>-<date>-run<N>/ (report.md, report.html, figures); "
                   "the shipped reports/ is written by scripts/make_reports.sh")
@click.option("--include-flagged", is_flag=True, help="keep measurements taken while throttled or shared")
@click.option("--db", default=None, help=DB_HELP)
def report(run_id, out, include_flagged, db):
    """Write a Markdown and a self-contained HTML report of a run, with PNG figures, into
    OUT/<gpu>-<date>-run<N>/ (reading the database only).

    \b
    Examples:
      bench report                                  # bench-reports/nvidia-h100-80gb-hbm3-<date>-run<N>/
      bench report --run 5 --out /tmp/reports
    """
    from pathlib import Path

    from harness.analysis.report import build

    store = open_store(db)
    try:
        result = build(store, run_id, Path(out), include_flagged)
    except OSError as exc:
        _cannot_write("report", out, exc)
    click.echo(f"wrote {result.markdown}, {result.html} and {len(result.figures)} figures")


@cli.command()
@click.option("--out", "out", default="bench-site", show_default=True, type=click.Path(file_okay=False),
              help="directory that receives index.html (the shipped site is reports/index.html)")
@click.option("--reports", "reports", default=None, type=click.Path(file_okay=False),
              help="the folder of `bench report` output to link each run to (default: OUT's parent's "
                   "bench-reports/ or reports/, whichever holds reports)")
@click.option("--db", default=None, help=DB_HELP)
def site(out, reports, db):
    """Write one static HTML page over every run and GPU in the database: what the measurements say
    (each family's question, answered from the newest measurements), every GPU against
    the paper and its siblings, history across commits, and every run linked to its report.

    \b
    Examples:
      bench site                                   # bench-site/index.html
      bench site --db results.db --out reports --reports reports
    """
    from pathlib import Path

    from harness.analysis.site import build

    store = open_store(db)
    if reports is None:
        here = Path(out).resolve().parent
        found = [here / name for name in ("bench-reports", "reports") if (here / name).is_dir()]
        reports = found[0] if found else None
    import sys
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.monotonic()
    # on a terminal, a bar naming the step at work (about 15 s over the runs of record); else nothing
    with Progress(TextColumn("site: {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True, console=Console(stderr=True), disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("starting", total=None)

        def on_progress(step, done, steps):
            bar.update(task, description=step, completed=done, total=steps)

        try:
            result = build(store, Path(out), Path(reports) if reports else None, on_progress)
        except OSError as exc:
            _cannot_write("site", out, exc)
    click.echo(f"wrote {result.page} ({len(result.sections)} sections) in {time.monotonic() - started:.1f} s")
