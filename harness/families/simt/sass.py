"""What a SIMT probe's SASS must show on sm_90a: every chain step's instructions (ops.py) with nothing of `forbidden`
between them; an overlap probe's wgmma, the SIMT instruction's steps and the TMA loads in each kernel."""

from __future__ import annotations

from harness.families.base import KernelExpectation, SassExpectation
import harness.families.simt.overlap as _overlap
import harness.families.simt.ops as _ops
from harness.families.simt.cases import SimtCase
from harness.families.simt.kernels import CHAINS, MAX_ILP
from harness.families.simt.overlap import OverlapCase


def expectation(case) -> SassExpectation:
    if isinstance(case, OverlapCase):
        return _overlap_expectation(case)
    return _chain_expectation(case)


def _chain_expectation(case: SimtCase) -> SassExpectation:
    """Per kernel, every step's instructions (ops.py), with nothing of `forbidden` between the first and the
    last of them: no memory access, barrier or branch (an emulated form may branch no more than its own
    sequence does)."""
    op = case.op
    kernels = []
    for kernel, steps in CHAINS.bodies:
        for i, (mnemonic, count) in enumerate(op.sass):
            kernels.append((kernel, KernelExpectation(mnemonic, steps * count, op.forbidden,
                                                      also=op.also if i == 0 else ())))
    return SassExpectation(tuple(kernels), op.executes, op.emulated,
                           spill_kernels=tuple(kernel for kernel, _ in CHAINS.bodies))


def _overlap_expectation(case: OverlapCase) -> SassExpectation:
    """probe_overlap_wgmma: WGMMA_UNROLL HGMMA in its timed loop body, and the instruction's 16 x 8 steps in warpgroup
    1's body; probe_overlap_simt the same two loops, timed the other way round. Nothing of `forbidden` inside a body
    (the untimed side polls its flag between bodies)."""
    kernels = []
    op = _ops.OPS[case.op] if case.op else None
    for kernel in _overlap.kernels(case):
        if case.n:
            kernels.append((kernel, KernelExpectation(_overlap.mnemonic(case), _overlap.WGMMA_UNROLL,
                                                      _ops.MEMORY_ONLY + ("BRA",))))
        if op:
            for i, (mnemonic, count) in enumerate(op.sass):
                kernels.append((kernel, KernelExpectation(mnemonic, CHAINS.unroll * MAX_ILP * count, op.forbidden,
                                                          also=op.also if i == 0 else ())))
        if case.tma:  # one body of loads, each a 2-D tile load completed on an mbarrier
            kernels.append((kernel, KernelExpectation("UTMALDG.2D", _overlap.TMA_UNROLL)))
    return SassExpectation(tuple(kernels), (_overlap.mnemonic(case) if case.n else "nothing") + " beside "
                           + (op.executes if op else "nothing") + (" and UTMALDG.2D" if case.tma else ""), False,
                           invalidating_notes=("C7510", "C7511", "C7515", "C7519"),
                           spill_kernels=tuple(_overlap.kernels(case)))
