"""TMA cases: the case type, what each measures and its canonical id (read back in ids.py; what is refused:
refusals.py; the suites' lists: suite_cases.py).

Ids spell the PTX instruction (without the operands) and add what it does not say:

    cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192   tensor load: a GEMM's tile
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128      tensor load of a contiguous box
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.gmap the map in global memory
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.l2promo256   the map's L2 promotion
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.multicast4   to 4 CTAs
    cp.async.bulk.tensor.4d.shared::cluster.global.im2col.b16.ch64.px128.sw128  im2col: 128 pixels x 64 channels
    cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128          tensor store
    cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.b32.box32x64.sw128   tensor reduce (add)
    cp.async.bulk.shared::cluster.global.8192B                                  non-tensor bulk load
    cp.async.bulk.global.shared::cta.8192B                                      non-tensor bulk store
    cp.async.bulk.shared::cluster.global.128B.map.l2                            the L2 by SM (maps.py)
    ld.global.v4.u32 | cp.async.cg.shared.global.16 | ld.global.v4.u32.then.st.shared.v4.u32   baselines
    mbarrier.arrive.expect_tx.then.try_wait                                    the barrier sequence alone

b8/b16/b32/b64 are the element sizes (1, 2, 4, 8 bytes); `box` lists the box's extent per dimension,
innermost first; `sw` the swizzle span in bytes (absent: none); `pitch` the bytes of one row of a 2-D
tensor many boxes wide, as a GEMM's tile comes from a row-major matrix (8192: K = 4096 b16 elements; the
suite's default geometry, issue 34 item 10); a rank-3 tensor's pitch names the bytes of a row, then of a plane
(`.pitch4096x4194304`: a 1024 x 1024 x N FP32 tensor, the authors' 3-D geometry). Without it the tensor is one box
wide: each box is contiguous. An im2col load names the channels per
pixel (`ch`) and the pixels per column (`px`) instead of a box; its tensor is (C, W, [H, [D,]] N).
Distributed shared memory is the dsmem family's (harness/families/dsmem/).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import ClassVar

from harness.spec import Case

ELEMENT_BYTES = (1, 2, 4, 8)
SWIZZLES = (0, 32, 64, 128)
MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled); channels per pixel (im2col)
MAX_PIXELS = 1024  # pixels per column (cuTensorMapEncodeIm2col)
# The maps' L2 promotion (CU_TENSOR_MAP_L2_PROMOTION_*): bytes the L2 fetches per request. 128 by default:
# with 256 the same contiguous 8 KB boxes streamed at 0.94 of the read roofline on an H200 (1.01 with 128
# or none), and two-boxes-wide tensors at 0.90 on an H100 (scripts/investigate_tma.py, docs/data-movement.md).
PROMOTIONS = (0, 64, 128, 256)
DEFAULT_PROMOTION = 128
CLUSTERS = (2, 4, 8, 16)  # multicast destinations; 8 is the portable most, 16 a non-portable size (launched at run time)
PORTABLE_CLUSTER = 8
OPS = ("load", "store", "reduce", "bulk", "bulk-store", "read", "cp.async", "ld+st", "mbarrier")
TENSOR_OPS = ("load", "store", "reduce")
COPY_OPS = ("load", "store", "reduce", "bulk", "bulk-store")  # the operations with copy kernels
STORE_OPS = ("store", "reduce", "bulk-store")  # shared -> global, completing on bulk groups

LOAD = "cp.async.bulk.tensor.{rank}d.shared::cluster.global.{mode}"
STORE = "cp.async.bulk.tensor.{rank}d.global.shared::cta.tile"
REDUCE = "cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.add.tile"
BULK = "cp.async.bulk.shared::cluster.global"
BULK_STORE = "cp.async.bulk.global.shared::cta"
FIXED_IDS = {"read": "ld.global.v4.u32", "cp.async": "cp.async.cg.shared.global.16",
             "ld+st": "ld.global.v4.u32.then.st.shared.v4.u32", "mbarrier": "mbarrier.arrive.expect_tx.then.try_wait"}

MAP_LINE_BYTES = 128  # the TMA map's copy: one L2 line
MAX_STAGE_BYTES = 64 * 1024  # one stage (box, or boxes of a multicast round) fits 3 times in 227 KB
MAX_PLANE = 1 << 24  # bytes per plane (rank 3; the source holds whole slabs of box[2] planes)
MAX_PITCH = 1 << 20  # bytes per row (the driver allows strides to 2^40; the source is cut into whole rows of boxes)
GEMM_PITCH = 8192  # a row of a K = 4096 b16 matrix: the suite's default 2-D geometry


@dataclass(frozen=True)
class TmaCase(Case):
    family: ClassVar[str] = "tma"
    op: str  # one of OPS
    rank: int = 1
    elem: int = 1  # bytes per element
    box: tuple[int, ...] = ()  # elements per dimension, innermost first (bulk: (bytes,))
    swizzle: int = 0  # bytes: 0 (none), 32, 64, 128
    gmap: bool = False  # the tensor map in global memory (with the acquire fence), not a kernel parameter
    cluster: int = 1  # CTAs per cluster: multicast destinations (load)
    im2col: bool = False  # a load in im2col mode: box = (channels per pixel, pixels per column)
    promotion: int = DEFAULT_PROMOTION  # the map's L2 promotion in bytes (0: none): the L2 fetch per request
    pitch: int = 0  # bytes per row of a 2-D tensor many boxes wide (a GEMM's matrix); 0: the tensor is one box wide
    l2map: bool = False  # the L2 by SM through TMA (a bulk load of one 128-byte line, every SM): maps.py
    plane: int = 0  # bytes per plane of a rank-3 tensor with a row pitch (dimension 1 many boxes long); 0: none

    @property
    def row_boxes(self) -> int:
        """Boxes side by side along dimension 0 of the tensor (1: each box contiguous)."""
        return self.pitch // (self.box[0] * self.elem) if self.pitch else 1

    @property
    def row_elems(self) -> int:
        """Elements along dimension 0 of the tensor: the row pitch's (its last elements past a whole number of
        boxes never read where the box does not divide it: the authors' 96 x 32 FP32 box), else one box."""
        return self.pitch // self.elem if self.pitch else (self.box[0] if self.box else 0)

    @property
    def plane_boxes(self) -> int:
        """Boxes along dimension 1 of a rank-3 tensor with a plane pitch (0: the default, INNER_TILES)."""
        return self.plane // (self.pitch * self.box[1]) if self.plane else 0

    @property
    def box_bytes(self) -> int:
        return prod(self.box) * (self.elem if self.op in TENSOR_OPS else 1) if self.box else 0

    @property
    def tensor(self) -> bool:
        return self.op in TENSOR_OPS

    @property
    def multicast(self) -> bool:
        return self.op == "load" and self.cluster > 1

    @property
    def instruction(self) -> str:
        if self.op == "load":
            return LOAD.format(rank=self.rank, mode="im2col" if self.im2col else "tile")
        if self.op == "store":
            return STORE.format(rank=self.rank)
        if self.op == "reduce":
            return REDUCE.format(rank=self.rank)
        if self.op == "bulk":
            return BULK
        if self.op == "bulk-store":
            return BULK_STORE
        return FIXED_IDS[self.op]

    @property
    def base_id(self) -> str:
        if self.tensor:
            box = f"ch{self.box[0]}.px{self.box[1]}" if self.im2col else "box" + "x".join(map(str, self.box))
            return (f"{self.instruction}.b{8 * self.elem}.{box}{f'.sw{self.swizzle}' if self.swizzle else ''}"
                    f"{f'.pitch{self.pitch}' if self.pitch else ''}{f'x{self.plane}' if self.plane else ''}{'.gmap' if self.gmap else ''}"
                    f"{f'.l2promo{self.promotion}' if self.promotion != DEFAULT_PROMOTION else ''}"
                    f"{f'.multicast{self.cluster}' if self.multicast else ''}")
        if self.op in ("bulk", "bulk-store"):
            return f"{self.instruction}.{self.box_bytes}B" + (".map.l2" if self.l2map else "")
        return FIXED_IDS[self.op]

    def columns(self) -> dict[str, object]:
        dtype = f"b{8 * self.elem}" if self.tensor else None
        return dict(instruction=self.instruction, dtype_a=dtype, layout=f"sw{self.swizzle}" if self.tensor else None)


def _load(rank, elem, box, swizzle=128, **kw) -> TmaCase:
    return TmaCase("load", rank, elem, tuple(box), swizzle, **kw)


def _tile(elem, box, swizzle=128, op="load", **kw) -> TmaCase:
    """A 2-D copy in the suite's default geometry: a tile of a row-major matrix GEMM_PITCH bytes wide."""
    return TmaCase(op, 2, elem, tuple(box), swizzle, pitch=GEMM_PITCH, **kw)
