"""`bench merge` and `bench db upgrade`: the database itself."""

from __future__ import annotations

import sys

import click

from harness.errors import HarnessError
from harness.cli.app import DB_HELP, cli, shipped_references, open_store


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--into", required=True, help="the database to merge into (a path or URL; created if missing)")
def merge(sources, into):
    """Bring the runs of other results databases into one, without duplicates (merging twice adds
    nothing). Older files are read through an upgraded copy; each source is only read.

    \b
    Examples:
      bench merge h100.db h200.db --into results.db
      bench merge node*/results.db --into sqlite:///fleet.db
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from harness.db.connections import describe
    from harness.db.files import resolve_url
    from harness.db.merge import merge as merge_databases

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("runs"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, transient=True, console=Console(stderr=True),
                  disable=not sys.stderr.isatty()) as bar:
        tasks = {}

        def on_progress(name, done, total):
            if name not in tasks:
                tasks[name] = bar.add_task(name[-40:], total=total)
            bar.update(tasks[name], completed=done)

        def on_open(migration):  # like every writing command: an upgraded target is said, with its backup
            if migration:
                backup = f"; the old file is kept as {migration.backup}" if migration.backup else ""
                click.echo(f"note: upgraded {describe(resolve_url(into, write=True))} from schema "
                           f"{migration.from_version} to {migration.to_version}{backup}", err=True)

        reports = merge_databases(list(sources), into, shipped_references(), on_progress, on_open)
    try:
        for report in reports:
            click.echo(report.line())
        sys.stdout.flush()
    except OSError as exc:  # the merge is committed: only its report was lost
        raise HarnessError(f"merged into {into} (committed), but its report could not be printed: "
                           f"{exc.strerror or exc}") from None


@cli.group()
def db():
    """Inspect or upgrade the results database's schema.

    \b
    Examples:
      bench db upgrade --db old-results.db
    """


@db.command("upgrade")
@click.option("--db", "db_path", default=None, help=DB_HELP)
def db_upgrade(db_path):
    """Upgrade an older results database to this harness's schema (a backup is kept).

    `bench run` and `bench merge` upgrade an older file when they write to it; the commands that
    only read, and `bench sql --write`, leave it as it is and say to run this one. A damaged file
    is refused before anything is written.

    \b
    Example:
      bench db upgrade --db old-results.db
    """
    from harness.db.store import check_integrity

    check_integrity(db_path)  # a damaged file is refused before anything is written to it
    store = open_store(db_path, write=True)
    if store.migration is None:
        click.echo(f"{store.url} is at schema {store.schema_version()}, the newest: nothing to do")
