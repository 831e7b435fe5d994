"""What the hardware or the driver refuses of a TMA case, one line each, before anything runs."""

from __future__ import annotations

from harness.errors import IllegalShapeError, SpecError
from harness.families.tma.cases import (CLUSTERS, ELEMENT_BYTES, MAP_LINE_BYTES, MAX_BOX, MAX_PITCH, MAX_PIXELS,
                                        MAX_PLANE, MAX_STAGE_BYTES, OPS, PROMOTIONS, STORE_OPS, SWIZZLES, TmaCase)


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
