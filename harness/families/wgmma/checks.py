"""The wgmma probe's inputs and validation: the input distributions and their values laid out as the descriptors
and fragments say, the reference (NumPy, float64) and its tolerance from the arithmetic, the two check launches,
and the accumulators read back."""

from __future__ import annotations

import numpy as np

from harness import dtypes, sparsity
from harness.errors import SpecError
from harness.families.base import Check, Inputs
from harness.families.wgmma.cases import EVERYDAY, FP8, M, WgmmaCase
from harness.families.wgmma.fragments import (WARPGROUP_THREADS, a_fragment_words, accumulator_registers,
                                              gather_accumulators)
from harness.families.wgmma.placement import DECOY_BYTE, b_offset, layouts, warpgroup_metadata
from harness.families.wgmma.probe import UNROLL
from harness.measure.validate import accumulation_tolerance

# Input distributions (Family.inputs patterns) and how each is described in the database. "random" is
# what every case validates and is timed on; at N = 256 throughput is measured on the others too.
INPUT_DISTRIBUTIONS = {
    "random": lambda c: (f"uniform over the {c.dtype_a}/{c.dtype_b} values" if c.dtype_a in dtypes.INTEGER_RANGE
                         else f"normal(0,1) rounded to {c.dtype_a}/{c.dtype_b}"),
    "zeros": lambda c: "zeros",
    "uniform01": lambda c: (f"uniform in [0, 1) rounded to {c.dtype_a}/{c.dtype_b} (a C rand()/RAND_MAX fill)"
                            if c.dtype_a not in dtypes.INTEGER_RANGE else "uniform over {0, 1}"),
    "small-int": lambda c: "integers in [-2, 2] (unsigned: [0, 2]; b1: 0/1)",
    "uniform11": lambda c: (f"uniform in [-1, 1) rounded to {c.dtype_a}/{c.dtype_b} (the paper's program's "
                            f"random fill)" if c.dtype_a not in dtypes.INTEGER_RANGE
                            else f"uniform over the {c.dtype_a}/{c.dtype_b} values (the paper's program's random fill)"),
}


def reference(case: WgmmaCase, inputs: Inputs) -> np.ndarray:
    """D = A @ B in float64 (B is stored N x K)."""
    return inputs.values["a"] @ inputs.values["b"].T


def abs_product(inputs: Inputs) -> np.ndarray:
    """|A| . |B| in float64: what every float tolerance scales with."""
    return np.abs(inputs.values["a"]) @ np.abs(inputs.values["b"]).T


def tolerance(case: WgmmaCase, inputs: Inputs, chain: int = 1, size: np.ndarray | None = None) -> np.ndarray | float:
    """Integer and b1: exact. Float: harness/measure/validate.py accumulation_tolerance (products of
    two 16-bit, tf32 or fp8 values are exact in f32). fp8 into f32 accumulates with fewer bits
    than f32 holds: DeepSeek-V3's technical report (arXiv 2412.19437, section 3.3.2) measured about
    14 bits on H800, so its unit roundoff is taken as 2^-13. `size`: abs_product(inputs), where the caller has it."""
    if case.dtype_acc == "s32":
        return 0.0
    magnitude = abs_product(inputs) if size is None else size
    if case.dtype_a in FP8 and case.dtype_acc == "f32":
        # The report describes products aligned to the largest exponent, the running sum included,
        # and cut to ~14 bits: each of the K products of instruction i may lose 2^-13 of a sum of
        # up to i x magnitude. The H100 showed it: all-positive uniform01 inputs broke the per-add
        # bound by 0.2 % in a chain of 16 (run of 2026-11-22, m64n256k32 e4m3 SS and RS).
        u = 2.0 ** -13
        return (2 * case.k * chain + case.k * chain * (chain + 1) / 2) * u * magnitude
    return accumulation_tolerance(dtypes.unit_roundoff(case.dtype_acc), case.k, magnitude, chain)


