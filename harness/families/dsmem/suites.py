"""The DSMEM family's suites: loads, stores and the papers' chase patterns; the SM-to-SM map."""

from __future__ import annotations

import harness.families.dsmem.cases as _cases
from harness.families.base import Suite


def suites() -> dict[str, Suite]:
    return {
        "dsmem": Suite("distributed shared memory: loads and stores to another CTA (the next, or spread over the "
                       "cluster) in clusters of 2/4/8/16, and the papers' chase patterns (ring, pair, broadcast, "
                       "local) over block sizes and chains per thread", _cases.cases, part_of=("tma",)),
        "maps-dsmem": Suite("the SM-to-SM map: every CTA of clusters of 2/4/8/16 chases every other, by %smid",
                            _cases.map_cases, part_of=("maps", "maps-sides")),
    }
