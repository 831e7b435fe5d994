"""mma.sync and mma.sp cases: the case type, every shape and type sm_90 accepts, and the id grammar.

    mma[.sp|.sp::ordered_metadata].sync.m<M>n<N>k<K>.<row|col>.<row|col>[.satfinite].<d>.<a>.<b>.<c>[.<and|xor>.popc]
is the PTX instruction `mma....sync.aligned....` without `.aligned`. The tables below follow the PTX
ISA (sections "Warp-level matrix multiply-accumulate instructions", mma and mma.sp) and what ptxas 13
accepts for sm_90a (checked by tests/test_conformance.py, which compiles every case):
- m16n8 shapes are .row.col only; f16 m8n8k4 takes any .row/.col pair for A and B;
- the accumulator types d and c must be equal, except f16 m8n8k4, which also takes d f32 with c f16
  (ptxas refuses d f16 with c f32);
- mma.sp: f16, bf16, tf32, s8/u8, s4/u4 and e4m3/e5m2 in the shapes of SPARSE_TABLE, f32 or s32
  accumulators (and f16 for f16 inputs); A is 2:4 sparse (1:2 for tf32, pairs of 4:8 for s4/u4),
  harness/sparsity.py.
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
    ("m8n8k4", ("f16",), [("f32", "f32"), ("f16", "f16"), ("f32", "f16")]),
)
# mma.sp: (shape, input types, accumulator pairs); the shapes the PTX ISA lists for sparse A.
SPARSE_TABLE = (
    ("m16n8k16", ("f16",), [("f32", "f32"), ("f16", "f16")]),
    ("m16n8k32", ("f16",), [("f32", "f32"), ("f16", "f16")]),
    ("m16n8k16", ("bf16",), [("f32", "f32")]),
    ("m16n8k32", ("bf16",), [("f32", "f32")]),
    ("m16n8k8", ("tf32",), [("f32", "f32")]),
    ("m16n8k16", ("tf32",), [("f32", "f32")]),
    ("m16n8k32", INT8, [("s32", "s32")]),
    ("m16n8k64", INT8, [("s32", "s32")]),
    ("m16n8k64", INT4, [("s32", "s32")]),
    ("m16n8k128", INT4, [("s32", "s32")]),
    ("m16n8k64", FP8, [("f32", "f32")]),
)
SPARSE = ("sp", "sp::ordered_metadata")  # mma.sp takes any legal metadata; ::ordered_metadata sorted indices
ANY_LAYOUT = {"m8n8k4": ("f16",)}  # shapes whose A and B take .row or .col (all others: .row.col)
BIT_OPS = ("and", "xor")
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
        "e4m3": 8, "e5m2": 8, "s32": 32}

_ID = re.compile(r"^mma(?:\.(?P<sparse>sp(?:::ordered_metadata)?))?\.sync\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)\.(?P<la>row|col)\.(?P<lb>row|col)"
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
    sparse: str | None = None  # "sp" or "sp::ordered_metadata": A is structured-sparse (mma.sp)

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def base_id(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        op = f".{self.bit_op}.popc" if self.bit_op else ""
        kind = f".{self.sparse}" if self.sparse else ""
        return (f"mma{kind}.sync.{self.shape}.{self.layout_a}.{self.layout_b}{sat}."
                f"{self.dtype_d}.{self.dtype_a}.{self.dtype_b}.{self.dtype_c}{op}")

    @property
    def ptx(self) -> str:
        """The instruction as written in PTX."""
        return self.base_id.replace(".sync.", ".sync.aligned.", 1)

    @property
    def instruction(self) -> str:
        return "mma.sp" if self.sparse else "mma.sync"

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.instruction, m=self.m, n=self.n, k=self.k, dtype_a=self.dtype_a,
                    dtype_b=self.dtype_b, dtype_acc=self.dtype_d, operands="RR", sparse=bool(self.sparse),
                    layout=f"{self.layout_a}.{self.layout_b}")


def _forms(table, sparse: str | None) -> list[MmaCase]:
    out = []
    for shape, types, accumulators in table:
        m, n, k = map(int, re.findall(r"\d+", shape))
        layouts = product(("row", "col"), repeat=2) if types[0] in ANY_LAYOUT.get(shape, ()) else [("row", "col")]
        for (la, lb), (a, b), (d, c) in product(layouts, product(types, repeat=2), accumulators):
            if a == "b1":
                out += [MmaCase(m, n, k, d, a, b, c, la, lb, bit_op=op) for op in BIT_OPS]
                continue
            out.append(MmaCase(m, n, k, d, a, b, c, la, lb, sparse=sparse))
            if d == "s32" and a == b and a.startswith("s"):
                out.append(MmaCase(m, n, k, d, a, b, c, la, lb, satfinite=True, sparse=sparse))
    return out


def cases() -> list[MmaCase]:
    """Every legal case: each type pair of the tables (mixed signedness and fp8 pairs too), each
    accumulator pair and layout; .satfinite once per integer shape (on the signed pair); b1 with .and
    and .xor; then mma.sp and mma.sp::ordered_metadata in every sparse form."""
    out = _forms(TABLE, None)
    for kind in SPARSE:
        out += _forms(SPARSE_TABLE, kind)
    return out


def parse(case_id: str) -> MmaCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'mma.sync.m16n8k16.row.col.f32.f16.f16.f32' or "
                        "'mma.sp::ordered_metadata.sync.m16n8k32.row.col.f32.f16.f16.f32' (see `bench list --suite mma`)")
    return MmaCase(int(match["m"]), int(match["n"]), int(match["k"]), match["d"], match["a"], match["b"],
                   match["c"], match["la"], match["lb"], bool(match["sat"]), match["op"], match["sparse"])


def check(case: MmaCase) -> None:
    """IllegalShapeError for what the PTX ISA does not allow on sm_90, naming what it does."""
    if case in set(cases()):
        return
    family = [c for c in cases() if c.sparse == case.sparse]
    name = f"mma.{case.sparse}" if case.sparse else "mma.sync"
    legal = [c for c in family if c.dtype_a == case.dtype_a]
    if not legal:
        raise IllegalShapeError(f"{case}: {name} has no input type {case.dtype_a!r}; types: "
                                f"{', '.join(sorted({c.dtype_a for c in family}))}")
    shapes = sorted({c.shape for c in legal}, key=lambda s: tuple(map(int, re.findall(r"\d+", s))))
    if case.shape not in shapes:
        raise IllegalShapeError(f"{case}: {case.dtype_a} {name} has shapes {', '.join(shapes)}, not {case.shape}")
    same = [c for c in legal if c.shape == case.shape]
    forms = ", ".join(sorted({c.base_id.split(case.shape + ".", 1)[1] for c in same}))
    raise IllegalShapeError(f"{case}: not a legal {case.dtype_a} {case.shape} {name} form; legal: {forms}")
