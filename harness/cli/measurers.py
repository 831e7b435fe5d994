"""`bench NAME` for each family's Measurer (harness/families/base.py): cases a family chooses for the GPU at hand,
measured in one run as `bench run` measures a suite (orchestration/conduct.py), then read back. The commands are made
when first asked for (other commands never import the families for them) and are top-level commands through the
advise group's shortcuts; `bench gemm` is the gemm family's."""

from __future__ import annotations

import functools

import click

from harness import output
from harness.cli.app import Finite, RUN_ID, GPU_INDEX, DB_HELP, print_frame, say
from harness.orchestration.worker import DEFAULT_WATCHDOG_S


@functools.cache
def measurer_commands() -> dict[str, click.Command]:
    """`bench NAME` for every family's measurer, made when first asked for (the advise group lists them among
    the top-level shortcuts: harness/cli/modelling.py AdvisorGroup)."""
    from harness.registry import FAMILIES

    return {m.name: measurer_command(family, m) for family in FAMILIES.values() for m in family.measurers}


def measurer_command(family, measurer) -> click.Command:
    """`bench NAME` from a family's Measurer: its options, then --fit-run, --gpu, --db, --jobs, --seed, --watchdog,
    --format and --wide."""

    def run_measurer(fit_run_id, gpu, db, jobs, seed, watchdog, fmt, wide, **values):
        from harness.cli.measuring import conduct_shown, open_target
        from harness.errors import SpecError, StoreError
        from harness.orchestration.conduct import Request
        from harness.orchestration.run import plan_cases

        state = measurer.prepare(values)
        store = open_target(db)  # read for --fit-run before the run; None: a new file, made once the GPU is found
        click.get_current_context().call_on_close(lambda: store is not None and store.close())
        fit = None
        if fit_run_id is not None:
            if store is None:
                raise StoreError(f"--fit-run {fit_run_id}: no results database at {db or 'the default'} to fit from")
            from harness.analysis.models import fit_run

            fit = fit_run(store, fit_run_id).get(family.name)
            if fit is None:
                raise SpecError(f"--fit-run {fit_run_id}: the run has no {family.name} measurements its model fits")

        def on_device(device):
            return plan_cases(*measurer.plan(state, device, fit))

        request = Request(choose=on_device, gpu=gpu, seed=seed, watchdog_s=watchdog, jobs=jobs)
        outcome = conduct_shown(request, db if store is None else store).outcome
        advice = measurer.report(state, outcome.results, fit)
        prose = fmt in ("table", "markdown")  # csv and json: the table alone on stdout, the prose on stderr
        table = advice.table
        if fmt == "table" and not wide and "case_id" in table:  # the configuration is in the columns
            table = table.drop(columns=["case_id"])
        for line in advice.lead:
            say(f"Run {outcome.run_id}, {line}" if line is advice.lead[0] else line, err=not prose)
        print_frame(table, fmt, wide, keep=advice.keep)
        for line in advice.notes:
            say(line, err=not prose)

    options = list(measurer.options) + [
        click.Option(["--fit-run", "fit_run_id"], default=None, type=RUN_ID,
                     help="rank with the family's model fitted to this run of the database (default: the GPU's prior)"),
        click.Option(["--gpu"], default=None, type=GPU_INDEX, help="CUDA device index (default 0)"),
        click.Option(["--db"], default=None, help=DB_HELP),
        click.Option(["--jobs"], default=None, type=click.IntRange(1, 1024),
                     help="parallel compile jobs (default: half the CPUs)"),
        click.Option(["--seed"], default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
                     help="seed of the random inputs"),
        click.Option(["--watchdog"], default=DEFAULT_WATCHDOG_S, show_default=True, type=Finite(1, 86400),
                     metavar="SECONDS", help="a case with no result after this long is stored as a hang and its "
                                             "worker killed"),
        click.Option(["--format", "fmt"], type=click.Choice(output.FORMATS), default="table", show_default=True,
                     help="table: fitted to the terminal; csv, json, markdown: every column, whole"),
        click.Option(["--wide"], is_flag=True, help="a table keeps every column, however wide (default: fit the terminal)"),
    ]
    return click.Command(measurer.name, callback=run_measurer, params=options, help=measurer.help,
                         short_help=measurer.help.splitlines()[0])
