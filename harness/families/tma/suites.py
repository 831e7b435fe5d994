"""The TMA family's suites: the copies, the authors' geometries, a quick one, and the L2 map through TMA."""

from __future__ import annotations

import harness.families.tma.suite_cases as _cases
from harness.families.base import Suite


def suites() -> dict[str, Suite]:
    return {
        "tma-copies": Suite("tensor loads (box size, element size, swizzle, rank 1-5, the map in global memory, "
                            "im2col rank 3-5, multicast to 2/4/8/16 CTAs, L2 prefetch), tensor stores and a reduction, "
                            "bulk copies both ways, the baselines (ld.global, cp.async, ld+st.shared), the mbarrier "
                            "sequence", _cases.cases, part_of=("tma",)),
        "tma-authors": Suite("the authors' TMA bandwidth geometries (their logs, 2501.12084 Fig. 3) that "
                             "tma-copies lacks: bulk copies of 1, 4, 12 and 16 KB, 1-D b64 boxes of 768 B to 2 KB, "
                             "their 2-D FP32 boxes of a matrix 128 KiB a row (96 x 32 included), their 3-D FP32 boxes "
                             "of a 1024^3 tensor (rows 4 KiB, planes 4 MiB apart); streams also at 3 blocks per SM",
                             _cases.authors_cases, part_of=("tma",)),
        "tma-quick": Suite("one tensor load, one store, the read baseline and the barrier",
                           lambda: [c for c in _cases.cases() if c.case_id in QUICK]),
        "maps-tma": Suite("the L2 by SM through TMA: every SM's latency of one 128-byte bulk copy of each of the L2 "
                          "map's 64 lines", _cases.map_cases, part_of=("maps",)),
    }


QUICK = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192",
         "cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128.pitch8192", "ld.global.v4.u32",
         "mbarrier.arrive.expect_tx.then.try_wait")
