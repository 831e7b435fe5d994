"""The `bench` command: a thin layer over the library. Each command parses its options, calls one
library function and formats the result; HarnessError becomes one line and a non-zero exit."""

from __future__ import annotations

import math
import os
import signal
import sys
import time

import click
import pandas as pd

from harness import output
from harness.errors import HarnessError, one_line, redact
from harness.measure.runner import RunSettings
from harness.measure.worker import DEFAULT_WATCHDOG_S

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
DIMENSION = click.IntRange(1, 1 << 20)  # advise swapab's n and k: up to a million
DB_HELP = ("results database: a file path or SQLAlchemy URL (default: $HOPPER_BENCH_DB, else your ./bench.db; "
           "reading, the shipped runs of record in ./results.db until ./bench.db exists)")


MAX_MESSAGE = 400  # characters of an error line


EXIT_DIFFERENCES = 3  # bench compare: a row disagrees with the paper or the model, or is slower than the other run
FAILING_VERDICTS = ("DISAGREES", "slower")
COMPARE_COLUMNS = {  # what a terminal table of `bench compare` shows first, by what it compares with
    "paper": ("case_id", "metric", "value", "paper", "paper_ratio", "verdict", "launch", "note"),
    "model": ("case_id", "metric", "value", "model", "model_ratio", "model_verdict", "launch"),
    "run": ("case_id", "metric", "value", "other", "ratio", "verdict", "launch"),
}


def table_options(command):
    """--format and --wide, for every command that prints a table."""
    command = click.option("--wide", is_flag=True,
                           help="a table keeps every column, however wide (default: fit the terminal)")(command)
    return click.option("--format", "fmt", type=click.Choice(output.FORMATS), default="table", show_default=True,
                        help="table: fitted to the terminal; csv, json, markdown: every column, whole")(command)


def print_frame(frame, fmt: str, wide: bool = False, first=(), cut: int = output.TABLE_CELL) -> None:
    """Print `frame` (a table fitted to the terminal, coloured on a colour terminal); a note on stderr
    names the columns left out to fit."""
    table = output.render(frame, fmt, first, wide, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ, cut=cut)
    click.echo(table.text, color=True)
    if table.hidden:
        click.echo(f"note: {len(table.hidden)} more column{'s' if len(table.hidden) > 1 else ''} "
                   f"({', '.join(table.hidden)}): --wide shows them, --format csv gives every value whole",
                   err=True)


def say(text: str, err: bool = False) -> None:
    """A line of prose, wrapped to the terminal (continuation lines indented)."""
    import textwrap

    click.echo(textwrap.fill(text, width=output.terminal_width(), subsequent_indent="  ",
                             break_on_hyphens=False), err=err)


