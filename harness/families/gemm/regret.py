"""`bench plan --against nvmh` (heuristics.py asks nvMatmulHeuristics and maps its picks): the planner's first picks
beside its first, each with both predictions, the run's measurement (--run) and each predictor's regret."""

from __future__ import annotations

from dataclasses import dataclass

import harness.families.gemm.cases as _cases
from harness.errors import SpecError
from harness.families.gemm.heuristics import (ASK, PRECISION, SUITE_GPU, TOP, VERSION, Config, ask, estimate_us, gpu_of,
                                              planner_top, top_mapped)


@dataclass(frozen=True)
class Regret:
    """A predictor's picks measured: the loss of its best measured pick among its first `top` (top-1: its first)
    against the best pipeline case the run measured for the problem. None where no pick is measured."""
    top1: float | None
    topk: float | None
    measured: int  # picks the run holds
    unmeasured: int  # mapped picks the run lacks
    unmappable: int


def regret(picks: list[str | None], measured: dict[str, float], top: int = TOP) -> Regret:
    """`picks`: case ids in the predictor's order (None: a configuration that cannot be mapped); `measured`: the
    run's throughput of every pipeline case of the problem."""
    if not measured:
        raise SpecError("the run measures no pipeline case of this problem: no regret to give")
    best = max(measured.values())
    chosen = picks[:top]
    values = [measured[p] for p in chosen if p is not None and p in measured]
    first = measured.get(chosen[0]) if chosen and chosen[0] is not None else None
    return Regret(None if first is None else 1.0 - first / best, None if not values else 1.0 - max(values) / best,
                  len(values), sum(1 for p in chosen if p is not None and p not in measured),
                  sum(1 for p in chosen if p is None))


def against(values: dict, fit, gpu: str | None):
    """`bench plan --against nvmh`: the planner's first TOP and nvMatmulHeuristics' first TOP for the problem, each
    with both predictions where there are, the run's measurement (--run) and each predictor's regret."""
    import pandas as pd

    from harness.families.base import Advice
    from harness.families.gemm.fitting import measured_throughputs
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.planner import GemmModel

    m, n, k, dtype = values["m"], values["n"], values["k"], values["dtype"]
    name = fit.gpu if fit is not None else (gpu or SUITE_GPU)
    device = gpu_of(name)
    params = GemmModel().prior(name)
    if params is None:
        raise SpecError(f"no planner prior for GPU {name!r} (`bench model --gpu` lists them)")
    ours = planner_top(dtype, m, n, k, params)
    if not ours:
        raise SpecError(f"no pipeline configuration tiles {m}x{n}x{k}: M, N and K must be multiples of a tile "
                        f"({', '.join(f'{a}x{b}' for a, b in _cases.TILES)}) and K of {_cases.bk_for(dtype)}")
    theirs = top_mapped(ask(dtype, m, n, k, device), dtype, m, n, k)
    measured = {cid: v for cid, v in measured_throughputs(fit).items() if cid.split(".")[1:3] == [dtype, f"{m}x{n}x{k}"]}
    clock = params.clock_mhz or 1500.0

    def row(who, rank, case, label, us, note=""):
        theirs_tflops = Config(1, 1, 1, 1, runtime_us=us).tflops(m, n, k)
        return {"predictor": who, "rank": rank, "configuration": label,
                "planner TFLOPS": round(predict_case(case, params).tflops(params.sm_count, clock), 1) if case else None,
                "nvmh TFLOPS": theirs_tflops, "nvmh us": us,
                "measured": measured.get(case.case_id) if case else None,
                "note": note or ("" if case is None or fit is None or case.case_id in measured else "not in the run"),
                "case_id": case.case_id if case else ""}

    rows = [row("planner", i, c, f"{c.bm}x{c.bn}x{c.bk} s{c.stages} wg{c.consumers} cluster {c.cluster}x1 "
                f"{'persistent' if c.persistent else 'grid'}-{c.order} {c.epilogue}", estimate_us(c, device))
            for i, (c, _) in enumerate(ours, 1)]
    rows += [row("nvmh", i, t.case, t.config.label, t.config.runtime_us, t.why) for i, t in enumerate(theirs, 1)]
    unmapped = sum(1 for t in theirs if t.case is None)
    lead = [f"C[{m}, {n}] = A[{m}, {k}] . B[{n}, {k}]^T, {dtype}: the planner's first {TOP} ({params.gpu}'s prior, "
            f"not fitted to any --run: out of sample) and nvMatmulHeuristics {VERSION}'s ({ASK['target']}, {device}, "
            f"{ASK['layout']}; {unmapped} of its {len(theirs)} cannot be mapped, `note` says why)."]
    if fit is None:
        lead.append("No --run: the picks alone. A run of gemm-heuristics measures them; --run N gives the regret.")
    elif not measured:
        lead.append(f"Run's GPU {fit.gpu}: it measures no pipeline case of this problem, so no regret.")
    else:
        best = max(measured, key=measured.get)
        lead.append(f"Measured best of the run for this problem: {best.split('.', 3)[3]}, {measured[best]:g} TFLOPS. "
                    "Regret, top-1 / top-5 (1 - the best measured pick / that):")
        for who, picks in (("planner", [c.case_id for c, _ in ours]),
                           ("nvMatmulHeuristics", [t.case.case_id if t.case else None for t in theirs])):
            r = regret(picks, measured)
            first = "unmappable" if picks[0] is None else "unmeasured"
            lead.append(f"  {who}: {_pct(r.top1, first)} / {_pct(r.topk, 'none measured')} ({r.measured} of its "
                        f"picks measured, {r.unmeasured} not in the run, {r.unmappable} unmappable)")
    notes = (f"planner TFLOPS at {clock:.0f} MHz; nvmh TFLOPS: its runtime estimate (us) over the problem's FLOP, for "
             "the planner's picks its estimate of their tile, stages and cluster. Regret: the loss of a predictor's "
             "best measured pick among its first 1 or 5 against the best pipeline case the run measured here.",)
    if PRECISION[dtype] != "HSH":
        notes += (f"nvMatmulHeuristics {VERSION} has no discovery set for {PRECISION[dtype]}: its estimates there are "
                  "its uncalibrated model's.",)
    return Advice(tuple(lead), pd.DataFrame(rows), notes, keep=("predictor", "rank", "configuration", "measured"))


def _pct(value: float | None, missing: str) -> str:
    return missing if value is None else f"{100 * value:.1f} %"
