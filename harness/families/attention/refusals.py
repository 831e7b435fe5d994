"""What the attention template cannot run, refused in one line before anything runs (cuDNN's case: a problem the
kernels could have)."""

from __future__ import annotations

from harness.errors import IllegalShapeError
from harness.families.attention.cases import (ANCHOR_SEQ_MULTIPLE, CLUSTERS, DTYPES, HEAD_DIMS, MAX_ROWS,
                                              OTHER_REGISTERS, AttentionCase, CudnnCase, overlap_regs)
from harness.families.pipeline import CONSUMER_REGS, SMEM_LIMIT


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


