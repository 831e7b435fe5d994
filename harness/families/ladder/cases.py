"""The ladder's cases and ids: one GEMM step below the wgmma pipeline at one problem size.

    ladder.<step>.<dtype>.<M>x<N>x<K>      e.g. ladder.reg-tiled.f32.4096x4096x4096, ladder.mma-ldmatrix.f16.2048x2048x2048
    ladder.cublas.f32.<M>x<N>x<K>          cuBLAS SGEMM on the same problem: an anchor (LadderLibraryCase), no template

C[M, N] = A[M, K] . B[N, K]^T (A and B row-major, K-major), C in f32. The steps (ptx/ladder.cu.in), each with
its tile (BM x BN per block, k-blocks of BK) and block size, are STEPS; the library's rung (LIBRARY_STEP) is a call,
harness/anchors/cublas.py SGEMM, whose case is an AnchorCase (harness/anchors): nothing rendered, compiled or
SASS-checked. Its stored rows (written while it was a LadderCase whose template rendered a stub kernel) keep their
ids and params ({"step": "cublas", "m", "n", "k"}).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case


@dataclass(frozen=True)
class Step:
    """One rung: its template constant, tile, threads, element type, and what it runs (its SASS opcode)."""

    index: int  # ptx/ladder.cu.in STEP_*
    bm: int
    bn: int
    bk: int
    threads: int
    dtype: str
    what: str
    unit: str  # the execution unit: "FFMA" (CUDA cores), "HMMA" (tensor cores)


STEPS: dict[str, Step] = {
    "naive": Step(0, 16, 16, 8, 256, "f32", "one thread per element of C, A and B read from global memory", "FFMA"),
    "smem-tiled": Step(1, 32, 32, 32, 1024, "f32", "32 x 32 tiles of A and B in shared memory, one element of C per "
                       "thread", "FFMA"),
    "reg-tiled": Step(2, 128, 128, 16, 256, "f32", "128 x 128 tiles, k-blocks of 16 in shared memory, 8 x 8 elements "
                      "of C per thread in registers", "FFMA"),
    "wmma": Step(3, 128, 128, 32, 256, "f16", "wmma.mma m16n16k16 (f16 in, f32 accumulate) on 128 x 128 x 32 tiles "
                 "in shared memory, 8 warps of 64 x 32", "HMMA"),
    "mma-ldmatrix": Step(4, 128, 128, 32, 256, "f16", "mma.sync m16n8k16 (f16 in, f32 accumulate), fragments by "
                         "ldmatrix.x4 from 128 x 128 x 32 tiles in shared memory, 8 warps of 64 x 32", "HMMA"),
}
LIBRARY_STEP = "cublas"  # the library's rung: cuBLAS SGEMM (LadderLibraryCase)
ORDER = (*STEPS, LIBRARY_STEP)  # the ladder's order, naive first, the library last
SIZES = (1024, 2048, 4096)  # square problems of the family's suites
MAX_DIM = 16384
# The HMMA steps' K at most: their bound, K x 2^-22 x sum |a b| (about 10 at K = 8192 for normal inputs), still leaves
# about 1 % of the elements that a dropped k-step of 16 products (a standard deviation of 4) moves beyond it; at
# 16384 (about 41) none (problem.py)
HMMA_MAX_K = 8192
_ID = re.compile(r"^ladder\.([a-z-]+)\.(f32|f16)\.(\d+)x(\d+)x(\d+)$")


@dataclass(frozen=True)
class LadderCase(Case):
    family: ClassVar[str] = "ladder"
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k")  # the GPU tests' sample: every step, smallest and largest

    step: str
    m: int
    n: int
    k: int

    @property
    def spec(self) -> Step:
        return STEPS[self.step]

    @property
    def dtype(self) -> str:
        return self.spec.dtype

    @property
    def in_bytes(self) -> int:
        return 4 if self.dtype == "f32" else 2

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def tiles(self) -> int:
        return (self.m // self.spec.bm) * (self.n // self.spec.bn)

    @property
    def base_id(self) -> str:
        return f"ladder.{self.step}.{self.dtype}.{self.m}x{self.n}x{self.k}"

    def columns(self) -> dict[str, object]:
        return {"instruction": {"FFMA": "fma.rn.f32", "HMMA": "wmma.mma" if self.step == "wmma" else "mma.sync"}[
                    self.spec.unit],
                "m": self.m, "n": self.n, "k": self.k, "dtype_a": self.dtype, "dtype_b": self.dtype, "dtype_acc": "f32"}


@dataclass(frozen=True)
class LadderLibraryCase(AnchorCase):
    """cuBLAS SGEMM on the ladder's problem (the measured inputs a step of the same size draws): an anchor
    (harness/anchors), its call harness/anchors/cublas.py SGEMM. `step` and `dtype` are the rung's, as the steps'
    cases have them, so the ladder's tables and figures read it as one more rung."""

    family: ClassVar[str] = "ladder"
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k")
    step: ClassVar[str] = LIBRARY_STEP
    dtype: ClassVar[str] = "f32"
    in_bytes: ClassVar[int] = 4

    m: int
    n: int
    k: int

    @property
    def anchor(self) -> Anchor:
        from harness.anchors.cublas import SGEMM

        return SGEMM

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def base_id(self) -> str:
        return f"ladder.{LIBRARY_STEP}.{self.dtype}.{self.m}x{self.n}x{self.k}"

    def columns(self) -> dict[str, object]:
        return {"instruction": self.anchor.call, "m": self.m, "n": self.n, "k": self.k, "dtype_a": self.dtype,
                "dtype_b": self.dtype, "dtype_acc": "f32"}

    def params(self) -> dict[str, object]:
        """As stored while it was a LadderCase (its step by name)."""
        return {"step": LIBRARY_STEP, "m": self.m, "n": self.n, "k": self.k}


