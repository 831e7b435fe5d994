"""The SIMT family's suites: the instructions, by unit and a quick one; wgmma beside a SIMT instruction (and TMA
loads)."""

from __future__ import annotations

import harness.families.simt.cases as _cases
import harness.families.simt.overlap as _overlap
from harness.families.base import Suite
from harness.families.simt.cases import _unit


def suites() -> dict[str, Suite]:
    def kind(*units):
        return lambda: [c for c in _cases.cases() if _unit(c) in units]

    return {
        "simt": Suite("SIMT instructions beside the tensor cores: f32 and packed-half arithmetic, MUFU, shuffles, "
                      "converts and permutes: latency, issue interval, warps x ILP throughput", _cases.cases),
        "simt-overlap": Suite("one SM, wgmma (f16 SS at N 64, 128, 256; f16 RS and e4m3 SS at N 64, 256) in one "
                              "warpgroup beside a SIMT instruction at full rate in another (ex2, FFMA, HFMA2, SHFL, "
                              "F2FP), each side timed while the other runs, and each alone", _overlap.cases),
        "simt-overlap-tma": Suite("simt-overlap's cases with TMA loads in flight: a producer warp keeps 2-D TMA loads "
                                  "(8 KiB boxes, a ring of 4 slots) going beside wgmma (f16 SS and RS, N 64 and 256) "
                                  "and the SIMT instruction; every side timed while the others run, and the loads "
                                  "alone; with the same cases without the loads", _overlap.tma_suite),
        "simt-mufu": Suite("the special-function unit (MUFU) alone", kind("mufu")),
        "simt-quick": Suite("one instruction per unit: FFMA, HFMA2, MUFU.EX2, SHFL, F2FP", lambda: [
            _cases.parse(f"simt.{name}") for name in ("fma.rn.f32", "fma.rn.f16x2", "ex2.approx.ftz.f32",
                                                       "shfl.sync.bfly.b32", "cvt.rn.bf16x2.f32")]),
    }
