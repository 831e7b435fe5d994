"""The `bench` command's frame: the group, its error handling, and what every command shares (option
types, opening the store, printing tables and prose). The commands live in the modules beside it:
each parses its options, calls one library function and formats the result; HarnessError becomes
one line and a non-zero exit."""

from __future__ import annotations

import math
import os
import sys

import click

from harness import output
from harness.errors import HarnessError, one_line, redact


class Finite(click.ParamType):
    """A finite float in [low, high]: NaN and infinities are refused with the valid range."""

    name = "number"

    def __init__(self, low: float, high: float):
        self.low, self.high = low, high

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not (math.isfinite(number) and self.low <= number <= self.high):
            self.fail(f"{value} is not in the range {self.low:g}..{self.high:g}", param, ctx)
        return number


RUN_ID = click.IntRange(1, 2**63 - 1)  # what a run id can be (SQLite's integer)
GPU_INDEX = click.IntRange(0, 1023)
DB_HELP = ("results database: a file path or SQLAlchemy URL (default: $HOPPER_BENCH_DB, else your ./bench.db; "
           "reading, the shipped runs of record in ./results.db until ./bench.db exists)")


MAX_MESSAGE = 400  # characters of an error line


EXIT_DIFFERENCES = 3  # bench compare: a row fails the comparison (harness/analysis/compare.py Comparison.failed)
COMPARE_COLUMNS = {  # what a terminal table of `bench compare` shows first, by what it compares with
    "paper": ("case_id", "metric", "value", "paper", "unit", "paper_ratio", "verdict", "launch", "note"),
    "model": ("case_id", "metric", "value", "model", "model_ratio", "model_verdict", "launch"),
    "run": ("case_id", "metric", "value", "other", "ratio", "change_pct", "verdict", "basis", "launch"),
}


def table_options(command):
    """--format and --wide, for every command that prints a table."""
    command = click.option("--wide", is_flag=True,
                           help="a table keeps every column, however wide (default: fit the terminal)")(command)
    return click.option("--format", "fmt", type=click.Choice(output.FORMATS), default="table", show_default=True,
                        help="table: fitted to the terminal; csv, json, markdown: every column, whole")(command)


def print_frame(frame, fmt: str, wide: bool = False, first=(), cut: int = output.TABLE_CELL, keep=(),
                below: str | None = None) -> None:
    """Print `frame` (a table fitted to the terminal, coloured on a colour terminal; `keep`: columns
    never left out, `below`: a column printed under each row, output.text_table); a note on stderr
    names the columns left out to fit."""
    if fmt == "csv" and sys.stdout.isatty():  # a file gets every value whole; a terminal never a control character
        frame = frame.map(lambda v: output.visible(v) if isinstance(v, str) else v)
    table = output.render(frame, fmt, first, wide, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ, cut=cut,
                          keep=keep, below=below)
    click.echo(table.text, color=True)
    if table.hidden:
        click.echo(f"note: {len(table.hidden)} more column{'s' if len(table.hidden) > 1 else ''} "
                   f"({', '.join(table.hidden)}): --wide shows them, --format csv gives every value whole",
                   err=True)


def say(text: str, err: bool = False) -> None:
    """A line of prose, wrapped to the terminal (continuation lines indented)."""
    import textwrap

    click.echo(textwrap.fill(output.visible(text), width=output.terminal_width(), subsequent_indent="  ",
                             break_on_hyphens=False), err=err)


def fail(message: object, code: int) -> None:
    """The one way out of a failing command: one line on stderr (its first line, passwords masked,
    at most MAX_MESSAGE characters) and the exit status."""
    lines = redact(message).strip().splitlines() or ["failed"]
    line = one_line(lines[0])  # raw bytes as \\xNN
    line = line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."
    click.echo(f"error: {line}", err=True)
    sys.exit(code)


