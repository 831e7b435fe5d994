"""`bench gemm` as the family declares it (Family.measurers; the CLI builds the command from this, harness/cli/
measurers.py): its options, the shapes checked before anything is opened, the plan once the GPU is known (the
planner's parameters for it: --fit-run's fit, else its prior), and the ranking read back (shapes.py)."""

from __future__ import annotations

import click

from harness.errors import SpecError
from harness.families.base import Advice, Measurer
import harness.families.gemm.cases as _cases
import harness.families.gemm.ids as _ids
import harness.families.gemm.shapes as _shapes

DEFAULT_GPU = "H100 SXM5"  # the prior for a GPU with no datasheet row (the simulated one): advice.DEFAULT_GPU


def _prepare(values: dict) -> dict:
    """The shapes and named cases, each checked (SpecError: one line), before the database is opened."""
    shapes = [_shapes.parse_shape(text, values["dtype"]) for text in values["shape_texts"]]
    if values["shapes_file"] is not None:
        shapes += _shapes.read_shapes(values["shapes_file"], values["dtype"])
    if not shapes:
        raise click.UsageError("give --shape M,N,K[,dtype] or --shapes FILE")
    named = []
    for case_id in values["case_ids"]:
        try:
            named.append(_ids.parse(case_id))
        except SpecError as exc:
            raise SpecError(f"--case {case_id}: not a GEMM case this family runs ({exc})") from None
    placement = "cold" if values["cold"] else "warm"
    return {"found": {shape: _shapes.candidates(shape, placement) for shape in dict.fromkeys(shapes)}, "named": named,
            "top": values["top"]}


def _plan(state: dict, device, fit) -> tuple[str, list]:
    params, source = _params(device, fit)
    _shapes.check_memory_before_planning(state["found"], device)
    planned = _shapes.plan(state["found"], state["named"], params, state["top"])
    _shapes.check_memory(planned.cases, device)
    state.update(planned=planned, source=source)
    return _shapes.LABEL, planned.cases


def _report(state: dict, results: list, fit) -> Advice:
    table = _shapes.ranking(state["planned"], results, fit)
    if (table.status == "valid").all():
        table = table.drop(columns=["status"])
    lead = (f"{len(state['found'])} shape(s): the planner's top {state['top']} (`rank`: its rank among every "
            "configuration of the shape), the library and --case beside them; predicted at the clock each case ran "
            "at; miss = measured / predicted - 1; GB/s: A and B read and C written once a call, at the measured rate."
            + (" Cold (`.cold`): each launch, ours and the library's, read its own copy of A, B and C, out of the L2."
               if any(getattr(case, "placement", "warm") == "cold" for case in state["planned"].cases) else ""),)
    keep = ("shape", "rank", "tile", "stages", "predicted", "measured", "GB/s", "library_fraction", "miss")
    return Advice(lead, table, (state["source"],), keep)


def _params(device, fit):
    """The planner's parameters and a line saying whose: --fit-run's fit, else the GPU's prior (the H100 SXM5's
    for a GPU with no datasheet row, as the simulated GPU)."""
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


SHAPES = Measurer(
    "gemm",
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
      bench gemm --shapes decode.txt --cold --top 2
      bench gemm --shape 2048,2048,2048 --case gemm.f16.2048x2048x2048.tile128x128x64.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore
    """,
    (click.Option(["--shape", "shape_texts"], multiple=True, metavar="M,N,K[,DTYPE]",
                  help="a problem C[M, N] = A[M, K] . B[N, K]^T (repeatable)"),
     click.Option(["--shapes", "shapes_file"], default=None, type=click.Path(exists=True, dir_okay=False),
                  help="a file of shapes, one M,N,K[,dtype] a line (# comments): a model's GEMMs in one run"),
     click.Option(["--dtype"], default="f16", show_default=True, type=click.Choice(_cases.DTYPES),
                  help="the input type of a shape that names none"),
     click.Option(["--top"], default=_shapes.TOP, show_default=True, type=click.IntRange(1, 100),
                  help="configurations measured per shape, the planner's best first"),
     click.Option(["--case", "case_ids"], multiple=True, metavar="ID", help="a GEMM case to measure too (repeatable)"),
     click.Option(["--cold"], is_flag=True, default=False,
                  help="each launch (ours and the library's) reads its own copy of A, B and C, left out of the L2 by "
                       "the copies read since (ids end `.cold`): as a decode step reads a layer's weights once")),
    _prepare, _plan, _report,
)
