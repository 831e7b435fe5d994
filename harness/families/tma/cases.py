"""TMA cases: what each measures, its canonical id, and what is legal.

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

import re
from dataclasses import dataclass
from math import prod
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
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

_TENSOR = re.compile(r"^(?P<red>cp\.reduce|cp)\.async\.bulk\.tensor\.(?P<rank>\d)d\."
                     r"(?P<dir>shared::cluster\.global|global\.shared::cta)(?P<add>\.add)?\.(?P<mode>tile|im2col)\.b(?P<bits>\d+)"
                     r"\.(?:box(?P<box>\d+(?:x\d+)*)|ch(?P<ch>\d+)\.px(?P<px>\d+))(?:\.sw(?P<sw>\d+))?"
                     r"(?:\.pitch(?P<pitch>\d+)(?:x(?P<plane>\d+))?)?(?P<gmap>\.gmap)?"
                     r"(?:\.l2promo(?P<promo>\d+))?"
                     r"(?:\.multicast(?P<mc>\d+))?$")
_BULK = re.compile(r"^cp\.async\.bulk\.(?P<dir>shared::cluster\.global|global\.shared::cta)\.(?P<bytes>\d+)B"
                   r"(?P<l2map>\.map\.l2)?$")


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


def parse(case_id: str) -> TmaCase:
    if match := _TENSOR.match(case_id):
        bits = int(match["bits"])
        if bits % 8:
            raise SpecError(f"{case_id!r}: element sizes are b8, b16, b32 or b64")
        op = "load" if match["dir"].startswith("shared") else "store"
        if bool(match["red"] == "cp.reduce") != bool(match["add"]) or (match["add"] and op == "load"):
            raise SpecError(f"{case_id!r}: a tensor reduction is written cp.reduce.async.bulk.tensor.Nd.global."
                            "shared::cta.add.tile (the add into global memory)")
        op = "reduce" if match["add"] else op
        im2col = match["mode"] == "im2col"
        if im2col != (match["ch"] is not None):
            raise SpecError(f"{case_id!r}: a tile copy names its box (box64x64), an im2col load its channels per "
                            "pixel and pixels per column (ch64.px128)")
        box = (int(match["ch"]), int(match["px"])) if im2col else tuple(int(b) for b in match["box"].split("x"))
        promotion = DEFAULT_PROMOTION if match["promo"] is None else int(match["promo"])
        case = TmaCase(op, int(match["rank"]), bits // 8, box, int(match["sw"] or 0), bool(match["gmap"]),
                       int(match["mc"] or 1), im2col=im2col, promotion=promotion, pitch=int(match["pitch"] or 0),
                       plane=int(match["plane"] or 0))
    elif match := _BULK.match(case_id):
        case = TmaCase("bulk" if match["dir"].startswith("shared") else "bulk-store", box=(int(match["bytes"]),),
                       l2map=bool(match["l2map"]))
    elif case_id in FIXED_IDS.values():
        case = TmaCase(next(op for op, spelled in FIXED_IDS.items() if spelled == case_id))
    else:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128' "
                        "(see `bench list --suite tma`)")
    check(case)
    return case


def check(case: TmaCase) -> None:
    """One line for anything the hardware or the driver refuses, before anything runs."""
    if case.op not in OPS:
        raise SpecError(f"unknown TMA operation {case.op!r}: expected one of {', '.join(OPS)}")
    if case.tensor:
        if not 1 <= case.rank <= 5:
            raise IllegalShapeError(f"{case}: a tensor copy has rank 1 to 5, not {case.rank}")
        if case.elem not in ELEMENT_BYTES:
            raise IllegalShapeError(f"{case}: elements are 1, 2, 4 or 8 bytes, not {case.elem}")
        if case.im2col:
            _check_im2col(case)
        elif len(case.box) != case.rank:
            raise IllegalShapeError(f"{case}: a rank-{case.rank} box has {case.rank} extents, not {len(case.box)}")
        elif any(not 1 <= b <= MAX_BOX for b in case.box):
            raise IllegalShapeError(f"{case}: every box extent is 1 to {MAX_BOX} elements (box {case.box})")
        inner = case.box[0] * case.elem
        if inner % 16:
            raise IllegalShapeError(f"{case}: the box's inner extent must be a multiple of 16 bytes, "
                                    f"not {inner} ({case.box[0]} x {case.elem} B)")
        if case.pitch or case.plane:
            _check_pitch(case, inner)
        if case.promotion not in PROMOTIONS:
            raise IllegalShapeError(f"{case}: the L2 promotion is 0 (none), 64, 128 or 256 bytes, not {case.promotion}")
        if case.swizzle not in SWIZZLES:
            raise IllegalShapeError(f"{case}: swizzle is none, 32, 64 or 128 bytes, not {case.swizzle}")
        if case.swizzle and inner > case.swizzle:
            raise IllegalShapeError(f"{case}: with a {case.swizzle}-byte swizzle the box's inner extent is at "
                                    f"most {case.swizzle} bytes, not {inner}")
        if case.op in STORE_OPS and (case.gmap or case.cluster > 1):
            raise IllegalShapeError(f"{case}: stores are measured with the map by value, without a cluster")
        if case.op == "reduce" and case.elem != 4:
            raise IllegalShapeError(f"{case}: the add is measured on 32-bit elements (u32, wrapping), not "
                                    f"{case.elem}-byte ones")
        if case.cluster > 1 and case.cluster not in CLUSTERS:
            raise IllegalShapeError(f"{case}: multicast goes to a cluster of {', '.join(map(str, CLUSTERS))} "
                                    f"CTAs, not {case.cluster}")
        if case.box_bytes * max(case.cluster, 1) > MAX_STAGE_BYTES:
            raise IllegalShapeError(f"{case}: {case.box_bytes * case.cluster} bytes per stage exceed the "
                                    f"{MAX_STAGE_BYTES} bytes of shared memory a block can hold")
    elif case.op in ("bulk", "bulk-store"):
        size = case.box_bytes
        if size <= 0 or size % 16 or size > MAX_STAGE_BYTES:
            raise IllegalShapeError(f"{case}: a bulk copy moves a multiple of 16 bytes, up to {MAX_STAGE_BYTES}")
    if case.l2map and (case.op != "bulk" or case.box_bytes != MAP_LINE_BYTES):
        raise IllegalShapeError(f"{case}: the TMA map of the L2 copies one {MAP_LINE_BYTES}-byte line "
                                f"(cp.async.bulk.shared::cluster.global.{MAP_LINE_BYTES}B.map.l2)")
    if case.cluster > 1 and not case.multicast:
        raise IllegalShapeError(f"{case}: a cluster is a multicast load's (distributed shared memory: the dsmem "
                                "family)")


def _check_pitch(case: TmaCase, row: int) -> None:
    if case.im2col or case.rank not in (2, 3):
        raise IllegalShapeError(f"{case}: a row pitch is a 2-D tile's (a GEMM's matrix) or a 3-D box's, not a "
                                f"rank-{case.rank} {'im2col ' if case.im2col else ''}tensor's")
    if (case.rank == 3) != bool(case.plane):
        raise IllegalShapeError(f"{case}: a rank-3 tensor with a pitch names its row's and its plane's bytes "
                                "(.pitch4096x4194304), a 2-D one its row's alone")
    if case.plane:
        rows = case.pitch * case.box[1]
        if case.plane % rows or case.plane <= rows or case.plane > MAX_PLANE:
            raise IllegalShapeError(f"{case}: the plane pitch is a multiple of the box's {case.box[1]} rows of "
                                    f"{case.pitch} bytes, more than one, at most {MAX_PLANE}, not {case.plane}")
    if case.pitch % 16 or case.pitch < 2 * row:
        raise IllegalShapeError(f"{case}: the row pitch is a multiple of 16 bytes (the map's strides) and holds more "
                                f"than one of the box's {row}-byte rows (a tensor one box wide has none), not {case.pitch}")
    if case.pitch % row and (case.op != "load" or case.rank != 2):
        raise IllegalShapeError(f"{case}: a row pitch that is not a whole number of boxes ({case.pitch} bytes, rows of "
                                f"{row}) is measured for 2-D loads only")
    if case.pitch > MAX_PITCH:
        raise IllegalShapeError(f"{case}: the row pitch is at most {MAX_PITCH} bytes here, not {case.pitch}")


def _check_im2col(case: TmaCase) -> None:
    if case.op != "load":
        raise IllegalShapeError(f"{case}: im2col is measured for loads (global to shared memory)")
    if not 3 <= case.rank <= 5:
        raise IllegalShapeError(f"{case}: an im2col tensor has rank 3, 4 or 5 (NWC, NHWC, NDHWC), not {case.rank}")
    if len(case.box) != 2:
        raise IllegalShapeError(f"{case}: an im2col load names channels per pixel and pixels per column")
    channels, pixels = case.box
    if not 1 <= channels <= MAX_BOX:
        raise IllegalShapeError(f"{case}: channels per pixel are 1 to {MAX_BOX}, not {channels}")
    if not 1 <= pixels <= MAX_PIXELS:
        raise IllegalShapeError(f"{case}: pixels per column are 1 to {MAX_PIXELS}, not {pixels}")
    if case.cluster > 1 or case.gmap:
        raise IllegalShapeError(f"{case}: im2col loads are measured with the map by value, without multicast")


MAP_LINE_BYTES = 128  # the TMA map's copy: one L2 line
MAX_STAGE_BYTES = 64 * 1024  # one stage (box, or boxes of a multicast round) fits 3 times in 227 KB
MAX_PLANE = 1 << 24  # bytes per plane (rank 3; the source holds whole slabs of box[2] planes)
MAX_PITCH = 1 << 20  # bytes per row (the driver allows strides to 2^40; the source is cut into whole rows of boxes)
GEMM_PITCH = 8192  # a row of a K = 4096 b16 matrix: the suite's default 2-D geometry


def _load(rank, elem, box, swizzle=128, **kw) -> TmaCase:
    return TmaCase("load", rank, elem, tuple(box), swizzle, **kw)


def _tile(elem, box, swizzle=128, op="load", **kw) -> TmaCase:
    """A 2-D copy in the suite's default geometry: a tile of a row-major matrix GEMM_PITCH bytes wide."""
    return TmaCase(op, 2, elem, tuple(box), swizzle, pitch=GEMM_PITCH, **kw)


