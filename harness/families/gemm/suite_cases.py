"""The GEMM suites' case lists (the family's suites in __init__.py name them): everyday, full, fp8 with its carried
and block-scaled cases, pingpong, multicast, skinny, protocol, quick; cases() is every one of them. The
configurations they are made of: configs.py."""

from __future__ import annotations

from dataclasses import replace

from harness.errors import SpecError
from harness.families.gemm.cases import (CARRIED, INPUT_KINDS, LIBRARY_DTYPES, PIPELINE_GROUPS, PROTOCOLS, GemmCase,
                                         LibraryCase)
from harness.families.gemm.configs import (BEST, BEST_FP8, FP8_SERIAL, LADDER, MULTICAST_SMS, OVERLAP_FP8,
                                           STAGGERED_FP8, WIDE144_FP8, WIDE_FP8, WORKLOG_SHAPE, library, pipeline,
                                           split_options)
from harness.families.gemm.refusals import check
from harness.families.pipeline import MAX_STAGES, SMEM_LIMIT

SQUARE = (2048, 4096, 8192, 16384)
SKINNY = ((128, 8192, 8192), (512, 8192, 8192))
MAINLOOP = (1024, 4096, 65536)  # 8 x 16 = 128 tiles of 128x256: one per SM, 1024 k-blocks each


def _unique(cases: list[GemmCase]) -> list[GemmCase]:
    return list(dict.fromkeys(cases))


def stage_sweep(dtype: str, shape: tuple[int, int, int]) -> list[GemmCase]:
    """Stages 1..as many as fit, for each tile, everything else as the best configuration but the epilogue
    (from registers: the TMA store's output tile would take the shared memory of one or two stages)."""
    cases = []
    for bm, bn in ((128, 128), (128, 256), (256, 128), (64, 128)):
        consumers = 1 if bm == 64 else 2
        for stages in range(1, MAX_STAGES + 1):
            config = dict(BEST, bm=bm, bn=bn, stages=stages, consumers=consumers, rebalance=consumers == 2,
                          epilogue="regs")
            case = pipeline(dtype, shape, **config)
            if case.smem_bytes() <= SMEM_LIMIT:
                cases.append(case)
    return _unique(cases)


def everyday() -> list[GemmCase]:
    """The ladder, a stage sweep at 8192^3 f16 with cuBLAS, and the mainloop-only case."""
    shape = (8192, 8192, 8192)
    cases = [pipeline("f16", shape, **config) for config in LADDER.values()]
    cases += stage_sweep("f16", shape)
    cases += [pipeline("f16", MAINLOOP, **dict(BEST, persistent=False, cluster=1, order="row")), library("f16", MAINLOOP)]
    return _unique(cases + [library("f16", shape)])


def full() -> list[GemmCase]:
    """Runs of record: the everyday suite; the ladder at 4096^3; the best configuration and cuBLAS at every
    size and skinny shape, f16 and bf16; the epilogue, cluster and order each alone at 4096^3 and 16384^3."""
    cases = everyday()
    cases += [pipeline("f16", (4096, 4096, 4096), **config) for config in LADDER.values()]
    for dtype in LIBRARY_DTYPES:
        for shape in [(s, s, s) for s in SQUARE] + list(SKINNY):
            best = dict(BEST)
            if shape[0] % (best["bm"] * best["cluster"]):
                best["cluster"] = 1
            cases += [pipeline(dtype, shape, **best), library(dtype, shape)]
            if shape[0] == 128:  # a 128-row problem: one row of tiles; narrower tiles fill more SMs
                cases.append(pipeline(dtype, shape, **dict(best, bn=128)))
    for s in (4096, 16384):
        for change in (dict(epilogue="regs"), dict(cluster=1), dict(order="row"), dict(rebalance=False)):
            cases.append(pipeline("f16", (s, s, s), **dict(BEST, **change)))
    cases += worklog_sms()
    cases += fp8()
    cases += pingpong()
    return _unique(cases)


# fp8 validates against cuBLAS (an f16 GEMM of the same values, f32 compute) within the bound of its arithmetic
# (problem.fp8_bound: the tensor cores' sum within a k-block keeps fewer bits than f32) at every size
FP8_SIZES = SQUARE


