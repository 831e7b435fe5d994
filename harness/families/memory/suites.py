"""The memory family's suites: the hierarchy's chases and streams, the L2's and the L1's footprint sweeps, the L2 map, the L2's pairs
of SMs."""

from __future__ import annotations

from harness.families.base import Suite
from harness.families.memory.cases import (SWEEP_KIB, SWEEP_MIB, cases, footprint_cases, l1_footprint_cases, map_cases,
                                           pair_cases)


def suites() -> dict[str, Suite]:
    return {"memory": Suite("the memory hierarchy: pointer-chase latency through shared memory, L1, L2 and HBM (each "
                            "load also timed alone for L2 and HBM), and load throughput per SM from shared memory, L1 "
                            "and L2", cases),
            "memory-l2-capacity": Suite(
                f"the L2's capacity as one SM sees it: the L2 chase's latency over rings of {SWEEP_MIB[0]} to "
                f"{SWEEP_MIB[-1]} MiB ({len(SWEEP_MIB)} footprints), each warmed before it is timed; compare "
                "derives the capacity (l2_capacity_mib) from the knee", footprint_cases),
            "memory-l1-capacity": Suite(
                f"the L1's capacity as one SM sees it: the L1 chase's latency over rings of {SWEEP_KIB[0]} to "
                f"{SWEEP_KIB[-1]} KiB ({len(SWEEP_KIB)} footprints), each warmed by one block before it is timed, at "
                "the shared-memory carve-out preference 0 (the largest L1); compare derives the capacity "
                "(l1_capacity_kib) from the knee", l1_footprint_cases),
            "maps-l2": Suite("the L2 by SM: every SM's latency to each of 64 lines (near and far partition)", map_cases,
                             part_of=("maps", "maps-sides")),
            "maps-l2pairs": Suite("the L2's near and far hits and misses by pair of SMs: every SM's first access to "
                                  "lines other SMs brought into the L2, and its own misses", pair_cases,
                                  part_of=("maps", "maps-sides"))}

