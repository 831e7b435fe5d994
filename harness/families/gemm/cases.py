"""GEMM cases: a warp-specialized TMA -> wgmma pipeline configuration on one problem (GemmCase), or the library on
the same problem (LibraryCase, an anchor: harness/anchors; cuBLAS for f16 and bf16, cuBLASLt for fp8). Ids:

    gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore
    gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.sms128
    gemm.f16.8192x8192x8192.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pingpong
    cublas.f16.8192x8192x8192
    cublaslt.e4m3.8192x8192x8192.fastaccum.blockscale
    gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.inputs-zero.burst
    cublas.f16.4096x4096x4096.inputs-int

The measured problem's inputs (`.inputs-int`, `.inputs-zero`; none: normal(0, 1)) and the protocol that times it
(`.burst`: a batch of launches after idle, the seed worklog's; none: sustained rounds) are the case's too: they move the
clock through power, not the kernel (docs/gemm.md, "Published figures by their protocol"). f16 and bf16 only.

The schedule (ptx/pipeline.cuh): cooperative (the default, no suffix: both consumer warpgroups on every tile, each
on its half of the rows) or `.pingpong` (they take the CTA's tiles in turn, each a whole tile, so one's epilogue
runs under the other's mainloop).

A persistent grid runs one CTA per SM on every SM, or on `grid_sms` of them (`.sms128`: the seed worklog's
finding that its grouped tile order ran faster on 128 SMs than on all 132).

C[M, N] = A[M, K] . B[N, K]^T, A and B row-major (K-major), f32 accumulation, C in the input type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.errors import SpecError
from harness.families.pipeline import (ACC_REGISTER_LIMIT, EPILOGUES, GROUP, MAX_SMS, MAX_STAGES, ORDERS,  # noqa: F401
                                       SCHEDULES, SMEM_LIMIT, SMEM_SLACK, SPLITS, PipelineCase)

DTYPES = ("f16", "bf16", "e4m3")
IN_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1}  # bytes of an A or B element
OUT_DTYPE = {"f16": "f16", "bf16": "bf16", "e4m3": "f16"}  # C's type: the input's, f16 for fp8 inputs
WGMMA_K = {"f16": 16, "bf16": 16, "e4m3": 32}  # the wgmma's K: 32 bytes of each row either way
MMA_RATE = {"f16": 1, "bf16": 1, "e4m3": 2}  # dense tensor-core FLOP per cycle over f16's (PTX ISA; measured)
BK = 64  # one 128-byte swizzle span of 2-byte elements (128 of fp8: bk_for)
LIBRARY_DTYPES = ("f16", "bf16")  # cublasGemmEx through CuPy (harness/anchors/cublas.py)
FP8_LIBRARY = ("e4m3",)  # cublasLtMatmul through nvmath-python's bindings (harness/anchors/cublaslt.py, extra `fp8`)
# 128x192: fp8's widest tile with its promotion (96 + 96 f32 a thread): 40 KiB of A and B a k-block for 6.3 MFLOP,
# where 128x128 lands 32 KiB for 4.2 (the feed alone turns 128x128's k-block in 538 cycles against the tensor
# cores' 512; reports/investigation/gemm-feed-h100.txt); N past a whole number of its tiles is a partial last tile
TILES = ((64, 128), (128, 128), (128, 256), (256, 128), (64, 64), (128, 64), (64, 256), (128, 192))
FP8_TILES = ((128, 192),)  # tiles only fp8 takes
MAX_DIM = 65536
PROMOTIONS = ("serial", "overlap", "pipelined", "staggered", "carried", "deferred")
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
# fp8 promotion keeps three sets of 64 (two k-blocks' and the tile's) in the 232 registers setmaxnreg gives it
LIVE_ACCUMULATOR_LIMIT = 192  # ptx/gemm.cu.in PROMOTE without and with OVERLAP (fp8 only)
# The measured problem's inputs: normal(0, 1) (the default, no suffix), small integers, or zeros; fewer bits toggle,
# less power, a higher clock under the same cap (problem.measured_bound: how each is checked). 16-bit inputs only.
INPUT_KINDS = ("random", "int", "zero")
INPUT_DTYPES = ("f16", "bf16")
# How the measured problem is timed: sustained rounds alternating with the library (the default, no suffix) or a burst
# (a batch of launches after the GPU idled: the seed worklog's published code; methods.WholeKernel.idle_s).
PROTOCOLS = ("sustained", "burst")
WORKLOG_IDLE_S = 5.0  # the worklog's published code: the GPU idle this long (a sleep) before its timed batch ...
WORKLOG_BATCH = 8  # ... of this many launches back to back, timed by CUDA events as one


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
        """`.inputs-KIND` and `.burst` where the measured problem's inputs or protocol are not the default."""
        return ("" if self.inputs == "random" else f".inputs-{self.inputs}") + \
            ("" if self.protocol == "sustained" else f".{self.protocol}")

    def _drop_measured_defaults(self, values: dict) -> dict:
        """params() without the default inputs and protocol: the params of the cases stored before they were fields."""
        for name, default in (("inputs", "random"), ("protocol", "sustained")):
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
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "stages", "inputs")
    dtype: str
    m: int
    n: int
    k: int
    # fp8 (PROMOTIONS): each k-block added into f32 after it ("serial"), or while the next runs ("overlap", "pipelined"),
    # or after it with the two consumer warpgroups taking turns on the tensor cores ("staggered")
    promotion: str = "serial"
    group: int = PIPELINE_GROUP  # a pipelined promotion's k-blocks per drain of the tensor cores
    scaling: str = "tensor"  # fp8 (SCALINGS): one scale per tensor (1), or DeepSeek-V3's 1x128 and 128x128 blocks
    inputs: str = "random"  # the measured problem's inputs (INPUT_KINDS)
    protocol: str = "sustained"  # how it is timed (PROTOCOLS)

    @property
    def base_id(self) -> str:
        shape = f"{self.dtype}.{self.m}x{self.n}x{self.k}"
        return (f"gemm.{shape}.tile{self.bm}x{self.bn}x{self.bk}.s{self.stages}.wg{self.consumers}"
                + (".setmaxnreg" if self.rebalance else "")
                + f".cluster{self.cluster}.{'persistent' if self.persistent else 'grid'}-{self.order}.{self.epilogue}"
                + (f".sms{self.grid_sms}" if self.grid_sms else "")
                + ("" if self.schedule == "cooperative" else f".{self.schedule}")
                + (f".splitk{self.splits}" if self.splits > 1 else "")
                + ("" if self.promotion == "serial" else f".{self.promotion}")
                + (f"-g{self.group}" if self.promotion == "pipelined" and self.group != PIPELINE_GROUP else "")
                + self._scaling_suffix + self._measured_suffix)

    @property
    def _scaling_suffix(self) -> str:
        return "" if self.scaling == "tensor" else f".{self.scaling}scale"

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
        """Work items: a cluster's tiles, or (split-K) a run of one tile's k-blocks."""
        return self.tiles // self.cluster * self.splits

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
                "dtype_a": self.dtype, "dtype_b": self.dtype, "dtype_acc": "f32", "operands": "SS"}

    def params(self) -> dict[str, object]:
        values = super().params()
        if self.group == PIPELINE_GROUP:  # the default group: the params of the cases stored before it was a field
            del values["group"]
        if self.scaling == "tensor":  # ... and the default scaling
            del values["scaling"]
        return self._drop_measured_defaults(values)


