"""What the ladder's launches are (ptx/ladder.cu.in): the kernel's by-value problem, the check problem, grids, and
the tolerance of the measured problem's check. Shared by the family object and gpu.py."""

from __future__ import annotations

import numpy as np

from harness.dtypes import encode
from harness.families.pipeline import KernelStruct

# ptx/ladder.cu.in's by-value argument, twice (the check problem, the measured one): A, B and C's addresses, the shape
PROBLEM = KernelStruct("Problem", (("a", "u64"), ("b", "u64"), ("c", "u64"), ("m", "i32"), ("n", "i32"), ("k", "i32"),
                                   ("pad", "i32")),
                       comment="One GEMM: A[M, K], B[N, K] (row-major) and C[M, N] (f32), its shape "
                               "(harness/families/ladder/problem.py PROBLEM).")
POISON = 0xFFFFFFFF
CHECK_VALUES = (-2, 2)  # the check problem's inputs: integers, exact in f16 and f32, their sums too (|C| <= 4 K)
CHECK_SIZE = (256, 256, 160)  # every step's whole tiles (128 x 128 at most), 5 k-blocks of 32 and 10 of 16

# The measured problem's tolerance, from the arithmetic (normal(0, 1) inputs; `abs_sum` = sum over k of |a_ik b_kj|,
# exact in f64, bounds every partial sum):
#   FFMA (f32, CUDA cores; cuBLAS SGEMM too)  K fused multiply-adds, each rounded once to nearest: |error| <=
#       gamma_K x abs_sum, gamma_K = K u / (1 - K u), u = 2^-24 (the classical bound for any summation order);
#       taken twice, which covers the denominator up to K = 2^22
#   HMMA (f16 in, f32 accumulate)  products exact (11 + 11 bits); the tensor cores add a k-step's products into the
#       f32 accumulator aligned to the largest and truncated, not rounded (Fasi et al., "Numerical behavior of NVIDIA
#       tensor cores", PeerJ CS 2021, on V100, T4, A100): up to one f32 ulp (2^-23 relative) per addition; taken for
#       every element of K and doubled, K x 2^-22 x abs_sum
# A k-block dropped or a tile misplaced moves an element by a sum of normal products (16 of them: a standard deviation
# of 4): beyond the FFMA bound for some elements at every K up to 16384 (20 there), beyond the HMMA bound for about
# half the elements at K = 4096 (2.5) and 1 % at 8192 (10), for none at 16384: the HMMA steps refuse K > 8192
# (cases.HMMA_MAX_K; tests/test_ladder_family.py).
FFMA_ULP, HMMA_ULP = 2.0 ** -24, 2.0 ** -23
FFMA_MARGIN, HMMA_MARGIN = 2.0, 2.0


def bound(xp, abs_sum, k: int, unit: str):
    """The largest |ours - exact| a right C may show, element by element (see above): `unit` "HMMA" or else FFMA."""
    per_element = HMMA_MARGIN * HMMA_ULP if unit == "HMMA" else FFMA_MARGIN * FFMA_ULP
    return k * per_element * abs_sum


def check_problem(case) -> tuple[int, int, int]:
    return CHECK_SIZE


def check_grid(case) -> int:
    m, n, _ = check_problem(case)
    return (m // case.spec.bm) * (n // case.spec.bn)


def grid(case) -> int:
    """Blocks of the measured launch: one per tile of C."""
    return case.tiles


def to_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Exact float values as `dtype`'s bit patterns (harness/dtypes.py encode)."""
    return encode(dtype, values)
