"""`bench list`, `bench run` (one GPU or every GPU of the node) and `bench show`."""

from __future__ import annotations

import sys

import click
import pandas as pd

from harness.orchestration.worker import DEFAULT_WATCHDOG_S
from harness.cli.app import (
    Finite, RUN_ID, GPU_INDEX, DB_HELP, print_frame, cli, fail,
)


@cli.command("list")
@click.option("--suite", "suite", default=None, help="list this suite's cases (default: list the suites)")
@click.option("--filter", "filter_", default=None,
              help="comma-separated globs on the case id (without --suite: over every case of every family)")
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
    if suite is None:
        from harness.registry import FAMILIES

        cases = [case for family in FAMILIES.values() for case in family.cases()]
    else:
        cases = suite_cases(suite)
    for case in select(cases, filter_):
        click.echo(case.case_id)


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
@click.option("--jobs", default=None, type=click.IntRange(1, 1024), help="parallel compile jobs (default: half the CPUs; the other half keep the measurement running)")
@click.option("--force", is_flag=True,
              help="with --resume: resume a run still marked running whose process is gone (killed, its machine lost)")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1), help="seed of the random inputs")
@click.option("--watchdog", default=DEFAULT_WATCHDOG_S, show_default=True, type=Finite(1, 86400), metavar="SECONDS",
              help="a case with no result after this long is stored as a hang and its worker killed")
