"""The attention suites' case lists: the FA3 paper's grid, then the schedules beside it (turns, the overlapped softmax,
both, a persistent grid, O stored by TMA), each with cuDNN on its problems; and every case of the family."""

from __future__ import annotations

from dataclasses import replace

from harness.families.attention.cases import (DEFAULT_TILE, HEAD_DIMS, SEQUENCES, TOKENS, WIDTH, AttentionCase,
                                              CudnnCase, cudnn)
from harness.families.attention.refusals import check


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
