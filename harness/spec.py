"""Case: one probed instruction configuration, and its canonical id (the only naming authority).

The id is the PTX instruction as written, without `.sync.aligned`, plus the operand mode:
    wgmma.mma_async.m64n128k16.f32.bf16.bf16.SS
    wgmma.mma_async.sp.m64n64k32.f32.f16.f16.RS
It is the database key, the report label and what `bench show` takes.

A self-test probe that faults on purpose (suite `faults`) adds the fault: `...f16.SS+trap`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import SpecError

OPERAND_MODES = ("SS", "RS")
# Faults a self-test probe can plant (ptx/common.cuh planted_fault): a trap instruction, a store
# to an unmapped address, and an endless loop.
PLANTED_FAULTS = ("trap", "oob", "hang")

_WGMMA_ID = re.compile(
    r"^wgmma\.mma_async(?P<sp>\.sp)?\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)"
    r"\.(?P<acc>\w+)\.(?P<a>\w+)\.(?P<b>\w+)\.(?P<ops>[A-Z]{2})(?:\+(?P<fault>\w+))?$"
)


@dataclass(frozen=True, order=True)
class Case:
    family: str
    m: int
    n: int
    k: int
    dtype_a: str
    dtype_b: str
    dtype_acc: str
    operands: str  # "SS": A and B in shared memory; "RS": A in registers, B in shared memory
    sparse: bool = False
    fault: str | None = None  # a planted fault (self-test only), one of PLANTED_FAULTS

    @property
    def instruction(self) -> str:
        return "wgmma.mma_async.sp" if self.sparse else "wgmma.mma_async"

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def case_id(self) -> str:
        planted = f"+{self.fault}" if self.fault else ""
        return (f"{self.instruction}.{self.shape}.{self.dtype_acc}.{self.dtype_a}.{self.dtype_b}"
                f".{self.operands}{planted}")

    def __str__(self) -> str:
        return self.case_id


def parse_case_id(case_id: str) -> Case:
    """Parse a canonical id into a Case; raises SpecError naming the expected form."""
    match = _WGMMA_ID.match(case_id.strip())
    if not match:
        raise SpecError(
            f"cannot parse case id {case_id!r}: expected e.g. "
            "'wgmma.mma_async.m64n128k16.f32.f16.f16.SS' (see `bench list`)")
    if match["ops"] not in OPERAND_MODES:
        raise SpecError(f"unknown operand mode {match['ops']!r} in {case_id!r}: "
                        f"expected one of {', '.join(OPERAND_MODES)}")
    if match["fault"] and match["fault"] not in PLANTED_FAULTS:
        raise SpecError(f"unknown planted fault {match['fault']!r} in {case_id!r}: "
                        f"expected one of {', '.join(PLANTED_FAULTS)}")
    return Case(family="wgmma", m=int(match["m"]), n=int(match["n"]), k=int(match["k"]),
                dtype_a=match["a"], dtype_b=match["b"], dtype_acc=match["acc"],
                operands=match["ops"], sparse=bool(match["sp"]), fault=match["fault"])
