"""The planner's bytes beyond the SM (model.py): how many CTAs share an SM, the share of a wave's k-block reads that
miss the L2 (per L2 side) and what they wait for in the memory's queue, and the memory's own bound on the problem."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from harness.families.gemm.cases import GemmCase
from harness.families.gemm.params import OUT_ELEM, Params
from harness.families.gemm.problem import sms_used
from harness.families.pipeline import tile_walk

RHO_MAX = 0.95  # a miss waits at most 19 L_q: past it the memory's own bound (HBM) holds


REGISTERS = 65536  # per SM
SMEM_PER_SM = 228 * 1024


def blocks_per_sm(case: GemmCase) -> int:
    """CTAs of a one-CTA-per-tile grid that can share an SM (a persistent grid has one per SM): by shared memory and by
    registers (registers_per_thread, allocated per warp in units of 8)."""
    if case.persistent:
        return 1
    threads = 128 * (1 + case.consumers)
    registers = -(-registers_per_thread(case) // 8) * 8
    return max(1, min(SMEM_PER_SM // case.smem_bytes(), REGISTERS // (registers * threads), 2048 // threads))


def resident_blocks(case: GemmCase, sm_count: int) -> int:
    """CTAs that do share an SM: blocks_per_sm, but no more than the grid puts on each of its SMs (a grid of fewer
    CTAs than SMs gives each its own: the block scheduler spreads them)."""
    return min(blocks_per_sm(case), max(1, -(-case.items * case.cluster // sms_used(case, sm_count))))


def registers_per_thread(case: GemmCase) -> int:
    """What ptxas allocates a thread (every warp of the CTA alike). Two consumer warpgroups: 168, the launch bound of 384
    threads (setmaxnreg moves them between warpgroups). One: its accumulators and what addresses them, from the builds
    of runs 208-216 (ptxas's counts, stored with each build): f16 1.5 a k-block's accumulator + 44 (64x64 90-91,
    64x128 136-142, 128x128 230-236 measured); fp8's promotion all its sets + 48 (138-149 and 231-243 for 96 and 192);
    a split-K or stream-K fix-up holds a run's sums read back beside them, 1.5 an accumulator more (64x64 131-134,
    64x128 230; the earlier fix-up of runs 134-141 took 79-112)."""
    if case.consumers == 2:
        return 168
    per_set = case.accumulator_set
    registers = (case.accumulators + 48) if case.promote else 1.5 * per_set + 44
    if case.fixes_up:
        registers += 1.5 * per_set
    return min(255, int(round(registers)))


def miss_cycles(case: GemmCase, p: Params, period: float, clock_mhz: float) -> float:
    """What a k-block's round trip waits for the memory's queue: f L_q rho / (1 - rho), the share f of its
    bytes that miss the L2 (miss_fraction) waiting in an M/M/1-like queue whose unloaded cost is L_q
    (memory_queue_cycles, fitted), rho the bandwidth the wave's misses take at this k-block period (every
    CTA in flight reads f of its k-block from memory each period) over hbm_gbps. Only the wait: the
    unloaded miss latency is inside the fitted round trip L0."""
    f = miss_fraction(case, p.sm_count, p.l2_bytes)
    read = (case.a_box_rows + case.bn / case.cluster) * case.bk * case.in_bytes  # bytes a CTA reads from the L2 per k-block
    in_flight = min(case.items * case.cluster, sms_used(case, p.sm_count) * blocks_per_sm(case))  # CTAs
    rho = f * read * in_flight / period / (p.hbm_gbps * 1e9 / (clock_mhz * 1e6))
    rho = min(rho, RHO_MAX)
    return f * p.memory_queue_cycles * rho / (1.0 - rho)


@lru_cache(maxsize=65536)
def miss_fraction(case: GemmCase, sm_count: int, l2_bytes: float = 0.0) -> float:
    """The share of the bytes a wave's CTAs read from the L2 per k-block that the wave reads first: the A
    rows and B columns its tiles span (each k-block's slice is new, fetched from memory by the first CTA
    that asks and shared by the rest while the wave is in flight). A wave is the work items in flight at
    once, taken in the kernel's order (ptx/gemm.cu.in tile_of, which orders a one-CTA-per-tile grid's clusters
    too: the block scheduler starts them in that order), each counted once for every side of the L2 that reads
    it (_sides). None where the problem stays in the L2 (l2_resident)."""
    if l2_resident(case, l2_bytes):
        return 0.0
    in_flight = max(1, sms_used(case, sm_count) // case.cluster * blocks_per_sm(case) // case.splits)
    return _miss_fraction(case.walk_m, case.walk_n, case.bm, case.bn, case.cluster, case.order, in_flight, case.splits,
                          case.a_box_rows)


@lru_cache(maxsize=4096)
def _miss_fraction(m: int, n: int, bm: int, bn: int, cluster: int, order: str, in_flight: int,
                   splits: int = 1, a_rows: int | None = None) -> float:
    """`a_rows`: the rows of A one CTA's box reads (a tight box's M, else the tile's): what its A panel fetches and
    what each CTA reads of it (the rows past M a full box zero-fills are read from the L2 as any)."""
    tiles_n, pairs_m = n // bn, m // bm // cluster
    a_rows = a_rows or bm
    items = np.arange(pairs_m * tiles_n)
    pm, tn = tile_walk(order, pairs_m, tiles_n)
    read = (cluster * a_rows + bn)  # rows of 128 bytes a work item's CTAs read from the L2 per k-block
    fresh = []
    for start in range(0, len(items), in_flight):
        wave = slice(start, start + in_flight)
        # the side group of each item's first CTA: a tile's split-K runs and a cluster's CTAs are consecutive CTAs
        group = np.arange(len(items[wave])) * splits * cluster // SIDE_GROUP
        fresh.append((_sides(pm[wave], group) * cluster * a_rows + _sides(tn[wave], group) * bn)
                     / (read * len(items[wave])))
    return float(np.mean(fresh))


def _sides(panels: np.ndarray, group: np.ndarray) -> float:
    """The L2 sides a wave's panels are fetched into, summed over the panels: each side of the L2 keeps a copy of
    the lines its own SMs read (NVIDIA's A100 whitepaper: a partition caches for the SMs connected to it), so a
    panel read from both sides is read from memory twice. A panel read by CTAs of k groups (SIDE_GROUP CTAs share
    a side, each group on either side alike): 2 - 2^(1 - k) sides expected."""
    pairs = np.unique(panels.astype(np.int64) * (int(group.max()) + 1) + group)  # (panel, group) once each
    k = np.unique(pairs // (int(group.max()) + 1), return_counts=True)[1]  # groups per panel
    return float(np.sum(2.0 - 2.0 ** (1.0 - k)))


# CTAs taken to share an L2 side: a persistent grid's consecutive CTAs, in runs as long as the runs of SM ids
# near one partition (runs 94 and 95: runs of 6 and of 2 SMs alternate, 4 on average; which SM a CTA lands on is
# not recorded, so a run of CTAs is on either side alike)
SIDE_GROUP = 4


def problem_bytes(case: GemmCase) -> float:
    """A and B read and C written once."""
    return (case.m * case.k + case.n * case.k) * case.in_bytes + case.m * case.n * OUT_ELEM


def l2_resident(case: GemmCase, l2_bytes: float) -> bool:
    """Whether the problem's A, B and C fit in the L2 together: the runs time back-to-back launches on the same
    buffers, so a launch finds them where the previous one left them (run 136: 4096 x 4096 weights read at up to
    3.95 TB/s, above HBM's rate) and neither the memory's queue nor its bound applies. Never with a cold placement
    (cases.PLACEMENTS: each launch's copy of the inputs has left the L2)."""
    return case.placement == "warm" and 0 < problem_bytes(case) <= l2_bytes


def hbm_cycles(case: GemmCase, p: Params, clock_mhz: float) -> float:
    """Cycles the memory needs to read A and B and write C once at hbm_gbps, at this SM clock (none where the
    problem stays in the L2)."""
    if l2_resident(case, p.l2_bytes):
        return 0.0
    return problem_bytes(case) / (p.hbm_gbps * 1e9 / (clock_mhz * 1e6))
