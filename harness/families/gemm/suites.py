"""The GEMM family's suites (their case lists: suite_cases.py; gemm-heuristics': heuristics.py), and every case of
the family (the suites' together)."""

from __future__ import annotations

import harness.families.gemm.suite_cases as _lists
from harness.families.base import Suite
from harness.families.gemm.cases import GemmCase


def suites() -> dict[str, Suite]:
    return {
        "gemm": Suite("GEMM pipelines at 8192^3 f16: the seed worklog's ladder, a stage sweep for four tiles, the "
                      "mainloop alone (one tile per SM, long K), and cuBLAS beside them", _lists.everyday),
        "gemm-full": Suite("runs of record: the gemm suite, the ladder at 4096^3, the best pipeline and cuBLAS at "
                           "2048..16384 and skinny M, f16 and bf16, one change at a time from the best, and the best on "
                           "128 SMs (the worklog's)",
                           _lists.full),
        "gemm-quick": Suite("one pipeline and cuBLAS at 2048^3", _lists.quick),
        "gemm-fp8": Suite("fp8 (e4m3) at 2048^3..16384^3: the best configuration with its promotion after each "
                          "k-block and overlapped, cuBLASLt without and with fast accumulation beside it, and "
                          "128x128's stage sweep at 4096^3", _lists.fp8),
        "gemm-pingpong": Suite("the ping-pong schedule (consumer warpgroups alternating whole tiles) beside the best "
                               "cooperative configuration and cuBLAS at 4096^3 and 8192^3, f16 and fp8",
                               _lists.pingpong),
        "gemm-multicast": Suite("B multicast to a cluster of 4 against 2, f16 and fp8 at 4096^3 and 8192^3, on every SM "
                                "and on 128, with the library", _lists.multicast),
        "gemm-skinny": Suite("skinny and decode GEMMs (M = 16..256 at N = K = 8192, f16): 64- and 128-row tiles "
                             "with and without split-K, a partial last tile where M < 64, and cuBLAS", _lists.skinny),
        "gemm-streamk": Suite("stream-K (the last partial wave's tiles split along K over every SM) against whole tiles "
                              "and split-K: fp8 128x128 at 4096^3 and 8192^3, f16 128x128 at 4096^3, skinny f16 at "
                              "M = 128 and 256 (N = K = 8192), with the library", _lists.streamk),
        "gemm-protocol": Suite("the worklog's published figures by their protocol: the best f16 configuration and "
                               "cuBLAS at 4096^3, random, integer and zero inputs, each in sustained rounds and in a "
                               "burst of 8 launches after 5 s idle (docs/gemm.md)", _lists.protocol),
        "gemm-heuristics": Suite("the planner's top five beside nvMatmulHeuristics' (NVIDIA's predictor, mapped to "
                                 "our cases where it can be) at 4096^3, 8192^3 and three LLM projections, f16, with "
                                 "cuBLAS: `bench plan --against nvmh --run N` gives each one's regret",
                                 _heuristics),
    }


def _heuristics() -> list[GemmCase]:
    """`gemm-heuristics` (heuristics.py): the planner's first five and nvMatmulHeuristics' first five that map, at
    4096^3, 8192^3 and three LLM projections, f16, with cuBLAS."""
    from harness.families.gemm.heuristics import suite

    return suite()


def all_cases() -> list[GemmCase]:
    return list(dict.fromkeys(_lists.cases() + _heuristics()))
