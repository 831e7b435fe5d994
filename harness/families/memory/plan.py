"""What a memory case measures and how (the measurement methods' specs): a chase's latency by chain slope (and, for
L2 and HBM, each load timed alone), a stream's throughput per SM by warps per SM, the L2 map's and the pairs'
latency per SM."""

from __future__ import annotations

from harness.families.memory.cases import MemoryCase
from harness.families.memory.kernels import (EACH_REPS, L1_CARVEOUT, MAP_LAUNCHES, PAIR_LAUNCHES, PAIR_ROW_TARGETS,
                                             PAIR_TARGETS, STREAM_UNROLL, SWEEP_WARPS, UNROLL, WARM_THREADS)
from harness.families.memory.pairs import OWNER_MISS, OWNER_OWN
from harness.l2lines import LINES as MAP_LINES
from harness.measure.methods import BracketedLatency, ChainSlope, OccupancySweep, SmMap, SweepPoint

PAIR_POOLS = (("hits", 0, 1 << 20, 2), ("misses", OWNER_MISS, OWNER_MISS, 2), ("own", OWNER_OWN, OWNER_OWN, 1))


def plan(case: MemoryCase, device=None) -> list:
    if case.kind == "pairs":
        return [SmMap("latency_cycles", "probe_pairs", 32, PAIR_ROW_TARGETS, PAIR_TARGETS, PAIR_LAUNCHES,
                      {"map": "l2pairs"}, by_target=True, target_key="owner", pools=PAIR_POOLS,
                      notes=f"each block (one per SM) loads {PAIR_TARGETS + 1} lines of a fresh 2 MiB slab (the L2 "
                            "evicted; the TLB warmed; each load timed: misses, owner -1), waits for every block (a "
                            f"counter in global memory), then times its first access to one line of each of "
                            f"{PAIR_TARGETS} other blocks (owner: that block's %smid) and its own last line "
                            "again (owner -2), with ld.global.cg, each load bracketed alone (clock, load, a shared "
                            "store that waits for the word, clock) less the least of 16 empty brackets; pools: "
                            "every SM's samples of other SMs' lines (hits) and of its own first loads (misses), "
                            "each split in two by 1-D k-means")]
    if case.kind == "map":
        return [SmMap("latency_cycles", "probe_map", 32, MAP_LINES, MAP_LINES, MAP_LAUNCHES,
                      {"map": "l2", "lines": MAP_LINES},
                      notes=f"each block (one per SM) walks {MAP_LINES} lines of an 8 MiB region (resident in the "
                            f"L2), block b from line b mod {MAP_LINES}, with ld.global.cg, each load timed alone "
                            "(clock, load, a shared store that waits for the word, clock) less the least of 16 "
                            "empty brackets; samples: launch by launch, the lines in walk order from word 0")]
    if case.kind == "stream":
        points = tuple(SweepPoint("probe_stream", w, STREAM_UNROLL, {"warps": w}) for w in SWEEP_WARPS)
        return [OccupancySweep(points, 32, 1, whole_gpu="none")]
    if case.footprint_bytes:
        size = f"{case.footprint_mib} MiB" if case.footprint_mib else f"{case.footprint_kib} KiB"
        carveout = (f", the kernel's preferred shared-memory carve-out {L1_CARVEOUT} % (the largest L1)"
                    if case.level == "l1" else "")
        return [ChainSlope("latency_cycles", "probe_chain", WARM_THREADS, unroll=UNROLL, launch={"timed": "chain"},
                           notes=f"one thread's dependent {case.instruction} through a random cycle of 64-byte chunks "
                                 f"over {size}, after the block ({WARM_THREADS} threads, one SM) loaded every chunk "
                                 f"once with {case.instruction} (the {case.level.upper()}'s footprint sweep; each "
                                 f"launch from its own place in the cycle{carveout})")]
    where = {"shared": "shared memory (4 KiB)", "l1": "a 16 KiB ring in global memory, cached in L1 after the "
             "first pass (the short chain's misses cancel in the slope)", "l2": "an 8 MiB ring, resident in the L2",
             "hbm": "256 MiB, every launch on chunks no launch touched before"}[case.level]
    how = ("a chase of shared addresses (the word loaded is the next address)" if case.kind == "ptrchase" else
           "an index chase (each step adds the word loaded to the ring's base)" if case.level == "shared" else "")
    plan = [ChainSlope("latency_cycles", "probe_chain", 32, unroll=UNROLL, launch={"timed": "chain"},
                       notes=f"one thread's dependent {case.instruction} through {where}" + (f": {how}" if how else ""))]
    if case.level in ("l2", "hbm"):
        plan.append(BracketedLatency("probe_each", "probe_each_empty", 32,
                                     "two clock reads and a shared store of the word", launch={"timed": "each access"},
                                     reps=EACH_REPS))
    return plan
