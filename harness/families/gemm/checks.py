"""A GEMM case's correctness: the check problem's inputs (small integers, exact in every input type), C of it bit for
bit, then the measured problem against cuBLAS (or the exact product) on the GPU; a library case's check problem."""

from __future__ import annotations

import numpy as np

import harness.families.gemm.cases as _cases
from harness.anchors import KERNEL
from harness.families.base import Check, Inputs
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.pipeline import counted_kernel
from harness.families.gemm.problem import (CHECK_SCALES, CHECK_VALUES, COUNTER_WORDS, FP8_SUM_BITS, MEASURED_INPUTS,
                                           MEASURED_INTEGERS, POISON, VERIFY_ATOL, VERIFY_RTOL, block_scaled_product,
                                           check_grid, check_problem, scale_offsets, threads, to_bits)


def _measured_check(case: GemmCase) -> str:
    """What the measured problem's check compares, by its inputs (problem.measured_bound)."""
    if case.inputs == "zero":
        return "every element exactly zero (zero inputs; expected 0 beyond)"
    if case.inputs == "int":
        low, high = MEASURED_INTEGERS
        return (f"integers {low}..{high}: every element against the exact sum (f64), exact where the sum is an integer "
                f"of {case.out_dtype}, within its rounding beyond (expected 0 beyond)")
    return f"elements beyond {VERIFY_ATOL} + {VERIFY_RTOL:.4f} x |cuBLAS| (expected 0)"


def inputs(case: GemmCase, rng: np.random.Generator) -> Inputs:
    """The check problem's A (M x K) and B (N x K): small integers, exact in f16, bf16, e4m3 and e5m2; the
    measured problem's normal(0, 1) inputs are drawn on the GPU (gpu.py; fp8: rounded to it there)."""
    m, n, k = check_problem(case)
    low, high = CHECK_VALUES
    a = rng.integers(low, high + 1, (m, k)).astype(np.float64)
    b = rng.integers(low, high + 1, (n, k)).astype(np.float64)
    buffer = np.concatenate([to_bits(a, case.a_dtype).ravel(), to_bits(b, case.b_dtype).ravel()]).view(np.uint8)
    values = {"A": a, "B": b}
    distribution = f"check: integers {low}..{high}; measured: {MEASURED_INPUTS[case.inputs]} {case.dtype}" + (
        "" if case.inputs == "zero" else ", seeded, drawn on the GPU")
    if case.block_scaled:  # scales of powers of two (C exact), after A and B at problem.scale_offsets
        blocks = k // _cases.SCALE_BLOCK
        values["scale_a"] = rng.choice(CHECK_SCALES, (blocks, m))
        values["scale_b"] = rng.choice(CHECK_SCALES, (n // _cases.SCALE_BLOCK, blocks))
        _, at, _ = scale_offsets(case)
        scales = np.concatenate([values["scale_a"].ravel(), values["scale_b"].ravel()]).astype(np.float32)
        buffer = np.concatenate([buffer, np.zeros(at - buffer.size, np.uint8), scales.view(np.uint8)])
        distribution += ("; block scales: check, powers of two 0.5..2; measured, uniform in [0.5, 2) f32 (A's per "
                         "row and 128 of K, B's per 128 x 128)")
    return Inputs(buffer, values, distribution)

def output_words(case: GemmCase) -> int:
    m, n, _ = check_problem(case)
    return m * n // 2

def decode(case: GemmCase, words: np.ndarray) -> np.ndarray:
    return np.asarray(words[:output_words(case)], dtype=np.uint32).astype(np.float64)

def check_words(case: GemmCase | LibraryCase, inputs: Inputs) -> np.ndarray:
    """C of the check problem as the kernel writes it: the exact product of the inputs' A and B (and block scales)
    rounded once to the output type, two elements a 32-bit word, each word as a float64."""
    a, b = inputs.values["A"], inputs.values["B"]
    if case.block_scaled:  # integers times powers of two: exact in f64, and in the kernel's f32
        exact = block_scaled_product(np, a, b, inputs.values["scale_a"], inputs.values["scale_b"],
                                     _cases.SCALE_BLOCK)
    else:
        exact = a.astype(np.float32) @ b.astype(np.float32).T  # integers below 2^24: exact in f32
    return to_bits(exact, case.out_dtype).ravel().view(np.uint32).astype(np.float64)


def checks(case: GemmCase | LibraryCase, inputs: Inputs) -> list[Check]:
    """C of the check problem bit for bit (an exact f32 sum rounded once, as the kernel does); then the
    measured problem against cuBLAS, where a k-block dropped or a tile misplaced moves an element by
    several units (normal inputs: a k-block adds about 8 to it) and the tolerance is 0.05 + 1/128 of it.
    The library: the check problem bit for bit, its call at iters 0."""
    words = check_words(case, inputs)
    m, n, k = check_problem(case)
    label = f"C of a {m}x{n}x{k} problem, bit for bit"
    if isinstance(case, LibraryCase):
        return [Check(KERNEL, 1, 0, 1, words, 0.0, f"{label} ({case.anchor.library})")]
    grid = check_grid(case)
    label += f" ({grid} blocks, {k // case.bk} k-blocks through {case.stages} stages)"
    checks = [Check(kernel, threads(case), 0, grid * (5 + COUNTER_WORDS), words, 0.0,
                    label + (" (the build that counts its waits)" if kernel != "probe_gemm" else ""), grid=grid)
              for kernel in ("probe_gemm", counted_kernel("probe_gemm"))]
    expected = np.full(output_words(case), POISON, dtype=np.float64)
    expected[0] = 0
    checks.append(Check("probe_verify", 1, 1, 1, expected, 0.0,
                        f"the {case.m}x{case.n}x{case.k} problem against cuBLAS on the same inputs: "
                        + (f"elements beyond the exact product (f64) by more than the arithmetic's bound "
                           f"(problem.fp8_bound: {case.bk // case.wgmma_k} roundings of 2^-{FP8_SUM_BITS} per "
                           f"k-block, f32 across them, f16 out; expected 0)"
                           if case.promote else
                           _measured_check(case))))
    return checks
