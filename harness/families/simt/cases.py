"""SIMT instructions (CUDA cores, MUFU, shuffles, converts): the case type, every instruction the family
times, and the id grammar.

    simt.<instruction>

is the PTX instruction as written, without operands (`simt.fma.rn.f32`, `simt.ex2.approx.ftz.f32`,
`simt.shfl.sync.bfly.b32`). Each case times a chain of that instruction, x <- op(x, c, c2) on 32-bit
registers (harness/families/simt/ops.py says what each step is, what SASS it must compile to and how its
result is computed exactly).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import harness.families.simt.overlap as _overlap
from harness.errors import IllegalShapeError, SpecError
from harness.families.simt.ops import OPS
from harness.families.simt.overlap import OverlapCase
from harness.spec import Case

PREFIX = "simt."


@dataclass(frozen=True)
class SimtCase(Case):
    family: ClassVar[str] = "simt"
    instruction_ptx: str  # the PTX instruction, as OPS names it

    @property
    def base_id(self) -> str:
        return PREFIX + self.instruction_ptx

    @property
    def op(self):
        return OPS[self.instruction_ptx]

    def columns(self) -> dict[str, object]:
        op = self.op
        return dict(instruction=self.instruction_ptx.split(".")[0], m=None, n=None, k=None, dtype_a=op.dtype,
                    dtype_b=None, dtype_acc=None, operands="R", sparse=False, layout=None)


def cases() -> list[SimtCase]:
    return [SimtCase(name) for name in OPS]


def parse(case_id: str) -> SimtCase:
    if not case_id.startswith(PREFIX) or not re.fullmatch(r"[a-z0-9_.:]+", case_id[len(PREFIX):]):
        raise SpecError(f"cannot parse case id {case_id!r}: expected 'simt.' and a PTX instruction, e.g. "
                        "'simt.fma.rn.f32' (see `bench list --suite simt`)")
    return SimtCase(case_id[len(PREFIX):])


def check(case: SimtCase) -> None:
    if case.instruction_ptx not in OPS:
        opcode = case.instruction_ptx.split(".")[0]
        same = [name for name in OPS if name.split(".")[0] == opcode]
        if same:
            raise IllegalShapeError(f"{case}: the simt family times {opcode} as {', '.join(same)}")
        raise IllegalShapeError(f"{case}: the simt family has no {opcode!r}; it times "
                                f"{', '.join(sorted({name.split('.')[0] for name in OPS}))}")


def _unit(case: SimtCase) -> str:
    """Which unit runs the instruction: mufu, fma (f32 and packed halves), shuffle, convert, alu."""
    first = case.op.sass[0][0]
    return {"MUFU": "mufu", "FFMA": "fma", "FMUL": "fma", "FADD": "fma", "HFMA2": "fma", "SHFL": "shuffle",
            "F2FP": "convert"}.get(first.split(".")[0], "alu")


# The family's cases, ids and checks: the chains' (SimtCase, above) and the overlap's (overlap.py).

def _all_cases() -> list:
    return [*cases(), *_overlap.cases(), *_overlap.tma_cases()]


def _parse(case_id: str):
    return _overlap.parse(case_id) or parse(case_id)


def _check(case) -> None:
    (_overlap.check if isinstance(case, OverlapCase) else check)(case)
