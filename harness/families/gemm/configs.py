"""Named GEMM configurations and the builders of cases from them: the seed worklog's ladder and its best (BEST), fp8's
(FP8_SERIAL .. STAGGERED_FP8), every configuration a problem can run (configurations: the planner's space) and the
split-K runs offered for a tile (split_options). The suites' case lists: suite_cases.py."""

from __future__ import annotations

from dataclasses import replace

from harness.errors import SpecError
from harness.families.gemm.cases import IN_BYTES, PROMOTIONS, TILES, GemmCase, LibraryCase, bk_for
from harness.families.gemm.refusals import check
from harness.families.pipeline import EPILOGUES, MAX_STAGES, SPLITS


def pipeline(dtype: str, shape: tuple[int, int, int], **config) -> GemmCase:
    m, n, k = shape
    return GemmCase(dtype, m, n, k, **{"bk": bk_for(dtype), **config})


def library(dtype: str, shape: tuple[int, int, int], fast_accum: bool = False, scaling: str = "tensor",
            inputs: str = "random", protocol: str = "sustained", placement: str = "warm") -> LibraryCase:
    m, n, k = shape
    return LibraryCase(dtype, m, n, k, fast_accum=fast_accum, scaling=scaling, inputs=inputs, protocol=protocol,
                       placement=placement)


# The seed worklog's kernels that this family expresses, by its step (docs/gemm.md; the steps it does not:
# 1 CUDA cores, 5a a 128x256 tile on one warpgroup (ptxas serializes it)). 11 is 10 with its tiles walked along a
# Hilbert curve (ptx/pipeline.cuh hilbert_cell: over the grid of cluster pairs, 16 x 16 at 4096^3).
BEST = dict(bm=128, bn=256, stages=3, consumers=2, rebalance=True, cluster=2, persistent=True, order="grouped",
            epilogue="tmastore")
LADDER = {
    "2": dict(bm=64, bn=64, stages=1, consumers=1),
    "3": dict(bm=128, bn=128, stages=1, consumers=1),
    "4": dict(bm=128, bn=128, stages=5, consumers=1),
    "5b": dict(bm=128, bn=256, stages=3, consumers=2),
    "5c": dict(bm=128, bn=256, stages=3, consumers=2, rebalance=True),
    "6a": dict(bm=128, bn=256, stages=3, consumers=2, rebalance=True, persistent=True),
    "6b": dict(bm=128, bn=256, stages=3, consumers=2, rebalance=True, persistent=True, order="grouped"),
    "8": dict(bm=128, bn=256, stages=3, consumers=2, rebalance=True, persistent=True, order="grouped", cluster=2),
    "10": BEST,
    "11": dict(BEST, order="hilbert"),
}


# Every worklog step to the configuration of ours it is compared with: 7 (its barriers through PTX) is 6b's
# configuration, since ours are always PTX mbarriers; 9 (no zeroing, ordered stores) is 8's, since ours
# never zero (scale-d) and store from registers.
WORKLOG_STEPS = {**LADDER, "7": LADDER["6b"], "9": LADDER["8"]}
WORKLOG_UNEXPRESSED = {
    "1": "CUDA cores only: not a tensor-core pipeline",
    "5a": "a 128x256 tile on one consumer warpgroup: 256 accumulators per thread, which ptxas serializes (C7511); "
          "the family refuses it",
}


# fp8 keeps two sets of accumulators (PROMOTE): 128x256 over two consumers would need 256 registers a thread
FP8_SERIAL = dict(BEST, bn=128)
# ... three with the promotion overlapped, which then waits on its feed: a ring of 4 (H200 dev run: 974 TFLOPS at
# 4096^3 against 910 at 3 stages and 944-950 at 5-6; runs 110-111)
OVERLAP_FP8 = dict(FP8_SERIAL, stages=4, promotion="overlap")
# ... and pipelined (a k-block in flight through the next slot's wait), on the deepest ring beside the TMA store
# (run 124, H100: 1081 and 1096 TFLOPS at 4096^3 and 8192^3 against 1044 and 1037 on a ring of 4)
BEST_FP8 = dict(FP8_SERIAL, stages=6, promotion="pipelined")
# ... and 128x192, the widest tile with two sets (96 + 96 a thread), promoted after each k-block: the two consumer
# warpgroups' k-blocks queue on the tensor cores, so one's promotion runs under the other's wgmma (as DeepGEMM's
# consumers do); a ring of 4 beside the TMA store's 48 KiB, N past whole tiles a partial last tile
WIDE_FP8 = dict(FP8_SERIAL, bn=192, stages=4)
# Measured so (H100, run 149): 1109-1158 cycles a k-block against the tensor cores' 768: the two warpgroups issue
# each k-block together, their wgmma interleave and finish together, and both promote while the tensor cores idle.
# The staggered promotion orders their issue by named barriers (warpgroup 1 issues k-block kb after warpgroup 0 has,
# warpgroup 0 issues kb + 1 after warpgroup 1 has issued kb): if the tensor cores take a warpgroup's group whole, in
# the order issued, one promotes while the other's group runs. Measured (run 150): they do not (1188-1206 cycles at
# 128x192, 909-919 at 128x128, no better than serial); docs/gemm.md
STAGGERED_FP8 = dict(WIDE_FP8, promotion="staggered")
# cuBLASLt's fp8 tile at 8192^3 (nvjet ..._144x128_128x6_1x2, reports/investigation/gemm-library-h100.txt), pipelined:
# three sets of 72 (216 f32 a thread: ptxas keeps them and the addresses in setmaxnreg's 232 without a spill), a
# 34 KiB stage (5 beside the TMA store's 36 KiB, one unswizzled box a warpgroup), 6 % fewer bytes of A and B a FLOP
# than 128x128 and a k-block of 576 tensor-core cycles for the feed's 34 KiB; N past whole tiles a partial last tile
# (8192 = 56 x 144 + 128)
WIDE144_FP8 = dict(BEST_FP8, bn=144, stages=5)