@dataclass(frozen=True)
class LibraryCase(_GemmProblem, AnchorCase):
    """The library on a GEMM problem, C[M, N] = A[M, K] . B[N, K]^T on the measured inputs a GemmCase of the same
    problem draws: cuBLAS's cublasGemmEx for f16 and bf16, cuBLASLt's fp8 matmul for e4m3 (without or with fast
    accumulation; per-tensor or DeepSeek-V3's block scales). An anchor (harness/anchors): no template."""
    family = "gemm"
    size_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "inputs")
    dtype: str
    m: int
    n: int
    k: int
    fast_accum: bool = False  # cuBLASLt's fast accumulation (the tensor cores' sum for all of K)
    scaling: str = "tensor"  # fp8 (SCALINGS): per tensor (scales of 1) or DeepSeek-V3's blocks
    inputs: str = "random"  # the measured problem's inputs (INPUT_KINDS)
    protocol: str = "sustained"  # how it is timed (PROTOCOLS)

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

        return cublaslt.anchor(self.fast_accum, self.block_scaled) if self.dtype in FP8_LIBRARY else cublas.GEMM_EX

    def columns(self) -> dict[str, object]:
        return {"instruction": self.anchor.call, "m": self.m, "n": self.n, "k": self.k, "dtype_a": self.dtype,
                "dtype_b": self.dtype, "dtype_acc": "f32", "operands": None}

    def params(self) -> dict[str, object]:
        """As stored since the library was a GemmCase flag (`library`: true; fp8's `fast_accum`; a block scaling)."""
        values = {"dtype": self.dtype, "m": self.m, "n": self.n, "k": self.k, "library": True}
        if self.dtype in FP8_LIBRARY:
            values["fast_accum"] = self.fast_accum
        if self.scaling != "tensor":
            values["scaling"] = self.scaling
        return self._drop_measured_defaults({**values, "inputs": self.inputs, "protocol": self.protocol})