class BenchGroup(click.Group):
    """Turns every error (ours, click's, the operating system's, or a bug) into one line on stderr and
    a non-zero status: no command prints a traceback. A subgroup's `shortcuts` ({name: command}, e.g.
    `bench advise plan`'s) are top-level commands too, unless one of the group's own has the name."""

    def _shortcuts(self) -> dict[str, click.Command]:
        found = {}
        for group in self.commands.values():
            found.update(getattr(group, "shortcuts", {}))
        return {name: command for name, command in found.items() if name not in self.commands}

    def get_command(self, ctx, name):
        return super().get_command(ctx, name) or self._shortcuts().get(name)

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *self._shortcuts()})

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # past click's main, which would print a blank line before our one
            raise _Interrupted() from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        import signal
        import threading

        quiet = (threading.current_thread() is threading.main_thread()
                 and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        previous = signal.signal(signal.SIGINT, _quiet_interrupt) if quiet else None
        try:
            self._main(args, prog_name, complete_var, **extra)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _main(self, args, prog_name, complete_var, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare `bench`: the commands, and how to start
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except HarnessError as exc:
            fail(exc, exc.exit_code)
        except click.ClickException as exc:
            # the help of the command that refused (the group's own for an unknown command)
            where = getattr(exc, "ctx", None)
            path = where.command_path.split()[1:] if where is not None else []
            hint = f" (see `{' '.join(['bench', *path, '--help'])}`)"
            fail(f"{exc.format_message()}{hint}", exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt, _Interrupted):
            _mute()
            fail("interrupted", 130)
        except OSError as exc:
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            fail(f"{exc.strerror or exc}{where}", 1)
        except ImportError as exc:  # the environment lacks a dependency (a bare GPU node, say)
            fail(f"the Python package '{exc.name or exc}' is missing: install hopper-bench with its dependencies"
                 " (`pip install \".[cuda13]\"`, see the README)", 1)
        except Exception as exc:
            # not imported here: if SQLAlchemy never loaded, this cannot be its error (and it may be missing)
            database_error = getattr(sys.modules.get("sqlalchemy.exc"), "DatabaseError", ())
            if isinstance(exc, database_error):  # e.g. a file damaged under us: the database's fault, not ours
                fail(f"database error: {str(getattr(exc, 'orig', exc))}", 4)
            fail(f"internal error ({type(exc).__name__}: {exc}); please report it with the command line", 70)
        sys.exit(rv if isinstance(rv, int) else 0)


class _Interrupted(Exception):
    """A Ctrl-C inside a command, on its way to BenchGroup.main's one line."""


def _mute() -> None:
    """Nothing but the one line after a Ctrl-C: the warnings and log records that libraries emit while
    unwinding (matplotlib's, from a figure half drawn) or at exit are dropped."""
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)


def _quiet_interrupt(_signum, _frame):
    _mute()
    raise KeyboardInterrupt


@click.group(cls=BenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hopper-bench")
def cli():
    """hopper-bench: measure Hopper tensor-core and data-movement instructions and keep every number in SQL.

    \b
    Examples:
      bench list
      bench run --suite wgmma
      bench sql "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles'"
    """
    from harness import environment

    environment.check()  # a bad HOPPER_BENCH_* value is one line here, not a worker's traceback


def shipped_references():
    from harness.published import shipped

    return shipped()


def open_store(db: str | None, write: bool = False, create: bool = False, upgrade: bool = True):
    """Store.open: read-only unless the command writes (`write`), and then telling the user (one line
    on stderr) when an older file was upgraded. The store is closed when the command ends."""
    from harness.db.store import Store

    if db is not None and not db.strip():
        raise click.BadParameter("is empty: give a file path or a database URL", param_hint="--db")
    from harness.db.store import SHIPPED_DB, USER_DB, default_db

    if db is None and not write and default_db(write=False) == SHIPPED_DB:
        click.echo(f"note: reading the runs of record in {SHIPPED_DB} (your own runs go to {USER_DB}; "
                   "--db or $HOPPER_BENCH_DB picks another)", err=True)
    store = Store.open(db, read_only=not write, create=create, upgrade=upgrade,
                       references=shipped_references() if write and upgrade else None)
    click.get_current_context().call_on_close(store.close)
    if store.migration:
        m = store.migration
        backup = f"; the old file is kept as {m.backup}" if m.backup else ""
        click.echo(f"note: upgraded {store.url} from schema {m.from_version} to {m.to_version}{backup}", err=True)
    return store
