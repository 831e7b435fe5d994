"""What a DSMEM probe's SASS must show on sm_90a: the chain's and the streams' remote loads (LD.E: generic
addresses through mapa), the ping-pong's and the round trip's stores, each chase kernel's `ilp` loads, the map's."""

from __future__ import annotations

from harness.families.base import KernelExpectation, SassExpectation
from harness.families.dsmem.cases import DsmemCase
from harness.families.dsmem.kernels import CHASE_ILP, UNROLL


def expectation(case: DsmemCase) -> SassExpectation:
    """The chain's UNROLL loads per loop body and the stream's UNROLL 16-byte ones; the ping-pong's
    one store and the store stream's UNROLL; each chase kernel's `ilp` loads."""
    if case.op == "dsmem-map":  # the peer's %smid and the chain's UNROLL loads, nothing else remote
        return SassExpectation((("probe_dsmem_map", KernelExpectation("LD.E", 1 + UNROLL, exclude=("LD.E.",))),),
                               executes="LD.E", spill_kernels=("probe_dsmem_map",))
    if case.op == "dsmem-chase":
        return SassExpectation(tuple((f"probe_dsmem_chase_i{i}", KernelExpectation("LD.E", i, exclude=("LD.E.",)))
                                     for i in CHASE_ILP), executes="LD.E")
    if case.op == "dsmem-store":
        return SassExpectation((("probe_dsmem_pingpong", KernelExpectation("ST.E.STRONG.GPU", 1)),
                                ("probe_dsmem_roundtrip", KernelExpectation("ST.E.STRONG.GPU", 2)),
                                ("probe_dsmem_store_stream", KernelExpectation("ST.E.128", UNROLL))),
                               executes="ST.E.128")
    return SassExpectation((("probe_dsmem_chain", KernelExpectation("LD.E", UNROLL)),
                            ("probe_dsmem_stream", KernelExpectation("LD.E.128", UNROLL))), executes="LD.E")
