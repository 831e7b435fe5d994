"""The `bench` command: a thin layer over the library. Each command parses its options, calls one
library function and formats the result; HarnessError becomes one line and a non-zero exit."""

from __future__ import annotations

import signal
import sys
import time

import click

from harness import output
from harness.errors import HarnessError
from harness.runner import RunSettings

DB_HELP = "results database: a file path or SQLAlchemy URL (default: $HOPPER_BENCH_DB or ./results.db)"


class BenchGroup(click.Group):
    """Turns every user error (ours or click's) into one line on stderr and a non-zero status."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except HarnessError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            command = " ".join(sys.argv[1:2]) if args is None else " ".join(list(args)[:1])
            hint = f" (see `bench {command} --help`)" if command and not command.startswith("-") else ""
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=BenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hopper-bench")
def cli():
    """hopper-bench: measure Hopper tensor-core instructions and keep every number in SQL.

    \b
    Examples:
      bench list
      bench run --suite wgmma
      bench sql "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles'"
    """


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
        for name, (description, make) in SUITES.items():
            click.echo(f"{name:<12} {len(make()):>4} cases  {description}")
        return
    for case in select(suite_cases(suite or "wgmma"), filter_):
        click.echo(case.case_id)


@cli.command()
@click.option("--suite", required=True, help="suite to run (see `bench list`)")
@click.option("--filter", "filter_", default=None, help="comma-separated globs on the case id")
@click.option("--gpu", default=0, show_default=True, type=int, help="CUDA device index")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--jobs", default=None, type=int, help="parallel compile jobs (default: CPU count)")
@click.option("--seed", default=0, show_default=True, type=int, help="seed of the random inputs")
def run(suite, filter_, gpu, db, jobs, seed):
    """Measure a suite on a GPU and store every measurement.

    Each case is compiled for sm_90a, validated against a NumPy reference, then timed; its
    measurements are committed at once, so an interrupted run keeps what it measured.

    \b
    Examples:
      bench run --suite wgmma
      bench run --suite wgmma --filter '*.f16.f16.SS' --db h100.db
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.device import open_device
    from harness.run import execute, plan
    from harness.store import resolve_url

    run_plan = plan(suite, filter_)
    resolve_url(db)  # a malformed URL fails here, before any GPU work
    if jobs is not None and jobs < 1:
        raise click.BadParameter("must be at least 1", param_hint="--jobs")
    device = open_device(gpu)
    click.echo(f"GPU {device.index}: {device.name}, {device.sm_count} SMs, driver {device.driver_version}; "
               f"{len(run_plan.cases)} cases")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM marks the run interrupted too
    started = time.monotonic()
    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[detail]}"))
    invalid = []
    with Progress(*columns, transient=False) as progress:
        compiling = progress.add_task("compile", total=len(run_plan.cases), detail="")
        measuring = progress.add_task("measure", total=len(run_plan.cases), detail="")

        def on_compiled(build):
            progress.update(compiling, advance=1, detail="cached" if build.cached else build.name)

        def on_case(result):
            if not result.valid:
                invalid.append(result)
            interval = next((m.value for m in result.metrics if m.name == "issue_interval_cycles"), None)
            detail = f"{result.case.case_id} " + (f"{interval:.1f} cyc" if interval else "INVALID")
            progress.update(measuring, advance=1, detail=detail)

        outcome = execute(run_plan, db, device, jobs=jobs, settings=RunSettings(seed=seed), argv=sys.argv,
                          on_compiled=on_compiled, on_case=on_case)
    click.echo(f"run {outcome.run_id}: {len(outcome.results)} cases, {len(invalid)} invalid, "
               f"{time.monotonic() - started:.0f} s; stored in {resolve_url(db)}")
    shown = 5  # the database holds every error; the console shows the first few
    for result in invalid[:shown]:
        click.echo(f"  invalid: {result.case.case_id}: {result.error[:300]}", err=True)
    if len(invalid) > shown:
        click.echo(f"  ... and {len(invalid) - shown} more: bench sql \"SELECT DISTINCT case_id, error "
                   f"FROM results WHERE run_id={outcome.run_id} AND NOT valid\"", err=True)


@cli.command()
@click.option("--db", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(output.FORMATS), default="table", show_default=True)
def runs(db, fmt):
    """List the stored runs, newest last.

    \b
    Example:
      bench runs --format markdown
    """
    from harness.store import Store

    click.echo(output.render_frame(Store.open(db).runs(), fmt))


@cli.command()
@click.argument("query")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(output.FORMATS), default="table", show_default=True)
def sql(query, db, fmt):
    """Run a SQL query on the results database (views: results).

    \b
    Examples:
      bench sql "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles'"
      bench sql "SELECT gpu_name, n, value FROM results WHERE metric='throughput_tflops'" --format csv
    """
    from harness.store import Store

    click.echo(output.render_frame(Store.open(db).query(query), fmt))


@cli.command()
@click.argument("case_id")
@click.option("--sass", is_flag=True, help="also print the disassembly (needs nvdisasm)")
def show(case_id, sass):
    """Print a case's rendered CUDA source, descriptors and compile log (no GPU needed).

    \b
    Example:
      bench show wgmma.mma_async.m64n128k16.f32.bf16.bf16.SS --sass
    """
    from harness import sass as sass_module
    from harness.compile import compile_probe
    from harness.families import family_of
    from harness.render import render
    from harness.spec import parse_case_id

    case = parse_case_id(case_id)
    family = family_of(case)
    family.check(case)
    source = render(case)
    build = compile_probe(source)
    click.echo(source.text)
    click.echo("// ---- descriptors")
    for name, descriptor in zip(("A", "B"), family.descriptors(case)):
        click.echo(f"// {name}: " + (descriptor.describe() if descriptor else "registers (RS mode)"))
    click.echo(f"// ---- compile log (NVRTC {build.nvrtc_version}, {' '.join(build.options)})")
    click.echo(build.log.strip() or "(empty)")
    if sass:
        for kernel, instructions in sass_module.disassemble(build.cubin_path).items():
            click.echo(f"// ---- SASS {kernel}")
            click.echo("\n".join(instructions))


def main():
    cli()