ID = re.compile(r"^(?P<library>cublaslt|cublas|gemm)\.(?P<dtype>[a-z0-9]+)\.(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)"
                r"(?P<fast>\.fastaccum)?(?P<lscaling>\.blockscale)?"
                r"(?:\.tile(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+)\.s(?P<stages>\d+)\.wg(?P<wg>\d+)(?P<rb>\.setmaxnreg)?"
                r"\.cluster(?P<cluster>\d+)\.(?P<sched>grid|persistent)-(?P<order>[a-z]+)\.(?P<epi>[a-z]+)"
                r"(?:\.sms(?P<sms>\d+))?(?:\.(?P<schedule>pingpong))?(?:\.splitk(?P<splits>\d+))?(?:\.(?P<promotion>overlap|pipelined|staggered|carried|deferred)(?:-g(?P<group>\d+))?)?(?P<scaling>\.blockscale)?)?"
                r"(?:\.inputs-(?P<inputs>[a-z]+))?(?:\.(?P<protocol>burst))?$")


def parse(case_id: str) -> GemmCase:
    match = ID.match(case_id)
    if (not match or (match["library"] != "gemm") != (match["bm"] is None) or (match["fast"] and match["bm"])
            or (match["lscaling"] and match["bm"])):
        raise SpecError(f"cannot parse GEMM case id {case_id!r}: expected e.g. "
                        "'gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore' "
                        "or 'cublas.f16.8192x8192x8192' or 'cublaslt.e4m3.8192x8192x8192[.fastaccum]'")
    g = match.groupdict()
    common = dict(dtype=g["dtype"], m=int(g["m"]), n=int(g["n"]), k=int(g["k"]), inputs=g["inputs"] or "random",
                  protocol=g["protocol"] or "sustained")
    if g["library"] != "gemm":
        case = LibraryCase(**common, fast_accum=bool(g["fast"]), scaling="block" if g["lscaling"] else "tensor")
    else:
        case = GemmCase(**common, bm=int(g["bm"]), bn=int(g["bn"]), bk=int(g["bk"]), stages=int(g["stages"]),
                        consumers=int(g["wg"]), rebalance=bool(g["rb"]), cluster=int(g["cluster"]),
                        persistent=g["sched"] == "persistent", order=g["order"], epilogue=g["epi"],
                        grid_sms=int(g["sms"] or 0), schedule=g["schedule"] or "cooperative",
                        splits=int(g["splits"] or 1),
                        promotion=g["promotion"] or "serial", group=int(g["group"] or PIPELINE_GROUP),
                        scaling="block" if g["scaling"] else "tensor")
    check(case)
    if case.case_id != case_id:
        raise SpecError(f"GEMM case id {case_id!r} is not canonical: {case.case_id!r}")
    return case


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
    if case.block_scaled:
        if case.in_bytes != 1:
            refuse("block scaling is fp8's (DeepSeek-V3's 1x128 and 128x128 f32 scales)")
        if case.n % SCALE_BLOCK or case.k % SCALE_BLOCK:
            refuse(f"block scaling takes N and K in multiples of its {SCALE_BLOCK}-wide blocks")
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
    if case.promotion == "deferred" and (case.splits > 1 or case.pingpong):
        refuse("a deferred epilogue holds a tile's f32 sums until the next tile's first k-block: not with split-K (its "
               "runs' fix-up) or ping-pong (whose epilogues already run under the other warpgroup's mainloop)")
    if case.group not in PIPELINE_GROUPS or (case.group != PIPELINE_GROUP and case.promotion != "pipelined"):
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
    if case.n % case.bn and (case.epilogue != "tmastore" or case.block_scaled or case.n % 16):
        refuse(f"N = {case.n} is not a whole number of {case.bn}-column tiles: a partial last tile takes the TMA-store "
               "epilogue (it clips the columns past N), no block scales, and N a multiple of 16")
    if case.block_scaled and case.bn % SCALE_BLOCK and SCALE_BLOCK % case.bn:
        refuse(f"block scales with {case.bn}-column tiles: a tile holds whole {SCALE_BLOCK}-column blocks of B's "
               "scales, or lies in one")
    if case.m % (case.bm * case.cluster):
        if case.epilogue != "tmastore" or case.block_scaled or case.cluster > 1 or case.m % 16:
            refuse(f"M = {case.m} is not a whole number of {case.bm * case.cluster}-row tiles (cluster pairs along M): "
                   "a partial last tile takes the TMA-store epilogue (it clips the rows past M), no cluster, no block "
                   "scales, and M a multiple of 16")
    if case.splits > 1 and case.block_scaled:
        refuse("split-K with block scales: the scales are loaded by the run's own k-block")
    if case.splits > 1 and case.accumulator_set > SPLIT_ACCUMULATORS:
        refuse(f"split-K beside {case.accumulator_set} f32 accumulators a thread: the fix-up's loads spill (ptxas, 32 "
               f"bytes, run 139); at most {SPLIT_ACCUMULATORS}")