def fp8() -> list[GemmCase]:
    """e4m3 inputs (f32 accumulation, f16 out) at every square size: 128x128 at 3 stages with its promotion after
    each k-block and overlapped with the next (two k-block sets), overlapped on 4 stages, the best (pipelined, 6
    stages), cuBLASLt without and with fast accumulation; 128x128's stage sweep at 4096^3, both promotions; the
    overlapped and the pipelined one's deeper rings at 4096^3 and 8192^3 (a k-block of 128 lands the same bytes as
    f16's 64 and takes the tensor cores as long, twice the FLOP at twice the rate)."""
    cases = []
    for s in FP8_SIZES:
        shape = (s, s, s)
        cases += [pipeline("e4m3", shape, **FP8_SERIAL), pipeline("e4m3", shape, **dict(FP8_SERIAL, promotion="overlap")),
                  pipeline("e4m3", shape, **OVERLAP_FP8), pipeline("e4m3", shape, **BEST_FP8), library("e4m3", shape),
                  library("e4m3", shape, fast_accum=True)]
    sweep = [c for c in stage_sweep("e4m3", (4096, 4096, 4096)) if (c.bm, c.bn) == (128, 128)]
    cases += sweep + [replace(c, promotion="overlap") for c in sweep if c.stages > 1]
    # the overlapped promotion waits on its feed (counters): the deeper rings beside the TMA-store epilogue
    for s in (4096, 8192):
        for stages in range(4, MAX_STAGES + 1):
            case = pipeline("e4m3", (s, s, s), **dict(OVERLAP_FP8, stages=stages))
            if case.smem_bytes() <= SMEM_LIMIT:
                cases.append(case)
    # ... while its tensor cores idle: the pipelined promotion keeps a k-block in flight through the next slot's
    # wait, at every size and at every ring depth that fits at 4096^3 and 8192^3
    for s in FP8_SIZES:
        cases.append(pipeline("e4m3", (s, s, s), **dict(BEST_FP8, stages=4)))
    # 128x192 (serial and staggered) and 128x128 staggered, which lose (runs 149-150): their k-blocks, measured
    for s in (4096, 8192):
        cases += [pipeline("e4m3", (s, s, s), **dict(config, cluster=cluster)) for cluster in (1, 2)
                  for config in (WIDE_FP8, STAGGERED_FP8)]
        cases.append(pipeline("e4m3", (s, s, s), **dict(FP8_SERIAL, stages=6, promotion="staggered")))
    for s in (4096, 8192):
        for stages in range(3, MAX_STAGES + 1):
            for epilogue in ("tmastore", "regs"):
                case = pipeline("e4m3", (s, s, s), **dict(BEST_FP8, stages=stages, epilogue=epilogue))
                if case.smem_bytes() <= SMEM_LIMIT:
                    cases.append(case)
        # ... and the tensor cores drained every 2 k-blocks, at 4 and 6 stages
        for group in PIPELINE_GROUPS:
            for stages in (4, 6):
                cases.append(pipeline("e4m3", (s, s, s), **dict(BEST_FP8, stages=stages, group=group)))
    # 128x144 pipelined (cuBLASLt's tile at 8192^3), clusters of 1 and 2: at 4096^3 its 928 tiles are 7.03 waves
    # on 132 SMs (128x128: 1024, 7.76), so it should lose there and gain at 8192^3 (27.6 waves) and 16384^3; and
    # with the epilogue from registers, whose 36 KiB of shared memory make a sixth stage (cuBLASLt's ring)
    for s in FP8_SIZES[1:]:
        cases += [pipeline("e4m3", (s, s, s), **dict(WIDE144_FP8, cluster=cluster)) for cluster in (1, 2)]
    for s in FP8_SIZES[2:]:
        cases += [pipeline("e4m3", (s, s, s), **dict(WIDE144_FP8, stages=6, epilogue="regs", cluster=cluster))
                  for cluster in (1, 2)]
    # the pipelined walk with warpgroup 1's groups half a group after warpgroup 0's (each one's drain under the other's
    # queued k-blocks), beside the pipelined case of the same ring (5 stages, no cluster: runs 149-151's best)
    for s in (4096, 8192):
        cases.append(pipeline("e4m3", (s, s, s), **dict(BEST_FP8, stages=5, cluster=1, promotion="offset")))
    # B in e5m2 (A e4m3): the best plain case (5 stages, no cluster) and cuBLASLt on the same pair
    for s in (4096, 8192):
        cases += [pipeline("e4m3-e5m2", (s, s, s), **dict(BEST_FP8, stages=5, cluster=1)),
                  library("e4m3-e5m2", (s, s, s))]
    return _unique(cases + carried() + block_scaled())


