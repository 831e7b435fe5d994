"""What runs beside the tensor cores (issue 43, section 2): one SM, warpgroup 0 issuing wgmma back to back and
warpgroup 1 running chains of a SIMT instruction at full rate, each side timed while the other runs, and each
alone. The probe is ptx/simt.cu.in's overlap section; docs/simt.md, "Beside the tensor cores".

    simt.overlap.<instruction|none>.m64n<N>k16         wgmma m64nNk16 f16 -> f32, SS, beside the instruction
    simt.overlap.<instruction|none>.m64n<N>k16.RS      ... with A in registers (RS)
    simt.overlap.<instruction|none>.m64n<N>k32.e4m3    wgmma m64nNk32 e4m3 -> f32, SS
    simt.overlap.<instruction>.alone                   the instruction's side alone (warpgroup 0 idle)
    ... .tma                                           the same with a third role, one producer warp keeping TMA
                                                       loads in flight (suite simt-overlap-tma); simt.overlap.none.
                                                       alone.tma: the producer alone

Metrics, each `issue_interval_cycles` told apart by its launch: {"role": "wgmma"} cycles per wgmma of warpgroup 0
while warpgroup 1 runs; {"role": "simt"} cycles per instruction of one of warpgroup 1's warps (8 independent
chains each, one warp per scheduler) while warpgroup 0 runs; {"role": "tma"} cycles per TMA load of TMA_TILE_BYTES
(a 2-D box of 64 rows x 128 bytes from an L2-resident source, into a ring of TMA_STAGES slots, each completed on
its mbarrier before the slot is loaded again) of the producer warp while the others run. The fraction of each side's rate kept is a ratio of
two cases of the same run (figures.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from harness.errors import IllegalShapeError, SpecError
from harness.families.base import NOTHING_ATTACHED, Attachment
from harness.spec import Case

OPS = ("ex2.approx.ftz.f32", "fma.rn.f32", "fma.rn.f16x2", "shfl.sync.bfly.b32", "cvt.rn.bf16x2.f32")
NS = (64, 128, 256)
FORMS = ("f16.SS", "f16.RS", "e4m3.SS")  # the wgmma beside the instruction: inputs and where A is
FORM_NS = {"f16.SS": NS, "f16.RS": (64, 256), "e4m3.SS": (64, 256)}  # N timed for each form
WGMMA_UNROLL = 8  # wgmma per loop body (rendered into ptx/simt.cu.in)
MIN_BODIES = 16  # loop bodies the untimed side runs at least (rendered): its chains' checked fixed point is after them
CHECK_WGMMAS = 64  # wgmma a validation launch times
# The TMA producer (the .tma cases): a ring of TMA_STAGES slots of one box each, TMA_UNROLL loads a loop body, over a
# source of TMA_TILES boxes (8 MiB: it stays in the L2 once loaded), u32 words whose values say where they came from.
TMA_FORM_NS = {"f16.SS": (64, 256), "f16.RS": (64, 256)}  # the wgmma an id may time beside TMA traffic
# ... and the forms the suite times: SS only. RS beside the producer warp at N = 256: the 288 threads' registers exceed
# the SM's (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, run 138 and since); at N = 64 it builds and validates since the wgmma
# loop's fence is written out (docs/simt.md), not yet in a run of record. The ids still parse: run 138 holds them.
TMA_SUITE_FORMS = ("f16.SS",)
TMA_STAGES = 4
TMA_BOX_ROWS, TMA_BOX_COLS = 64, 32  # u32 elements: 64 rows of 128 bytes
TMA_TILE_WORDS = TMA_BOX_ROWS * TMA_BOX_COLS
TMA_TILE_BYTES = 4 * TMA_TILE_WORDS
TMA_TILES = 1024
TMA_UNROLL = 8
CHECK_LOADS = 64  # TMA loads a validation launch times
_ID = re.compile(r"^simt\.overlap\.(?P<op>none|[a-z0-9_.:]+?)\.(?:m64n(?P<n>\d+)k(?P<k>16|32)(?P<form>\.RS|\.e4m3)?"
                 r"|(?P<alone>alone))(?P<tma>\.tma)?$")


@dataclass(frozen=True)
class OverlapCase(Case):
    family: ClassVar[str] = "simt"
    op: str | None  # the SIMT instruction (OPS) warpgroup 1 runs, or None
    n: int | None  # wgmma's N, or None: warpgroup 0 idle
    form: str = "f16.SS"  # FORMS
    tma: bool = False  # a producer warp keeps TMA loads in flight beside the other two

    @property
    def k(self) -> int:
        return 32 if self.form.startswith("e4m3") else 16

    @property
    def base_id(self) -> str:
        suffix = {"f16.SS": "", "f16.RS": ".RS", "e4m3.SS": ".e4m3"}[self.form]
        return (f"simt.overlap.{self.op or 'none'}." + (f"m64n{self.n}k{self.k}{suffix}" if self.n else "alone")
                + (".tma" if self.tma else ""))

    def columns(self) -> dict[str, object]:
        dtype, operands = self.form.split(".")
        return dict(instruction="overlap", m=64 if self.n else None, n=self.n, k=self.k if self.n else None,
                    dtype_a=dtype if self.n else None, dtype_b=dtype if self.n else None,
                    dtype_acc="f32" if self.n else None, operands=operands if self.n else None, sparse=False,
                    layout=None)

    @property
    def roles(self) -> tuple[str, ...]:
        """The sides this case times: wgmma where warpgroup 0 issues it, simt where warpgroup 1 runs."""
        return (("wgmma",) if self.n else ()) + (("simt",) if self.op else ()) + (("tma",) if self.tma else ())

    @property
    def threads(self) -> int:
        """Two warpgroups, and the producer warp where there is one."""
        return 256 + (32 if self.tma else 0)

    @property
    def units(self) -> int:
        """Timing records: warpgroup 0 as one, warpgroup 1's four warps, the producer warp."""
        return 6 if self.tma else 5