# -- the suites ------------------------------------------------------------------------------------

SQUARE = (2048, 4096, 8192, 16384)
SKINNY = ((128, 8192, 8192), (512, 8192, 8192))
MAINLOOP = (1024, 4096, 65536)  # 8 x 16 = 128 tiles of 128x256: one per SM, 1024 k-blocks each


def bk_for(dtype: str) -> int:
    """The k-block: one 128-byte swizzle span of the input type (64 f16 or bf16, 128 e4m3)."""
    return 128 // IN_BYTES.get(dtype, 2)


def pipeline(dtype: str, shape: tuple[int, int, int], **config) -> GemmCase:
    m, n, k = shape
    return GemmCase(dtype, m, n, k, **{"bk": bk_for(dtype), **config})


def library(dtype: str, shape: tuple[int, int, int], fast_accum: bool = False, scaling: str = "tensor",
            inputs: str = "random", protocol: str = "sustained") -> LibraryCase:
    m, n, k = shape
    return LibraryCase(dtype, m, n, k, fast_accum=fast_accum, scaling=scaling, inputs=inputs, protocol=protocol)


# The seed worklog's kernels that this family expresses, by its step (docs/gemm.md; the steps it does not:
# 1 CUDA cores, 5a a 128x256 tile on one warpgroup (ptxas serializes it), 11 a Hilbert-curve order).
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
}


