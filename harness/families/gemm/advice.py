"""`bench plan`, also `bench advise plan` (Family.advisors): rank the pipeline configurations for a GEMM by the planner's
prediction (model.py), with the bound each one hits, from a run's fitted parameters or a GPU's prior."""

from __future__ import annotations

from harness.errors import SpecError
from harness.families.base import Advice, AdviceOption, Advisor
import harness.families.gemm.cases as _cases
import harness.families.gemm.configs as _configs
import harness.families.gemm.ids as _ids
from harness.families.gemm.fitting import measured_throughputs
from harness.families.gemm.model import predict_case
from harness.families.gemm.planner import GemmModel

DEFAULT_GPU = "H100 SXM5"
SHOWN = 8


TIE = 5e-4  # predictions this close (relative) are a tie: the model cannot tell the configurations apart


def _plan(values: dict, fit, gpu: str | None) -> Advice:
    import pandas as pd

    if values.get("against", "none") == "nvmh":
        from harness.families.gemm.regret import against

        return against(values, fit, gpu)
    model = GemmModel()
    params = fit.params if fit is not None else model.prior(gpu or DEFAULT_GPU)
    if params is None:
        raise SpecError(f"no planner parameters for GPU {gpu!r}: no run of it, and no row of it in the datasheets "
                        "(`bench model --gpu` lists them)")
    m, n, k, dtype, top = values["m"], values["n"], values["k"], values["dtype"], values["top"]
    candidates = _configs.configurations(dtype, m, n, k)
    if not candidates:
        raise SpecError(f"no pipeline configuration tiles {m}x{n}x{k}: N and K must be multiples of a tile "
                        f"({', '.join(f'{a}x{b}' for a, b in _cases.TILES)}) and K of {_cases.bk_for(dtype)}, "
                        "and M of the tile's rows or of 16 (a partial last tile)")
    clock = params.clock_mhz or 1500.0
    ranked = sorted(((predict_case(c, params), c) for c in candidates), key=lambda pc: -pc[0].flops_per_cycle_sm)
    measured = measured_throughputs(fit)
    seen = [_ids.parse(cid) for cid in measured] if fit is not None else []
    rows, rank, best = [], 0, ranked[0][0].flops_per_cycle_sm
    for i, (prediction, case) in enumerate(ranked[:top]):
        if i == 0 or prediction.flops_per_cycle_sm < ranked[i - 1][0].flops_per_cycle_sm * (1 - TIE):
            rank = i + 1
        rows.append({"rank": rank, "TFLOPS": round(prediction.tflops(params.sm_count, clock), 1),
                     "measured": measured.get(case.case_id), "bound": prediction.bound,
                     "tile": f"{case.bm}x{case.bn}x{case.bk}", "stages": case.stages, "wg": case.consumers,
                     "cluster": case.cluster, "split": case.splits,
                     "grid": ("persistent-" if case.persistent else "grid-") + case.order,
                     "epilogue": case.epilogue, **({"promotion": case.promotion} if case.promote else {}),
                     **({"extrapolated": _unseen(case, seen)} if fit is not None else {}),
                     "case_id": case.case_id})
    table = pd.DataFrame(rows)
    if (table.split == 1).all():  # split-K: shown where a configuration on show has it
        table = table.drop(columns="split")
    first = ranked[0][1]
    tied = sum(1 for p, _ in ranked if p.flops_per_cycle_sm >= best * (1 - TIE))
    lead = [f"Best predicted: {_short(first)}, {table.TFLOPS.iloc[0]:g} TFLOPS at {clock:.0f} MHz "
            f"({ranked[0][0].bound})" + (f"; {tied - 1} more predict the same: the model cannot tell them apart "
                                         "(a tie shares its rank)" if tied > 1 else "") + ".",
            f"C[{m}, {n}] = A[{m}, {k}] . B[{n}, {k}]^T, {dtype}: {len(candidates)} configurations, planner of "
            f"{params.gpu} ({params.source}); `measured`: the run's own value where it holds the case (at its clock)."]
    notes = []
    if fit is not None and (table.extrapolated != "").any():
        notes.append("`extrapolated`: what the fit never saw in the run (a dtype, tile, promotion, schedule or "
                     "problem size of no measured case): there the prediction carries the fit beyond its data.")
    if fit is None:
        notes.append(f"A GPU's prior (an H100 fit, {params.gpu}'s datasheet), not a fit to a run of it: --run N fits "
                     "one.")
    return Advice(tuple(lead), table, tuple(notes), keep=("rank", "TFLOPS", "tile", "stages"))


def _short(case: _cases.GemmCase) -> str:
    return case.case_id.split(".", 3)[3]


def _unseen(case: _cases.GemmCase, seen: list[_cases.GemmCase]) -> str:
    """What of `case` no measured case of the fit had: its dtype, tile, promotion, schedule, problem size."""
    if not seen:
        return "everything"
    missing = []
    for what, key in (("dtype", lambda c: c.dtype), ("tile", lambda c: (c.bm, c.bn)),
                      ("promotion", lambda c: c.promotion), ("schedule", lambda c: c.schedule),
                      ("scaling", lambda c: c.scaling),
                      ("size", lambda c: (c.m, c.n, c.k))):
        if key(case) not in {key(c) for c in seen}:
            missing.append(what)
    return ", ".join(missing)


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
      bench plan --m 4096 --n 14336 --k 4096 --against nvmh --run 130

    --against nvmh: the planner's top five (the GPU's prior) beside NVIDIA's nvMatmulHeuristics' (extra `nvmh`),
    mapped to our cases, with both runtime estimates, --run's measurements and each one's top-1 and top-5 regret.
    """,
    (AdviceOption("m", "rows of A and C", high=_cases.MAX_DIM),
     AdviceOption("n", "rows of B, columns of C", high=_cases.MAX_DIM),
     AdviceOption("k", "the reduction dimension", high=_cases.MAX_DIM),
     AdviceOption("dtype", "input type", choices=_cases.DTYPES, default="f16"),
     AdviceOption("top", "configurations shown, best first (not with --against: five each)", high=100000,
                  default=SHOWN),
     AdviceOption("against", "another predictor beside the planner: nvmh (nvMatmulHeuristics)",
                  choices=("none", "nvmh"), default="none")),
    _plan,
    shortcut=True,
)
