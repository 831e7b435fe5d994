"""`bench gemm`: any GEMM shape on the GPU, the planner's top configurations beside the library in one run
(harness/families/gemm/shapes.py), conducted as `bench run` conducts a suite (measuring.conduct)."""

from __future__ import annotations

import click

from harness.orchestration.worker import DEFAULT_WATCHDOG_S
from harness.cli.app import Finite, RUN_ID, GPU_INDEX, DB_HELP, cli, print_frame, say, table_options


@cli.command("gemm")
@click.option("--shape", "shape_texts", multiple=True, metavar="M,N,K[,DTYPE]",
              help="a problem C[M, N] = A[M, K] . B[N, K]^T (repeatable)")
@click.option("--shapes", "shapes_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="a file of shapes, one M,N,K[,dtype] a line (# comments): a model's GEMMs in one run")
@click.option("--dtype", default="f16", show_default=True, type=click.Choice(("f16", "bf16", "e4m3")),
              help="the input type of a shape that names none")
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 100),
              help="configurations measured per shape, the planner's best first")
@click.option("--case", "case_ids", multiple=True, metavar="ID", help="a GEMM case to measure too (repeatable)")
@click.option("--fit-run", "fit_run_id", default=None, type=RUN_ID,
              help="rank with the planner fitted to this run of the database (default: the GPU's prior)")
@click.option("--gpu", default=None, type=GPU_INDEX, help="CUDA device index (default 0)")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--jobs", default=None, type=click.IntRange(1, 1024), help="parallel compile jobs (default: half the CPUs)")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1), help="seed of the random inputs")
@click.option("--watchdog", default=DEFAULT_WATCHDOG_S, show_default=True, type=Finite(1, 86400), metavar="SECONDS",
              help="a case with no result after this long is stored as a hang and its worker killed")
@table_options
def gemm(shape_texts, shapes_file, dtype, top, case_ids, fit_run_id, gpu, db, jobs, seed, watchdog, fmt, wide):
    """Measure the planner's best configurations for any GEMM shape beside the library, and compare.

    For each shape: the --top configurations the planner ranks first (`bench plan`'s ranking, from the GPU's
    prior or --fit-run's fit), cuBLAS (cuBLASLt for e4m3) and any --case, validated and measured in one run
    (suite `gemm-shape`, stored as `bench run` stores a suite; `bench run --resume` continues it). Then the
    ranking: each case's rank predicted, configuration, predicted and measured TFLOPS (the prediction at the
    clock the case ran at), library_fraction and the miss (measured / predicted - 1).

    \b
    Examples:
      bench gemm --shape 4096,14336,4096
      bench gemm --shape 8192,8192,8192,e4m3 --top 3
      bench gemm --shapes llama3-8b.txt --db llama.db
      bench gemm --shape 2048,2048,2048 --case gemm.f16.2048x2048x2048.tile128x128x64.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore
    """
    from harness.cli.measuring import _open_target, conduct
    from harness.errors import SpecError, StoreError
    from harness.families.gemm import shapes as gemm_shapes
    from harness.orchestration.run import plan_cases
    from harness.registry import parse_case_id

    shapes = [gemm_shapes.parse_shape(text, dtype) for text in shape_texts]
    if shapes_file is not None:
        shapes += gemm_shapes.read_shapes(shapes_file, dtype)
    if not shapes:
        raise click.UsageError("give --shape M,N,K[,dtype] or --shapes FILE")
    found = {shape: gemm_shapes.candidates(shape) for shape in dict.fromkeys(shapes)}
    named = [parse_case_id(case_id) for case_id in case_ids]
    for case_id, case in zip(case_ids, named):
        if case.family != "gemm":
            raise SpecError(f"--case {case_id}: not a GEMM case (gemm..., cublas... or cublaslt...)")
    store = _open_target(db, must_exist=False)
    click.get_current_context().call_on_close(lambda: store is not None and store.close())
    fit = None
    if fit_run_id is not None:
        if store is None:
            raise StoreError(f"--fit-run {fit_run_id}: no results database at {db or 'the default'} to fit from")
        from harness.analysis.models import fit_run

        fit = fit_run(store, fit_run_id).get("gemm")
        if fit is None:
            raise SpecError(f"--fit-run {fit_run_id}: the run has no gemm measurements the planner fits")
    chosen = {}

    def on_device(device):
        params, source = _params(device, fit)
        planned = gemm_shapes.plan(found, named, params, top)
        gemm_shapes.check_memory(planned.cases, device)
        chosen.update(planned=planned, source=source)
        return plan_cases(gemm_shapes.LABEL, planned.cases)

    outcome, device = conduct(None, store, db, gpu, seed, watchdog, jobs, on_device=on_device)
    table = gemm_shapes.ranking(chosen["planned"], outcome.results, fit)
    prose = fmt in ("table", "markdown")
    say(f"Run {outcome.run_id}, {len(found)} shape(s): the planner's top {top} (`rank`: its rank among every "
        f"configuration of the shape), the library and --case beside them; predicted at the clock each case ran at; "
        f"miss = measured / predicted - 1.", err=not prose)
    if fmt == "table" and not wide:  # the configuration is in the columns; csv, json and markdown keep the id
        table = table.drop(columns=["case_id"] + (["status"] if (table.status == "valid").all() else []))
    print_frame(table, fmt, wide, keep=("shape", "rank", "tile", "stages", "predicted", "measured", "library_fraction", "miss"))
    say(chosen["source"], err=not prose)


def _params(device, fit):
    """The planner's parameters and a line saying whose: --fit-run's fit, else the GPU's prior (the H100 SXM5's
    for a GPU with no datasheet row, as the simulated GPU)."""
    from harness.families.gemm.advice import DEFAULT_GPU
    from harness.families.gemm.planner import GemmModel

    if fit is not None:
        return fit.params, (f"Predictions: the planner fitted to a run ({fit.params.source}); `out of fit`: what of "
                            "a case no measured case of the fit had, where the prediction carries the fit beyond it.")
    model = GemmModel()
    params = model.prior(device.name)
    if params is not None:
        return params, (f"Predictions: the planner's prior for {params.gpu} ({params.source}): no run fitted, so "
                        "every row is out of a fit (--fit-run N fits one).")
    return model.prior(DEFAULT_GPU), (f"Predictions: {device.name} has no datasheet row: the planner's prior for "
                                      f"{DEFAULT_GPU}; no run fitted, so every row is out of a fit (--fit-run N).")