# Every worklog step to the configuration of ours it is compared with: 7 (its barriers through PTX) is 6b's
# configuration, since ours are always PTX mbarriers; 9 (no zeroing, ordered stores) is 8's, since ours
# never zero (scale-d) and store from registers.
WORKLOG_STEPS = {**LADDER, "7": LADDER["6b"], "9": LADDER["8"]}
WORKLOG_UNEXPRESSED = {
    "1": "CUDA cores only: not a tensor-core pipeline",
    "5a": "a 128x256 tile on one consumer warpgroup: 256 accumulators per thread, which ptxas serializes (C7511); "
          "the family refuses it",
    "11": "a Hilbert-curve tile order: the family's orders are row-major and grouped",
}


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


# Clusters of 4 CTAs (one per SM) the H100 SXM runs at once: 30, on 120 of its 132 SMs (cuOccupancyMaxActiveClusters,
# scripts/investigate_gemm_library.py); a persistent grid of more would run the rest as a second wave, which the
# family refuses at launch (gpu.attach)
MULTICAST_SMS = 120


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
# as zeros). Each configuration at every split that _split_options offers it, with cuBLAS.
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
            for splits in (1,) + _split_options(dtype, config["bm"], config["bn"], shape):
                case = pipeline(dtype, shape, **config, splits=splits)
                try:
                    check(case)
                except SpecError:
                    continue
                cases.append(case)
        cases.append(library(dtype, shape))
    return _unique(cases)


WORKLOG_SHAPE = (4096, 4096, 4096)  # the seed worklog's problem (its section 2.11: a 4096 x 4096 C in 128x256 tiles)


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


def configurations(dtype: str, m: int, n: int, k: int) -> list[GemmCase]:
    """Every configuration of the family that can run this problem (cases.check accepts it), fp8 with each of
    its promotions. Not the ping-pong schedule (the model has no term for it) nor clusters of 4 (how many fit at
    once is the GPU's: 30 on the H100; measured no faster, run 123)."""
    found = []
    promotions = PROMOTIONS if IN_BYTES.get(dtype) == 1 else ("serial",)
    for bm, bn in TILES:
        for consumers in (1, 2):
            for stages in range(1, MAX_STAGES + 1):
                for cluster in (1, 2):
                    for persistent, order in ((False, "row"), (True, "row"), (True, "grouped")):
                        for epilogue in EPILOGUES:
                            for promotion in promotions:
                                for splits in (1,) + (_split_options(dtype, bm, bn, (m, n, k)) if cluster == 1 else ()):
                                    case = pipeline(dtype, (m, n, k), bm=bm, bn=bn, stages=stages,
                                                    consumers=consumers, rebalance=consumers == 2, cluster=cluster,
                                                    persistent=persistent, order=order, epilogue=epilogue,
                                                    promotion=promotion, splits=splits)
                                    try:
                                        check(case)
                                    except SpecError:
                                        continue
                                    found.append(case)
    return found


SPLIT_ACCUMULATORS = 64  # f32 accumulators a consumer thread holds beside split-K's fix-up without spilling
SPLIT_SMS = 132  # split-K is offered where a problem's tiles would not fill twice this many SMs (an H100's)


def _split_options(dtype: str, bm: int, bn: int, shape: tuple[int, int, int]) -> tuple[int, ...]:
    """Split-K's runs worth planning for a tile: where its tiles leave SMs idle, the splits that keep the work
    items within two per SM and every run at least two k-blocks (split-K's fix-up then costs no more than a
    tile's epilogue twice)."""
    m, n, k = shape
    tiles = -(-m // bm) * -(-n // bn)
    if not tiles or tiles >= SPLIT_SMS:
        return ()
    kblocks = k // bk_for(dtype)
    return tuple(s for s in SPLITS[1:] if tiles * s <= 2 * SPLIT_SMS and kblocks % s == 0 and kblocks // s >= 2)


def cases() -> list[GemmCase]:
    """Every suite's cases but gemm-heuristics' (the family adds those: heuristics.py ranks with the planner, which
    stands above this module)."""
    return _unique(full() + quick() + multicast() + skinny() + protocol())


def with_problem(case: GemmCase, m: int, n: int, k: int) -> GemmCase:
    return replace(case, m=m, n=n, k=k)
