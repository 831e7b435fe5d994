"""The TMA suites' case lists: the copies (`tma-copies`), the authors' bandwidth geometries (`tma-authors`, and the
case a point of their logs maps to), the L2 map through TMA (`maps-tma`), and every case of the family."""

from __future__ import annotations

from harness.families.tma.cases import (CLUSTERS, DEFAULT_PROMOTION, MAP_LINE_BYTES, PORTABLE_CLUSTER, PROMOTIONS,
                                        TmaCase, _load, _tile)


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
