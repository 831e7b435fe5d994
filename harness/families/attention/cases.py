"""Attention-forward cases: O = softmax(Q K^T / sqrt(D)) V on ptx/pipeline.cuh's skeleton (ptx/attention.cu.in).
Ids (read back in ids.py; what the template refuses: refusals.py; the suites' lists: suite_cases.py):

    attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg
    attention.bf16.4x4096x16x128.causal.tile128x128.s2.wg2.setmaxnreg

    cudnn.sdpa.bf16.4x4096x16x128[.causal]

The second is cuDNN's fused attention on the same problem (CudnnCase: an anchor, harness/anchors; no template), listed
in every attention suite beside the kernels of its problem. The first reads as dtype, batch x sequence x heads x head
dim, the causal mask (or none), then the pipeline: a tile of BM query
rows by blocks of BN keys, a ring of `stages` slots (each a block's K and V), `consumers` warpgroups of 64 query
rows each, setmaxnreg (registers moved from the producer to the consumers), and `.turns`: the two consumer
warpgroups take turns at the tensor cores (FA3's ping-pong), so that one's softmax runs under the other's wgmma;
`.overlap`: inside each warpgroup, a block's softmax runs under the block before's P V (FA3's intra-warpgroup
overlap); `.cluster2` (overlapped, not causal, after `.setmaxnreg`): a cluster of two CTAs on adjacent query tiles of
one head, each loading half of every block's K and V rows and multicasting it to both. Q, K, V and O are [batch,
sequence, heads, head dim], the inputs' type in and out; scores, the softmax and the sums are f32.

The FA3 paper's setting (arXiv 2407.08608, section 4.1) is the suite's: batch x sequence = 16k tokens, heads x head
dim = 2048, sequences of 1k..16k, head dims 64, 128 and 256, causal and not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.families.pipeline import SMEM_SLACK, PipelineCase

DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128, 256)
PANEL = 64  # head-dim columns of one 128-byte swizzled row (ptx/attention.cu.in PANEL)
TOKENS, WIDTH = 16384, 2048  # the FA3 paper's batch x sequence and heads x head dim
SEQUENCES = (1024, 2048, 4096, 8192, 16384)
CLUSTERS = (1, 2)  # CTAs on adjacent query tiles of one head sharing each block's K and V by multicast
MAX_ROWS = 1 << 30  # batch x heads x sequence: the walk's rows and the maps' coordinates are 32-bit ints
# setmaxnreg for an overlapped kernel (producer, consumer): P's second set leaves the consumers at 232 one or two
# registers short where a causal mask is computed too (ptxas spilled the kernel's start time), and the producer's
# loop fits in 24: 128 x 24 + 256 x 240 = 64512 of 65536
OVERLAP_REGS = (24, 240)
# ... and on a cluster (never causal): the producer's multicast walk keeps the cluster's index (blockIdx / 2, which
# ptxas does not recompute as it does blockIdx) and spilled it at 24 (head dim 64); 128 x 32 + 256 x 232 = 63488
CLUSTER_REGS = (32, 232)
# Registers a consumer thread keeps live besides its accumulators (addresses, the row maxima and sums, loop state):
# O's D / 2 f32, S's BN / 2 f32 and P's BN / 4 packed words must leave them this many of CONSUMER_REGS
OTHER_REGISTERS = 40
# The tile per head dim (bm, bn, stages): two consumer warpgroups of 64 rows, keys in blocks that fit the registers
# and the ring in shared memory (FA3 takes 128 x 128 at 64 and 128, 128 x 80 at 256; wgmma's N here is 64 at 256)
DEFAULT_TILE = {64: (128, 128, 3), 128: (128, 128, 2), 256: (128, 64, 2)}
ANCHOR_SEQ_MULTIPLE = 128  # cuDNN's case: a sequence every kernel's tile (128 rows, blocks of 64 or 128 keys) divides
ANCHOR_CHECK_SEQ = 384  # cuDNN's check problem: 3 blocks of 128 keys (6 of 64), one batch of two heads


class _AttentionProblem:
    """What an attention problem's fields say, for a kernel case and cuDNN's alike (each declares dtype, batch, seq,
    heads, head_dim and causal as fields)."""

    @property
    def problem_id(self) -> str:
        """dtype, batch x sequence x heads x head dim, and the mask: the part of an id both kinds of case share."""
        return (f"{self.dtype}.{self.batch}x{self.seq}x{self.heads}x{self.head_dim}"
                + (".causal" if self.causal else ""))

    @property
    def rows(self) -> int:
        """Query rows of every head: the skeleton walks them in tiles of bm."""
        return self.batch * self.heads * self.seq

    @property
    def flops(self) -> float:
        """4 x batch x heads x seq^2 x head dim (two matmuls); causal half of it, as the FA3 paper counts (the
        blocks a causal tile skips are not counted, nor the masked half of the diagonal ones it computes)."""
        full = 4.0 * self.batch * self.heads * self.seq * self.seq * self.head_dim
        return full / 2 if self.causal else full

    @property
    def scale(self) -> float:
        return self.head_dim ** -0.5


@dataclass(frozen=True)
class AttentionCase(_AttentionProblem, PipelineCase):
    """Attention forward on the pipeline skeleton (families/pipeline.py: the tile is bm query rows of one head, its
    k-blocks the head's blocks of bn keys; `bk` is bn)."""

    family = "attention"
    size_fields: ClassVar[tuple[str, ...]] = ("seq", "batch", "stages", "causal")  # the GPU tests' sample varies least
    dtype: str
    batch: int
    seq: int
    heads: int
    head_dim: int
    causal: bool = False
    turns: bool = False  # the consumer warpgroups take turns at the tensor cores (FA3's ping-pong)
    overlap: bool = False  # within a warpgroup, a block's softmax under the block before's P V (FA3's)
    paired: bool = False  # a block's S and the block before's P V issued together, both waited for before the softmax

    @property
    def base_id(self) -> str:
        return (f"attention.{self.problem_id}"
                + f".tile{self.bm}x{self.bn}.s{self.stages}.wg{self.consumers}"
                + (".setmaxnreg" if self.rebalance else "") + (".persistent" if self.persistent else "")
                + (f".cluster{self.cluster}" if self.cluster > 1 else "") + (".turns" if self.turns else "")
                + (".overlap" if self.overlap else "") + (".paired" if self.paired else "")
                + (".tmastore" if self.epilogue == "tmastore" else ""))

    @property
    def tiles(self) -> int:
        return self.rows // self.bm

    @property
    def kblocks(self) -> int:
        return self.seq // self.bn

    def smem_bytes(self) -> int:
        """Q (bm x D), then `stages` slots of a block's K and V (bn x D each), 2-byte elements; the skeleton's
        alignment slack."""
        q = self.bm * self.head_dim * 2
        return q + self.stages * 2 * self.bn * self.head_dim * 2 + SMEM_SLACK

    def columns(self) -> dict[str, object]:
        return {"instruction": "attention forward (wgmma SS + RS, cp.async.bulk.tensor)", "m": self.seq,
                "n": self.head_dim, "k": self.seq, "dtype_a": self.dtype, "dtype_b": self.dtype, "dtype_acc": "f32",
                "operands": "SS+RS"}


@dataclass(frozen=True)
class CudnnCase(_AttentionProblem, AnchorCase):
    """cuDNN's fused attention (sdpa forward, inference) on an attention problem, on the measured inputs a kernel
    case of the same problem draws: an anchor (harness/anchors/cudnn.py), no template."""

    family = "attention"
    size_fields: ClassVar[tuple[str, ...]] = ("seq", "batch", "causal")
    dtype: str
    batch: int
    seq: int
    heads: int
    head_dim: int
    causal: bool = False

    @property
    def base_id(self) -> str:
        return f"{ANCHOR_PREFIX}{self.problem_id}"

    @property
    def anchor(self) -> Anchor:
        from harness.anchors.cudnn import anchor

        return anchor()

    def columns(self) -> dict[str, object]:
        return {"instruction": self.anchor.call, "m": self.seq, "n": self.head_dim, "k": self.seq,
                "dtype_a": self.dtype, "dtype_b": self.dtype, "dtype_acc": "f32"}


ANCHOR_PREFIX = "cudnn.sdpa."  # CudnnCase's ids


def overlap_regs(case: AttentionCase) -> tuple[int, int]:
    """setmaxnreg's (producer, consumer) registers for an overlapped case."""
    # a cluster's producer keeps its cluster's index, a persistent one its walk: 32 registers (24 spill one)
    return CLUSTER_REGS if case.cluster > 1 or case.persistent else OVERLAP_REGS


def cudnn(case: AttentionCase | CudnnCase) -> CudnnCase:
    """cuDNN's case on `case`'s problem (the anchor its rounds alternate with, measured alone)."""
    return CudnnCase(dtype=case.dtype, batch=case.batch, seq=case.seq, heads=case.heads, head_dim=case.head_dim,
                     causal=case.causal)


def check_case(case: AttentionCase | CudnnCase) -> AttentionCase | CudnnCase:
    """The check problem's case: one batch, two heads, a sequence of 2 x stages + 1 key blocks at least (the ring
    wraps, every slot's phase flips) and two tiles at least (a whole number of clusters per head), on the same
    pipeline; cuDNN's, ANCHOR_CHECK_SEQ."""
    if isinstance(case, CudnnCase):
        return replace(case, batch=1, heads=2, seq=ANCHOR_CHECK_SEQ)
    step = math.lcm(case.bm * case.cluster, case.bn)  # a cluster's tiles: of one head
    seq = max(2 * case.bm, (2 * case.stages + 1) * case.bn)
    seq = -(-seq // step) * step
    return replace(case, batch=1, heads=2, seq=seq)
