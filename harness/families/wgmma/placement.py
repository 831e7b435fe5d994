"""Where a wgmma case's operands live: A and B in shared memory (their layouts, descriptors and B's offset after A),
sparse A's metadata per thread of the warpgroup, and the latency kernel's sparsity selector."""

from __future__ import annotations

import numpy as np

from harness import dtypes, sparsity
from harness.families.wgmma.cases import LAYOUTS, M, WgmmaCase
from harness.families.wgmma.descriptors import Layout
from harness.families.wgmma.fragments import WARPGROUP_THREADS


def stored_k(case: WgmmaCase) -> int:
    """Columns of A as held: sparse A is compressed to K / 2."""
    return case.k // 2 if case.sparse else case.k


def latency_selector(case: WgmmaCase) -> int:
    """The sparsity selector of the latency kernel; the chain uses 0. ptxas accepts 0 or 1 for 16-bit
    and tf32 inputs (metadata in lanes 0-1 or 2-3 of each group of four) and only 0 for 8-bit inputs
    (all four lanes hold metadata), so every sparse probe validates each selector its type allows."""
    return 1 if case.sparse and sparsity.metadata_lanes(case.dtype_a, case.k) < 4 else 0


def warpgroup_metadata(case: WgmmaCase, pattern: np.ndarray) -> np.ndarray:
    """(128, 2) uint32: each thread's metadata word for selector 0 (the chain) and for the latency
    kernel's selector. Warp w holds rows 16w..16w+15 as one warp's mma.sp of the same K does."""
    words = np.zeros((WARPGROUP_THREADS, 2), dtype=np.uint32)
    for warp in range(WARPGROUP_THREADS // 32):
        rows = pattern[16 * warp:16 * (warp + 1)]
        for column, selector in enumerate((0, latency_selector(case))):
            words[32 * warp:32 * (warp + 1), column] = sparsity.metadata(case.dtype_a, rows, selector)
    return words


TILE_ALIGN = 1024  # B starts here after A: the 128-byte swizzle's repeat, so every base offset is 0
DECOY_BYTE = 0x55  # fills the bytes of a swizzled tile that no element uses (finite in every type)


def layouts(case: WgmmaCase) -> tuple[Layout | None, Layout]:
    """Shared-memory layouts of A (None in RS mode; M x K/2 when sparse) and B (N x K), both in the
    case's layout; MN-major tiles pack their blocks along MN first, as the PTX ISA's examples do."""
    bits = dtypes.BITS[case.dtype_a]
    major, swizzle = LAYOUTS[case.layout]
    packing = "mn-first" if major == "MN" else "k-first"
    a = Layout(M, stored_k(case), bits, major, swizzle, packing) if case.operands == "SS" else None
    return a, Layout(case.n, case.k, bits, major, swizzle, packing)


def b_offset(case: WgmmaCase) -> int:
    a, _ = layouts(case)
    return -(-a.size_bytes // TILE_ALIGN) * TILE_ALIGN if a else 0


def descriptors(case: WgmmaCase):
    """(A descriptor or None, B descriptor), start addresses relative to the shared buffer."""
    a, b = layouts(case)
    return (a.descriptor(0) if a else None), b.descriptor(b_offset(case))
