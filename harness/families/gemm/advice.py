"""`bench plan`, also `bench advise plan` (Family.advisors): rank the pipeline configurations for a GEMM by the planner's
prediction (model.py), with the bound each one hits, from a run's fitted parameters or a GPU's prior."""

from __future__ import annotations

from harness.errors import SpecError
from harness.families.base import AdviceOption, Advisor
import harness.families.gemm.cases as _cases
from harness.families.gemm.model import predict_case
from harness.families.gemm.planner import GemmModel

DEFAULT_GPU = "H100 SXM5"
SHOWN = 8


def configurations(dtype: str, m: int, n: int, k: int) -> list[_cases.GemmCase]:
    """Every configuration of the family that can run this problem (cases.check accepts it), fp8 with each of
    its promotions. Not the ping-pong schedule (the model has no term for it) nor clusters of 4 (how many fit at
    once is the GPU's: 30 on the H100; measured no faster, run 123)."""
    found = []
    promotions = _cases.PROMOTIONS if _cases.IN_BYTES.get(dtype) == 1 else ("serial",)
    for bm, bn in _cases.TILES:
        for consumers in (1, 2):
            for stages in range(1, _cases.MAX_STAGES + 1):
                for cluster in (1, 2):
                    for persistent, order in ((False, "row"), (True, "row"), (True, "grouped")):
                        for epilogue in _cases.EPILOGUES:
                            for promotion in promotions:
                                case = _cases.pipeline(dtype, (m, n, k), bm=bm, bn=bn, stages=stages,
                                                       consumers=consumers, rebalance=consumers == 2, cluster=cluster,
                                                       persistent=persistent, order=order, epilogue=epilogue,
                                                       promotion=promotion)
                                try:
                                    _cases.check(case)
                                except SpecError:
                                    continue
                                found.append(case)
    return found


def _plan(values: dict, fit, gpu: str | None) -> list[str]:
    model = GemmModel()
    params = fit.params if fit is not None else model.prior(gpu or DEFAULT_GPU)
    if params is None:
        raise SpecError(f"no planner parameters for GPU {gpu!r}: no run of it, and no row of it in the datasheets "
                        "(`bench model --gpu` lists them)")
    m, n, k, dtype = values["m"], values["n"], values["k"], values["dtype"]
    candidates = configurations(dtype, m, n, k)
    if not candidates:
        raise SpecError(f"no pipeline configuration tiles {m}x{n}x{k}: M, N and K must be multiples of a tile "
                        f"({', '.join(f'{a}x{b}' for a, b in _cases.TILES)}) and K of {_cases.bk_for(dtype)}")
    clock = params.clock_mhz or 1500.0
    # Where the planner predicts a tie (the memory's queue idle: a row-major and a grouped order then miss the
    # L2 alike in effect), the grouped order ranks first (it keeps the panels the tiles in flight share in the
    # L2; measured at 16384^3 the row order reached about 0.83 of it), then a cluster's multicast (it halves
    # the L2's reads of B; measured about 1 %).
    ranked = sorted(((predict_case(c, params), c) for c in candidates),
                    key=lambda pc: (-round(pc[0].flops_per_cycle_sm, 6), pc[1].order != "grouped", pc[1].cluster == 1))
    lines = [f"C[{m}, {n}] = A[{m}, {k}] . B[{n}, {k}]^T, {dtype}: {len(candidates)} configurations, planner of "
             f"{params.gpu} ({params.source}), TFLOPS at {clock:.0f} MHz",
             f"  {'configuration':<64} {'TFLOPS':>7}  bound"]
    for prediction, case in ranked[:SHOWN]:
        name = case.case_id.split(".", 3)[3]
        lines.append(f"  {name:<64} {prediction.tflops(params.sm_count, clock):7.1f}  {prediction.bound}")
    return lines


PLAN = Advisor(
    "plan",
    f"""Rank the GEMM pipeline configurations for C = A . B^T by the planner's predicted throughput, each with
    the bound it hits (tensor cores, latency not hidden by the stages, epilogue, wave quantization).
    Parameters: --gpu's prior (default {DEFAULT_GPU}), or those fitted to --run's gemm cases.

    \b
    Examples:
      bench plan --m 8192 --n 8192 --k 8192
      bench plan --m 512 --n 8192 --k 8192 --dtype bf16 --run 60
      bench plan --m 8192 --n 8192 --k 8192 --dtype e4m3
    """,
    (AdviceOption("m", "rows of A and C", high=_cases.MAX_DIM),
     AdviceOption("n", "rows of B, columns of C", high=_cases.MAX_DIM),
     AdviceOption("k", "the reduction dimension", high=_cases.MAX_DIM),
     AdviceOption("dtype", "input type", choices=_cases.DTYPES, default="f16")),
    _plan,
    shortcut=True,
)
