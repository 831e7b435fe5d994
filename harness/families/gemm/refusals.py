"""Why a GEMM configuration (or the library's call) cannot be built: check, one line per refusal (cases.py: the
case types and their constants)."""

from __future__ import annotations

from harness.errors import SpecError
from harness.families.gemm.cases import (DTYPES, FP8_LIBRARY, FP8_TILES, GROUPED_WALKS, INPUT_DTYPES, INPUT_KINDS, LIBRARY_DTYPES,
                                         LIVE_ACCUMULATOR_LIMIT, MAX_DIM, PIPELINE_GROUP, PIPELINE_GROUPS, PROMOTIONS,
                                         PLACEMENTS, PROTOCOLS, SCALE_BLOCK, SCALINGS, TILES, GemmCase, LibraryCase, bk_for)
from harness.families.pipeline import ACC_REGISTER_LIMIT, MAX_SMS, SMEM_LIMIT

SPLIT_ACCUMULATORS = 64  # f32 accumulators a consumer thread holds beside split-K's fix-up without spilling


def check(case: GemmCase | LibraryCase) -> None:
    """One line saying why a configuration (or the library's call) cannot be built, or nothing."""
    def refuse(why: str):
        raise SpecError(f"{case.case_id}: {why}")

    if case.dtype not in DTYPES:
        refuse(f"dtype {case.dtype!r}: expected one of {', '.join(DTYPES)}")
    for name in ("m", "n", "k"):
        value = getattr(case, name)
        if not 1 <= value <= MAX_DIM:
            refuse(f"{name.upper()} = {value}: expected 1..{MAX_DIM}")
    if case.scaling not in SCALINGS:
        refuse(f"scaling {case.scaling!r}: expected one of {', '.join(SCALINGS)}")
    if case.inputs not in INPUT_KINDS:
        refuse(f"inputs {case.inputs!r}: expected one of {', '.join(INPUT_KINDS)}")
    if case.inputs != "random" and case.dtype not in INPUT_DTYPES:
        refuse(f"{case.inputs} inputs for the measured problem are {' and '.join(INPUT_DTYPES)}'s")
    if case.protocol not in PROTOCOLS:
        refuse(f"protocol {case.protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if case.placement not in PLACEMENTS:
        refuse(f"placement {case.placement!r}: expected one of {', '.join(PLACEMENTS)}")
    if case.placement == "cold" and case.protocol == "burst":
        refuse("a cold placement takes sustained rounds: a burst's batch of launches is not a whole number of turns "
               "through the copies, and each batch would begin on the copy the one before left in the L2")
    if case.block_scaled:
        if case.in_bytes != 1:
            refuse("block scaling is fp8's (DeepSeek-V3's 1x128 and 128x128 f32 scales)")
        if case.n % SCALE_BLOCK or case.k % SCALE_BLOCK:
            refuse(f"block scaling takes N and K in multiples of its {SCALE_BLOCK}-wide blocks")
        if case.a_dtype != case.b_dtype:
            refuse("block scaling with e5m2 B: not built (e4m3 A and B only)")
    if isinstance(case, LibraryCase):
        _check_library(case, refuse)
    else:
        _check_pipeline(case, refuse)


def _check_library(case: LibraryCase, refuse) -> None:
    if case.dtype not in LIBRARY_DTYPES + FP8_LIBRARY:
        refuse(f"no library case for {case.dtype}: expected one of {', '.join(LIBRARY_DTYPES + FP8_LIBRARY)}")
    if case.fast_accum and case.dtype not in FP8_LIBRARY:
        refuse("fast accumulation is cuBLASLt's fp8 option")
    if case.block_scaled and case.fast_accum:
        refuse("cuBLASLt takes no fast accumulation with block scales")
    if case.dtype in FP8_LIBRARY and (case.m % 16 or case.n % 16 or case.k % 16):
        refuse("cuBLASLt's fp8 matmul takes M, N and K in multiples of 16")
    if case.m % 8 or case.n % 8 or case.k % 8:
        refuse("M, N and K must be multiples of 8 (16-byte rows)")


def _check_pipeline(case: GemmCase, refuse) -> None:
    if case.block_scaled and case.promotion == "overlap":
        refuse("block scaling with the overlapped promotion: ptxas waits for the wgmma before each scaled "
               "promotion (C7517); the serial or the pipelined one")
    if (case.bm, case.bn) not in TILES:
        refuse(f"tile {case.bm}x{case.bn}: expected one of {', '.join(f'{m}x{n}' for m, n in TILES)}")
    if (case.bm, case.bn) in FP8_TILES and not case.promote:
        refuse(f"tile {case.bm}x{case.bn} is fp8's (two accumulator sets of {case.bn // 2}); f16 and bf16 keep one set "
               "and take 128x256")
    if case.bk != bk_for(case.dtype):
        refuse(f"BK = {case.bk}: the pipeline's k-block of {case.dtype} is {bk_for(case.dtype)} (one 128-byte "
               "swizzle span)")
    skeleton = case.check_skeleton()
    if skeleton:
        refuse(skeleton)
    if case.promotion not in PROMOTIONS or (case.promotion != "serial" and (not case.promote or case.stages < 2)):
        refuse(f"promotion {case.promotion!r}: expected one of {', '.join(PROMOTIONS)}; an overlapped one is fp8's, "
               "with a ring of two stages or more")
    if case.promotion == "staggered" and (case.consumers != 2 or case.pingpong):
        refuse("a staggered promotion orders two cooperative consumer warpgroups' k-blocks on the tensor cores: wg2, "
               "not ping-pong")
    if case.promotion == "deferred" and (case.fixes_up or case.pingpong):
        refuse("a deferred epilogue holds a tile's f32 sums until the next tile's first k-block: not with split-K or "
               "stream-K (their runs' fix-up) or ping-pong (whose epilogues already run under the other warpgroup's "
               "mainloop)")
    if case.promotion == "offset" and (case.consumers != 2 or case.pingpong):
        refuse("an offset promotion puts consumer warpgroup 1's groups half a group after warpgroup 0's: wg2, "
               "cooperative")
    if case.promotion == "offset" and case.accumulators > 192:
        refuse(f"an offset promotion beside {case.accumulators} f32 accumulators: its second walk spills (ptxas, 188 "
               "bytes at 128x144); at most three sets of 64")
    if case.group not in PIPELINE_GROUPS or (case.group != PIPELINE_GROUP and case.promotion not in GROUPED_WALKS):
        refuse(f"a group of {case.group} k-blocks: a pipelined promotion's groups are of "
               f"{', '.join(map(str, PIPELINE_GROUPS))}")
    if case.accumulator_set > ACC_REGISTER_LIMIT:
        refuse(f"{case.accumulators} f32 accumulators per thread: ptxas would serialize the wgmma (C7511); "
               + ("a ping-pong tile is one warpgroup's" if case.pingpong else "split the tile over two consumer warpgroups"))
    if case.accumulators > LIVE_ACCUMULATOR_LIMIT:
        refuse(f"{case.accumulators} f32 accumulators per thread ({case.accumulators // case.accumulator_set} sets of "
               f"{case.accumulator_set}): more than the {LIVE_ACCUMULATOR_LIMIT} a consumer keeps beside its addresses "
               "in setmaxnreg's 232 registers")
    if case.smem_bytes() > SMEM_LIMIT:
        refuse(f"{case.smem_bytes()} bytes of shared memory: more than the {SMEM_LIMIT} a block may have")
    if case.k % (case.bk * case.splits):
        refuse(f"K = {case.k} is not a whole number of "
               + (f"{case.splits} runs of {case.bk}-deep k-blocks" if case.splits > 1 else f"{case.bk}-deep k-blocks"))
    if case.n % case.bn and (case.block_scaled or case.n % 16):
        refuse(f"N = {case.n} is not a whole number of {case.bn}-column tiles: a partial last tile takes no block "
               "scales, and N a multiple of 16")
    if case.block_scaled and case.bn % SCALE_BLOCK and SCALE_BLOCK % case.bn:
        refuse(f"block scales with {case.bn}-column tiles: a tile holds whole {SCALE_BLOCK}-column blocks of B's "
               "scales, or lies in one")
    if case.m % (case.bm * case.cluster):
        if case.epilogue != "tmastore" or case.block_scaled or case.cluster > 1 or case.m % 16:
            refuse(f"M = {case.m} is not a whole number of {case.bm * case.cluster}-row tiles (cluster pairs along M): "
                   "a partial last tile takes the TMA-store epilogue (it clips the rows past M), no cluster, no block "
                   "scales, and M a multiple of 16")
    if case.tight_a and (case.m >= case.bm or case.order == "hilbert"):
        refuse(f"A's box of M = {case.m} rows (tighta) is for M below the tile's {case.bm} rows (one row of tiles, "
               "each partial), not the Hilbert order (its check problem has rows of whole tiles)")
    if case.streamk and (case.k // case.bk) * MAX_SMS ** 2 >= 2 ** 31:  # ptx/pipeline.cuh's 32-bit range arithmetic
        refuse(f"stream-K over {case.k // case.bk} k-blocks a tile: at most {2 ** 31 // MAX_SMS ** 2 - 1} (the ranges' "
               "arithmetic is 32-bit: grid x grid x k-blocks < 2^31)")
    split = "split-K" if case.splits > 1 else "stream-K"
    if case.fixes_up and case.block_scaled:
        refuse(f"{split} with block scales: the scales are loaded by the run's own k-block")
    if case.fixes_up and case.accumulator_set > SPLIT_ACCUMULATORS:
        refuse(f"{split} beside {case.accumulator_set} f32 accumulators a thread: the fix-up's loads spill (ptxas, 32 "
               f"bytes, run 139); at most {SPLIT_ACCUMULATORS}")
