"""What a memory probe's SASS must show on sm_90: the chase's dependent loads (nothing between two of them for a
chase of addresses), the stream's 16-byte loads, the map's and the pairs' loads."""

from __future__ import annotations

from harness.families.base import KernelExpectation, SassExpectation
from harness.families.memory.cases import MemoryCase
from harness.families.memory.kernels import STREAM_UNROLL, UNROLL, WARM_UNROLL


def expectation(case: MemoryCase) -> SassExpectation:
    """The chase's UNROLL dependent loads (LDS, or LDG.E with .cg's STRONG.GPU); the stream's loads."""
    if case.level == "shared":
        load = "LDS.128" if case.kind == "stream" else "LDS"
    else:
        strength = {"global.cg": ".STRONG.GPU", "global.ca": ".STRONG.SM", "global": ""}[case.space]
        load = "LDG.E" + (".128" if case.kind == "stream" else ".64" if case.weak else "") + strength
    if case.kind == "stream":
        return SassExpectation((("probe_stream", KernelExpectation(load, STREAM_UNROLL)),), executes=load)
    if case.kind == "pairs":  # the TLB words', the misses', the others' lines', the own line's
        return SassExpectation((("probe_pairs", KernelExpectation(load, 4)),), executes=load,
                               spill_kernels=("probe_pairs",))
    if case.kind == "map":  # the warm walk's load and the timed one's; local memory would be a spill
        return SassExpectation((("probe_map", KernelExpectation(load, 2)),), executes=load,
                               spill_kernels=("probe_map",))
    # a chase of addresses holds nothing between its loads: no address arithmetic (the index chase's IMAD/LEA)
    between = ("IMAD", "IADD", "LEA", "SHF", "ISCADD") if case.kind == "ptrchase" else ()
    if case.footprint_bytes:  # the warm pass's WARM_UNROLL loads (the chase's own), then the chase's; no probe_each
        return SassExpectation((("probe_chain", KernelExpectation(load, WARM_UNROLL + UNROLL)),), executes=load)
    kernels = [("probe_chain", KernelExpectation(load, UNROLL, forbidden=between,
                                                 exclude=(load + ".",) if load == "LDS" else ()))]
    if case.level in ("l2", "hbm"):
        kernels.append(("probe_each", KernelExpectation(load, 1)))
    return SassExpectation(tuple(kernels), executes=load)
