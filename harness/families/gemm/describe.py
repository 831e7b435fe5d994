"""A GEMM case in words (`bench plan`'s and the report's lines): the problem, the tile and its stages, the schedule,
the cluster, split-K and the walk past a partial tile, the epilogue, the fp8 promotion and block scales."""

from __future__ import annotations

import harness.families.gemm.cases as _cases
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.gemm.problem import CONSUMER_REGS, MEASURED_INPUTS, PRODUCER_REGS


def describe(case: GemmCase | LibraryCase) -> list[str]:
    shape = (f"C[{case.m}, {case.n}] = A[{case.m}, {case.k}] . B[{case.n}, {case.k}]^T, {case.dtype} in, f32 "
             f"accumulate, {case.out_dtype} out")
    shape += "" if (case.inputs, case.protocol) == ("random", "sustained") else (
        f"; measured on {MEASURED_INPUTS[case.inputs]}, "
        + (f"timed in batches of {_cases.WORKLOG_BATCH} launches after {_cases.WORKLOG_IDLE_S:g} s idle"
           if case.protocol == "burst" else "timed in sustained rounds"))
    if isinstance(case, LibraryCase):
        return [shape, case.anchor.description + ", on CuPy's stream"]
    return [shape,
            f"tile {case.bm}x{case.bn}x{case.bk} ({case.tiles} tiles), {case.stages} stages of "
            f"{(case.bm + case.bn) * case.bk * case.in_bytes // 1024} KiB, {case.consumers} consumer warpgroup(s)"
            + (f", setmaxnreg {PRODUCER_REGS}/{CONSUMER_REGS}" if case.rebalance else ""),
            ("ping-pong: the consumer warpgroups take whole tiles in turn, one's epilogue under the other's "
             "mainloop" if case.pingpong else "cooperative: each consumer warpgroup its rows of every tile"),
            (f"cluster of {case.cluster} on vertically adjacent tiles, B multicast" if case.cluster > 1 else "no cluster")
            + (f"; split-K: {case.splits} runs of {case.kblocks} k-blocks per tile, their f32 sums added by the "
               "tile's last run" if case.splits > 1 else "")
            + (f"; M = {case.m} walked as {case.walk_m} (rows past M load as zeros, the TMA store clips them)"
               if case.walk_m != case.m else "")
            + (f"; N = {case.n} walked as {case.walk_n} (B's rows past N load as zeros, the TMA store clips C's "
               "columns)" if case.walk_n != case.n else "")
            + (f"; persistent, {case.order} order" if case.persistent else f"; one CTA per tile, {case.order} order"),
            "epilogue through shared memory and a TMA store" if case.epilogue == "tmastore"
            else "epilogue from registers"] + (
                [("fp8 promotion pipelined: two k-block accumulator sets, k-block kb - 1 waited for and added into "
                  "f32 while k-block kb's wgmma run, kb left in flight through the next slot's wait"
                  if case.promotion == "pipelined" else
                  "fp8 promotion pipelined, consumer warpgroup 1's groups of k-blocks half a group after warpgroup "
                  "0's (the tensor cores' drain of one under the other's queued k-blocks)"
                  if case.promotion == "offset" else
                  "fp8 promotion overlapped: two k-block accumulator sets, k-block kb - 1 added into f32 while "
                  "k-block kb's wgmma run" if case.promotion == "overlap" else
                  "fp8 promotion staggered: after each k-block (its wgmma waited for, then added into f32), the two "
                  "consumer warpgroups issuing their k-blocks in turn (named barriers)"
                  if case.promotion == "staggered" else
                  "fp8 promotion after each k-block: its wgmma waited for, then added into f32")]
                if case.promote else []) + (
                ["DeepSeek-V3 block scales: each k-block's sum times A's scale (its row, 1x128) and B's (128x128) as "
                 "it is added into f32; the scales loaded from global memory as the k-block is issued"]
                if case.block_scaled else [])