def inputs(case: WgmmaCase, rng: np.random.Generator, pattern: str = "random") -> Inputs:
    """Inputs laid out as the descriptors and fragments say.

    pattern="random": standard normal values rounded to the dtype (uniform over an integer type's
    values); the validation inputs. The other distributions of INPUT_DISTRIBUTIONS are what the
    throughput at N = 256 is also measured on (power, and so the clock, follow the data).
    pattern="index": small distinct values that make a layout bug readable.
    """
    if pattern in INPUT_DISTRIBUTIONS:
        a = _values(case.dtype_a, (M, case.k), rng, pattern)
        b = _values(case.dtype_b, (case.n, case.k), rng, pattern)
        distribution = INPUT_DISTRIBUTIONS[pattern](case)
    elif pattern == "index" and case.dtype_a in EVERYDAY:
        a = np.fromfunction(lambda i, k: (i % 8) + k / 16, (M, case.k))
        b = np.fromfunction(lambda j, k: ((j + k) % 4) / 4, (case.n, case.k))
        distribution = "index pattern"
    else:
        raise SpecError(f"unknown input pattern {pattern!r} for {case.dtype_a}: expected "
                        + ", ".join(INPUT_DISTRIBUTIONS) + (" or index" if case.dtype_a in EVERYDAY else ""))
    stored = a
    if case.sparse:  # zero outside a pattern drawn per chunk; held compressed, with its metadata
        chosen = sparsity.draw(case.dtype_a, M, case.k, rng)
        keep = sparsity.kept(case.dtype_a, chosen, case.k)
        a = np.where(keep, a, 0.0)
        stored = sparsity.compress(a, keep)
        distribution += "; A zero outside a random structured-sparse pattern per chunk"
    a_bits, b_bits = dtypes.encode(case.dtype_a, stored), dtypes.encode(case.dtype_b, b)
    a_layout, b_layout = layouts(case)
    parts = []
    if a_layout:
        a_image = a_layout.image(a_bits, DECOY_BYTE)
        parts.append(np.pad(a_image, (0, b_offset(case) - a_image.size), constant_values=DECOY_BYTE))
    parts.append(b_layout.image(b_bits, DECOY_BYTE))
    if case.operands == "RS":
        parts.append(a_fragment_words(a_bits, dtypes.BITS[case.dtype_a]).view(np.uint8).ravel())
    if case.sparse:
        parts.append(warpgroup_metadata(case, chosen).view(np.uint8).ravel())
    return Inputs(np.concatenate(parts), {"a": a, "b": b}, distribution)

def _values(dtype: str, shape, rng: np.random.Generator, pattern: str = "random") -> np.ndarray:
    """Exactly representable values of `pattern` (INPUT_DISTRIBUTIONS): "random" is uniform over an
    integer type's range (0/1 for b1), else normal(0,1) rounded to the type (fp8 through ml_dtypes,
    tf32 by masking the low mantissa); "uniform01" uniform in [0, 1) rounded (0/1 for integer
    types); "uniform11" uniform in [-1, 1) rounded, as HPMLL/NVIDIA-Hopper-Benchmark's throughput
    program fills A and B (integer types: uniform over the type's values, as it does);
    "small-int" integers in [-2, 2] ([0, 2] unsigned, 0/1 for b1); "zeros" zeros."""
    low, high = dtypes.INTEGER_RANGE.get(dtype, (-2, 2))
    if pattern == "zeros":
        return np.zeros(shape)
    if pattern == "small-int":
        return rng.integers(max(low, -2), min(high, 2) + 1, shape).astype(np.float64)
    if dtype in dtypes.INTEGER_RANGE:
        low, high = (0, 1) if pattern == "uniform01" else (low, high)
        return rng.integers(low, high + 1, shape).astype(np.float64)
    drawn = {"uniform01": lambda: rng.random(shape), "uniform11": lambda: rng.uniform(-1.0, 1.0, shape)}
    return dtypes.round_to(dtype, drawn.get(pattern, lambda: rng.standard_normal(shape))())

def checks(case: WgmmaCase, inputs: Inputs) -> list[Check]:
    """One wgmma (the latency kernel) must give A.B; one chain body must give UNROLL x A.B."""
    ref = reference(case, inputs)
    size = None if case.dtype_acc == "s32" else abs_product(inputs)  # |A|.|B| once, for both tolerances
    return [Check("probe_latency", WARPGROUP_THREADS, 1, WARPGROUP_THREADS, ref, tolerance(case, inputs, size=size),
                  "D (one wgmma)"),
            Check("probe_chain", WARPGROUP_THREADS, UNROLL, 5, UNROLL * ref, tolerance(case, inputs, UNROLL, size),
                  f"D (chain of {UNROLL})")]

def output_words(case: WgmmaCase) -> int:
    """32-bit words the kernel writes: every thread's accumulator registers of one warpgroup."""
    return WARPGROUP_THREADS * accumulator_registers(case.n, case.dtype_acc)

def decode(case: WgmmaCase, words: np.ndarray) -> np.ndarray:
    regs = accumulator_registers(case.n, case.dtype_acc)
    bits = gather_accumulators(words.reshape(WARPGROUP_THREADS, regs), case.n, case.dtype_acc)
    return dtypes.decode(case.dtype_acc, bits)
