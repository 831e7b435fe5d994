"""The TMA family's shared-memory and source layout: stages in flight per block, the dynamic shared
memory a stream kernel needs, the tensor's geometry and how many boxes the source holds. Read by the
family (harness/families/tma/__init__.py) and by its GPU resources (gpu.py)."""

from __future__ import annotations

from math import gcd, prod

import harness.families.tma.model as model
from harness.families.tma.cases import TmaCase
from harness.families.tma.suite_cases import authors_geometry

STAGES = (1, 2, 4, 8, 16)  # copies in flight per block: the stream kernels probe_stream_k<STAGES>
BLOCKS_PER_SM = (1, 2, 4)
AUTHORS_BLOCKS_PER_SM = 3  # with one copy in flight, for the cases the authors' logs map to (342 blocks on 114 SMs)
MULTICAST_STAGES = (1, 2)  # a multicast stage holds CLUSTER boxes
SMEM_PER_SM = 228 * 1024  # bytes of shared memory per SM (sm_90), 1 KB of it reserved per block
SMEM_PER_BLOCK = 227 * 1024  # the most one block may have
# The source tensor is this many times the device's L2. The streams walk it cyclically, and the L2
# keeps part of a cyclic stream larger than itself (about L2 / source of the reads hit): with 8 times
# the L2 an H100's read rate came out 10 % above its HBM peak; with 64 times, at most 1.6 % can hit.
SOURCE_L2_MULTIPLE = 64
SOURCE_MIN_BYTES = 2 << 30


def stage_bytes(case: TmaCase) -> int:
    per_stage = case.box_bytes * (case.cluster if case.multicast else 1)
    return -(-per_stage // model.STAGE_ALIGN) * model.STAGE_ALIGN


def dynamic_smem(case: TmaCase, stages: int) -> int:
    return stages * stage_bytes(case) + model.STAGE_ALIGN  # slack to align the first stage


def stream_points(case: TmaCase) -> list[tuple[int, int]]:
    """(stages, blocks per SM) that fit in shared memory."""
    stages = MULTICAST_STAGES if case.multicast else STAGES
    extra = [(1, AUTHORS_BLOCKS_PER_SM)] if authors_geometry(case) else []
    return [(k, b) for k, b in [(k, b) for k in stages for b in BLOCKS_PER_SM] + extra
            if dynamic_smem(case, k) <= SMEM_PER_BLOCK and b * (dynamic_smem(case, k) + 2048) <= SMEM_PER_SM]


def stream_stages(case: TmaCase) -> tuple[int, ...]:
    return tuple(sorted({k for k, _ in stream_points(case)}))


def geometry(case: TmaCase, tiles: int) -> model.Geometry | model.Im2colGeometry:
    if case.op in ("bulk", "bulk-store"):  # a contiguous run of bytes: a rank-1 tensor of bytes
        return model.Geometry(1, 1, case.box, tiles)
    if case.im2col:
        return model.Im2colGeometry(case.rank, case.elem, *case.box, tiles)
    return model.Geometry(case.rank, case.elem, case.box, tiles, case.row_boxes, case.plane_boxes,
                          case.row_elems if case.pitch else 0)


def source_tiles(case: TmaCase, nbytes: int) -> int:
    """Tiles of a source of at most `nbytes`, the tensor cut into whole boxes (im2col: whole images, and
    a whole number of columns of pixels)."""
    if case.im2col:
        pixels_per_image = prod(model.IM2COL_EXTENTS[case.rank])
        image_bytes = model.IM2COL_CHANNEL_TILES * case.box[0] * case.elem * pixels_per_image
        step = case.box[1] // gcd(case.box[1], pixels_per_image)  # images per whole number of columns
        images = nbytes // image_bytes // step * step
        return model.IM2COL_CHANNEL_TILES * images * pixels_per_image // case.box[1]
    if not case.tensor:
        return nbytes // case.box_bytes
    per_slab = prod(model.inner_tiles(case.rank, case.row_boxes, case.plane_boxes))
    return nbytes // geometry(case, per_slab).slab_bytes * per_slab


def source_bytes(case: TmaCase, tiles: int) -> int:
    """Bytes of a source of `tiles` boxes (source_tiles): whole slabs of the tensor, with any elements of its rows
    that no box covers (a row pitch not a whole number of boxes)."""
    if not case.tensor or case.im2col:
        return tiles * case.box_bytes
    per_slab = prod(model.inner_tiles(case.rank, case.row_boxes, case.plane_boxes))
    return tiles // per_slab * geometry(case, per_slab).slab_bytes