@click.option("--progress", "progress_mode", type=click.Choice(["bars", "lines"]), default="bars", hidden=True)
def run(suite, filter_, resume, gpu, gpus, db, jobs, force, seed, watchdog, progress_mode):
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
      bench run --resume 7 --force      # a run killed with -9: still marked running
    """
    from harness.orchestration.conduct import Request

    if force and resume is None:
        raise click.UsageError("--force goes with --resume RUN_ID (a run still marked running whose process is gone)")
    if gpus is not None:
        if gpu is not None or resume is not None:
            raise click.UsageError("--gpus runs a suite on several GPUs: drop --gpu and --resume (resume each run "
                                   "with `bench run --resume ID`, which finds its GPU by UUID)")
        if suite is None:
            raise click.UsageError("missing option --suite; suites: see `bench list`")
        return _run_node(gpus, suite, filter_, db, jobs, seed, watchdog)
    if resume is not None:
        if suite or filter_:
            raise click.UsageError("--resume takes the suite and filter from the run: drop --suite/--filter")
    elif suite is None:
        raise click.UsageError("missing option --suite (or --resume RUN_ID); suites: see `bench list`")
    request = Request(suite=suite, filter=filter_, resume=resume, force=force, gpu=gpu, seed=seed,
                      watchdog_s=watchdog, jobs=jobs, argv=sys.argv)
    conduct_shown(request, db, progress_mode)


def conduct_shown(request, db, progress_mode: str = "bars"):
    """harness.orchestration.conduct.conduct, its progress drawn (bars, or for `--gpus` a line per case that the
    parent reads) and its summary printed: the run's line, then the first few cases that failed. Returns what
    conduct returned."""
    from harness.orchestration.conduct import conduct

    listener = _Lines() if progress_mode == "lines" else _Bars()
    done = conduct(request, db, listener)
    failed = done.failed
    faults = sum(r.status == "fault" for r in failed)
    click.echo(f"run {done.outcome.run_id}: {len(done.outcome.results)} cases measured, {len(failed) - faults} "
               f"invalid, {faults} faults, {done.seconds:.0f} s; stored in {done.store_url}")
    shown = 5  # the database holds every error; the console shows the first few
    for result in failed[:shown]:
        click.echo(f"  {result.status}: {result.case.case_id}: {result.error[:300]}", err=True)
    if len(failed) > shown:
        click.echo(f"  ... and {len(failed) - shown} more: bench sql \"SELECT DISTINCT case_id, status, error "
                   f"FROM results WHERE run_id={done.outcome.run_id} AND NOT valid\"", err=True)
    return done


def open_target(db):
    """The database at `db` opened for a run (upgraded first if older: a note on stderr), or None where there is
    none yet (the run makes it once the GPU is found)."""
    from harness.orchestration.conduct import open_target as opened

    return opened(db, False, _Shown())


def _upgraded(migration) -> None:
    """The note on stderr that an older database was upgraded (every `bench run`'s, one GPU or several)."""
    backup = f"; the old file is kept as {migration.backup}" if migration.backup else ""
    click.echo(f"note: upgraded the database from schema {migration.from_version} to "
               f"{migration.to_version}{backup}", err=True)


class _Shown:
    """What every display says: an upgraded database (stderr), the GPU and the count of cases (a Listener of
    harness/orchestration/conduct.py, which this module does not import until a run starts)."""

    def upgraded(self, migration) -> None:
        _upgraded(migration)

    def started(self, device, run_plan) -> None:
        self.total = len(run_plan.cases)
        resume = run_plan.resume
        what = f"resuming run {resume}: {self.total} of {run_plan.size}" if resume else f"{self.total}"
        click.echo(f"GPU {device.index}: {device.name}, {device.sm_count} SMs, driver {device.driver_version}; "
                   f"{what} cases")

    def compiled(self, build) -> None:
        pass

    def measured(self, result) -> None:
        pass

    def finished(self) -> None:
        pass


class _Lines(_Shown):
    """For `--gpus`: the parent draws one line per GPU from these (harness/orchestration/node.py)."""

    def started(self, device, run_plan) -> None:
        click.echo(f"device {device.index} {device.uuid} {device.name}")
        super().started(device, run_plan)
        self.done = 0

    def measured(self, result) -> None:
        self.done += 1
        click.echo(f"progress {self.done} {self.total} {result.case.case_id} {result.status}")


class _Bars(_Shown):
    """A bar for the compiler and one for the measurement, each with the case at hand."""

    progress = None

    def started(self, device, run_plan) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        super().started(device, run_plan)
        columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[detail]}"))
        self.progress = Progress(*columns, transient=False)
        self.progress.start()
        self.compiling = self.progress.add_task("compile", total=self.total, detail="")
        self.measuring = self.progress.add_task("measure", total=self.total, detail="")

    def compiled(self, build) -> None:  # None: an anchor (a library call) has nothing to compile
        self.progress.update(self.compiling, advance=1,
                             detail="library call" if build is None else "cached" if build.cached else build.name)

    def measured(self, result) -> None:
        first = next((m for m in result.metrics if m.value is not None), None)
        shown = f"{first.name} {first.value:.4g} {first.unit}" if first and result.valid else result.status.upper()
        self.progress.update(self.measuring, advance=1, detail=f"{result.case.case_id} {shown}")

    def finished(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _run_node(gpus, suite, filter_, db, jobs, seed, watchdog):
    """harness.orchestration.conduct.conduct_node (the one library call), a bar per GPU drawn, then each run's
    summary lines and, where any failed, the error line; the exit status is the worst of the runs'."""
    from harness.orchestration.conduct import Request, conduct_node

    request = Request(suite=suite, filter=filter_, seed=seed, watchdog_s=watchdog, jobs=jobs, argv=sys.argv)
    done = conduct_node(gpus, request, db, _NodeBars())
    for child in done.children:
        for line in child.summary:
            if not line.startswith(("GPU ", "compile", "measure")):
                click.echo(f"[{child.label}] {line}")
    if done.worst:  # the last line says it, as every failing command's does
        failed = [child.label for child in done.failed]
        fail(f"{len(failed)} of {len(done.children)} runs failed ({', '.join(failed)}): their errors are above",
             done.worst)
    sys.exit(done.worst)


class _NodeBars:
    """For `--gpus`: the GPUs named, then a bar per GPU from its process's lines (a NodeListener of
    harness/orchestration/conduct.py)."""

    progress = None

    def upgraded(self, migration) -> None:
        _upgraded(migration)

    def started(self, indices, suite) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        click.echo(f"{len(indices)} GPUs ({', '.join(map(str, indices))}): one run each of suite {suite}")
        columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.fields[detail]}"))
        self.progress = Progress(*columns, transient=False)
        self.progress.start()
        self.tasks = {i: self.progress.add_task(f"GPU {i}", total=None, detail="starting") for i in indices}

    def updated(self, child) -> None:
        self.progress.update(self.tasks[child.index], description=child.label, completed=child.done,
                             total=child.total or None, detail=child.detail[:60])

    def finished(self) -> None:
        if self.progress is not None:
            self.progress.stop()


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
    from harness.anchors import has_probe
    from harness.registry import probe_source
    from harness.registry import parse_case_id

    case = parse_case_id(case_id)
    family = family_of(case)
    family.check(case)
    if not has_probe(case):  # an anchor: a library call, with no source of ours
        click.echo(f"// {case.case_id}: a library call, no probe source (harness/anchors)")
        click.echo(f"// ---- {family.name}")
        for line in family.describe(case):
            click.echo(f"// {line}")
        return
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