BOX_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # 64 b16 a row (128 B): 128 B .. 32 KB


def cases() -> list[TmaCase]:
    """The `tma-copies` suite (part of `tma`): box size, element size, swizzle and rank each varied alone
    around a 2-D b16 box of 128-byte rows with the 128-byte swizzle, each a tile of a matrix 8 KiB a row (a
    GEMM's geometry), the box sizes also as contiguous boxes (a tensor one box wide); the map in global
    memory; multicast; stores and a reduction; bulk copies both ways; the baselines; the barrier alone."""
    out = [_tile(2, (64, rows)) for rows in BOX_ROWS]
    # The same boxes contiguous: from HBM a GEMM's tile takes longer than a contiguous box of its bytes.
    out += [_load(2, 2, (64, rows)) for rows in BOX_ROWS]
    out += [_tile(elem, (128 // elem, 64)) for elem in (1, 4, 8)]  # 8 KB each (b16 above)
    out += [_tile(2, (16 * span // 32 if span else 64, 64), span) for span in (0, 32, 64)]
    # 512-byte rows (no swizzle allows them): a quarter of the rows of a 128-byte-row box of the same bytes.
    # On an H200 boxes of 128-byte rows stream at 0.92-0.94 of the read roofline while bulk copies of the
    # same bytes reach it: these tell a per-row cost of the copy engine from a per-byte one.
    out += [_tile(2, (256, rows), 0) for rows in (16, 64)]
    out += [_load(1, 2, (256,), 0), _load(3, 2, (64, 8, 8)), _load(4, 2, (64, 4, 4, 4)), _load(5, 2, (64, 4, 4, 2, 2))]
    out += [_tile(2, (64, 64), gmap=True)]
    out += [_tile(2, (64, 64), promotion=p) for p in PROMOTIONS if p != DEFAULT_PROMOTION]
    out += [_load(rank, 2, (64, 128), im2col=True) for rank in (3, 4, 5)]  # 16 KB: 128 pixels of 128 B
    out += [_load(4, 2, (64, pixels), im2col=True) for pixels in (32, 64, 256)]
    out += [_load(4, 2, (64, 128), 0, im2col=True)]
    out += [_tile(2, (64, 64), cluster=c) for c in CLUSTERS if c <= PORTABLE_CLUSTER]
    out += [_tile(2, (64, 32), cluster=c) for c in (8, 16)]  # 16 boxes of 8 KB exceed a stage: 4 KB boxes
    out += [_tile(2, (64, 64), op="store"), _tile(2, (64, 256), op="store")]
    out += [_tile(4, (32, 64), op="reduce")]
    out += [TmaCase("bulk", box=(size,)) for size in (2048, 8192, 32768)]
    out += [TmaCase("bulk-store", box=(size,)) for size in (8192, 32768)]
    out += [TmaCase(op) for op in ("read", "cp.async", "ld+st", "mbarrier")]
    return out


# The authors' TMA bandwidth logs (HPMLL/NVIDIA-Hopper-Benchmark NewFeatures/TMA/Throughput, 2501.12084 Fig. 3):
# one copy in flight per block, 1-4 blocks per SM, in these geometries (their sources' constants):
#   tma_bw     cp.async.bulk of 1, 2, 4, 8, 12 and 16 KB from a contiguous 4 GiB array
#   tma_bw_1d  a rank-1 map of INT64 elements over the same array, boxes of 512 B to 2 KB, no swizzle
#   tma_bw_2d  a 32768 x 32768 FP32 matrix (rows of 128 KiB), boxes W x H (W innermost), no swizzle
#   tma_bw_3d  a 1024 x 1024 x 1024 FP32 tensor (rows 4 KiB apart, planes 4 MiB apart), no swizzle
# They launch 1, 2, 3 and 4 blocks per SM: the streams of these cases add 3 (layout.stream_points).
AUTHORS_BULK_KB = (1, 2, 4, 8, 12, 16)
AUTHORS_1D_BYTES = (512, 768, 1024, 1280, 1536, 2048)
AUTHORS_2D_BOXES = ((16, 16), (32, 16), (32, 32), (64, 32), (96, 32), (64, 64))
AUTHORS_2D_PITCH = 32768 * 4  # bytes per row of their FP32 matrix
# their 3-D boxes, innermost first: 1 to 16 KB, then the 16 KB box-shape study
AUTHORS_3D_BOXES = ((8, 8, 4), (8, 8, 8), (16, 8, 8), (16, 16, 8), (16, 16, 12), (16, 16, 16),
                    (64, 64, 1), (256, 16, 1), (16, 256, 1), (4, 4, 256))
AUTHORS_3D_PITCH = (1024 * 4, 1024 * 1024 * 4)  # bytes per row and per plane of their 1024^3 FP32 tensor


def _authors_3d(box) -> TmaCase:
    return TmaCase("load", 3, 4, tuple(box), 0, pitch=AUTHORS_3D_PITCH[0], plane=AUTHORS_3D_PITCH[1])


def authors_case(log: str, shape: str) -> TmaCase | str:
    """Our case for a point of the authors' TMA bandwidth logs (`log`: tma_bw, tma_bw_1d, tma_bw_2d, tma_bw_3d;
    `shape`: "228 thread blocks; load 2 KB; box 32x16"), or why there is none. The same bytes in the same
    geometry: a bulk copy of that size; a 1-D box of those bytes (theirs INT64 elements: b64, but the 512-byte box
    is our b16 box256, the same 512 contiguous bytes); a 2-D FP32 box of their matrix (b32, their row pitch); a 3-D
    FP32 box of their 1024^3 tensor (b32, their row and plane pitch)."""
    kb = float(shape.split(";")[1].split()[1])
    if log == "tma_bw":
        return TmaCase("bulk", box=(int(kb * 1024),))
    if log == "tma_bw_1d":
        size = int(kb * 1024)
        return _load(1, 2, (256,), 0) if size == 512 else _load(1, 8, (size // 8,), 0)
    if log == "tma_bw_2d":
        width, height = (int(e) for e in shape.split("box")[1].split("x"))
        # 96 x 32: the map's rows are their 32768 elements, 341 boxes and 32 elements over, never read
        return TmaCase("load", 2, 4, (width, height), 0, pitch=AUTHORS_2D_PITCH)
    box = tuple(int(e) for e in shape.split("box")[1].split("x"))
    return _authors_3d(box)


def authors_cases() -> list[TmaCase]:
    """The `tma-authors` suite: the authors' bandwidth geometries that `cases()` does not hold (bulk 1, 4, 12,
    16 KB; 1-D b64 boxes of 768 B to 2 KB; the 2-D FP32 boxes of their matrix (96 x 32 too: 341 boxes a row, the
    row's last 32 elements never read); the 3-D FP32 boxes of their 1024^3 tensor)."""
    ours = set(cases())
    wanted = ([TmaCase("bulk", box=(kb * 1024,)) for kb in AUTHORS_BULK_KB]
              + [_load(1, 8, (size // 8,), 0) for size in AUTHORS_1D_BYTES if size != 512]
              + [TmaCase("load", 2, 4, box, 0, pitch=AUTHORS_2D_PITCH) for box in AUTHORS_2D_BOXES]
              + [_authors_3d(box) for box in AUTHORS_3D_BOXES])
    return [c for c in wanted if c not in ours]


def map_cases() -> list[TmaCase]:
    """The `maps-tma` suite (part of `maps`): the L2 by SM through a bulk copy of one line."""
    return [TmaCase("bulk", box=(MAP_LINE_BYTES,), l2map=True)]


def authors_geometry(case: TmaCase) -> bool:
    """A case some point of the authors' bandwidth logs maps to (authors_case): its streams add 3 blocks per SM."""
    return case in _AUTHORS_MAPPED


_AUTHORS_MAPPED = frozenset([TmaCase("bulk", box=(kb * 1024,)) for kb in AUTHORS_BULK_KB]
                            + [_load(1, 2, (256,), 0)]
                            + [_load(1, 8, (size // 8,), 0) for size in AUTHORS_1D_BYTES if size != 512]
                            + [TmaCase("load", 2, 4, box, 0, pitch=AUTHORS_2D_PITCH) for box in AUTHORS_2D_BOXES]
                            + [_authors_3d(box) for box in AUTHORS_3D_BOXES])


def all_cases() -> list[TmaCase]:
    """Every case of the family: the `tma-copies` suite, then `tma-authors`, then the map (`maps-tma`)."""
    return cases() + authors_cases() + map_cases()
