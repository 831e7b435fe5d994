"""Attention case ids read back: a kernel case's or cuDNN's canonical id (cases.py's docstring) as its case, checked."""

from __future__ import annotations

import re

from harness.errors import SpecError
from harness.families.attention.cases import AttentionCase, CudnnCase
from harness.families.attention.refusals import check

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


