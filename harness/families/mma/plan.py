"""What the mma family measures of a case: one warp's dependent chain (latency) and independent chains (issue or call
interval), then every SM with 1..32 warps x 1, 2, 4 accumulators, its best point as a whole GPU (energy too for the
papers' shapes)."""

from __future__ import annotations

import harness.families.mma.sass as sass
from harness.families.mma.cases import MmaCase
from harness.families.mma.probe import chains
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint

SWEEP_WARPS = (1, 2, 4, 8, 16, 32)  # warps per SM (one block per SM)
SWEEP_ILP = (1, 2, 4)  # independent accumulators per warp
# The shapes whose power and energy efficiency both papers print (2402.13499 Table XI, 2501.12084
# Table 12: "the largest mma shape" of each type, sparse as printed, i.e. compressed K): their best
# whole-GPU point is also measured for energy (OccupancySweep.energy), (dtype_a, k, sparse).
ENERGY_SHAPES = {("f16", 16, False), ("tf32", 8, False), ("s8", 32, False),
                 ("f16", 32, True), ("tf32", 16, True), ("s8", 64, True)}


def interval_metric(case: MmaCase) -> str:
    """An emulated form issues no instruction of its own: its independent-accumulator chain is a call
    interval (metric registry), not an issue interval."""
    return "call_interval_cycles" if sass.form(case).emulated else "issue_interval_cycles"


def _energy_case(case: MmaCase) -> bool:
    """A paper energy shape (ENERGY_SHAPES) in its plain form: m16n8, b signed as a, no satfinite."""
    return ((case.dtype_a, case.k, bool(case.sparse)) in ENERGY_SHAPES and case.m == 16
            and case.dtype_b == case.dtype_a and not case.satfinite and case.sparse in (None, "sp"))


def plan(case: MmaCase, device=None) -> list:
    """One warp on one SM: a dependent chain (latency) and the most independent chains the case
    renders (issue interval); then every SM with 1..32 warps x 1, 2, 4 independent accumulators, by
    clock64, and the best of those 18 points again as a whole GPU (CUDA events, long launches)."""
    plan = chains(case)
    sweep = tuple(SweepPoint(plan.kernel(ilp), w, ilp, {"warps": w, "ilp": ilp})
                  for w in SWEEP_WARPS for ilp in SWEEP_ILP)
    dependent = ("a dependent chain: each mma accumulates onto the result of the one before"
                 if case.dtype_c == case.dtype_d else
                 "a dependent chain: each mma's C operand is derived from the previous D (x ^ (d & 0))")
    bodies = (f"; loop bodies of {plan.unroll} and {plan.short_unroll} rounds, so a body's own cost cancels"
              if plan.short_unroll else f"; loop bodies of {plan.unroll} rounds")
    return [ChainSlope("latency_cycles", plan.kernel(1), 32, unroll=plan.unroll, launch={"warps": 1, "ilp": 1},
                       notes=dependent + bodies, short_body=plan.short_body(1)),
            ChainSlope(interval_metric(case), plan.kernel(plan.issue_ilp), 32, per_iter=plan.issue_ilp,
                       unroll=plan.unroll, launch={"warps": 1, "ilp": plan.issue_ilp},
                       notes=f"{plan.issue_ilp} independent accumulators in one warp" + bodies,
                       short_body=plan.short_body(plan.issue_ilp)),
            OccupancySweep(sweep, 32, plan.unroll, whole_gpu="best", energy=_energy_case(case))]

