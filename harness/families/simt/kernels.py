"""The SIMT probe's kernels (ptx/simt.cu.in): the chains' bodies (harness/families/chains.py), the overlap kernels'
roles, and the parameters the template is filled with (template_params), the .tma overlap cases' included."""

from __future__ import annotations

import harness.families.simt.overlap as _overlap
from harness.families.chains import ILPS, Chains
import harness.families.simt.ops as _ops
from harness.families.simt.cases import _check
from harness.families.simt.overlap import OverlapCase

MAX_ILP = max(ILPS)
# Short bodies of 8 steps, not 4: ptxas spaces a fixed-latency chain (FFMA, HFMA2, FMNMX, PRMT, F2FP) by the stall
# counts of its control bits, and lays out a 4-step body's head and tail differently from a 16-step body's (the
# loop counter's update merged into other slots, the last step's spacing before the branch); with 8 and 16 the
# head and tail are the same instructions with the same stall counts, and the two bodies differ only by 8 steps
# in the middle, so the slope is the steps' own spacing (docs/simt.md).
CHAINS = Chains(short=8)
_ROLES = ("wgmma", "simt", "tma")  # the template's Role, the side a kernel times


def _tma_render(case: OverlapCase | None) -> dict[str, object]:
    tma = case is not None and case.tma
    return {"has_tma": "true" if tma else "false", "tma_stages": _overlap.TMA_STAGES,
            "tma_box_rows": _overlap.TMA_BOX_ROWS, "tma_box_cols": _overlap.TMA_BOX_COLS,
            "tma_tiles": _overlap.TMA_TILES, "tma_unroll": _overlap.TMA_UNROLL,
            "out_tma": _overlap.tma_offset(case) if tma else 0,
            "overlap_map_param": ", const __grid_constant__ TmaMap map" if tma else "",
            "overlap_map_ref": "&map" if tma else "nullptr"}


def template_params(case) -> dict[str, object]:
    _check(case)
    common = {"unroll": CHAINS.unroll, "short_body": CHAINS.short_unroll, "max_ilp": MAX_ILP,
              **_tma_render(case if isinstance(case, OverlapCase) else None)}
    if isinstance(case, OverlapCase):
        op = _ops.OPS[case.op] if case.op else None
        return {**common, **_overlap.wgmma_render(case), "instruction": case.op or "nothing",
                "body": op.body if op else "", "chain_kernels": "", "overlap": 1,
                "has_simt": "true" if op else "false", "out_simt": _overlap.simt_offset(case),
                "overlap_kernels": "\n".join(f"PROBE_OVERLAP(probe_overlap_{role}, {_ROLES.index(role)})"
                                             for role in case.roles)}
    return {**common, **_overlap.wgmma_render(None), "instruction": case.instruction_ptx,
            "body": case.op.body, "chain_kernels": CHAINS.rendered(), "overlap": 0, "has_simt": "false",
            "out_simt": 0, "overlap_kernels": ""}