def _run_label(store, run_id: int) -> str:
    info = store.run_info(run_id)
    commit = (info.git_commit or "no commit")[:8]
    return f"{info.gpu_name or 'unknown GPU'}, suite {info.suite}, commit {commit}"


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
    a non-zero status: no command prints a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare `bench`: the commands, and how to start
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except HarnessError as exc:
            fail(exc, exc.exit_code)
        except click.ClickException as exc:
            command = " ".join(sys.argv[1:2]) if args is None else " ".join(list(args)[:1])
            hint = f" (see `bench {command} --help`)" if command and not command.startswith("-") else ""
            fail(f"{exc.format_message()}{hint}", exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
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


@cli.command("list")
@click.option("--suite", "suite", default=None, help="list this suite's cases (default: list the suites)")
@click.option("--filter", "filter_", default=None, help="comma-separated globs on the case id")
def list_command(suite, filter_):
    """List the suites, or the cases of one suite.

    \b
    Examples:
      bench list
      bench list --suite wgmma --filter '*n128k16*'
    """
    from harness.suites import SUITES, select, suite_cases

    if suite is None and filter_ is None:
        print_frame(pd.DataFrame([(name, len(s.make()), s.description) for name, s in SUITES.items()],
                                 columns=["suite", "cases", "what it measures"]), "table", cut=0)
        return
    for case in select(suite_cases(suite or "wgmma"), filter_):
        click.echo(case.case_id)


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


@cli.command()
@click.option("--suite", default=None, help="suite to run (see `bench list`)")
@click.option("--filter", "filter_", default=None, help="comma-separated globs on the case id")
@click.option("--resume", "resume", default=None, type=RUN_ID, metavar="RUN_ID",
              help="measure only what an interrupted or failed run is missing")
@click.option("--gpu", default=None, type=GPU_INDEX,
              help="CUDA device index (default 0; with --resume, the GPU the run was taken on, by UUID)")
@click.option("--gpus", default=None, metavar="all|I,J,...",
              help="every GPU of the node (or these) at once: one worker process and one run per GPU")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--jobs", default=None, type=click.IntRange(1, 1024), help="parallel compile jobs (default: CPU count)")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1), help="seed of the random inputs")
@click.option("--watchdog", default=DEFAULT_WATCHDOG_S, show_default=True, type=Finite(1, 86400), metavar="SECONDS",
              help="a case with no result after this long is stored as a hang and its worker killed")
@click.option("--progress", "progress_mode", type=click.Choice(["bars", "lines"]), default="bars", hidden=True)
def run(suite, filter_, resume, gpu, gpus, db, jobs, seed, watchdog, progress_mode):
    """Measure a suite on a GPU and store every measurement.

    Each case is compiled for sm_90a, validated against a NumPy reference, then timed in a
    worker process; its measurements are committed at once. A probe that faults or hangs is
    stored as a fault and the run goes on with a fresh worker. Ctrl-C or SIGTERM marks the run
    interrupted; --resume measures what it is missing.

    \b
    Examples:
      bench run --suite wgmma
      bench run --suite wgmma --filter '*.f16.f16.SS' --db h100.db
      bench run --suite mma --gpus all
      bench run --resume 7
    """
    from harness.measure.run import execute, plan, plan_resume
    from harness.measure.worker import Worker

    if gpus is not None:
        if gpu is not None or resume is not None:
            raise click.UsageError("--gpus runs a suite on several GPUs: drop --gpu and --resume (resume each run "
                                   "with `bench run --resume ID`, which finds its GPU by UUID)")
        if suite is None:
            raise click.UsageError("missing option --suite; suites: see `bench list`")
        plan(suite, filter_)  # a bad suite or filter fails here, once, not in every child
        return _run_node(gpus, suite, filter_, db, jobs, seed, watchdog)
    if resume is not None:
        if suite or filter_:
            raise click.UsageError("--resume takes the suite and filter from the run: drop --suite/--filter")
        _check_store(db)  # upgraded first if it is older
        store = open_store(db)
        run_plan = plan_resume(store, resume)
        if gpu is None:
            from harness.measure.node import index_of

            gpu = index_of(store.run_info(resume).device_uuid)
    elif suite is None:
        raise click.UsageError("missing option --suite (or --resume RUN_ID); suites: see `bench list`")
    else:
        run_plan = plan(suite, filter_)
        _check_store(db)  # a bad --db fails here, before any GPU work
    gpu = 0 if gpu is None else gpu
    worker = Worker(gpu, RunSettings(seed=seed), watchdog_s=watchdog)
    # Both signals interrupt the run (even where SIGINT was inherited as ignored, as in background jobs).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    with worker:
        device = worker.start()
        what = f"resuming run {resume}: {len(run_plan.cases)} of {run_plan.size}" if resume else f"{len(run_plan.cases)}"
        if progress_mode == "lines":
            click.echo(f"device {device.index} {device.uuid} {device.name}")
        click.echo(f"GPU {device.index}: {device.name}, {device.sm_count} SMs, driver {device.driver_version}; "
                   f"{what} cases")
        started = time.monotonic()
        if progress_mode == "lines":  # for `--gpus`: the parent draws one line per GPU from these
            done = []

            def on_case(result):
                done.append(result)
                if not result.valid:
                    failed.append(result)
                click.echo(f"progress {len(done)} {len(run_plan.cases)} {result.case.case_id} {result.status}")

            failed = []
            outcome = execute(run_plan, db, worker, jobs=jobs, argv=sys.argv, on_case=on_case)
        else:
            outcome, failed = _run_with_bars(run_plan, db, worker, jobs)
    faults = sum(r.status == "fault" for r in failed)
    click.echo(f"run {outcome.run_id}: {len(outcome.results)} cases measured, {len(failed) - faults} invalid, "
               f"{faults} faults, {time.monotonic() - started:.0f} s; stored in {_where(db)}")
    shown = 5  # the database holds every error; the console shows the first few
    for result in failed[:shown]:
        click.echo(f"  {result.status}: {result.case.case_id}: {result.error[:300]}", err=True)
    if len(failed) > shown:
        click.echo(f"  ... and {len(failed) - shown} more: bench sql \"SELECT DISTINCT case_id, status, error "
                   f"FROM results WHERE run_id={outcome.run_id} AND NOT valid\"", err=True)


def _check_store(db):
    from harness.db.store import Store

    migration = Store.check_target(db)
    if migration:
        backup = f"; the old file is kept as {migration.backup}" if migration.backup else ""
        click.echo(f"note: upgraded the database from schema {migration.from_version} to "
                   f"{migration.to_version}{backup}", err=True)


def _where(db) -> str:
    from harness.db.store import describe, resolve_url

    return describe(resolve_url(db, write=True))


def _run_with_bars(run_plan, db, worker, jobs):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.measure.run import execute

    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[detail]}"))
    failed = []
    with Progress(*columns, transient=False) as progress:
        compiling = progress.add_task("compile", total=len(run_plan.cases), detail="")
        measuring = progress.add_task("measure", total=len(run_plan.cases), detail="")

        def on_compiled(build):
            progress.update(compiling, advance=1, detail="cached" if build.cached else build.name)

        def on_case(result):
            if not result.valid:
                failed.append(result)
            first = next((m for m in result.metrics if m.value is not None), None)
            shown = f"{first.name} {first.value:.4g} {first.unit}" if first and result.valid else result.status.upper()
            progress.update(measuring, advance=1, detail=f"{result.case.case_id} {shown}")

        outcome = execute(run_plan, db, worker, jobs=jobs, argv=sys.argv, on_compiled=on_compiled, on_case=on_case)
    return outcome, failed


