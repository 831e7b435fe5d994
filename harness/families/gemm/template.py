"""The parameters that fill ptx/gemm.cu.in for a pipeline case: the skeleton's (harness/families/pipeline.py), the
problem's, the tile's, the wgmma instruction and its operand lists, the fp8 promotion's switches."""

from __future__ import annotations

import harness.families.gemm.cases as _cases
import harness.families.gemm.refusals as _refusals
from harness.families.gemm.cases import GemmCase
from harness.families.gemm.problem import PROBLEM
from harness.families.pipeline import skeleton_params


def template_params(case: GemmCase) -> dict[str, object]:
    """ptx/gemm.cu.in's parameters for `case` (refused first where it cannot be built: refusals.py)."""
    _refusals.check(case)
    acc = case.bn // 2
    return {
        **skeleton_params(case), "problem": PROBLEM.render(),
        "dtype": case.dtype, "out_dtype": case.out_dtype, "in_bytes": case.in_bytes,
        "wgmma_k": case.wgmma_k, "bm": case.bm, "bn": case.bn, "bk": case.bk, "c_box_cols": case.c_box_cols, "a_box_rows": case.a_box_rows,
        "c_swizzled": str(case.c_swizzle is not None).lower(),
        "partial_n": str(case.n % case.bn != 0).lower(),
        "instruction": f"wgmma.mma_async.sync.aligned.m64n{case.bn}k{case.wgmma_k}.f32.{case.a_dtype}.{case.b_dtype}",
        # scale-a, scale-b, and for 16-bit inputs the transposes (K-major: none); fp8 takes no transpose
        "immediates": "1, 1" if case.in_bytes == 1 else "1, 1, 0, 0",
        "promote": str(case.promote).lower(),
        "overlap": str(case.promotion in ("overlap",) + _cases.GROUPED_WALKS + _cases.CARRIED).lower(),
        "pipelined": str(case.promotion in _cases.GROUPED_WALKS).lower(),
        "offset": str(case.promotion == "offset").lower(),
        "carried": str(case.promotion in _cases.CARRIED).lower(),
        "deferred": str(case.promotion == "deferred").lower(),
        "staggered": str(case.promotion == "staggered").lower(), "pipeline_group": case.group,
        "blockscale": str(case.block_scaled).lower(),
        "d_operands": ", ".join(f"%{i}" for i in range(acc)),
        "d_constraints": ", ".join(f'"+f"(d[{i}])' for i in range(acc)),
        "desc_a_operand": acc, "desc_b_operand": acc + 1, "scale_operand": acc + 2,
    }
