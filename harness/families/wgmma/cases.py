"""wgmma.mma_async cases: the case type, the legal shapes and dtypes, and the id grammar.

    wgmma.mma_async[.sp].m64n<N>k<K>.<acc>.<a>.<b>.<SS|RS>
Implemented so far: dense m64nNk16 with 16-bit inputs, A and B K-major without swizzle,
operand modes SS (A and B in shared memory) and RS (A in registers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

M = 64
K_16BIT = 16
LEGAL_N = tuple(range(8, 257, 8))  # PTX ISA: N = 8..256 in steps of 8 for 16-bit inputs
OPERAND_MODES = ("SS", "RS")
# (A, B, accumulator) combinations the PTX ISA allows for k16, and those implemented here.
LEGAL_16BIT_DTYPES = (("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"))
IMPLEMENTED_DTYPES = LEGAL_16BIT_DTYPES
LAYOUT = "K-major, no swizzle"  # shared-memory layout of A and B (descriptors.py KMajorLayout)

_ID = re.compile(r"^wgmma\.mma_async(?P<sp>\.sp)?\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)"
                 r"\.(?P<acc>\w+)\.(?P<a>\w+)\.(?P<b>\w+)\.(?P<ops>[A-Z]{2})$")


@dataclass(frozen=True)
class WgmmaCase(Case):
    family: ClassVar[str] = "wgmma"
    m: int
    n: int
    k: int
    dtype_a: str
    dtype_b: str
    dtype_acc: str
    operands: str  # "SS": A and B in shared memory; "RS": A in registers, B in shared memory
    sparse: bool = False

    @property
    def instruction(self) -> str:
        return "wgmma.mma_async.sp" if self.sparse else "wgmma.mma_async"

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def base_id(self) -> str:
        return f"{self.instruction}.{self.shape}.{self.dtype_acc}.{self.dtype_a}.{self.dtype_b}.{self.operands}"

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.instruction, m=self.m, n=self.n, k=self.k, dtype_a=self.dtype_a,
                    dtype_b=self.dtype_b, dtype_acc=self.dtype_acc, operands=self.operands, sparse=self.sparse,
                    layout=LAYOUT)


def parse(case_id: str) -> WgmmaCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'wgmma.mma_async.m64n128k16.f32.f16.f16.SS' (see `bench list`)")
    if match["ops"] not in OPERAND_MODES:
        raise SpecError(f"unknown operand mode {match['ops']!r} in {case_id!r}: "
                        f"expected one of {', '.join(OPERAND_MODES)}")
    return WgmmaCase(int(match["m"]), int(match["n"]), int(match["k"]), match["a"], match["b"], match["acc"],
                     match["ops"], bool(match["sp"]))


def cases() -> list[WgmmaCase]:
    return [WgmmaCase(M, n, K_16BIT, a, b, acc, ops)
            for a, b, acc in IMPLEMENTED_DTYPES for ops in OPERAND_MODES for n in LEGAL_N]


def check(case: WgmmaCase) -> None:
    """Raise IllegalShapeError (PTX forbids it) or SpecError (not implemented) for `case`."""
    dtypes_ = (case.dtype_a, case.dtype_b, case.dtype_acc)
    if case.m != M:
        raise IllegalShapeError(f"{case}: wgmma has M = 64 only, got M = {case.m}")
    if case.sparse:
        raise SpecError(f"{case}: sparse wgmma is not implemented yet")
    if dtypes_ not in LEGAL_16BIT_DTYPES:
        legal = ", ".join(".".join((acc, a, b)) for a, b, acc in LEGAL_16BIT_DTYPES)
        raise SpecError(f"{case}: dtypes {case.dtype_acc}.{case.dtype_a}.{case.dtype_b} are not "
                        f"implemented; implemented: {legal}")
    if case.k != K_16BIT:
        raise IllegalShapeError(f"{case}: 16-bit wgmma has K = 16, got K = {case.k}")
    if case.n not in LEGAL_N:
        raise IllegalShapeError(f"{case}: N must be a multiple of 8 from 8 to 256, got N = {case.n}")
