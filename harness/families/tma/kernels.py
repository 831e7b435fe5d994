"""The TMA probe's kernels (ptx/tma.cu.in): how each is launched (threads, repetitions, the tiles it walks) and
the parameters the template is filled with (template_params)."""

from __future__ import annotations

import harness.families.tma.maps as _maps
import harness.families.tma.model as model
from harness.families.tma.cases import COPY_OPS, PORTABLE_CLUSTER, TmaCase
from harness.families.tma.refusals import check
from harness.families.tma.layout import stage_bytes, stream_stages

OP_CODES = {"load": 0, "store": 1, "bulk": 2, "read": 3, "cp.async": 4, "ld+st": 5, "mbarrier": 6,
            "reduce": 8, "bulk-store": 9}  # 7, 10 and 11 were DSMEM's (ptx/dsmem.cu.in)
COPY_THREADS = 32  # copy kernels: one warp, thread 0 issues
BASELINE_THREADS = 256
BASELINE_BLOCKS_PER_SM = (1, 2, 4, 8)
UNROLL = 4  # 16-byte accesses per thread per iteration (baselines)
LATENCY_REPS = 64
CHECK_REPS = 8  # repetitions of a latency check (the cold one: tiles 0, 97, ... 679)
COLD_STRIDE = 97  # tiles between two cold repetitions: a fresh tile shares no line with the last (another box
# row of a pitched matrix; 97 boxes on in a tensor one box wide)
HOT_TILES = 16  # tiles the L2 latency takes in turn (ptx/tma.cu.in): its samples span both L2 partitions
PREFETCH_FIRST = 50  # ptx/tma.cu.in: the prefetched latency's tiles are 50 + 97 i, fresh like the cold ones
PREFETCH_WAIT = 4000  # cycles from the prefetch to the timed copy (the HBM latency is about 1000)


def hot_tile(case: TmaCase, rep: int) -> int:
    """The tile repetition `rep` of the L2 latency copies (ptx/tma.cu.in latency, HOT)."""
    return check_tile(case) + (rep % HOT_TILES) * COLD_STRIDE


def check_tile(case: TmaCase) -> int:
    """The tile a case's single-copy check loads (model.check_tile of its tensor)."""
    if not case.tensor:
        return model.check_tile(1)
    return model.check_tile(case.rank, case.row_boxes, case.plane_boxes)


def prefetches(case: TmaCase) -> bool:
    """Loads that also measure a copy of a tile prefetched to the L2 (tensor or bulk prefetch)."""
    return case.op == "bulk" or (case.op == "load" and case.cluster == 1)


def template_params(case: TmaCase) -> dict[str, object]:
    """ptx/tma.cu.in's parameters (the case checked first): the copy kernels', and the L2 map's."""
    check(case)
    if case.l2map:  # the L2 by SM (maps.py): its own kernel, nothing else
        return {**_template_params(case), "op": _maps.OP_CODE, "stream_kernels": "", **_maps.template_params()}
    return {**_template_params(case), **_maps.template_params()}

def _template_params(case: TmaCase) -> dict[str, object]:
    rank = case.rank if case.tensor else 1
    box = (list(case.box if case.tensor else (case.box_bytes or 16,)) + [1] * 5)[:5]
    mode = "im2col_" if case.im2col else ""  # ptx/async.cuh: tma_load_3d, tma_load_im2col_3d, ...
    kernels = "\n".join(f"KERNEL probe_stream_k{k}(ARGS) {{\n  planted_fault<PLANTED_FAULT>(iters, out);\n"
                        f"  stream<{k}>(in, out, timing, iters, map, gmap, src, tiles);\n}}"
                        for k in stream_stages(case)) if case.op in COPY_OPS else ""
    return {
        "op": OP_CODES[case.op],
        "rank": rank,
        "box": ", ".join(map(str, box)),
        "tiles": ", ".join(map(str, (*(model.inner_tiles(rank, case.row_boxes, case.plane_boxes) if case.tensor
                                       else model.inner_tiles(rank)),
                                     1, 1, 1, 1, 1)[:5])),
        "box_bytes": case.box_bytes or 16,
        "stage_bytes": stage_bytes(case) if case.box_bytes else model.STAGE_ALIGN,
        "cluster": case.cluster,
        # a non-portable size is given at launch time (Attachment.runtime_cluster), not in the source
        "cluster_attr": (f"__cluster_dims__({case.cluster}, 1, 1)"
                         if 1 < case.cluster <= PORTABLE_CLUSTER else ""),
        "gmap": "true" if case.gmap else "false",
        "cold_stride": COLD_STRIDE,
        "hot_tiles": HOT_TILES,
        "threads": BASELINE_THREADS,
        "unroll": UNROLL,
        "elem": case.elem if case.tensor else 1,
        "check_tile": check_tile(case),
        # the copy's wrappers (ptx/async.cuh) and their arguments: tile t's coordinates, im2col's offsets
        "tensor_load": f"tma_load_{mode}{rank}d",
        "tensor_prefetch": f"tma_prefetch_{mode}{rank}d",
        "coords": ", ".join(f"k.c[{d}]" for d in range(rank)),
        "offsets": "".join(f", k.o[{s}]" for s in range(rank - 2)) if case.im2col else "",
        "im2col": "true" if case.im2col else "false",
        "spatial": ", ".join(map(str, (*model.IM2COL_EXTENTS.get(rank, ()), 1, 1, 1)[:3])),
        "im2col_channel_tiles": model.IM2COL_CHANNEL_TILES,
        "im2col_corner": model.IM2COL_CORNER,
        "im2col_filter": model.IM2COL_FILTER,
        "stream_kernels": kernels,
    }
