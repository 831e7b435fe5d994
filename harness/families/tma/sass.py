"""What a TMA probe's SASS must show on sm_90a (ptxas 13): the copy's instruction once in each copy kernel, the
baselines' 16-byte accesses, the barrier's arrive."""

from __future__ import annotations

import harness.families.tma.maps as _maps
from harness.families.base import KernelExpectation, SassExpectation
from harness.families.tma.cases import COPY_OPS, STORE_OPS, TmaCase
from harness.families.tma.kernels import UNROLL, prefetches
from harness.families.tma.layout import stream_stages


def mnemonic(case: TmaCase) -> str:
    """SASS of the copy on sm_90a (ptxas 13): UTMALDG/UTMASTG.<rank>D, UBLKCP.S.G."""
    if case.op == "load":
        return f"UTMALDG.{case.rank}D" + (".IM2COL" if case.im2col else "") + (".MULTICAST" if case.multicast else "")
    if case.op == "store":
        return f"UTMASTG.{case.rank}D"
    if case.op == "reduce":
        return f"UTMAREDG.{case.rank}D.ADD"
    return "UBLKCP.G.S" if case.op == "bulk-store" else "UBLKCP.S.G"


def expectation(case: TmaCase) -> SassExpectation:
    """The copy once in each copy kernel (nothing else may issue one); the baselines' UNROLL
    16-byte accesses per loop body; the barrier's arrive."""
    if case.l2map:  # the timed copy alone (the warm walk is ld.global.cg); local memory would be a spill
        return SassExpectation(((_maps.KERNEL, KernelExpectation(mnemonic(case), 1)),
                                (_maps.KERNEL, KernelExpectation("LDG.E.STRONG.GPU", 1))),
                               executes=mnemonic(case), spill_kernels=(_maps.KERNEL,))
    if case.op in COPY_OPS:
        copy = KernelExpectation(mnemonic(case), 1)
        kernels = [("probe_check", copy), ("probe_latency", copy)]
        kernels += [("probe_latency_cold", copy)] if case.op not in STORE_OPS else []
        if prefetches(case):
            prefetch = "UBLKPF.L2" if case.op == "bulk" else f"UTMAPF.L2.{case.rank}D" + (".IM2COL" if case.im2col else "")
            kernels += [("probe_latency_prefetched", copy),
                        ("probe_latency_prefetched", KernelExpectation(prefetch, 1))]
        kernels += [(f"probe_stream_k{k}", copy) for k in stream_stages(case)]
        return SassExpectation(tuple(kernels), executes=mnemonic(case))
    if case.op == "read":
        return SassExpectation((("probe_stream_baseline", KernelExpectation("LDG.E.128", UNROLL)),),
                               executes="LDG.E.128")
    if case.op == "cp.async":
        return SassExpectation((("probe_stream_baseline", KernelExpectation("LDGSTS.E.BYPASS.128", UNROLL)),),
                               executes="LDGSTS.E.BYPASS.128")
    if case.op == "ld+st":
        return SassExpectation((("probe_stream_baseline", KernelExpectation("LDG.E.128", UNROLL)),
                                ("probe_stream_baseline", KernelExpectation("STS.128", UNROLL))),
                               executes="LDG.E.128 + STS.128")
    return SassExpectation((("probe_barrier", KernelExpectation("SYNCS.ARRIVE.TRANS64", 1)),),
                           executes="SYNCS.ARRIVE.TRANS64 + SYNCS.PHASECHK.TRANS64.TRYWAIT")
