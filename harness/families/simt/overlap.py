"""What runs beside the tensor cores (issue 43, section 2): one SM, warpgroup 0 issuing wgmma back to back and
warpgroup 1 running chains of a SIMT instruction at full rate, each side timed while the other runs, and each
alone. The probe is ptx/simt.cu.in's overlap section; docs/simt.md, "Beside the tensor cores".

    simt.overlap.<instruction|none>.m64n<N>k16         wgmma m64nNk16 f16 -> f32, SS, beside the instruction
    simt.overlap.<instruction|none>.m64n<N>k16.RS      ... with A in registers (RS)
    simt.overlap.<instruction|none>.m64n<N>k32.e4m3    wgmma m64nNk32 e4m3 -> f32, SS
    simt.overlap.<instruction>.alone                   the instruction's side alone (warpgroup 0 idle)

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
FORMS = ("f16.SS", "f16.RS", "e4m3.SS")  # the wgmma beside the instruction: inputs and where A is
FORM_NS = {"f16.SS": NS, "f16.RS": (64, 256), "e4m3.SS": (64, 256)}  # N timed for each form
WGMMA_UNROLL = 8  # wgmma per loop body (rendered into ptx/simt.cu.in)
MIN_BODIES = 16  # loop bodies the untimed side runs at least (rendered): its chains' checked fixed point is after them
CHECK_WGMMAS = 64  # wgmma a validation launch times
_ID = re.compile(r"^simt\.overlap\.(?P<op>none|[a-z0-9_.:]+?)\.(?:m64n(?P<n>\d+)k(?P<k>16|32)(?P<form>\.RS|\.e4m3)?"
                 r"|(?P<alone>alone))$")


@dataclass(frozen=True)
class OverlapCase(Case):
    family: ClassVar[str] = "simt"
    op: str | None  # the SIMT instruction (OPS) warpgroup 1 runs, or None
    n: int | None  # wgmma's N, or None: warpgroup 0 idle
    form: str = "f16.SS"  # FORMS

    @property
    def k(self) -> int:
        return 32 if self.form.startswith("e4m3") else 16

    @property
    def base_id(self) -> str:
        suffix = {"f16.SS": "", "f16.RS": ".RS", "e4m3.SS": ".e4m3"}[self.form]
        return f"simt.overlap.{self.op or 'none'}." + (f"m64n{self.n}k{self.k}{suffix}" if self.n else "alone")

    def columns(self) -> dict[str, object]:
        dtype, operands = self.form.split(".")
        return dict(instruction="overlap", m=64 if self.n else None, n=self.n, k=self.k if self.n else None,
                    dtype_a=dtype if self.n else None, dtype_b=dtype if self.n else None,
                    dtype_acc="f32" if self.n else None, operands=operands if self.n else None, sparse=False,
                    layout=None)

    @property
    def roles(self) -> tuple[str, ...]:
        """The sides this case times: wgmma where warpgroup 0 issues it, simt where warpgroup 1 runs."""
        return (("wgmma",) if self.n else ()) + (("simt",) if self.op else ())


def cases() -> list[OverlapCase]:
    return ([OverlapCase(op, n, form) for form in FORMS for n in FORM_NS[form] for op in (None, *OPS)]
            + [OverlapCase(op, None) for op in OPS])


def parse(case_id: str) -> OverlapCase | None:
    """The overlap case an id spells, None if it is not an overlap id."""
    match = _ID.match(case_id)
    if not case_id.startswith("simt.overlap."):
        return None
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'simt.overlap.ex2.approx.ftz.f32.m64n256k16' "
                        "or 'simt.overlap.fma.rn.f32.alone' (see `bench list --suite simt-overlap`)")
    form = {None: "f16.SS", ".RS": "f16.RS", ".e4m3": "e4m3.SS"}[match["form"]]
    if match["n"] and int(match["k"]) != (32 if form.startswith("e4m3") else 16):
        raise IllegalShapeError(f"{case_id!r}: wgmma's K is 32 for e4m3 and 16 for f16 (m64nNk32.e4m3, m64nNk16)")
    return OverlapCase(None if match["op"] == "none" else match["op"], int(match["n"]) if match["n"] else None, form)


def check(case: OverlapCase) -> None:
    if case.op is not None and case.op not in OPS:
        raise IllegalShapeError(f"{case}: the overlap probes run {', '.join(OPS)} beside wgmma")
    if case.form not in FORMS:
        raise IllegalShapeError(f"{case}: the overlap probes' wgmma forms are {', '.join(FORMS)}")
    if case.n is not None and case.n not in FORM_NS[case.form]:
        raise IllegalShapeError(f"{case}: the overlap probes issue {case.form} wgmma with N in "
                                f"{', '.join(map(str, FORM_NS[case.form]))}")
    if case.n is None and case.op is None:
        raise IllegalShapeError(f"{case}: nothing to time (no wgmma and no instruction)")


def acc_regs(case: OverlapCase) -> int:
    return case.n // 2 if case.n else 0


def wgmma_render(case: OverlapCase | None) -> dict[str, object]:
    """The wgmma's operand list and constraints for the template (N/2 f32 accumulators per thread). None (a chain
    case) or no wgmma: an m64n8k16 that is compiled and never called, so the template's section stays well-formed."""
    case = case if case is not None and case.n else OverlapCase(None, None)
    shape_n = case.n or 8
    regs = shape_n // 2
    dtype, operands = case.form.split(".")
    a_operand = "{%" + ", %".join([str(regs + 2)] * 4) + "}" if operands == "RS" else f"%{regs}"
    return {"wgmma_unroll": WGMMA_UNROLL, "min_bodies": MIN_BODIES, "wgmma_n": case.n or 0, "wgmma_shape_n": shape_n, "acc_regs": regs, "wgmma_form": case.form,
            "wgmma_k": case.k, "ones_word": "0x38383838u" if dtype == "e4m3" else "0x3C003C00u",
            "wgmma_instruction": f"wgmma.mma_async.sync.aligned.m64n{shape_n}k{case.k}.f32.{dtype}.{dtype}",
            "wgmma_a_operand": a_operand,
            # scale-d p, imm-scale-a, imm-scale-b, then the transposes 16-bit inputs take (tnspA only with A in SS)
            "wgmma_immediates": {"f16.SS": ", 1, 1, 0, 0", "f16.RS": ", 1, 1, 0", "e4m3.SS": ", 1, 1"}[case.form],
            "wgmma_d_operands": ", ".join(f"%{i}" for i in range(regs)),
            "wgmma_a_index": regs, "wgmma_b_index": regs + 1,
            "wgmma_d_constraints": ", ".join(f'"+r"(d[{i}])' for i in range(regs))}


def simt_offset(case: OverlapCase) -> int:
    """Where warpgroup 1's chains start in the output: after D (128 threads x N/2 words) and the wgmma count."""
    return 128 * acc_regs(case) + 1 if case.n else 0


def mnemonic(case: OverlapCase) -> str:
    """What ptxas emits for the case's wgmma on sm_90a."""
    return f"QGMMA.64x{case.n}x32.F32.E4M3.E4M3" if case.form.startswith("e4m3") else f"HGMMA.64x{case.n}x16.F32"


def kernels(case: OverlapCase) -> list[str]:
    return [f"probe_overlap_{role}" for role in case.roles]
