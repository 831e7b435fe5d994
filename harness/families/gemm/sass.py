"""What a GEMM pipeline's SASS must show on sm_90a (ptxas 13): the k-block's HGMMA (QGMMA for fp8) as often as its
walk copies it, the TMA loads (and multicast, stores), the arrivals a schedule adds; no spills; in both builds of the
kernel (the timed one and the one that counts its waits, both_builds below)."""

from __future__ import annotations

from harness.families.base import KernelExpectation, SassExpectation
from harness.families.gemm.cases import GemmCase
from harness.families.pipeline import TIMED_CLOCK_READS, counted_kernel


def expectation(case: GemmCase) -> SassExpectation:
    """The mainloop's k-block: BK / K x (rows per consumer / 64) HGMMA (QGMMA for fp8), once in the kernel
    (its loop is not unrolled); the TMA loads; no spills."""
    if case.in_bytes == 1:
        mnemonic = f"QGMMA.64x{case.bn}x32.F32.{case.a_dtype.upper()}.{case.b_dtype.upper()}"
    else:
        mnemonic = f"HGMMA.64x{case.bn}x16.F32" + (".BF16" if case.dtype == "bf16" else "")
    per_kblock = (case.bk // case.wgmma_k) * (case.wg_rows // 64)
    # an overlapped promotion's k-block walk has three copies of the k-block's wgmma: a pair (one per accumulator
    # set, pipeline.cuh consume_kblock_pairs) and an odd count's last; a pipelined one's, a group's k-blocks and
    # the k-block walked alone (consume_kblock_groups); a carried one's, the tile's first k-block, the loop's
    # pair and an even count's last (consume_kblocks_carried)
    copies = {"overlap": 3, "pipelined": case.group + 1, "carried": 4, "deferred": 4,
              "offset": case.group + 1 + case.group // 2}.get(case.promotion, 1)  # (offset: warpgroup 1's first group)
    load, multicast = "UTMALDG.2D", "UTMALDG.2D.MULTICAST"
    kernels = [("probe_gemm", KernelExpectation(mnemonic, per_kblock * copies)),  # A, and B unless multicast
               ("probe_gemm", KernelExpectation(load, 1 if case.cluster > 1 else 2, exclude=(multicast,)))]
    if case.cluster > 1:
        kernels.append(("probe_gemm", KernelExpectation(multicast, 1)))
    if case.epilogue == "tmastore":
        # a box of c_box_cols columns each; a deferred epilogue's store is in two places (under the next tile's first k-block,
        # and the CTA's last tile after its walk)
        stores = 2 if case.promotion == "deferred" else 1
        kernels.append(("probe_gemm", KernelExpectation("UTMASTG.2D", stores * case.bn // case.c_box_cols)))
    if case.promotion == "staggered":  # a warpgroup's arrival after it issued a k-block (the other's turn)
        kernels.append(("probe_gemm", KernelExpectation("BAR.ARV", 1)))
    if case.fixes_up:  # split- or stream-K: a run's arrival at its tile's counter (acq_rel, the GPU's scope)
        kernels.append(("probe_gemm", KernelExpectation("ATOMG.E.ADD.S32.STRONG.GPU", 1)))
    return both_builds(SassExpectation(tuple(kernels), executes=f"{per_kblock} x {mnemonic} per k-block",
                                       invalidating_notes=("C7510", "C7511", "C7514", "C7515", "C7517", "C7518"),
                                       spill_kernels=("probe_gemm",)), "probe_gemm")


def both_builds(expectation: SassExpectation, kernel: str) -> SassExpectation:
    """A pipeline kernel's SassExpectation (of `kernel`, the timed build) for its counting build too (every count,
    spill and in-flight rule of `kernel` repeated for `<kernel>_counted`), and the timed build's own rule: its clock
    read at TIMED_CLOCK_READS sites, none around the waits."""
    import dataclasses

    counted = counted_kernel(kernel)
    twice = lambda rules: tuple(rules) + tuple((counted, rule) for name, rule in rules if name == kernel)
    return dataclasses.replace(
        expectation, kernels=twice(expectation.kernels) + ((kernel, KernelExpectation("CS2R", TIMED_CLOCK_READS,
                                                                                        contains="SR_CLOCK")),),
        spill_kernels=expectation.spill_kernels + ((counted,) if kernel in expectation.spill_kernels else ()),
        in_flight=twice(expectation.in_flight))