def _run_node(gpus, suite, filter_, db, jobs, seed, watchdog):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.measure.node import gpu_indices, run_node

    from harness.db.store import Store

    indices = gpu_indices(gpus)
    Store.open(db, create=True, references=shipped_references()).close()  # created (or upgraded) once, before any GPU work
    args = ["--suite", suite, "--seed", str(seed), "--watchdog", str(watchdog)]
    args += (["--filter", filter_] if filter_ else []) + (["--db", db] if db else []) + \
        (["--jobs", str(jobs)] if jobs else [])
    click.echo(f"{len(indices)} GPUs ({', '.join(map(str, indices))}): one run each of suite {suite}")
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[detail]}"))
    with Progress(*columns, transient=False) as progress:
        tasks = {i: progress.add_task(f"GPU {i}", total=None, detail="starting") for i in indices}

        def on_update(child):
            progress.update(tasks[child.index], description=child.label, completed=child.done,
                            total=child.total or None, detail=child.detail[:60])

        children, worst = run_node(indices, args, on_update)
    for child in children:
        for line in child.summary:
            if not line.startswith(("GPU ", "compile", "measure")):
                click.echo(f"[{child.label}] {line}")
    sys.exit(worst)


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
@click.argument("case_id")
@click.option("--sass", is_flag=True, help="also print the disassembly (needs nvdisasm)")
def show(case_id, sass):
    """Print a case's rendered CUDA source, its family's notes on it and the compile log (no GPU needed).

    \b
    Example:
      bench show wgmma.mma_async.m64n128k16.f32.bf16.bf16.SS --sass
    """
    from harness.build import sass as sass_module
    from harness.build.compile import compile_probe
    from harness.registry import family_of
    from harness.registry import probe_source
    from harness.registry import parse_case_id

    case = parse_case_id(case_id)
    family = family_of(case)
    family.check(case)
    source = probe_source(case)
    build = compile_probe(source)
    click.echo(source.text)
    click.echo(f"// ---- {family.name}")
    for line in family.describe(case):
        click.echo(f"// {line}")
    click.echo(f"// ---- compile log (NVRTC {build.nvrtc_version}, {' '.join(build.options)})")
    click.echo(build.log.strip() or "(empty)")
    if sass:
        for kernel, instructions in sass_module.disassemble(build.cubin_path).items():
            click.echo(f"// ---- SASS {kernel}")
            click.echo("\n".join(instructions))


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="run to compare (default: the newest complete run)")
@click.option("--against", default="paper", show_default=True, metavar="paper|model|RUN_ID",
              help="the paper's H800 figures, the model's predictions, or another run")