def cases() -> list[OverlapCase]:
    return ([OverlapCase(op, n, form) for form in FORMS for n in FORM_NS[form] for op in (None, *OPS)]
            + [OverlapCase(op, None) for op in OPS])


def tma_cases() -> list[OverlapCase]:
    return ([OverlapCase(op, n, form, True) for form in TMA_SUITE_FORMS for n in TMA_FORM_NS[form]
             for op in (None, *OPS)]
            + [OverlapCase(op, None, tma=True) for op in (*OPS, None)])


def tma_suite() -> list[OverlapCase]:
    """The .tma cases and each one's counterpart without TMA traffic (a simt-overlap case), so that one run holds
    both."""
    with_tma = tma_cases()
    return with_tma + [OverlapCase(c.op, c.n, c.form) for c in with_tma if c.n or c.op]


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
    return OverlapCase(None if match["op"] == "none" else match["op"], int(match["n"]) if match["n"] else None, form,
                       bool(match["tma"]))


def check(case: OverlapCase) -> None:
    if case.op is not None and case.op not in OPS:
        raise IllegalShapeError(f"{case}: the overlap probes run {', '.join(OPS)} beside wgmma")
    if case.form not in FORMS:
        raise IllegalShapeError(f"{case}: the overlap probes' wgmma forms are {', '.join(FORMS)}")
    ns = (TMA_FORM_NS if case.tma else FORM_NS).get(case.form, ())
    if case.n is not None and case.n not in ns:
        raise IllegalShapeError(f"{case}: the overlap probes issue {case.form} wgmma" + (" beside TMA" if case.tma else "")
                                + (f" with N in {', '.join(map(str, ns))}" if ns else ": not probed"))
    if case.n is None and case.op is None and not case.tma:
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


def tma_offset(case: OverlapCase) -> int:
    """Where the producer's record starts in the output: after the chains. Its loads' count, then the ring."""
    from harness.families.chains import ILPS

    return simt_offset(case) + (max(ILPS) * 32 if case.op else 0)  # warpgroup 1's chains x 32 lanes


def tma_words(case: OverlapCase) -> int:
    return 1 + TMA_STAGES * TMA_TILE_WORDS if case.tma else 0


def source_words(index: np.ndarray) -> np.ndarray:
    """The source's word at each index: a bijection of the index, so a word says where it came from."""
    x = np.asarray(index, dtype=np.uint64) * np.uint64(0x9E3779B1) + np.uint64(0x7F4A7C15)
    return (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def ring_expected(loads: int) -> np.ndarray | None:
    """What the ring's slots hold after `loads` loads (load i: box i mod TMA_TILES into slot i mod TMA_STAGES);
    None where a slot was never loaded."""
    if loads < TMA_STAGES:
        return None
    out = []
    for slot in range(TMA_STAGES):
        last = loads - 1 - (loads - 1 - slot) % TMA_STAGES  # the last load into the slot
        out.append(source_words(np.arange(TMA_TILE_WORDS) + (last % TMA_TILES) * TMA_TILE_WORDS))
    return np.concatenate(out)


def attach(case: OverlapCase, probe) -> Attachment:
    """The .tma cases: the source (TMA_TILES boxes of source_words) and its tensor map, the kernels' argument."""
    if not case.tma:
        return NOTHING_ATTACHED
    import cupy

    from harness import tensormaps

    words = TMA_TILES * TMA_TILE_WORDS
    index = cupy.arange(words, dtype=cupy.uint64)
    source = ((index * cupy.uint64(0x9E3779B1) + cupy.uint64(0x7F4A7C15)) & cupy.uint64(0xFFFFFFFF)).astype(cupy.uint32)
    tensor_map = tensormaps.matrix(str(case), 4, source.data.ptr, TMA_TILES * TMA_BOX_ROWS, TMA_BOX_COLS,
                                   TMA_BOX_ROWS, TMA_BOX_COLS, 4, swizzle=None)
    return Attachment(extra_args=(tensor_map,), resources=(source,))


def mnemonic(case: OverlapCase) -> str:
    """What ptxas emits for the case's wgmma on sm_90a."""
    return f"QGMMA.64x{case.n}x32.F32.E4M3.E4M3" if case.form.startswith("e4m3") else f"HGMMA.64x{case.n}x16.F32"


def kernels(case: OverlapCase) -> list[str]:
    return [f"probe_overlap_{role}" for role in case.roles]
