"""The mma family's correctness: A and B drawn exactly representable and packed into each lane's fragments, the
float64 reference and its tolerance, the validation launches, and the output decoded."""

from __future__ import annotations

import numpy as np

import harness.families.mma.fragments as fragments
from harness import dtypes, sparsity
from harness.families.base import Check, Inputs
from harness.families.chains import ILPS
from harness.families.mma.cases import BITS, MmaCase
from harness.families.mma.probe import _quad_pairs, chains, shapes
from harness.measure.validate import accumulation_tolerance

F64_INPUT_STEPS = 4  # f64 inputs are multiples of 1/4 in [-2, 2]: every product and sum is exact


def reference(case: MmaCase, inputs: Inputs) -> np.ndarray:
    """D = A.B in float64 (sparse: the dense A, zeros included; m8n8k4: four products, one per quad
    pair); b1: popc(A and B) or popc(A xor B) summed over K."""
    a, b = inputs.values["a"], inputs.values["b"]
    if case.bit_op == "xor":
        return a @ (1 - b) + (1 - a) @ b
    return a @ b


def tolerance(case: MmaCase, inputs: Inputs, chain: int = 1) -> np.ndarray | float:
    """Integer, b1 and f64 (on exactly representable inputs and sums): exact. Floating accumulators:
    harness/measure/validate.py accumulation_tolerance (the products of f16, bf16, tf32 and fp8
    values are exact in f32)."""
    if case.dtype_d in ("s32", "f64"):
        return 0.0
    magnitude = np.abs(inputs.values["a"]) @ np.abs(inputs.values["b"])
    return accumulation_tolerance(dtypes.unit_roundoff(case.dtype_d), case.k, magnitude, chain)


def inputs(case: MmaCase, rng: np.random.Generator) -> Inputs:
    """A and B drawn exactly representable in their types (sparse A: zero outside a drawn 2:4
    pattern), packed into each lane's fragment registers; then the metadata words and the zero mask."""
    batch = (fragments.QUAD_PAIRS,) if _quad_pairs(case) else ()
    a = _values(case.dtype_a, batch + (case.m, case.k), rng)
    b = _values(case.dtype_b, batch + (case.k, case.n), rng)
    stored, metadata = a, np.zeros(0, dtype=np.uint32)
    if case.sparse:
        pattern = sparsity.draw(case.dtype_a, case.m, case.k, rng)
        keep = sparsity.kept(case.dtype_a, pattern, case.k)
        a = np.where(keep, a, 0.0)
        stored = sparsity.compress(a, keep)
        metadata = sparsity.metadata(case.dtype_a, pattern)
    a_words = fragments.pack(BITS[case.dtype_a], dtypes.encode(case.dtype_a, stored)[_a_coords(case)])
    b_words = fragments.pack(BITS[case.dtype_b], dtypes.encode(case.dtype_b, b)[_b_coords(case)])
    mask = np.zeros(2, dtype=np.uint32)  # the zero word of ptx/mma.cu.in (two: f64 reads 8 bytes)
    buffer = np.concatenate([a_words.ravel(), b_words.ravel(), metadata, mask]).view(np.uint8)
    return Inputs(buffer, {"a": a, "b": b}, _distribution(case))


def _values(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
    if dtype in dtypes.INTEGER_RANGE:
        low, high = dtypes.INTEGER_RANGE[dtype]
        return rng.integers(low, high + 1, shape).astype(np.float64)
    if dtype == "f64":
        return rng.integers(-2 * F64_INPUT_STEPS, 2 * F64_INPUT_STEPS + 1, shape) / F64_INPUT_STEPS
    return dtypes.round_to(dtype, rng.standard_normal(shape))


def _distribution(case: MmaCase) -> str:
    if case.dtype_a in dtypes.INTEGER_RANGE:
        text = f"uniform over the {case.dtype_a}/{case.dtype_b} values"
    elif case.dtype_a == "f64":
        text = f"multiples of 1/{F64_INPUT_STEPS} in [-2, 2] (exact f64 arithmetic)"
    else:
        text = f"normal(0,1) rounded to {case.dtype_a}/{case.dtype_b}"
    return text + ("; A zero outside a random structured-sparse pattern per chunk" if case.sparse else "")


def checks(case: MmaCase, inputs: Inputs) -> list[Check]:
    """A dependent chain of one loop body and the issue-interval kernel's first accumulator: `unroll`
    x A.B (A.B where C is a separate zero operand: each mma then computes A.B + 0)."""
    plan = chains(case)
    chain = plan.unroll if case.dtype_c == case.dtype_d else 1
    ref, tol = chain * reference(case, inputs), tolerance(case, inputs, chain)
    kernels = [plan.kernel(ilp) for ilp in plan.timed_ilps]
    if plan.short_unroll:  # the same chain of `unroll` rounds, in bodies of short_unroll
        kernels += [plan.short_kernel(ilp) for ilp in plan.timed_ilps]
    return [Check(kernel, 32, plan.unroll, 5, ref, tol, f"D ({kernel}, chain of {plan.unroll})")
            for kernel in kernels]


def output_words(case: MmaCase) -> int:
    return max(ILPS) * 32 * shapes(case)["d"]


def decode(case: MmaCase, words: np.ndarray) -> np.ndarray:
    """The first accumulator's registers of warp 0 -> the M x N matrix (m8n8k4: 4 of them), float64."""
    regs = shapes(case)["d"]
    codes = fragments.unpack(BITS[case.dtype_d], words[:32 * regs].reshape(32, regs))
    out = np.zeros(((fragments.QUAD_PAIRS,) if _quad_pairs(case) else ()) + (case.m, case.n))
    out[_d_coords(case)] = dtypes.decode(case.dtype_d, codes)
    return out



def _a_coords(case: MmaCase):
    if _quad_pairs(case):
        return fragments.m884_a_coords(case.layout_a)
    return fragments.a_coords(case.m, case.k // 2 if case.sparse else case.k, BITS[case.dtype_a])


def _b_coords(case: MmaCase):
    if _quad_pairs(case):
        return fragments.m884_b_coords(case.layout_b)
    return fragments.b_coords(case.k, case.n, BITS[case.dtype_b])


def _d_coords(case: MmaCase):
    return fragments.m884_d_coords(case.dtype_d) if _quad_pairs(case) else fragments.d_coords(case.m, case.n)
