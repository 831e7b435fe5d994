"""The ladder's GPU resources (Family.attach): the measured problem's matrices, the kernel arguments, and the host
kernels (cuBLAS on the same inputs, the measured problem's verification). Runs in the worker process, on the GPU.

ptx/ladder.cu.in takes two `Problem`s by value after the common four arguments: the check problem (A and B in the
probe's input buffer, C in its output buffer) and the measured one (normal(0, 1) inputs drawn here, f32 or rounded
to f16). The anchor is cublasGemmEx on the measured problem's own inputs (harness/anchors/cublas.py): SGEMM for the
f32 steps, f16 in and f32 out for the tensor-core steps. The library's case (cases.LadderLibraryCase, an anchor) has
no module: its call is the probe's host kernel anchors.KERNEL (the check problem at iters 0, else the measured one).
"""

from __future__ import annotations

import numpy as np

from harness.anchors import KERNEL, VERIFY
from harness.anchors.cublas import GemmEx
from harness.families.base import Attachment
from harness.families.ladder.cases import LadderLibraryCase
from harness.families.ladder.problem import PROBLEM, bound, check_problem, grid

SEED = 20261127


def problem(a: int, b: int, c: int, m: int, n: int, k: int) -> np.ndarray:
    value = np.zeros(1, dtype=PROBLEM.dtype())
    value["a"], value["b"], value["c"], value["m"], value["n"], value["k"] = a, b, c, m, n, k
    return value


def normal(cupy, rows: int, cols: int, dtype: str, seed: int):
    """normal(0, 1) values drawn on the GPU, as `dtype` (f16: rounded to nearest)."""
    x = cupy.random.RandomState(seed).standard_normal((rows, cols), dtype=cupy.float32)
    return x.astype(cupy.float16) if dtype == "f16" else x


def attach(case, probe, device) -> Attachment:
    import cupy

    m0, n0, k0 = check_problem(case)
    a0 = probe.inputs.data.ptr
    b0 = a0 + m0 * k0 * case.in_bytes
    c0 = probe.out.data.ptr
    m, n, k = case.m, case.n, case.k
    a1, b1 = normal(cupy, m, k, case.dtype, SEED), normal(cupy, n, k, case.dtype, SEED + 1)
    c1 = cupy.zeros((m, n), dtype=cupy.float32)
    theirs = cupy.zeros((m, n), dtype=cupy.float32)
    library = GemmEx(case.dtype, "f32")
    resources = (a1, b1, c1, theirs)

    def run_anchor(out, timing, iters):
        library(a1.data.ptr, b1.data.ptr, theirs.data.ptr, m, n, k)

    if isinstance(case, LadderLibraryCase):
        def run_library(out, timing, iters):
            if iters == 0:  # the check problem, into the probe's output
                library(a0, b0, out.data.ptr, m0, n0, k0)
            else:
                run_anchor(out, timing, iters)

        # no module: the call and the verification are its only kernels, and nothing takes the problems as arguments
        return Attachment(resources=resources,
                          host_kernels={KERNEL: run_library, VERIFY: _verifier(case, run_library, a1, b1, theirs)})

    problems = (problem(a0, b0, c0, m0, n0, k0), problem(a1.data.ptr, b1.data.ptr, c1.data.ptr, m, n, k))
    blocks, threads = grid(case), case.spec.threads

    def run_kernel(out, timing, iters):
        scratch = cupy.zeros(blocks * 8, dtype=cupy.int64)
        probe.enqueue("probe_ladder", blocks, threads, 1, scratch)  # with the attached problems

    return Attachment(extra_args=problems, resources=resources,
                      host_kernels={KERNEL: run_anchor, VERIFY: _verifier(case, run_kernel, a1, b1, c1)})


def _verifier(case, run, a, b, c):
    """A host kernel: the measured problem once (into `c`), then out[0] = its elements beyond the arithmetic's bound
    (problem.bound) from the exact product, computed in f64 on the GPU; NaN counts."""
    import cupy

    def verify(out, timing, iters):
        c.fill(np.nan)
        run(out, timing, 1)
        a64, b64 = a.astype(cupy.float64), b.astype(cupy.float64)
        exact = a64 @ b64.T
        abs_sum = cupy.abs(a64) @ cupy.abs(b64).T
        del a64, b64
        limit = bound(cupy, abs_sum, case.k, "FFMA" if isinstance(case, LadderLibraryCase) else case.spec.unit)
        bad = ~(cupy.abs(c.astype(cupy.float64) - exact) <= limit)
        out[0:1] = cupy.count_nonzero(bad).astype(cupy.uint32)

    return verify