@click.option("--metric", default=None, help="only this metric (e.g. issue_interval_cycles)")
@click.option("--disagreements", is_flag=True, help="only the rows that disagree (or differ from the other run)")
@click.option("--include-flagged", is_flag=True, help="keep measurements taken while throttled or shared")
@click.option("--exit-zero", is_flag=True, help="exit 0 even where rows differ (default: exit 3, for CI)")
@click.option("--tolerance", default=0.03, show_default=True, type=Finite(0, 10),
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
    from harness.analysis.compare import compare as compare_run

    if against not in ("paper", "model") and not (against.isdigit() and 1 <= int(against) <= RUN_ID.max):
        raise click.BadParameter(f"{against!r}: expected paper, model or a run id from 1 to {RUN_ID.max}",
                                 param_hint="--against")
    from harness.analysis.compare import default_run

    store = open_store(db)
    run_id = default_run(store) if run_id is None else run_id
    frame = compare_run(store, run_id, against, include_flagged, tolerance)
    if against.isdigit() and frame.empty:
        fail(f"runs {run_id} and {against} have no case, metric and launch in common ({_run_label(store, run_id)}; "
             f"{_run_label(store, int(against))})", 4)
    if against in ("paper", "model") and "model" in frame and len(frame) and frame.model.isna().all():
        click.echo("note: no model prediction for this run (its GPU has no row in gpu_specs.csv, or its "
                   "families have no model): the model columns are empty", err=True)
    if metric is not None:
        if metric not in set(frame.metric):
            raise click.BadParameter(f"{metric!r} is not among this comparison's metrics: "
                                     f"{', '.join(sorted(set(frame.metric)))}", param_hint="--metric")
        frame = frame[frame.metric == metric]
    column = "verdict" if against != "model" else "model_verdict"
    failing = frame[frame[column].isin(FAILING_VERDICTS)]
    if disagreements:
        frame = frame[frame[column].isin(FAILING_VERDICTS + ("faster",))]
    print_frame(frame.reset_index(drop=True), fmt, wide, first=COMPARE_COLUMNS[against if against in COMPARE_COLUMNS else "run"])
    other = f"run {against} ({_run_label(store, int(against))})" if against.isdigit() else \
        ("the paper (H800 PCIe)" if against == "paper" else "the model")
    counts = ", ".join(f"{n} {verdict}" for verdict, n in frame[column].value_counts().items()) or "no rows"
    click.echo(f"run {run_id} ({_run_label(store, run_id)}) against {other}: {counts}", err=True)
    if len(failing) and not exit_zero:
        sys.exit(EXIT_DIFFERENCES)


@cli.command()
@click.option("--gpu", default="H800 PCIe", show_default=True, help="a GPU of gpu_specs.csv (H100 SXM5, H800 PCIe, H20, ...)")
@click.option("--clock", type=click.FloatRange(100, 5000), default=None,
              help="SM clock in MHz for the predicted TFLOPS (default: the datasheet's boost clock)")
@click.option("--run", "run_id", default=None, type=RUN_ID,
              help="fit every family's model to this run instead (wgmma, mma, loaders, tma), with residuals")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def model(gpu, clock, run_id, db, fmt, wide):
    """Predict wgmma issue intervals and TFLOPS (f16, m64nNk16) from datasheet parameters, or fit every
    family's model to a run, with residuals: wgmma (issue interval, work per cycle per SM), mma.sync
    (issue interval, throughput, latency), ldmatrix/stmatrix (bank-bound bytes per cycle), TMA (copy
    latency, Little's law, the DSMEM hop).

    \b
    Examples:
      bench model --gpu H20
      bench model --gpu H800 --clock 1560
      bench model --run 4
    """
    from harness.families.wgmma import model as perfmodel

    if run_id is None:
        params = perfmodel.datasheet(gpu)
        say(f"{params.gpu}: B_smem = {params.b_smem:g} B/cycle/SM, F_tc = {params.f_tc:g} FLOP/cycle per "
            f"tensor core, floor = {params.l_min:g} cycles ({params.source})")
        print_frame(perfmodel.table(params, clock_mhz=clock), fmt, wide)
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


@cli.group()
def advise():
    """Instruction-choice advice from the model.

    \b
    Example:
      bench advise swapab --m 16 --n 64 --k 16 --gpu H20
    """


@advise.command("swapab")
@click.option("--m", "m", required=True, type=click.IntRange(1, 65536), help="rows of A and C")
@click.option("--n", "n", required=True, type=DIMENSION, help="rows of B, columns of C")
@click.option("--k", "k", required=True, type=DIMENSION, help="the reduction dimension")
@click.option("--gpu", default=None, help="predict with this GPU's datasheet parameters (default H100 SXM5)")
@click.option("--run", "run_id", default=None, type=RUN_ID, help="predict with the parameters fitted to this run")
@click.option("--operands", type=click.Choice(("SS", "RS")), default="SS", show_default=True)
@click.option("--db", default=None, help=DB_HELP)
def swapab(m, n, k, gpu, run_id, operands, db):
    """C = A.B^T with a small m: issue wgmma directly (M = m, padded to 64) or swapped (C^T = B.A^T)?

    \b
    Examples:
      bench advise swapab --m 16 --n 64 --k 16 --gpu H20
      bench advise swapab --m 16 --n 64 --k 4096 --run 4
    """
    from harness.families.wgmma import model as perfmodel

    if gpu and run_id is not None:
        raise click.UsageError("give --gpu or --run, not both")
    if run_id is not None:
        from harness.analysis.models import fit_run

        fits = fit_run(open_store(db), run_id)
        if "wgmma" not in fits:
            raise click.UsageError(f"run {run_id} has no wgmma issue intervals to fit")
        params = fits["wgmma"].params_for("f16")
    else:
        params = perfmodel.datasheet(gpu or "H100 SXM5")
    advice = perfmodel.swapab(m, n, k, params, operands=operands)
    click.echo(f"C = A.B^T, m={m} n={n} k={k}, f16 {operands}, model of {params.gpu} ({params.source}):")
    for choice in (advice.direct, advice.swapped):
        click.echo(f"  {choice.name:<8} {choice.count} x wgmma {choice.instruction}: {choice.cycles:g} cycles "
                   f"({choice.bound} bound)")
    click.echo(f"  -> {advice.recommendation} (direct / swapped = {advice.speedup:.2f})")


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
        raise click.BadParameter(f"cannot write the report under {out}: {exc.strerror or exc}",
                                 param_hint="--out") from None
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
    (where wgmma turns compute-bound, what a TMA box and copies in flight deliver), every GPU against
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
    try:
        result = build(store, Path(out), Path(reports) if reports else None)
    except OSError as exc:
        raise click.BadParameter(f"cannot write the site under {out}: {exc.strerror or exc}",
                                 param_hint="--out") from None
    click.echo(f"wrote {result.page} ({len(result.sections)} sections)")


@cli.command()
@click.option("--case", "case_glob", default=None, help="comma-separated globs on the case id (default: every case)")
@click.option("--metric", default=None, help="only this metric (or sm_clock_mhz, each GPU's measured clock)")
@click.option("--tolerance", default=0.03, show_default=True, type=Finite(0, 10),
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

        reports = merge_databases(list(sources), into, shipped_references(), on_progress)
    for report in reports:
        click.echo(report.line())


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


def main():
    cli()