def carried() -> list[GemmCase]:
    """The pipelined promotion on 5 stages (runs 149-150's best, cluster 1) beside its walk without the group's drains
    (carried: the tensor cores drained once a tile) and the same with each tile's epilogue under the next tile's first
    k-block (deferred), with a cluster of 1 and 2, at 4096^3 and 8192^3; and both block-scaled at 4096^3."""
    cases = []
    for s in (4096, 8192):
        for cluster in (1, 2):
            for promotion in ("pipelined",) + CARRIED:
                cases.append(pipeline("e4m3", (s, s, s), **dict(BEST_FP8, stages=5, cluster=cluster,
                                                                promotion=promotion)))
    for promotion in CARRIED:
        cases.append(pipeline("e4m3", (4096, 4096, 4096), **dict(BEST_FP8, promotion=promotion, scaling="block")))
    return cases


def block_scaled() -> list[GemmCase]:
    """DeepSeek-V3's block scaling beside cuBLASLt's (1x128 scales for A, 128x128 for B): the best configuration at
    every size, and each promotion on its best ring at 4096^3 and 8192^3 (a block-scaled k-block adds a multiply
    per accumulator to the promotion, and two loads a k-block)."""
    cases = []
    for s in FP8_SIZES:
        shape = (s, s, s)
        cases += [pipeline("e4m3", shape, **dict(BEST_FP8, scaling="block")), library("e4m3", shape, scaling="block")]
    for s in (4096, 8192):
        for config in (FP8_SERIAL, dict(BEST_FP8, stages=4)):  # (an overlapped one: ptxas serializes it, C7517)
            cases.append(pipeline("e4m3", (s, s, s), **dict(config, scaling="block")))
    return cases


# Ping-pong: each consumer warpgroup holds a whole tile's accumulators, so a tile is at most 128 accumulators a
# thread: 128x128 or 64x256 (f16, bf16), 64x128 (fp8, which keeps two sets).
PINGPONG = dict(BEST, bm=128, bn=128, stages=4, schedule="pingpong")
PINGPONG_TILES = {"f16": ((128, 128), (64, 256)), "bf16": ((128, 128), (64, 256)), "e4m3": ((64, 128),)}


def pingpong(sizes=(4096, 8192), dtypes=("f16", "e4m3")) -> list[GemmCase]:
    """Ping-pong beside the best cooperative configuration and the library: each ping-pong tile at the deepest
    ring that fits beside its two output tiles (TMA store) and at one stage less, cluster 2 and 1."""
    cases = []
    for dtype in dtypes:
        for s in sizes:
            shape = (s, s, s)
            for bm, bn in PINGPONG_TILES[dtype]:
                deepest = max(n for n in range(1, MAX_STAGES + 1)
                              if pipeline(dtype, shape, **dict(PINGPONG, bm=bm, bn=bn, stages=n)).smem_bytes() <= SMEM_LIMIT)
                for stages, cluster in ((deepest, 2), (deepest - 1, 2), (deepest, 1)):
                    cases.append(pipeline(dtype, shape, **dict(PINGPONG, bm=bm, bn=bn, stages=stages, cluster=cluster)))
            cases.append(pipeline(dtype, shape, **(BEST_FP8 if dtype == "e4m3" else BEST)))
            cases.append(library(dtype, shape))
    return cases


def multicast(sizes=(4096, 8192)) -> list[GemmCase]:
    """B shared by a cluster of 4 along M (each CTA loads a quarter of it) against the best configurations' cluster
    of 2, f16 and fp8, on the 120 SMs that hold 30 clusters of 4 (both clusters) and on every SM (a cluster of 2),
    with the library."""
    cases = []
    for dtype, best in (("e4m3", OVERLAP_FP8), ("f16", BEST)):
        for s in sizes:
            shape = (s, s, s)
            cases += [pipeline(dtype, shape, **best), pipeline(dtype, shape, **dict(best, grid_sms=MULTICAST_SMS)),
                      pipeline(dtype, shape, **dict(best, cluster=4, grid_sms=MULTICAST_SMS)), library(dtype, shape)]
    return cases


def worklog_sms() -> list[GemmCase]:
    """The worklog's 128 SMs against all: the best configuration at 4096^3 and 8192^3 (each beside its
    all-SM case in `full`) on 128 SMs."""
    return [pipeline("f16", (s, s, s), **dict(BEST, grid_sms=128)) for s in (4096, 8192)]


# Skinny and decode GEMMs (an LLM's projections at a few tokens: M rows of activations, N x K of weights): one row of
# tiles or less, so the tiles alone leave most SMs idle and reading B from memory bounds the kernel. Split-K makes
# work items of runs of k-blocks; a 64-row tile wastes least of the tensor cores where M <= 64 (rows past M load
# as zeros). Each configuration at every split that split_options offers it, with cuBLAS.
SKINNY_DECODE = (16, 64, 128, 256)  # M, at N = K = 8192
# Grouped order: a tile's neighbours in the walk share its B columns, and neighbouring CTAs sit on the same side of
# the L2 (docs/data-movement.md, near and far hits), so B's second read is a near hit. Row order at M = 128 and 256
# made 0.73 and 0.69 of cuBLAS where grouped made 0.98 and 0.95 (run 139, H100).
SKINNY_CONFIGS = (dict(bm=64, bn=128, stages=6, consumers=1, persistent=True, order="grouped", epilogue="tmastore"),
                  dict(bm=128, bn=128, stages=5, consumers=2, rebalance=True, persistent=True, order="grouped",
                       epilogue="tmastore"))


