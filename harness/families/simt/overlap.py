"""What runs beside the tensor cores (issue 43, section 2): one SM, warpgroup 0 issuing wgmma back to back and
warpgroup 1 running chains of a SIMT instruction at full rate, each side timed while the other runs, and each
alone. The probe is ptx/simt.cu.in's overlap section; docs/simt.md, "Beside the tensor cores".

    simt.overlap.<instruction|none>.m64n<N>k16     wgmma m64nNk16 f16 -> f32 (SS) beside the instruction
    simt.overlap.<instruction>.alone               the instruction's side alone (warpgroup 0 idle)

Metrics, each `issue_interval_cycles` told apart by its launch: {"role": "wgmma"} cycles per wgmma of warpgroup 0
while warpgroup 1 runs; {"role": "simt"} cycles per instruction of one of warpgroup 1's warps (8 independent
chains each, one warp per scheduler) while warpgroup 0 runs. The fraction of each side's rate kept is a ratio of
two cases of the same run (figures.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

OPS = ("ex2.approx.ftz.f32", "fma.rn.f32", "fma.rn.f16x2", "shfl.sync.bfly.b32", "cvt.rn.bf16x2.f32")
NS = (64, 128, 256)
WGMMA_UNROLL = 8  # ptx/simt.cu.in
MIN_BODIES = 16
CHECK_WGMMAS = 64  # wgmma a validation launch times
_ID = re.compile(r"^simt\.overlap\.(?P<op>none|[a-z0-9_.:]+?)\.(?:m64n(?P<n>\d+)k16|(?P<alone>alone))$")


@dataclass(frozen=True)
class OverlapCase(Case):
    family: ClassVar[str] = "simt"
    op: str | None  # the SIMT instruction (OPS) warpgroup 1 runs, or None
    n: int | None  # wgmma m64nNk16's N, or None: warpgroup 0 idle

    @property
    def base_id(self) -> str:
        return f"simt.overlap.{self.op or 'none'}." + (f"m64n{self.n}k16" if self.n else "alone")

    def columns(self) -> dict[str, object]:
        return dict(instruction="overlap", m=64 if self.n else None, n=self.n, k=16 if self.n else None,
                    dtype_a="f16" if self.n else None, dtype_b="f16" if self.n else None,
                    dtype_acc="f32" if self.n else None, operands="SS" if self.n else None, sparse=False, layout=None)

    @property
    def roles(self) -> tuple[str, ...]:
        """The sides this case times: wgmma where warpgroup 0 issues it, simt where warpgroup 1 runs."""
        return (("wgmma",) if self.n else ()) + (("simt",) if self.op else ())


def cases() -> list[OverlapCase]:
    return ([OverlapCase(op, n) for n in NS for op in (None, *OPS)] + [OverlapCase(op, None) for op in OPS])


def parse(case_id: str) -> OverlapCase | None:
    """The overlap case an id spells, None if it is not an overlap id."""
    match = _ID.match(case_id)
    if not case_id.startswith("simt.overlap."):
        return None
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'simt.overlap.ex2.approx.ftz.f32.m64n256k16' "
                        "or 'simt.overlap.fma.rn.f32.alone' (see `bench list --suite simt-overlap`)")
    return OverlapCase(None if match["op"] == "none" else match["op"], int(match["n"]) if match["n"] else None)


def check(case: OverlapCase) -> None:
    if case.op is not None and case.op not in OPS:
        raise IllegalShapeError(f"{case}: the overlap probes run {', '.join(OPS)} beside wgmma")
    if case.n is not None and case.n not in NS:
        raise IllegalShapeError(f"{case}: the overlap probes issue wgmma m64nNk16 with N in {', '.join(map(str, NS))}")
    if case.n is None and case.op is None:
        raise IllegalShapeError(f"{case}: nothing to time (no wgmma and no instruction)")


def acc_regs(case: OverlapCase) -> int:
    return case.n // 2 if case.n else 0


def wgmma_render(case: OverlapCase) -> dict[str, object]:
    """The wgmma's operand list and constraints for the template (N/2 f32 accumulators per thread)."""
    shape_n = case.n or 8  # warpgroup 0 idle: the function is compiled, never called
    regs = shape_n // 2
    return {"wgmma_n": case.n or 0, "wgmma_shape_n": shape_n, "acc_regs": regs,
            "wgmma_d_operands": ", ".join(f"%{i}" for i in range(regs)),
            "wgmma_a_index": regs, "wgmma_b_index": regs + 1,
            "wgmma_d_constraints": ", ".join(f'"+r"(d[{i}])' for i in range(regs))}


def simt_offset(case: OverlapCase) -> int:
    """Where warpgroup 1's chains start in the output: after D (128 threads x N/2 words) and the wgmma count."""
    return 128 * acc_regs(case) + 1 if case.n else 0


def kernels(case: OverlapCase) -> list[str]:
    return [f"probe_overlap_{role}" for role in case.roles]
