"""mma.sync cases: the case type, every shape and type sm_90 accepts, and the id grammar.

    mma.sync.m<M>n<N>k<K>.<row|col>.<row|col>[.satfinite].<d>.<a>.<b>.<c>[.<and|xor>.popc]
is the PTX instruction `mma.sync.aligned....` without `.aligned`. The table below follows the PTX
ISA (section "Warp-level matrix multiply-accumulate instructions", mma) and what ptxas 13 accepts
for sm_90a: m16n8 shapes are .row.col only; for m16n8k8 the accumulator types must be equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

INT8, INT4, FP8 = ("s8", "u8"), ("s4", "u4"), ("e4m3", "e5m2")
# (shape, input types, [(d, c) accumulator pairs]); the shapes the PTX ISA lists for each type.
TABLE = (
    ("m16n8k8", ("f16",), [("f32", "f32"), ("f16", "f16")]),
    ("m16n8k16", ("f16",), [("f32", "f32"), ("f16", "f16")]),  # ptxas 13: d and c types must match
    ("m16n8k8", ("bf16",), [("f32", "f32")]),
    ("m16n8k16", ("bf16",), [("f32", "f32")]),
    ("m16n8k4", ("tf32",), [("f32", "f32")]),
    ("m16n8k8", ("tf32",), [("f32", "f32")]),
    ("m8n8k16", INT8, [("s32", "s32")]),
    ("m16n8k16", INT8, [("s32", "s32")]),
    ("m16n8k32", INT8, [("s32", "s32")]),
    ("m8n8k32", INT4, [("s32", "s32")]),
    ("m16n8k32", INT4, [("s32", "s32")]),
    ("m16n8k64", INT4, [("s32", "s32")]),
    ("m8n8k128", ("b1",), [("s32", "s32")]),
    ("m16n8k128", ("b1",), [("s32", "s32")]),
    ("m16n8k256", ("b1",), [("s32", "s32")]),
    ("m16n8k16", FP8, [("f32", "f32"), ("f16", "f16")]),
    ("m16n8k32", FP8, [("f32", "f32"), ("f16", "f16")]),
    ("m8n8k4", ("f64",), [("f64", "f64")]),
    ("m16n8k4", ("f64",), [("f64", "f64")]),
    ("m16n8k8", ("f64",), [("f64", "f64")]),
    ("m16n8k16", ("f64",), [("f64", "f64")]),
)
BIT_OPS = ("and", "xor")
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
        "e4m3": 8, "e5m2": 8, "s32": 32}

_ID = re.compile(r"^mma\.sync\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)\.(?P<la>row|col)\.(?P<lb>row|col)"
                 r"(?P<sat>\.satfinite)?\.(?P<d>\w+?)\.(?P<a>\w+?)\.(?P<b>\w+?)\.(?P<c>\w+?)"
                 r"(?:\.(?P<op>and|xor)\.popc)?$")


@dataclass(frozen=True)
class MmaCase(Case):
    family: ClassVar[str] = "mma"
    m: int
    n: int
    k: int
    dtype_d: str
    dtype_a: str
    dtype_b: str
    dtype_c: str
    layout_a: str = "row"
    layout_b: str = "col"
    satfinite: bool = False  # integer types: clamp the s32 result instead of wrapping
    bit_op: str | None = None  # b1: "and" or "xor" (then .popc)

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def base_id(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        op = f".{self.bit_op}.popc" if self.bit_op else ""
        return (f"mma.sync.{self.shape}.{self.layout_a}.{self.layout_b}{sat}."
                f"{self.dtype_d}.{self.dtype_a}.{self.dtype_b}.{self.dtype_c}{op}")

    @property
    def ptx(self) -> str:
        """The instruction as written in PTX."""
        return self.base_id.replace("mma.sync.", "mma.sync.aligned.", 1)

    def columns(self) -> dict[str, object]:
        return dict(instruction="mma.sync", m=self.m, n=self.n, k=self.k, dtype_a=self.dtype_a,
                    dtype_b=self.dtype_b, dtype_acc=self.dtype_d, operands="RR", sparse=False,
                    layout=f"{self.layout_a}.{self.layout_b}")


def cases() -> list[MmaCase]:
    """Every legal case: each type pair of the table (mixed signedness and fp8 pairs too), each
    accumulator pair; .satfinite once per integer shape (on the signed pair); b1 with .and and .xor."""
    out = []
    for shape, types, accumulators in TABLE:
        m, n, k = map(int, re.findall(r"\d+", shape))
        for (a, b), (d, c) in product(product(types, repeat=2), accumulators):
            if a == "b1":
                out += [MmaCase(m, n, k, d, a, b, c, bit_op=op) for op in BIT_OPS]
                continue
            out.append(MmaCase(m, n, k, d, a, b, c))
            if d == "s32" and a == b and a.startswith("s"):
                out.append(MmaCase(m, n, k, d, a, b, c, satfinite=True))
    return out


def parse(case_id: str) -> MmaCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'mma.sync.m16n8k16.row.col.f32.f16.f16.f32' (see `bench list --suite mma`)")
    return MmaCase(int(match["m"]), int(match["n"]), int(match["k"]), match["d"], match["a"], match["b"],
                   match["c"], match["la"], match["lb"], bool(match["sat"]), match["op"])


def check(case: MmaCase) -> None:
    """IllegalShapeError for what the PTX ISA does not allow on sm_90, naming what it does."""
    if case in set(cases()):
        return
    legal = [c for c in cases() if c.dtype_a == case.dtype_a]
    if not legal:
        raise IllegalShapeError(f"{case}: mma.sync has no input type {case.dtype_a!r}; types: "
                                f"{', '.join(sorted({c.dtype_a for c in cases()}))}")
    shapes = sorted({c.shape for c in legal})
    if case.shape not in shapes:
        raise IllegalShapeError(f"{case}: {case.dtype_a} mma.sync has shapes {', '.join(shapes)}, not {case.shape}")
    same = [c for c in legal if c.shape == case.shape]
    forms = ", ".join(sorted({c.base_id.split(case.shape + ".", 1)[1] for c in same}))
    raise IllegalShapeError(f"{case}: not a legal {case.dtype_a} {case.shape} form; legal: {forms}")