# Clusters of 4 CTAs (one per SM) the H100 SXM runs at once: 30, on 120 of its 132 SMs (cuOccupancyMaxActiveClusters,
# scripts/investigate_gemm_library.py); a persistent grid of more would run the rest as a second wave, which the
# family refuses at launch (gpu.attach)
MULTICAST_SMS = 120


WORKLOG_SHAPE = (4096, 4096, 4096)  # the seed worklog's problem (its section 2.11: a 4096 x 4096 C in 128x256 tiles)


def configurations(dtype: str, m: int, n: int, k: int) -> list[GemmCase]:
    """Every configuration of the family that can run this problem (refusals.check accepts it), fp8 with each of
    its promotions. Not the ping-pong schedule (priced since model.pingpong_cycles; at K = 4096 and 8192 each of its
    cases lost to the cooperative best of its run and shape, runs 109, 112 and 211; the planner ranks it first at
    K <= 1024 on its hidden epilogue alone, where run 212 measured a tie at 512 and a loss at 1024, 0.947 of cuBLAS
    against the cooperative 128x256's 1.054: docs/gemm.md), nor
    clusters of 4 (how many fit at once is the GPU's: 30 on the H100; measured no faster, run 123), nor the offset
    walk (the model prices it as the pipelined one, which it is not: 80-90 cycles a k-block slower, run 202). Where M
    is below a tile's rows, that tile with A's box of M rows (`.tighta`) in place of the full box, which loads the
    rows past M as zeros: in runs 213-214 (H200) faster in 10 of 13 pairs beyond the rounds' spread (0.03-0.28 of
    cuBLAS), the other three within it, none slower."""
    found = []
    promotions = tuple(p for p in PROMOTIONS if p != "offset") if IN_BYTES.get(dtype) == 1 else ("serial",)
    for bm, bn in TILES:
        for consumers in (1, 2):
            for stages in range(1, MAX_STAGES + 1):
                for cluster in (1, 2):
                    for persistent, order in ((False, "row"), (True, "row"), (True, "grouped")):
                        for epilogue in EPILOGUES:
                            for promotion in promotions:
                                for splits in (1,) + (split_options(dtype, bm, bn, (m, n, k)) if cluster == 1 else ()):
                                    case = pipeline(dtype, (m, n, k), bm=bm, bn=bn, stages=stages,
                                                    consumers=consumers, rebalance=consumers == 2, cluster=cluster,
                                                    persistent=persistent, order=order, epilogue=epilogue,
                                                    promotion=promotion, splits=splits, tight_a=m < bm)
                                    try:
                                        check(case)
                                    except SpecError:
                                        continue
                                    found.append(case)
    return found


SPLIT_SMS = 132  # split-K is offered where a problem's tiles would not fill twice this many SMs (an H100's)


def split_options(dtype: str, bm: int, bn: int, shape: tuple[int, int, int]) -> tuple[int, ...]:
    """Split-K's runs worth planning for a tile: where its tiles leave SMs idle, the splits that keep the work
    items within two per SM and every run at least two k-blocks (split-K's fix-up then costs no more than a
    tile's epilogue twice)."""
    m, n, k = shape
    tiles = -(-m // bm) * -(-n // bn)
    if not tiles or tiles >= SPLIT_SMS:
        return ()
    kblocks = k // bk_for(dtype)
    return tuple(s for s in SPLITS[1:] if tiles * s <= 2 * SPLIT_SMS and kblocks % s == 0 and kblocks // s >= 2)


def with_problem(case: GemmCase, m: int, n: int, k: int) -> GemmCase:
    return replace(case, m=m, n=n, k=k)
