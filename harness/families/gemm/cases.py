"""GEMM cases: a warp-specialized TMA -> wgmma pipeline configuration on one problem (GemmCase), or the library on
the same problem (LibraryCase, an anchor: harness/anchors; cuBLAS for f16 and bf16, cuBLASLt for fp8). Ids:

    gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore
    gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.sms128
    gemm.f16.8192x8192x8192.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pingpong
    gemm.e4m3.8192x8192x8192.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore.streamk4.pipelined
    cublas.f16.8192x8192x8192
    cublaslt.e4m3.8192x8192x8192.fastaccum.blockscale
    gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.inputs-zero.burst
    cublas.f16.4096x4096x4096.inputs-int
    gemm.f16.16x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-grouped.tmastore.splitk2.tighta.cold
    cublas.f16.16x4096x4096.cold

The measured problem's inputs (`.inputs-int`, `.inputs-zero`; none: normal(0, 1)) and the protocol that times it
(`.burst`: a batch of launches after idle, the seed worklog's; none: sustained rounds) are the case's too: they move the
clock through power, not the kernel (docs/gemm.md, "Published figures by their protocol"). f16 and bf16 only. Where its
inputs are when a launch starts (`.cold`: copies taken in turn, none left in the L2; PLACEMENTS) is the case's too, and
`.tighta` loads A's box as M rows where M is below the tile's (docs/gemm.md, "Decode shapes read cold").

The schedule (ptx/pipeline.cuh): cooperative (the default, no suffix: both consumer warpgroups on every tile, each
on its half of the rows) or `.pingpong` (they take the CTA's tiles in turn, each a whole tile, so one's epilogue
runs under the other's mainloop).

Wave quantization: `.splitkS` cuts every tile's k-blocks in S runs; `.streamkR` (stream-K, persistent, no cluster)
walks the tiles that fill the grid's waves whole and cuts only the last partial wave's tiles along K, over the CTAs,
a tile in at most about R runs (ptx/pipeline.cuh TileScheduler). Both add a tile's runs in the epilogue of its last.

A persistent grid runs one CTA per SM on every SM, or on `grid_sms` of them (`.sms128`: the seed worklog's
finding that its grouped tile order ran faster on 128 SMs than on all 132).

C[M, N] = A[M, K] . B[N, K]^T, A and B row-major (K-major), f32 accumulation, C in the input type.

Here the case types and their constants; ids are read back in ids.py, refused in refusals.py; named configurations
and the builders: configs.py; the suites' case lists: suite_cases.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.families.pipeline import SMEM_SLACK, PipelineCase

# The input types: A's and B's alike, or a pair `A-B` (e4m3 A with e5m2 B: the gradient's format in fp8 training
# recipes, e5m2's wider range for the tensor that needs it)
DTYPES = ("f16", "bf16", "e4m3", "e4m3-e5m2")
IN_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "e4m3-e5m2": 1}  # bytes of an A or B element
OUT_DTYPE = {"f16": "f16", "bf16": "bf16", "e4m3": "f16", "e4m3-e5m2": "f16"}  # C's type: f16 for fp8 inputs
WGMMA_K = {"f16": 16, "bf16": 16, "e4m3": 32, "e4m3-e5m2": 32}  # the wgmma's K: 32 bytes of each row either way
MMA_RATE = {"f16": 1, "bf16": 1, "e4m3": 2, "e4m3-e5m2": 2}  # dense FLOP per cycle over f16's (PTX ISA; measured)
BK = 64  # one 128-byte swizzle span of 2-byte elements (128 of fp8: bk_for)
LIBRARY_DTYPES = ("f16", "bf16")  # cublasGemmEx through CuPy (harness/anchors/cublas.py)
# cublasLtMatmul through nvmath-python's bindings (harness/anchors/cublaslt.py, extra `fp8`)
FP8_LIBRARY = ("e4m3", "e4m3-e5m2")
# 128x192: fp8's widest tile with its promotion (96 + 96 f32 a thread): 40 KiB of A and B a k-block for 6.3 MFLOP,
# where 128x128 lands 32 KiB for 4.2 (the feed alone turns 128x128's k-block in 538 cycles against the tensor
# cores' 512; reports/investigation/gemm-feed-h100.txt); N past a whole number of its tiles is a partial last tile
TILES = ((64, 128), (128, 128), (128, 256), (256, 128), (64, 64), (128, 64), (64, 256), (128, 192), (128, 144))
FP8_TILES = ((128, 192), (128, 144))  # tiles only fp8 takes
MAX_DIM = 65536
PROMOTIONS = ("serial", "overlap", "pipelined", "staggered", "carried", "deferred", "offset")
# ... of which the grouped walks of a k-block in flight (pipeline.cuh consume_kblock_groups): "offset" is the pipelined
# walk with consumer warpgroup 1's groups half a group after warpgroup 0's (its first group is G / 2 k-blocks), so
# that one warpgroup's drain of the tensor cores falls where the other has k-blocks queued on them
GROUPED_WALKS = ("pipelined", "offset")
# ... of which the pipelined walk without its group's drains (pipeline.cuh consume_kblocks_carried: a k-block in flight
# across the loop, the tensor cores drained once a tile), and the same with each tile's epilogue run under the next
# tile's first k-block ("deferred", ptx/gemm.cu.in DEFERRED)
CARRIED = ("carried", "deferred")
PIPELINE_GROUP = 4  # a pipelined promotion's k-blocks between two drains of the tensor cores (pipeline.cuh), unless
PIPELINE_GROUPS = (2, 4)  # ... the case names another (`.pipelined-g2`; groups of 8 spill: 36 bytes a thread)
# fp8 scaling: per tensor (the default, no suffix: scales of 1, a per-tensor pair being a multiple of C) or DeepSeek-V3's
# blocks (`.blockscale`, arXiv 2412.19437 section 3.3.2): an f32 scale per row of A and 128 of K (1x128), and per 128 x
# 128 block of B, applied to each k-block's sum as the consumer adds it into f32 (a k-block is 128 of K)
SCALINGS = ("tensor", "block")
SCALE_BLOCK = 128
# f32 accumulators one wgmma may write (ACC_REGISTER_LIMIT), and all a consumer thread may keep live: an overlapped
# fp8 promotion keeps three sets (two k-blocks' and the tile's) in the 232 registers setmaxnreg gives it: of 72
# (128x144) without a spill, of 96 (128x192) not
LIVE_ACCUMULATOR_LIMIT = 216  # ptx/gemm.cu.in PROMOTE without and with OVERLAP (fp8 only)
# The measured problem's inputs: normal(0, 1) (the default, no suffix), small integers, or zeros; fewer bits toggle,
# less power, a higher clock under the same cap (problem.measured_bound: how each is checked). 16-bit inputs only.
INPUT_KINDS = ("random", "int", "zero")
INPUT_DTYPES = ("f16", "bf16")
# How the measured problem is timed: sustained rounds alternating with the library (the default, no suffix) or a burst
# (a batch of launches after the GPU idled: the seed worklog's published code; methods.WholeKernel.idle_s).
PROTOCOLS = ("sustained", "burst")
WORKLOG_IDLE_S = 5.0  # the worklog's published code: the GPU idle this long (a sleep) before its timed batch ...
WORKLOG_BATCH = 8  # ... of this many launches back to back, timed by CUDA events as one
# Where the measured problem's inputs are when a launch starts: "warm" (the default, no suffix: every launch reads the
# same A and B, so a problem that fits in the L2 is read from there, as back-to-back launches leave it) or "cold"
# (`.cold`: launches take their turn through copies of A, B and C, the other copies' bytes at least twice the L2's
# between two launches on one copy (problem.placement_copies), so each launch reads its inputs from memory, as a decode
# step reads a layer's weights once). The kernel and the library take the same turns. Any input type.
PLACEMENTS = ("warm", "cold")


def bk_for(dtype: str) -> int:
    """The k-block: one 128-byte swizzle span of the input type (64 f16 or bf16, 128 e4m3)."""
    return 128 // IN_BYTES.get(dtype, 2)


class _GemmProblem:
    """What a GEMM problem's element types and size say, for a pipeline case and the library's alike (each declares
    dtype, m, n, k and scaling as fields)."""

    @property
    def block_scaled(self) -> bool:
        """DeepSeek-V3's block scaling: A's scales [K / 128][M], B's [N / 128][K / 128], both f32 (cuBLASLt's
        VEC128_32F and BLK128x128_32F layouts; ptx/gemm.cu.in BLOCKSCALE)."""
        return self.scaling == "block"

    @property
    def in_bytes(self) -> int:
        return IN_BYTES[self.dtype]

    @property
    def a_dtype(self) -> str:
        return self.dtype.split("-")[0]

    @property
    def b_dtype(self) -> str:
        """B's type: A's, or the pair's second (`e4m3-e5m2`)."""
        return self.dtype.split("-")[-1]

    @property
    def out_dtype(self) -> str:
        return OUT_DTYPE[self.dtype]

    @property
    def mma_rate(self) -> int:
        """The tensor cores' dense FLOP per cycle for this input type over f16's (fp8: twice)."""
        return MMA_RATE[self.dtype]

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def _measured_suffix(self) -> str:
        """`.inputs-KIND`, `.burst` and `.cold` where the measured problem's inputs, protocol or placement are not the
        default."""
        return ("" if self.inputs == "random" else f".inputs-{self.inputs}") + \
            ("" if self.protocol == "sustained" else f".{self.protocol}") + \
            ("" if self.placement == "warm" else f".{self.placement}")

    def _drop_measured_defaults(self, values: dict) -> dict:
        """params() without the default inputs, protocol and placement: the params of the cases stored before they
        were fields."""
        for name, default in (("inputs", "random"), ("protocol", "sustained"), ("placement", "warm")):
            if values.get(name) == default:
                del values[name]
        return values


