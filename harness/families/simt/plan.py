"""What a SIMT case measures and how (the measurement methods' specs): a chain's latency and issue interval by chain
slope and its throughput over warps x chains per SM; an overlap case's cycles per instruction of each side timed while
the others run."""

from __future__ import annotations

import harness.families.simt.overlap as _overlap
from harness.families.simt.cases import SimtCase
from harness.families.simt.kernels import CHAINS, MAX_ILP
from harness.families.simt.overlap import OverlapCase
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint

SWEEP_WARPS = (1, 2, 4, 8, 16, 32)  # warps per SM (one block per SM)
SWEEP_ILP = (1, 2, 4)  # independent chains per warp


def interval_metric(case: SimtCase) -> str:
    return "call_interval_cycles" if case.op.emulated else "issue_interval_cycles"


def plan(case, device=None) -> list:
    if isinstance(case, OverlapCase):
        return _overlap_plan(case)
    plan = CHAINS
    sweep = tuple(SweepPoint(plan.kernel(ilp), w, ilp, {"warps": w, "ilp": ilp})
                  for w in SWEEP_WARPS for ilp in SWEEP_ILP)
    chain = case.op.chain or "x <- op(x, c, c2)"
    bodies = f"; loop bodies of {plan.unroll} and {plan.short_unroll} steps, so a body's own cost cancels"
    return [ChainSlope("latency_cycles", plan.kernel(1), 32, unroll=plan.unroll, launch={"warps": 1, "ilp": 1},
                       notes=f"one dependent chain, {chain}" + bodies, short_body=plan.short_body(1)),
            ChainSlope(interval_metric(case), plan.kernel(plan.issue_ilp), 32, per_iter=plan.issue_ilp,
                       unroll=plan.unroll, launch={"warps": 1, "ilp": plan.issue_ilp},
                       notes=f"{plan.issue_ilp} independent chains in one warp" + bodies,
                       short_body=plan.short_body(plan.issue_ilp)),
            OccupancySweep(sweep, 32, plan.unroll, whole_gpu="best")]


def _overlap_plan(case: OverlapCase) -> list:
    specs = []
    wgmma = f"wgmma m64n{case.n}k{case.k} {case.form}" if case.n else None
    tma = f"TMA loads ({_overlap.TMA_TILE_BYTES} B boxes)" if case.tma else None
    beside = {"wgmma": " and ".join(filter(None, (case.op, tma))) or "nothing",
              "simt": " and ".join(filter(None, (wgmma, tma))) or "nothing",
              "tma": " and ".join(filter(None, (wgmma, case.op))) or "nothing"}
    for role in case.roles:
        if role == "wgmma":
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_wgmma", case.threads, units=case.units, per_iter=1,
                                    unroll=_overlap.WGMMA_UNROLL, launch={"role": "wgmma", "beside": beside[role]},
                                    notes=f"one SM: warpgroup 0's wgmma back to back while warpgroup 1 runs "
                                          f"{beside[role]}; cycles per wgmma"))
        elif role == "tma":
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_tma", case.threads, units=case.units,
                                    per_iter=1, unroll=_overlap.TMA_UNROLL,
                                    launch={"role": "tma", "beside": beside[role], "bytes": _overlap.TMA_TILE_BYTES},
                                    notes=f"one SM: the producer warp's TMA loads ({_overlap.TMA_TILE_BYTES} B each, "
                                          f"{_overlap.TMA_STAGES} in flight, from an L2-resident source) while the "
                                          f"others run {beside[role]}; cycles per load"))
        else:
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_simt", case.threads, units=case.units, per_iter=MAX_ILP,
                                    unroll=CHAINS.unroll, launch={"role": "simt", "beside": beside[role]},
                                    notes=f"one SM: warp 0 of warpgroup 1 (4 warps, 8 chains each) while warpgroup 0 "
                                          f"runs {beside[role]}; cycles per instruction of one warp"))
    return specs
