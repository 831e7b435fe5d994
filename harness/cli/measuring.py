"""`bench list`, `bench run` (one GPU or every GPU of the node) and `bench show`."""

from __future__ import annotations

import signal
import sys
import time

import click
import pandas as pd

from harness.orchestration.runner import RunSettings
from harness.orchestration.worker import DEFAULT_WATCHDOG_S
from harness.cli.app import (
    Finite, RUN_ID, GPU_INDEX, DB_HELP, print_frame, cli, fail, shipped_references,
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
    from harness.orchestration.run import plan, plan_resume

    if force and resume is None:
        raise click.UsageError("--force goes with --resume RUN_ID (a run still marked running whose process is gone)")
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
    elif suite is None:
        raise click.UsageError("missing option --suite (or --resume RUN_ID); suites: see `bench list`")
    else:
        run_plan = plan(suite, filter_)
    # The one store of the run: opened (upgraded first if it is older) before any GPU work, so that a bad
    # --db fails here; a new file is made only once the GPU is found. Closed when the command ends.
    store = _open_target(db, must_exist=resume is not None)
    click.get_current_context().call_on_close(lambda: store is not None and store.close())
    if resume is not None:
        run_plan = plan_resume(store, resume, force)
        if gpu is None:
            from harness.orchestration.node import index_of

            gpu = index_of(store.run_info(resume).device_uuid)
    conduct(run_plan, store, db, gpu, seed, watchdog, jobs, progress_mode)


def conduct(run_plan, store, db, gpu, seed, watchdog, jobs, progress_mode="bars", on_device=None):
    """A run as `bench run` conducts it: the worker on GPU `gpu` (default 0), the cases compiled meanwhile, each
    measured and stored in `store` (an open target, the caller's to close; or None: `db`, made once the GPU is
    found), progress, then the summary. `on_device(device)`, if given, makes the plan once the GPU is known (a
    family's Measurer: its choice of cases for that GPU), before the database is touched; `run_plan` is then None. Returns (outcome, device)."""
    from harness.orchestration.run import compiled, open_run_store
    from harness.orchestration.worker import Worker

    context = click.get_current_context()  # `store`, if given, is the caller's to close
    worker = Worker(0 if gpu is None else gpu, RunSettings(seed=seed), watchdog_s=watchdog)
    builds = compiled(run_plan.cases, jobs) if run_plan is not None else None  # compiling while the worker opens the GPU
    if builds is not None:
        context.call_on_close(builds.close)
    # Both signals interrupt the run (even where SIGINT was inherited as ignored, as in background jobs).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    with worker:
        device = worker.start()
        if on_device is not None:
            run_plan = on_device(device)
            builds = compiled(run_plan.cases, jobs)
            context.call_on_close(builds.close)
        # made now if new; a database of the other kind (simulated or real) refused: the only line
        if store is None:
            store = open_run_store(db, device)
            context.call_on_close(store.close)
        else:
            store = open_run_store(store, device)
        resume = run_plan.resume
        what = f"resuming run {resume}: {len(run_plan.cases)} of {run_plan.size}" if resume else f"{len(run_plan.cases)}"
        if progress_mode == "lines":
            click.echo(f"device {device.index} {device.uuid} {device.name}")
        click.echo(f"GPU {device.index}: {device.name}, {device.sm_count} SMs, driver {device.driver_version}; "
                   f"{what} cases")
        started = time.monotonic()
        if progress_mode == "lines":  # for `--gpus`: the parent draws one line per GPU from these
            from harness.orchestration.run import execute

            done = []

            def on_case(result):
                done.append(result)
                if not result.valid:
                    failed.append(result)
                click.echo(f"progress {len(done)} {len(run_plan.cases)} {result.case.case_id} {result.status}")

            failed = []
            outcome = execute(run_plan, store, worker, argv=sys.argv, on_case=on_case, builds=builds)
        else:
            outcome, failed = _run_with_bars(run_plan, store, worker, builds)
    faults = sum(r.status == "fault" for r in failed)
    click.echo(f"run {outcome.run_id}: {len(outcome.results)} cases measured, {len(failed) - faults} invalid, "
               f"{faults} faults, {time.monotonic() - started:.0f} s; stored in {store.url}")
    shown = 5  # the database holds every error; the console shows the first few
    for result in failed[:shown]:
        click.echo(f"  {result.status}: {result.case.case_id}: {result.error[:300]}", err=True)
    if len(failed) > shown:
        click.echo(f"  ... and {len(failed) - shown} more: bench sql \"SELECT DISTINCT case_id, status, error "
                   f"FROM results WHERE run_id={outcome.run_id} AND NOT valid\"", err=True)
    return outcome, device


def _open_target(db, must_exist: bool):
    """Store.open_target, telling the user (one line on stderr) when an older file was upgraded; None
    for a new file (unless `must_exist`: then the error that there is none)."""
    from harness.db.store import Store

    store = Store.open_target(db)
    if store is None:
        return Store.open(db) if must_exist else None  # a missing file: StoreError naming it
    migration = store.migration
    if migration:
        backup = f"; the old file is kept as {migration.backup}" if migration.backup else ""
        click.echo(f"note: upgraded the database from schema {migration.from_version} to "
                   f"{migration.to_version}{backup}", err=True)
    return store


def _run_with_bars(run_plan, store, worker, builds):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.orchestration.run import execute

    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[detail]}"))
    failed = []
    with Progress(*columns, transient=False) as progress:
        compiling = progress.add_task("compile", total=len(run_plan.cases), detail="")
        measuring = progress.add_task("measure", total=len(run_plan.cases), detail="")

        def on_compiled(build):  # None: an anchor (a library call) has nothing to compile
            progress.update(compiling, advance=1,
                            detail="library call" if build is None else "cached" if build.cached else build.name)

        def on_case(result):
            if not result.valid:
                failed.append(result)
            first = next((m for m in result.metrics if m.value is not None), None)
            shown = f"{first.name} {first.value:.4g} {first.unit}" if first and result.valid else result.status.upper()
            progress.update(measuring, advance=1, detail=f"{result.case.case_id} {shown}")

        outcome = execute(run_plan, store, worker, argv=sys.argv, on_compiled=on_compiled, on_case=on_case,
                          builds=builds)
    return outcome, failed


def _run_node(gpus, suite, filter_, db, jobs, seed, watchdog):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.orchestration.node import gpu_indices, run_node

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
    if worst:  # the last line says it, as every failing command's does
        failed = [child.label for child in children if child.process.returncode]
        fail(f"{len(failed)} of {len(children)} runs failed ({', '.join(failed)}): their errors are above", worst)
    sys.exit(worst)


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