@dataclass(frozen=True)
class GemmCase(_GemmProblem, PipelineCase):
    """A GEMM on the pipeline skeleton (families/pipeline.py: tile, ring, consumers, cluster, grid, order,
    schedule, epilogue)."""
    family = "gemm"
    # what the GPU tests' default sample varies least (tests/gpu/sample.py): the problem and the ring's depth
    # (and the measured problem's inputs: the same kernel and method, its power and clock; a protocol is a method's mode)
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "stages", "inputs", "placement")
    dtype: str
    m: int
    n: int
    k: int
    # fp8 (PROMOTIONS): each k-block added into f32 after it ("serial"), or while the next runs ("overlap", "pipelined"),
    # or after it with the two consumer warpgroups taking turns on the tensor cores ("staggered")
    promotion: str = "serial"
    # A's box only M rows where M is below the tile's rows (`.tighta`): the TMA loads no rows past M (a box of BM rows
    # loads them as zeros: the OOB fill, measured slower, runs 208-209); the tile's rows past M hold what the slot held
    # before, their sums clipped by the TMA store
    tight_a: bool = False
    group: int = PIPELINE_GROUP  # a pipelined promotion's k-blocks per drain of the tensor cores
    scaling: str = "tensor"  # fp8 (SCALINGS): one scale per tensor (1), or DeepSeek-V3's 1x128 and 128x128 blocks
    inputs: str = "random"  # the measured problem's inputs (INPUT_KINDS)
    protocol: str = "sustained"  # how it is timed (PROTOCOLS)
    placement: str = "warm"  # where its inputs are when a launch starts (PLACEMENTS)

    @property
    def base_id(self) -> str:
        shape = f"{self.dtype}.{self.m}x{self.n}x{self.k}"
        return (f"gemm.{shape}.tile{self.bm}x{self.bn}x{self.bk}.s{self.stages}.wg{self.consumers}"
                + (".setmaxnreg" if self.rebalance else "")
                + f".cluster{self.cluster}.{'persistent' if self.persistent else 'grid'}-{self.order}.{self.epilogue}"
                + (f".sms{self.grid_sms}" if self.grid_sms else "")
                + ("" if self.schedule == "cooperative" else f".{self.schedule}")
                + (f".splitk{self.splits}" if self.splits > 1 else "")
                + (f".streamk{self.streamk}" if self.streamk else "")
                + (".tighta" if self.tight_a else "")
                + ("" if self.promotion == "serial" else f".{self.promotion}")
                + (f"-g{self.group}" if self.promotion in GROUPED_WALKS and self.group != PIPELINE_GROUP else "")
                + self._scaling_suffix + self._measured_suffix)

    @property
    def _scaling_suffix(self) -> str:
        return "" if self.scaling == "tensor" else f".{self.scaling}scale"

    @property
    def a_box_rows(self) -> int:
        """Rows of A one TMA box loads: the tile's, or M (`.tighta`, M below them)."""
        return self.m if self.tight_a else self.bm

    @property
    def wgmma_k(self) -> int:
        return WGMMA_K[self.dtype]

    @property
    def promote(self) -> bool:
        """fp8: each k-block summed alone by the tensor cores and added into f32 registers by the consumer
        (ptx/gemm.cu.in PROMOTE): their fp8 sums keep fewer bits than f32."""
        return self.in_bytes == 1

    @property
    def kblocks(self) -> int:
        """k-blocks of a work item: all of K's, or one run's (split-K)."""
        return self.k // self.bk // self.splits

    @property
    def walk_m(self) -> int:
        """M rounded up to whole tiles (clusters of them): the rows the kernel walks; A's past M load as zeros."""
        rows = self.bm * self.cluster
        return -(-self.m // rows) * rows

    @property
    def walk_n(self) -> int:
        """N rounded up to whole tiles: the columns the kernel walks; B's rows past N load as zeros."""
        return -(-self.n // self.bn) * self.bn

    @property
    def tiles(self) -> int:
        return (self.walk_m // self.bm) * (self.walk_n // self.bn)

    @property
    def items(self) -> int:
        """Work items: a cluster's tiles, or (split-K) a run of one tile's k-blocks (stream-K's: its tiles; what the
        planner prices, as whole tiles)."""
        return self.tiles // self.cluster * self.splits

    @property
    def fixes_up(self) -> bool:
        """Whether tiles are cut along K in runs whose f32 sums the tile's last run adds (split-K, stream-K)."""
        return self.splits > 1 or self.streamk > 0

    @property
    def c_box_cols(self) -> int:
        """Columns of C one TMA store writes from shared memory: a 128-byte swizzle span of f16 (64), or for a tile
        whose width is not a whole number of them (144 for fp8) the whole width, unswizzled (a 16-column box of 32
        bytes, 32-byte swizzle, was measured first: 9 stores a warpgroup, an epilogue 830 cycles longer; docs/gemm.md)."""
        return 64 if self.bn % 64 == 0 else self.bn

    @property
    def c_swizzle(self) -> int | None:
        """Bytes of C's swizzle span in shared memory (None: unswizzled rows of c_box_cols)."""
        return 128 if self.c_box_cols == 64 else None

    @property
    def accumulator_set(self) -> int:
        """f32 accumulators per consumer thread that one k-block's wgmma write."""
        return (self.wg_rows // 64) * self.bn // 2

    @property
    def accumulators(self) -> int:
        """f32 accumulator registers per consumer thread: one set, or for fp8 the k-block's and the tile's (and
        a second k-block set when the promotion overlaps)."""
        sets = 1 if not self.promote else 2 if self.promotion in ("serial", "staggered") else 3
        return self.accumulator_set * sets

    def smem_bytes(self) -> int:
        """Dynamic shared memory: the ring, the output tiles of a TMA-store epilogue (one per consumer warpgroup in
        ping-pong, whose epilogues overlap), the alignment slack."""
        stage = (self.bm + self.bn) * self.bk * self.in_bytes
        outputs = (self.consumers if self.pingpong else 1) * self.bm * self.bn * 2
        return self.stages * stage + (outputs if self.epilogue == "tmastore" else 0) + SMEM_SLACK

    def columns(self) -> dict[str, object]:
        return {"instruction": "wgmma.mma_async + cp.async.bulk.tensor", "m": self.m, "n": self.n, "k": self.k,
                "dtype_a": self.a_dtype, "dtype_b": self.b_dtype, "dtype_acc": "f32", "operands": "SS"}

    def params(self) -> dict[str, object]:
        values = super().params()
        if self.group == PIPELINE_GROUP:  # the default group: the params of the cases stored before it was a field
            del values["group"]
        if self.scaling == "tensor":  # ... and the default scaling
            del values["scaling"]
        if not self.tight_a:  # ... and A's box of BM rows
            del values["tight_a"]
        return self._drop_measured_defaults(values)


@dataclass(frozen=True)
class LibraryCase(_GemmProblem, AnchorCase):
    """The library on a GEMM problem, C[M, N] = A[M, K] . B[N, K]^T on the measured inputs a GemmCase of the same
    problem draws: cuBLAS's cublasGemmEx for f16 and bf16, cuBLASLt's fp8 matmul for e4m3 (without or with fast
    accumulation; per-tensor or DeepSeek-V3's block scales). An anchor (harness/anchors): no template."""
    family = "gemm"
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "inputs", "placement")
    dtype: str
    m: int
    n: int
    k: int
    fast_accum: bool = False  # cuBLASLt's fast accumulation (the tensor cores' sum for all of K)
    scaling: str = "tensor"  # fp8 (SCALINGS): per tensor (scales of 1) or DeepSeek-V3's blocks
    inputs: str = "random"  # the measured problem's inputs (INPUT_KINDS)
    protocol: str = "sustained"  # how it is timed (PROTOCOLS)
    placement: str = "warm"  # where its inputs are when a launch starts (PLACEMENTS)

    @property
    def base_id(self) -> str:
        shape = f"{self.dtype}.{self.m}x{self.n}x{self.k}"
        if self.dtype in FP8_LIBRARY:
            return f"cublaslt.{shape}" + (".fastaccum" if self.fast_accum else "") + \
                ("" if self.scaling == "tensor" else f".{self.scaling}scale") + self._measured_suffix
        return f"cublas.{shape}" + self._measured_suffix

    @property
    def anchor(self) -> Anchor:
        from harness.anchors import cublas, cublaslt

        if self.dtype in FP8_LIBRARY:
            return cublaslt.anchor(self.fast_accum, self.block_scaled, self.b_dtype)
        return cublas.GEMM_EX

    def columns(self) -> dict[str, object]:
        return {"instruction": self.anchor.call, "m": self.m, "n": self.n, "k": self.k, "dtype_a": self.a_dtype,
                "dtype_b": self.b_dtype, "dtype_acc": "f32", "operands": None}

    def params(self) -> dict[str, object]:
        """As stored since the library was a GemmCase flag (`library`: true; fp8's `fast_accum`; a block scaling)."""
        values = {"dtype": self.dtype, "m": self.m, "n": self.n, "k": self.k, "library": True}
        if self.dtype in FP8_LIBRARY:
            values["fast_accum"] = self.fast_accum
        if self.scaling != "tensor":
            values["scaling"] = self.scaling
        return self._drop_measured_defaults({**values, "inputs": self.inputs, "protocol": self.protocol,
                                             "placement": self.placement})
