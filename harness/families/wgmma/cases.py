"""wgmma.mma_async cases: the case type, the legal shapes and dtypes, and the id grammar.

    wgmma.mma_async[.sp].m64n<N>k<K>[.satfinite].<acc>.<a>.<b>[.and.popc].<SS|RS>
Dense wgmma in every type the PTX ISA allows on sm_90a ("Asynchronous Warpgroup Level Matrix
Multiply-Accumulate", shapes and types): f16 (f32 or f16 accumulate) and bf16 at K = 16, tf32 at
K = 8, e4m3/e5m2 in every pair at K = 32 (f32 or f16 accumulate), s8/u8 in every pair at K = 32
(s32, with and without .satfinite), b1 .and.popc at K = 256. Every row of A and B is 32 bytes of K
whatever the type. N: every multiple of 8 up to 256 for the float types; for s8/u8 and b1 only
8, 16, 24 and then multiples of 16. Operand modes SS (A and B in shared memory) and RS (A in
registers). Layouts of A and B in shared memory (both the same): K-major without swizzle by default;
K-major with 32, 64 or 128-byte swizzle for every dense type; and MN-major (wgmma's transpose
flags) without or with swizzle for f16/bf16, written after the operand mode: `.SS.MN-SW128`.
Sparse wgmma.mma_async.sp: every dense type but b1, at twice the dense K (f16/bf16 k32, tf32 k16,
fp8 and int8 k64), the same N; A is 2:4 structured sparse (1:2 pairs for tf32) and held compressed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

PAPER_N = (8, 16, 32, 64, 128, 256)  # the N values of the paper's wgmma tables
EVERYDAY = ("f16", "bf16")  # the `wgmma` suite's input types (the paper's)

M = 64
K_16BIT = 16
LEGAL_N = tuple(range(8, 257, 8))  # PTX ISA: N = 8..256 in steps of 8 for the float types
INTEGER_N = (8, 16, 24) + tuple(range(32, 257, 16))  # s8/u8 and b1: 18 values
OPERAND_MODES = ("SS", "RS")
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
FP8, INT8 = ("e4m3", "e5m2"), ("s8", "u8")
# (A, B, accumulator) combinations the PTX ISA allows for dense wgmma.
LEGAL_16BIT_DTYPES = (("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"))
LEGAL_DTYPES = (LEGAL_16BIT_DTYPES + (("tf32", "tf32", "f32"),)
                + tuple((a, b, acc) for a in FP8 for b in FP8 for acc in ("f32", "f16"))
                + tuple((a, b, "s32") for a in INT8 for b in INT8) + (("b1", "b1", "s32"),))
SPARSE_DTYPES = tuple(d for d in LEGAL_DTYPES if d[0] != "b1")  # PTX ISA: no sparse b1
# Shared-memory layouts of A and B (descriptors.py Layout): name -> (major, swizzle).
LAYOUTS = {"K": ("K", "none"), "K-SW32": ("K", "32B"), "K-SW64": ("K", "64B"), "K-SW128": ("K", "128B"),
           "MN": ("MN", "none"), "MN-SW32": ("MN", "32B"), "MN-SW64": ("MN", "64B"), "MN-SW128": ("MN", "128B")}
DEFAULT_LAYOUT = "K"
TRANSPOSABLE = ("f16", "bf16")  # PTX ISA: only these take imm-trans-a/b, so only these may be MN-major
LAYOUT_N = (8, 64, 128, 256)  # the N of the layout cases (every type allows them)
LAYOUT_TYPES = (("f16", "f16", "f32"), ("bf16", "bf16", "f32"), ("tf32", "tf32", "f32"), ("e4m3", "e4m3", "f32"),
                ("s8", "s8", "s32"), ("b1", "b1", "s32"))  # one form per input type

_ID = re.compile(r"^wgmma\.mma_async(?P<sp>\.sp)?\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)(?P<sat>\.satfinite)?"
                 r"\.(?P<acc>\w+?)\.(?P<a>\w+?)\.(?P<b>\w+?)(?P<popc>\.and\.popc)?\.(?P<ops>[A-Z]{2})"
                 r"(?:\.(?P<layout>[A-Z]+(?:-SW\d+)?))?$")


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
    satfinite: bool = False  # s8/u8: clamp the s32 result instead of wrapping
    layout: str = DEFAULT_LAYOUT  # of A (in SS mode) and B in shared memory: a key of LAYOUTS
    # At N = 256 (default layout), also the input-distribution, energy and burst points (the family's plan):
    # about 10 s a case on an H100. The everyday suites (`wgmma`, `wgmma-quick`) leave them out and
    # `wgmma-energy` holds them; every other suite and a parsed id keep them. Not part of the id: it says
    # what is measured of the instruction, not which instruction (params() leaves it out too).
    energy: bool = True

    @property
    def instruction(self) -> str:
        return "wgmma.mma_async.sp" if self.sparse else "wgmma.mma_async"

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def types(self) -> str:
        """As PTX writes them after the shape: [.satfinite].acc.a.b[.and.popc]."""
        sat = ".satfinite" if self.satfinite else ""
        popc = ".and.popc" if self.dtype_a == "b1" else ""
        return f"{sat}.{self.dtype_acc}.{self.dtype_a}.{self.dtype_b}{popc}"

    @property
    def base_id(self) -> str:
        layout = "" if self.layout == DEFAULT_LAYOUT else f".{self.layout}"
        return f"{self.instruction}.{self.shape}{self.types}.{self.operands}{layout}"

    def params(self) -> dict[str, object]:
        values = super().params()
        values.pop("energy")
        return values

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.instruction, m=self.m, n=self.n, k=self.k, dtype_a=self.dtype_a,
                    dtype_b=self.dtype_b, dtype_acc=self.dtype_acc, operands=self.operands, sparse=self.sparse,
                    layout=describe_layout(self.layout))


def parse(case_id: str) -> WgmmaCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'wgmma.mma_async.m64n128k16.f32.f16.f16.SS' (see `bench list`)")
    if match["ops"] not in OPERAND_MODES:
        raise SpecError(f"unknown operand mode {match['ops']!r} in {case_id!r}: "
                        f"expected one of {', '.join(OPERAND_MODES)}")
    case = WgmmaCase(int(match["m"]), int(match["n"]), int(match["k"]), match["a"], match["b"], match["acc"],
                     match["ops"], bool(match["sp"]), bool(match["sat"]), match["layout"] or DEFAULT_LAYOUT)
    if case.layout not in LAYOUTS:
        raise SpecError(f"unknown layout {case.layout!r} in {case_id!r}: expected one of {', '.join(LAYOUTS)}")
    if bool(match["popc"]) != (case.dtype_a == "b1"):
        raise SpecError(f"{case_id!r}: b1 wgmma is written .s32.b1.b1.and.popc, and only b1 takes .and.popc")
    return case


def describe_layout(name: str) -> str:
    major, swizzle = LAYOUTS.get(name, (None, None))
    return f"{major}-major, " + ("no swizzle" if swizzle == "none" else f"{swizzle} swizzle")


def legal_n(dtype_a: str) -> tuple[int, ...]:
    return INTEGER_N if dtype_a in INT8 + ("b1",) else LEGAL_N


def cases() -> list[WgmmaCase]:
    """Every dense form: each legal type combination (s8/u8 with and without .satfinite), N and mode."""
    out = []
    for a, b, acc in LEGAL_DTYPES:
        for sat in ((False, True) if a in INT8 else (False,)):
            out += [WgmmaCase(M, n, K_OF[a], a, b, acc, ops, satfinite=sat)
                    for ops in OPERAND_MODES for n in legal_n(a)]
    return out


def sparse_cases() -> list[WgmmaCase]:
    """Every sparse form: each type but b1 (s8/u8 with and without .satfinite), every N and mode."""
    out = []
    for a, b, acc in SPARSE_DTYPES:
        for sat in ((False, True) if a in INT8 else (False,)):
            out += [WgmmaCase(M, n, 2 * K_OF[a], a, b, acc, ops, sparse=True, satfinite=sat)
                    for ops in OPERAND_MODES for n in legal_n(a)]
    return out


def layout_cases() -> list[WgmmaCase]:
    """Every layout but the default for one form per input type: K-major with each swizzle, and for
    f16/bf16 MN-major with and without swizzle; N = 8, 64, 128, 256; SS and RS."""
    out = []
    for a, b, acc in LAYOUT_TYPES:
        names = [n for n, (major, _) in LAYOUTS.items()
                 if n != DEFAULT_LAYOUT and (major == "K" or a in TRANSPOSABLE)]
        out += [WgmmaCase(M, n, K_OF[a], a, b, acc, ops, layout=name)
                for name in names for ops in OPERAND_MODES for n in LAYOUT_N]
    return out


def check(case: WgmmaCase) -> None:
    """Raise IllegalShapeError (PTX forbids it) or SpecError (not implemented) for `case`."""
    dtypes_ = (case.dtype_a, case.dtype_b, case.dtype_acc)
    if case.m != M:
        raise IllegalShapeError(f"{case}: wgmma has M = 64 only, got M = {case.m}")
    if case.sparse and case.dtype_a == "b1":
        raise IllegalShapeError(f"{case}: there is no sparse b1 wgmma")
    if dtypes_ not in LEGAL_DTYPES:
        legal = ", ".join(".".join((acc, a, b)) for a, b, acc in LEGAL_DTYPES)
        raise IllegalShapeError(f"{case}: dtypes {case.dtype_acc}.{case.dtype_a}.{case.dtype_b} are not a dense "
                                f"wgmma form; legal: {legal}")
    if case.layout != DEFAULT_LAYOUT and LAYOUTS[case.layout][0] == "MN" and case.dtype_a not in TRANSPOSABLE:
        raise IllegalShapeError(f"{case}: only f16/bf16 wgmma transposes, so only they may be MN-major; "
                                f"{case.dtype_a} is K-major")
    if case.sparse and case.layout != DEFAULT_LAYOUT:
        raise SpecError(f"{case}: sparse wgmma is measured in the default layout (K-major, no swizzle) only")
    if case.satfinite and case.dtype_a not in INT8:
        raise IllegalShapeError(f"{case}: .satfinite is for s8/u8 wgmma only")
    k = K_OF[case.dtype_a] * (2 if case.sparse else 1)
    if case.k != k:
        kind = "sparse" if case.sparse else "dense"
        raise IllegalShapeError(f"{case}: {kind} {case.dtype_a} wgmma has K = {k}, got K = {case.k}")
    if case.n not in legal_n(case.dtype_a):
        if case.dtype_a in INT8 + ("b1",):
            raise IllegalShapeError(f"{case}: {case.dtype_a} wgmma takes N in {', '.join(map(str, INTEGER_N))}; "
                                    f"got N = {case.n}")
        raise IllegalShapeError(f"{case}: N must be a multiple of 8 from 8 to 256, got N = {case.n}")