def case(step: str, size: int | tuple[int, int, int]) -> LadderCase | LadderLibraryCase:
    m, n, k = (size, size, size) if isinstance(size, int) else size
    return LadderLibraryCase(m, n, k) if step == LIBRARY_STEP else LadderCase(step, m, n, k)


def parse(case_id: str) -> LadderCase | LadderLibraryCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse ladder case id {case_id!r}: expected ladder.<step>.<dtype>.<M>x<N>x<K> with step "
                        f"one of {', '.join(ORDER)} (e.g. ladder.reg-tiled.f32.4096x4096x4096)")
    step, dtype, m, n, k = match.group(1), match.group(2), *map(int, match.groups()[2:])
    if step not in ORDER:
        raise SpecError(f"{case_id!r}: unknown ladder step {step!r}: expected one of {', '.join(ORDER)}")
    found = case(step, (m, n, k))
    if found.dtype != dtype:
        raise SpecError(f"{case_id!r}: the {step} step is {found.dtype}, not {dtype}")
    check(found)
    return found


def check(case: LadderCase | LadderLibraryCase) -> None:
    """M and N whole tiles (the kernels have no edge code), K whole k-blocks (and a multiple of 32, the check
    problem's), every dimension at most MAX_DIM; the library's call, multiples of 8."""
    if min(case.m, case.n, case.k) <= 0 or max(case.m, case.n, case.k) > MAX_DIM:
        raise IllegalShapeError(f"{case.case_id}: every dimension in 1..{MAX_DIM}")
    if isinstance(case, LadderLibraryCase):
        if case.m % 8 or case.n % 8 or case.k % 8:
            raise IllegalShapeError(f"{case.case_id}: the library case takes multiples of 8")
        return
    spec = case.spec
    if spec.unit == "HMMA" and case.k > HMMA_MAX_K:
        raise IllegalShapeError(f"{case.case_id}: K = {case.k}: past {HMMA_MAX_K} the tensor cores' bound "
                                "(problem.bound) is wider than a dropped k-step moves an element: validation could not "
                                "see one")
    if case.m % spec.bm or case.n % spec.bn or case.k % max(spec.bk, 32):
        raise IllegalShapeError(f"{case.case_id}: the {case.step} step takes M a multiple of {spec.bm}, N of {spec.bn} "
                                f"and K of {max(spec.bk, 32)} (whole tiles, no edge code)")


def cases() -> list[LadderCase | LadderLibraryCase]:
    return [case(step, size) for size in SIZES for step in ORDER]


def quick() -> list[LadderCase | LadderLibraryCase]:
    return [case(step, 1024) for step in ORDER]


def everyday() -> list[LadderCase | LadderLibraryCase]:
    return [case(step, 4096) for step in ORDER]