def skinny(ms=SKINNY_DECODE, nk: int = 8192, dtype: str = "f16") -> list[GemmCase]:
    """`gemm-skinny`: at each M, N = K = nk, the skinny configurations with and without split-K, and cuBLAS."""
    cases = []
    for m in ms:
        shape = (m, nk, nk)
        for config in SKINNY_CONFIGS:
            for splits in (1,) + split_options(dtype, config["bm"], config["bn"], shape):
                case = pipeline(dtype, shape, **config, splits=splits)
                try:
                    check(case)
                except SpecError:
                    continue
                cases.append(case)
                if m < config["bm"]:  # ... and with A's box of M rows (`.tighta`): no zero-filled rows loaded
                    cases.append(replace(case, tight_a=True))
        cases.append(library(dtype, shape))
    return _unique(cases)


# Stream-K (`.streamkR`): the tiles that fill the grid's whole waves walked whole, the last partial wave's split along
# K over every CTA. Where waves are lost: fp8 8192^3 in 128x128 tiles is 4096 tiles on 132 SMs (31.03 waves), f16
# 4096^3 in 128x128 tiles 1024 (7.76); a skinny problem fills less than one wave. R (the most runs a split tile is cut
# in): 2 and 4. Stream-K's fix-up takes split-K's limit (a consumer's accumulators at most SPLIT_ACCUMULATORS): not
# 128x256.
STREAMK_RUNS = (2, 4)
FP8_STREAMK = dict(BEST_FP8, stages=5, cluster=1)  # runs 149-151's best cluster-1 case, stream-K's unsplit peer
F16_STREAMK = dict(BEST, bn=128, stages=4, cluster=1)


def streamk() -> list[GemmCase | LibraryCase]:
    """`gemm-streamk`: fp8's pipelined 128x128 at 4096^3 and 8192^3 and f16's 128x128 at 4096^3, each without and with
    stream-K (R = 2, 4), beside the library (f16: the best 128x256 too); the skinny configurations at M = 128 and 256
    (N = K = 8192) with stream-K beside split-K 2 and 4."""
    cases = []
    for dtype, shape, config in (("e4m3", (4096,) * 3, FP8_STREAMK), ("e4m3", (8192,) * 3, FP8_STREAMK),
                                 ("f16", (4096,) * 3, F16_STREAMK)):
        cases += [pipeline(dtype, shape, **dict(config, streamk=runs)) for runs in (0,) + STREAMK_RUNS]
        cases.append(library(dtype, shape))
    cases.append(pipeline("f16", (4096,) * 3, **BEST))
    for m in (128, 256):
        shape = (m, 8192, 8192)
        for config in SKINNY_CONFIGS:
            cases += [pipeline("f16", shape, **dict(config, splits=splits)) for splits in (1, 2, 4)]
            cases += [pipeline("f16", shape, **dict(config, streamk=runs)) for runs in STREAMK_RUNS]
        cases.append(library("f16", shape))
    for case in cases:
        check(case)
    return _unique(cases)


def protocol() -> list[GemmCase | LibraryCase]:
    """`gemm-protocol`: the best f16 configuration (the worklog's step 10 in ours) and cuBLAS at the worklog's size,
    each measured problem's inputs (random, integers, zeros) under each protocol (sustained rounds, a burst after
    idle): its published figures by their protocol (protocol.py)."""
    return [case for timing in PROTOCOLS for inputs in INPUT_KINDS
            for case in (pipeline("f16", WORKLOG_SHAPE, **BEST, inputs=inputs, protocol=timing),
                         library("f16", WORKLOG_SHAPE, inputs=inputs, protocol=timing))]


def quick() -> list[GemmCase]:
    """One small pipeline and the library at 2048^3: the family end to end in seconds."""
    shape = (2048, 2048, 2048)
    return [pipeline("f16", shape, **BEST), library("f16", shape)]


def cases() -> list[GemmCase]:
    """Every suite's cases but gemm-heuristics' (the family adds those: heuristics.py ranks with the planner, which
    stands above this module)."""
    return _unique(full() + quick() + multicast() + skinny() + streamk() + protocol())
