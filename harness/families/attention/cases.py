"""Attention-forward cases: O = softmax(Q K^T / sqrt(D)) V on ptx/pipeline.cuh's skeleton (ptx/attention.cu.in).
Ids:

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
import re
from dataclasses import dataclass, replace
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.errors import IllegalShapeError, SpecError
from harness.families.pipeline import CONSUMER_REGS, SMEM_LIMIT, SMEM_SLACK, PipelineCase

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
_ANCHOR_ID = re.compile(r"^cudnn\.sdpa\.(?P<dtype>\w+?)\.(?P<batch>\d+)x(?P<seq>\d+)x(?P<heads>\d+)x(?P<dim>\d+)"
                        r"(?P<causal>\.causal)?$")
_ID = re.compile(r"^attention\.(?P<dtype>\w+?)\.(?P<batch>\d+)x(?P<seq>\d+)x(?P<heads>\d+)x(?P<dim>\d+)"
                 r"(?P<causal>\.causal)?\.tile(?P<bm>\d+)x(?P<bn>\d+)\.s(?P<stages>\d+)\.wg(?P<wg>\d+)"
                 r"(?P<rebalance>\.setmaxnreg)?(?P<persistent>\.persistent)?(?:\.cluster(?P<cluster>\d+))?"
                 r"(?P<turns>\.turns)?(?P<overlap>\.overlap)?(?P<paired>\.paired)?(?P<tmastore>\.tmastore)?$")


def parse(case_id: str) -> AttentionCase | CudnnCase:
    match = _ID.match(case_id) or _ANCHOR_ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse attention case {case_id!r}: expected e.g. "
                        "attention.bf16.4x4096x16x128[.causal].tile128x128.s2.wg2.setmaxnreg or "
                        "cudnn.sdpa.bf16.4x4096x16x128[.causal]")
    g = match.groupdict()
    if match.re is _ANCHOR_ID:
        case = CudnnCase(dtype=g["dtype"], batch=int(g["batch"]), seq=int(g["seq"]), heads=int(g["heads"]),
                         head_dim=int(g["dim"]), causal=bool(g["causal"]))
        check(case)
        if case.case_id != case_id:
            raise SpecError(f"attention case id {case_id!r} is not canonical: {case.case_id!r}")
        return case
    case = AttentionCase(dtype=g["dtype"], batch=int(g["batch"]), seq=int(g["seq"]), heads=int(g["heads"]),
                         head_dim=int(g["dim"]), causal=bool(g["causal"]), bm=int(g["bm"]), bn=int(g["bn"]),
                         bk=int(g["bn"]), stages=int(g["stages"]), consumers=int(g["wg"]),
                         rebalance=bool(g["rebalance"]), persistent=bool(g["persistent"]),
                         cluster=int(g["cluster"] or 1), turns=bool(g["turns"]),
                         overlap=bool(g["overlap"]), paired=bool(g["paired"]),
                         epilogue="tmastore" if g["tmastore"] else "regs")
    if g["cluster"] is not None and case.cluster == 1:
        raise SpecError(f"attention case id {case_id!r}: no cluster is written as none (no .cluster1)")
    check(case)
    return case


def check(case: AttentionCase | CudnnCase) -> None:
    """Refuse, in one line, what the template cannot run (cuDNN's case: a problem the kernels could have)."""
    def refuse(why: str):
        raise IllegalShapeError(f"{case.case_id}: {why}")

    if case.dtype not in DTYPES:
        refuse(f"dtype {case.dtype!r}: expected one of {', '.join(DTYPES)} (fp8 attention is not built yet)")
    if case.head_dim not in HEAD_DIMS:
        refuse(f"head dim {case.head_dim}: expected one of {', '.join(map(str, HEAD_DIMS))}")
    if isinstance(case, CudnnCase):
        if min(case.batch, case.seq, case.heads) < 1 or case.seq % ANCHOR_SEQ_MULTIPLE:
            refuse(f"sequence {case.seq}: a multiple of {ANCHOR_SEQ_MULTIPLE} (every kernel's tile divides it)")
        if case.rows > MAX_ROWS:
            refuse(f"{case.rows} query rows: beyond {MAX_ROWS}, the kernels' 32-bit row indices")
        return
    if why := case.check_skeleton():
        refuse(why)
    if case.schedule != "cooperative":
        refuse("attention runs cooperative consumers")
    if case.epilogue == "tmastore" and case.persistent:
        refuse("the TMA store's epilogue stages O in Q's buffer: a CTA of one tile (no .persistent)")
    if case.persistent and (not case.overlap or case.cluster > 1):
        refuse("a persistent CTA (Q's buffer on barriers of its own, reused tile after tile) walks the overlapped "
               "schedule (.overlap) without a cluster")
    if case.cluster not in CLUSTERS:
        refuse(f"cluster {case.cluster}: expected one of {', '.join(map(str, CLUSTERS))} (two query tiles of a head "
               "sharing K and V)")
    if case.cluster > 1 and not case.overlap:
        refuse(f"cluster {case.cluster}: K and V are multicast to a cluster in the overlapped schedule only (.overlap)")
    if case.cluster > 1 and case.causal:
        refuse(f"cluster {case.cluster}: the tiles of a causal cluster walk different numbers of key blocks (no "
               "cluster with .causal)")
    if case.cluster > 1 and case.seq % (case.bm * case.cluster):
        refuse(f"cluster {case.cluster}: sequence {case.seq} is not a whole number of clusters of "
               f"{case.cluster} tiles of {case.bm} query rows (a cluster's tiles are of one head)")
    if case.bm != 64 * case.consumers:
        refuse(f"a tile of {case.bm} rows: 64 query rows per consumer warpgroup ({64 * case.consumers})")
    if case.turns and case.consumers != 2:
        refuse("turns at the tensor cores take two consumer warpgroups")
    if case.overlap and case.paired:
        refuse("a block's P V runs under the next block's softmax (.overlap) or is paired with its S (.paired): one")
    if case.paired and case.stages < 2:
        refuse("a paired block holds two slots (its K for S, the block before's V for P V): 2 stages at least")
    if case.overlap and case.stages < 3:
        refuse("an overlapped block's slot is held until the next block's softmax is done: 3 stages at least (its "
               "own, the next block's for S, the one after it loading)")
    if case.bk != case.bn:
        refuse("a k-block is one block of keys: bk = bn")
    if case.bn % 16 or not 16 <= case.bn <= 256 or (case.bm % case.bn and case.bn % case.bm):
        refuse(f"a block of {case.bn} keys: a multiple of 16 up to 256 (wgmma's N) that divides or is a multiple "
               f"of the tile's {case.bm} rows")
    if min(case.batch, case.seq, case.heads) < 1 or case.seq % case.bm or case.seq % case.bn:
        refuse(f"sequence {case.seq}: a multiple of the tile ({case.bm}) and of the key block ({case.bn})")
    if case.rows > MAX_ROWS:
        refuse(f"{case.rows} query rows: beyond the template's 32-bit row indices ({MAX_ROWS})")
    p_sets = 2 if case.overlap else 1  # overlapped: P V reads one set of P while the next block's softmax fills the other
    live = case.head_dim // 2 + case.bn // 2 + p_sets * case.bn // 4 + OTHER_REGISTERS
    budget = (overlap_regs(case)[1] if case.overlap else CONSUMER_REGS) if case.rebalance else 168
    if live > budget:
        refuse(f"O ({case.head_dim // 2}), S ({case.bn // 2}) and P ({p_sets} x {case.bn // 4}) registers per thread "
               f"and {OTHER_REGISTERS} more exceed the consumer's {budget}")
    if case.smem_bytes() > SMEM_LIMIT:
        refuse(f"Q and {case.stages} stages of K and V need {case.smem_bytes()} bytes of shared memory, over "
               f"{SMEM_LIMIT}")


def overlap_regs(case: AttentionCase) -> tuple[int, int]:
    """setmaxnreg's (producer, consumer) registers for an overlapped case."""
    # a cluster's producer keeps its cluster's index, a persistent one its walk: 32 registers (24 spill one)
    return CLUSTER_REGS if case.cluster > 1 or case.persistent else OVERLAP_REGS


def attention(dtype: str, seq: int, head_dim: int, causal: bool = False, batch: int | None = None,
              heads: int | None = None, **pipeline) -> AttentionCase:
    """The FA3 setting's problem (16k tokens, 2048 wide) unless batch / heads are given, on the head dim's
    default tile unless `pipeline` says otherwise."""
    bm, bn, stages = DEFAULT_TILE[head_dim]
    values = dict(bm=bm, bn=bn, bk=bn, stages=stages, consumers=2, rebalance=True)
    values.update(pipeline)
    values["bk"] = values["bn"]
    case = AttentionCase(dtype=dtype, batch=batch or max(1, TOKENS // seq), seq=seq,
                         heads=heads or WIDTH // head_dim, head_dim=head_dim, causal=causal, **values)
    check(case)
    return case


def cudnn(case: AttentionCase | CudnnCase) -> CudnnCase:
    """cuDNN's case on `case`'s problem (the anchor its rounds alternate with, measured alone)."""
    return CudnnCase(dtype=case.dtype, batch=case.batch, seq=case.seq, heads=case.heads, head_dim=case.head_dim,
                     causal=case.causal)


def with_anchors(cases: list[AttentionCase]) -> list[AttentionCase | CudnnCase]:
    """The kernels, then cuDNN's case of each of their problems (once, in the order they first come), as the gemm
    suites list the library's case of each shape."""
    anchors = {}
    for case in cases:
        anchors.setdefault(cudnn(case).case_id, cudnn(case))
    return list(cases) + list(anchors.values())


def _everyday() -> list[AttentionCase]:
    cases = [attention("bf16", seq, dim, causal) for dim in HEAD_DIMS for causal in (False, True)
             for seq in SEQUENCES]
    return cases + [attention("f16", seq, 128) for seq in SEQUENCES]


def everyday() -> list[AttentionCase | CudnnCase]:
    """The FA3 paper's grid in bf16: head dims 64, 128, 256 x sequences 1k..16k, causal and not; f16 at head dim
    128 beside it; cuDNN on each problem."""
    return with_anchors(_everyday())


def turns() -> list[AttentionCase | CudnnCase]:
    """everyday()'s bf16 cases with the consumer warpgroups taking turns at the tensor cores; cuDNN on each problem."""
    return with_anchors([replace(case, turns=True) for case in _everyday() if case.dtype == "bf16"])


# An overlapped block holds three slots: where they fit beside Q (head dims 64 and 128; at 256 Q and three slots of
# 64 keys need 256 KiB)
OVERLAP_STAGES = {64: 3, 128: 3}


def _overlapped() -> list[AttentionCase]:
    bf16 = [case for case in _everyday() if case.dtype == "bf16" and case.head_dim in OVERLAP_STAGES]
    return ([replace(case, overlap=True, stages=OVERLAP_STAGES[case.head_dim]) for case in bf16]
            + [case for case in bf16 if case.seq in (4096, 16384)])


def overlapped() -> list[AttentionCase | CudnnCase]:
    """everyday()'s bf16 cases at head dims 64 and 128 with the softmax overlapped inside each warpgroup (three
    stages); and the serial ones at 4k and 16k beside them (the same run's comparison); cuDNN on each problem."""
    return with_anchors(_overlapped())


def overlapped_turns() -> list[AttentionCase | CudnnCase]:
    """FA3's whole schedule at head dims 64 and 128: the softmax overlapped inside each warpgroup and the two taking
    turns at the tensor cores (a turn: a block's S and the block before's P V); the overlapped and the serial cases
    beside them in the same run, and the non-causal overlapped ones (with turns and without) on clusters of two CTAs
    sharing K and V by multicast; cuDNN on each problem."""
    mine = [case for case in _overlapped() if case.seq >= 4096]
    paired = [replace(case, overlap=False, paired=True) for case in mine if case.overlap]
    turned = [replace(case, turns=True) for case in mine + paired if case.overlap or case.paired]
    clustered = [replace(case, cluster=2) for case in mine + turned if case.overlap and not case.causal]
    return with_anchors(mine + turned + paired + clustered)


def persistent() -> list[AttentionCase | CudnnCase]:
    """FA3's whole schedule at head dims 64 and 128, 4k-16k, causal and not, on a persistent grid (one CTA per SM
    walking tiles, Q's next load under the tile before's last blocks, the ring never drained between tiles) beside
    the same on one CTA per tile; cuDNN on each problem."""
    mine = [replace(case, turns=True) for case in _overlapped() if case.overlap and case.seq >= 4096]
    return with_anchors(mine + [replace(case, persistent=True) for case in mine])


def tma_stored() -> list[AttentionCase | CudnnCase]:
    """The overlapped cases at head dims 64 and 128, 4k-16k, causal and not, with turns and without, O written from
    registers and beside each the same with O staged in Q's buffer and stored by TMA; cuDNN on each problem."""
    mine = [case for case in _overlapped() if case.overlap and case.seq >= 4096]
    mine += [replace(case, turns=True) for case in mine]
    return with_anchors(mine + [replace(case, epilogue="tmastore") for case in mine])


def quick() -> list[AttentionCase | CudnnCase]:
    return with_anchors([attention("bf16", 4096, 128), attention("bf16", 4096, 128, causal=True)])


def cases() -> list[AttentionCase | CudnnCase]:
    seen, out = set(), []
    for case in everyday() + turns() + overlapped() + overlapped_turns() + persistent() + tma_stored() + quick():
        if case.case_id not in seen:
            seen.add(case.case_id)
            out.append(case)
    return out


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
