"""The memory probe's kernels (ptx/memory.cu.in): their launch shapes, the chases' and the pairs' geometry, the
output each writes, and the parameters the template is filled with (template_params)."""

from __future__ import annotations

from harness.families.memory.cases import MemoryCase, check
from harness.l2lines import LINES as MAP_LINES
from harness.measure.methods import MAP_ROW_HEAD

SPACES = {"shared": 0, "global.ca": 1, "global.cg": 2, "global": 3}  # ptx/memory.cu.in SPACE (3: pointers)
# The HBM chase: launch k starts at word k * LAUNCH_STEP, 2 MiB on: 128 launches before the ring
# wraps, each walking at most 4352 of its 4M chunks.
HBM_LAUNCH_STEP = (2 << 20) // 4
UNROLL = 16  # chase steps per loop body
# The footprint sweeps (ld.global.cg.u32.pchase.l2.footprint<MiB>m, ld.global.ca.u32.pchase.l1.footprint<KiB>k): the
# block that warms the ring before each launch's chase (thread 0 chases alone after it; one block: one SM, whose L1 the
# L1's sweep fills), the loads each of its threads keeps in flight, and the step between two launches' first words:
# 4099 chunks (a prime), so that every launch starts elsewhere in the cycle
WARM_THREADS = 512
WARM_UNROLL = 8
FOOTPRINT_LAUNCH_STEP = 4099 * 16
# The L1's sweep: the chase's preferred shared-memory carve-out, in percent of the most shared memory an SM has
# (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, through Attachment.shared_carveout): 0, the largest L1 the SM
# gives beside the kernel's shared memory: 1028 bytes (its static word, the warm pass's sum, and the 1 KiB a block
# reserves), so at least the smallest carve-out step (8 KiB on sm_90) stays shared memory
L1_CARVEOUT = 0
STREAM_UNROLL = 4  # 16-byte loads per thread per iteration
SWEEP_WARPS = (4, 8, 16, 32)
EACH_REPS = 512  # loads timed alone per launch
CHECK_WARPS = 4
# The L2 map (ld.global.cg.u32.map.l2): lines walked by every SM, spread over an 8 MiB region (in the L2 of
# every Hopper: 50-60 MiB), each timed alone; launches, each a sample of every (SM, line).
MAP_LAUNCHES = 16
MAP_EMPTY = 16  # empty brackets each block times first; the least is the bracket's cost
# Dynamic shared memory (unused) of a map block: more than half of an SM's 228 KiB, so no two blocks share an SM
# and a grid of one block per SM lands on every SM (CUDA C++ Programming Guide, compute capability 9.0).
MAP_SHARED_BYTES = 120 << 10
# The pairs (ld.global.cg.u32.pairs.l2, ptx/memory.cu.in KIND 3): launch k reads slab k mod PAIR_SLABS of `in`; in
# it block b's stripe, lines a slot apart; a word every PAIR_WARM_BYTES loaded first (the TLB). A block times
# PAIR_TARGETS other blocks' lines a launch: PAIR_LAUNCHES x PAIR_TARGETS >= 2 x 131 offsets, every pair of SMs
# of a 132-SM GPU at least twice (the blocks' offsets shift by PAIR_TARGETS a launch).
PAIR_TARGETS = 16
PAIR_ROW_TARGETS = 2 * PAIR_TARGETS + 2  # its PAIR_TARGETS + 1 misses, the others' lines, its own line again
PAIR_SLAB_BYTES = 2 << 20
PAIR_STRIPE_BYTES = 8 << 10  # a block's: at most 256 blocks a slab
PAIR_SLOT_BYTES = 256  # between two lines (two 128-byte lines: no line holds two of them)
PAIR_WARM_BYTES = 64 << 10
PAIR_SLABS = 32  # 64 MiB (and one slab more: the last slab's TLB word): no launch of a probe reuses a slab
PAIR_LAUNCHES = 18
PAIR_CHECK_BLOCKS = 4  # the check's grid (every block's sum checked)


def pair_layout(k: int, block: int, slot: int) -> int:
    """The word index in `in` of slot `slot` of block `block`'s stripe in launch k's slab."""
    return ((k % PAIR_SLABS) * PAIR_SLAB_BYTES + block * PAIR_STRIPE_BYTES + slot * PAIR_SLOT_BYTES) // 4


def pair_owner(k: int, block: int, t: int, blocks: int) -> int:
    """The block whose slot 1 + t block `block` reads in launch k (ptx/memory.cu.in KIND 3, step 4)."""
    return (block + 1 + (k * PAIR_TARGETS + t) % (blocks - 1)) % blocks


def output_words(case: MemoryCase) -> int:
    return 32 * CHECK_WARPS if case.kind == "stream" else PAIR_CHECK_BLOCKS if case.kind == "pairs" else 1


def template_params(case: MemoryCase) -> dict[str, object]:
    check(case)
    words = case.region_bytes // 4
    return {"kind": {"stream": 1, "map": 2, "pairs": 3}.get(case.kind, 0), "space": SPACES[case.space],
            "ring_words": words,
            "pointers": "true" if case.kind == "ptrchase" else "false",
            "shared_words": words if case.level == "shared" else 4,
            "launch_step": (HBM_LAUNCH_STEP if case.level == "hbm" else FOOTPRINT_LAUNCH_STEP if case.footprint_bytes
                            else 0),
            "warm": "true" if case.footprint_bytes else "false", "warm_unroll": WARM_UNROLL,
            "unroll": STREAM_UNROLL if case.kind == "stream" else UNROLL, "out_threads": output_words(case),
            "map_lines": MAP_LINES, "map_empty": MAP_EMPTY,
            "map_row": MAP_ROW_HEAD + 2 * (PAIR_ROW_TARGETS if case.kind == "pairs" else MAP_LINES),
            "pair_targets": PAIR_TARGETS, "pair_slabs": PAIR_SLABS, "slab_words": PAIR_SLAB_BYTES // 4,
            "stripe_words": PAIR_STRIPE_BYTES // 4, "slot_words": PAIR_SLOT_BYTES // 4,
            "warm_words": PAIR_WARM_BYTES // 4}
