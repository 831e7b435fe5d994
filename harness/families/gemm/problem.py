"""What the GEMM probe's launches are (ptx/gemm.cu.in): the check problem, grids, block sizes, the
counters the kernel writes, and the tolerances of its checks. Shared by the family object and gpu.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import harness.families.gemm.cases as _cases
from harness.dtypes import encode
from harness.errors import SpecError
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.pipeline import (CONSUMER_REGS, COUNTER_WORDS, GROUP, PIPELINE_COUNTERS,  # noqa: F401
                                       PRODUCER_REGS, TENSOR_FLOPS_PER_CYCLE, KernelStruct, StreamK, counter_index,
                                       counter_metrics)

# ptx/gemm.cu.in's by-value argument, twice (the check problem, the measured one): maps over A (K x M, box BK x BM),
# B (K x N, box BK x BN / cluster) and C (N x M, box 64 x rows of one consumer warpgroup, 128-byte swizzle), C's
# address (the register epilogue) and the shape.
# A block-scaled fp8 problem adds its scales' addresses (cases.GemmCase.block_scaled; 0 otherwise, never read), a
# split-K or stream-K one its workspace (f32, split_workspace_bytes) and its counters (int32, zero; split_counters)
# (0 otherwise).
# M and N are the walk's, rounded up to whole tiles (walk_m, walk_n); the maps hold the matrices' own.
PROBLEM = KernelStruct("Problem", (("a", "map"), ("b", "map"), ("c", "map"), ("c_ptr", "u64"), ("m", "i32"),
                                   ("n", "i32"), ("k", "i32"), ("c_cols", "i32"), ("scale_a", "u64"), ("scale_b", "u64"),
                                   ("workspace", "u64"), ("counters", "u64")),
                       comment="One GEMM: maps over A, B and C, C's address (the register epilogue), the walk's shape "
                               "(N in whole tiles), C's columns, "
                               "a block-scaled\nfp8 problem's scales, and a split-K problem's workspace and "
                               "counters (harness/families/gemm/problem.py PROBLEM).")
POISON = 0xFFFFFFFF
CHECK_VALUES = (-2, 2)  # the check problem's inputs: integers in this range, exact in every type
# The measured problem's inputs by kind (cases.INPUT_KINDS), and how measured_bound checks each
MEASURED_INPUTS = {"random": "normal(0, 1)", "int": "integers -2..2", "zero": "zeros"}
MEASURED_INTEGERS = (-2, 2)  # products of at most 4: every partial sum of K <= 65536 is below 2^24, exact in f32
SIGNIFICAND_BITS = {"f16": 11, "bf16": 8}  # with the implicit bit: every integer up to 2^bits is exact in the type
VERIFY_ATOL, VERIFY_RTOL = 0.05, 1.0 / 128  # the measured problem against cuBLAS, f16 and bf16 (see checks())
# fp8: the tensor cores sum a k-block's fp8 products in a register narrower than f32. DeepSeek-V3 (arXiv 2412.19437,
# section 3.3.2) measures about 14 bits kept on H800; the bound below assumes 13 (one bit of margin) and one
# rounding of the running sum per wgmma k32 step, each within 2^-13 of a sum no larger than the k-block's sum of
# |products|.
FP8_SUM_BITS = 13
F16_HALF_ULP = 2.0 ** -11  # relative: half an ulp of f16's 11-bit significand
F32_UNIT = 2.0 ** -24
F16_SUBNORMAL_HALF_ULP = 2.0 ** -25
# the pipeline's counters, per CTA after its timing record (families/pipeline.py PIPELINE_COUNTERS)
FULL_WAIT, EMPTY_WAIT, EPILOGUE, MAINLOOP, TILES, KBLOCKS = (counter_index(name) for name in PIPELINE_COUNTERS)
COUNTERS = counter_metrics()  # fp8 runs at twice TENSOR_FLOPS_PER_CYCLE (GemmCase.mma_rate)


# A cold placement's copies (cases.PLACEMENTS): enough that between two launches on one copy the other copies' A, B and
# C have passed through the L2 at least COLD_TURNOVER times its capacity (an LRU-like L2 keeps none of the first copy)
COLD_TURNOVER = 2


def footprint_bytes(case: GemmCase | LibraryCase) -> int:
    """The measured problem's A and B and its C (f16 or bf16): one copy's bytes."""
    return (case.m + case.n) * case.k * case.in_bytes + case.m * case.n * 2


def placement_copies(case: GemmCase | LibraryCase, l2_bytes: int) -> int:
    """Copies of the measured problem's A, B and C the launches take in turn: 1 (warm), or for a cold placement
    1 + ceil(COLD_TURNOVER x L2 / one copy's bytes), at least 2."""
    if case.placement == "warm":
        return 1
    return max(2, 1 + -(-COLD_TURNOVER * max(l2_bytes, 1) // footprint_bytes(case)))


def measured_bound(xp, inputs: str, out_dtype: str, reference):
    """The largest |ours - reference| an element of the measured problem may show where the kernel is right, from the
    arithmetic of its inputs (`reference`: cuBLAS's C for normal inputs; the exact sum, f64, for integers; zeros):

        random   VERIFY_ATOL + VERIFY_RTOL x |cuBLAS| (a dropped k-block moves an element by about 8)
        int      integers -2..2: each product exact, every partial sum below 2^24 (MEASURED_INTEGERS), so the f32
                 accumulator holds the exact sum; C is that sum rounded once to the output type: exact (0) where
                 |sum| <= 2^SIGNIFICAND_BITS, within half an ulp (2^-bits x |sum|) beyond
        zero     every product and sum is zero: C exactly zero (0)
    """
    if inputs == "zero":
        return xp.zeros_like(reference)
    if inputs == "int":
        bits = SIGNIFICAND_BITS[out_dtype]
        size = xp.abs(reference)
        return xp.where(size <= 2.0 ** bits, 0.0, size * 2.0 ** -bits)
    return VERIFY_ATOL + VERIFY_RTOL * xp.abs(reference)


HILBERT_CHECK_GRID = (4, 5)  # work items (rows of cluster pairs, columns of tiles) of a Hilbert case's check problem


def check_problem(case: GemmCase | LibraryCase) -> tuple[int, int, int]:
    """M, N, K of the check problem: more work items than a grouped order's group, two tile columns (a Hilbert
    order's: HILBERT_CHECK_GRID), and 2 x stages + 3 k-blocks (the ring wraps, each slot's phase flips several times). The library's: 256 x 256 x 576
    (block-scaled: 8 k-blocks of 128, a row of B's scales 16-byte aligned, as cuBLASLt reads them)."""
    if isinstance(case, LibraryCase):
        return (256, 256, 8 * _cases.SCALE_BLOCK) if case.block_scaled else (256, 256, 9 * _cases.BK)
    # (a Hilbert walk: a 4 x 5 grid of work items, an odd side, so its curve has the one diagonal step in it)
    pairs, columns = HILBERT_CHECK_GRID if case.order == "hilbert" else (GROUP + 1 if case.order == "grouped" else 2, 2)
    if getattr(case, "tight_a", False):  # A's box of M rows: one row of partial tiles, as many columns as items
        pairs, columns = 1, pairs * columns
    m = pairs * case.bm * case.cluster
    if case.m % (case.bm * case.cluster):  # a partial last tile: the check problem's has as many rows
        m -= case.bm * case.cluster - case.m % (case.bm * case.cluster)
    # k-blocks a run: a tile's 2 x stages + 3 split in runs (a run of fewer k-blocks than the ring's slots wraps it only
    # across work items: a persistent CTA's, not a one-CTA-per-item grid's; its measured problem, checked against
    # cuBLAS, wraps it in every run)
    n = columns * case.bn
    if case.n % case.bn:  # ... and a partial last column of tiles as many columns
        n -= case.bn - case.n % case.bn
    runs = -(-(2 * case.stages + 3) // case.splits)
    return m, n, runs * case.splits * case.bk


CHECK_STREAMK_CTAS = 5  # a stream-K check launch's: its 4 or 18 tiles leave a partial wave, cut in 2 or 3 runs a tile


def check_grid(case: GemmCase) -> int:
    """Blocks of the check launch: two clusters walking every work item (persistent; stream-K: five CTAs, so that
    its tiles leave a partial wave to split), or one per item."""
    m, n, k = check_problem(case)
    if case.streamk:
        return CHECK_STREAMK_CTAS
    return 2 * case.cluster if case.persistent else replace(case, m=m, n=n, k=k).items * case.cluster


def grid(case: GemmCase, sm_count: int) -> int:
    """Blocks of the measured launch: a persistent grid's one CTA per SM used (sms_used), at most one per
    work item; else one per item (a cluster's tiles, or split-K's run of one tile's k-blocks)."""
    items = case.items * max(1, case.streamk)  # stream-K: a tile's runs may each be on a CTA of its own
    return min(sms_used(case, sm_count) // case.cluster, items) * case.cluster if case.persistent else items * case.cluster


def walk_m(case: GemmCase, m: int) -> int:
    """The M the kernel walks for a problem of m rows: whole tiles (clusters of them)."""
    rows = case.bm * case.cluster
    return -(-m // rows) * rows


def walk_n(case: GemmCase, n: int) -> int:
    """The N the kernel walks for a problem of n columns: whole tiles."""
    return -(-n // case.bn) * case.bn


def stream_k(case: GemmCase, m: int, n: int, k: int, blocks: int) -> StreamK:
    """The stream-K walk of a problem on a grid of `blocks` CTAs (ptx/pipeline.cuh TileScheduler)."""
    return StreamK(walk_m(case, m) // case.bm * (walk_n(case, n) // case.bn), k // case.bk, blocks, case.streamk)


def split_workspace_bytes(case: GemmCase, m: int, n: int, k: int, blocks: int) -> int:
    """A split-K problem's workspace: every run's f32 sums of every tile (ptx/gemm.cu.in reduce_runs); stream-K's:
    a slot of a tile's sums for each run a split tile may have; else 0."""
    if case.streamk:
        return stream_k(case, m, n, k, blocks).workspace_slots() * case.bm * case.bn * 4
    return walk_m(case, m) * walk_n(case, n) * case.splits * 4 if case.splits > 1 else 0


def split_counters(case: GemmCase, m: int, n: int, k: int, blocks: int) -> int:
    """A split-K problem's counters: one int32 per tile and consumer warpgroup; stream-K's: per slot and consumer
    warpgroup; else 0."""
    if case.streamk:
        return stream_k(case, m, n, k, blocks).workspace_slots() * case.consumers
    return walk_m(case, m) // case.bm * (walk_n(case, n) // case.bn) * case.consumers if case.splits > 1 else 0


def sms_used(case: GemmCase, sm_count: int) -> int:
    """The SMs a persistent grid runs on: `case.grid_sms` of them, or every one (0); whole clusters."""
    if case.grid_sms > sm_count:
        raise SpecError(f"{case.case_id}: a grid of {case.grid_sms} SMs on a GPU of {sm_count}")
    return (case.grid_sms or sm_count) // case.cluster * case.cluster


def threads(case: GemmCase) -> int:
    return case.threads


def to_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """float values as the bit patterns of `dtype` (harness/dtypes.py encode: f16 and bf16 rounded to nearest
    even, as cvt.rn does; e4m3 only for values it holds exactly)."""
    return encode(dtype, values)


CHECK_SCALES = (0.5, 1.0, 2.0)  # a block-scaled check problem's scales: powers of two, so that C stays exact


def scale_offsets(case: GemmCase) -> tuple[int, int, int]:
    """Byte offsets in the check problem's input buffer of B, of A's scales and of B's scales (a block-scaled case's;
    the scales 16-byte aligned after A and B)."""
    m, n, k = check_problem(case)
    b = m * k * case.in_bytes
    scale_a = -(-(b + n * k * case.in_bytes) // 16) * 16
    return b, scale_a, scale_a + 4 * (k // _cases.SCALE_BLOCK) * m


def block_scaled_product(xp, a, b, scale_a, scale_b, block: int):
    """C = sum over k-blocks of (A . B^T over the block) x scale_a[kb][row] x scale_b[kb][col / block], in the
    arrays' own precision: A and B with each element multiplied by its scale, then one product (the scales are
    constant over a block of K, so they factor out of each block's sum). scale_a is [K / block][M], scale_b
    [N / block][K / block]."""
    scaled_a = a * xp.repeat(scale_a.T, block, axis=1)
    scaled_b = b * xp.repeat(xp.repeat(scale_b, block, axis=0), block, axis=1)
    return scaled_a @ scaled_b.T


def fp8_bound(xp, exact, abs_sum, k: int, steps_per_kblock: int, kblock: int, f32_roundings: int = 1):
    """The largest |ours - exact| an fp8 GEMM may show where it is right, element by element, from the arithmetic
    (`exact`: A . B^T of the same fp8 values, exact in f64; `abs_sum`: sum over k of |a_ik b_jk|, exact too, which
    bounds every partial sum):

        the tensor cores, per k-block   steps_per_kblock roundings, each <= 2^-FP8_SUM_BITS x the k-block's
                                        |products|: summed over the k-blocks, <= steps x 2^-13 x abs_sum
        f32 across the k-blocks         <= K / kblock x f32_roundings x 2^-24 x abs_sum (one addition a k-block;
                                        block scales: their product, the multiply and the addition, 3)
        f16 rounding of C               <= 2^-11 x |C| (|C| <= |exact| + the terms above), and half of f16's
                                        smallest subnormal near zero

    A dropped k-block moves an element by a k-block's sum (normal inputs: a standard deviation of about 11), a
    wrong scale by C itself: beyond this bound for most elements at every K up to 16384
    (tests/test_gemm_family.py tries K = 1024 and 16384). Block-scaled (DeepSeek-V3): `exact` and `abs_sum` of the
    scaled operands (block_scaled_product), each k-block's error scaled with it."""
    accumulation = (steps_per_kblock * 2.0 ** -FP8_SUM_BITS + (k // kblock) * f32_roundings * F32_UNIT) * abs_sum
    return accumulation + F16_HALF_ULP * (xp.abs(exact) + accumulation) + F16_SUBNORMAL_HALF_ULP
