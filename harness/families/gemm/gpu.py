"""The GEMM family's GPU resources (Family.attach): the two problems' matrices and tensor maps, the
kernel arguments, and the host kernels (the library's call, harness/anchors; the measured problem's verification).
Runs in the worker process, on the GPU only.

ptx/gemm.cu.in takes two `Problem`s by value after the common four arguments: the check problem (A and
B in the probe's input buffer, C in its output buffer) and the measured one (normal(0, 1) inputs drawn
here, or the case's integers or zeros: values.py). A library case (cases.LibraryCase) has no kernel: its probe's one host kernel, anchors.KERNEL, is the
library's call on the check problem (iters 0) or on the measured one's inputs, drawn as a pipeline case's are.
"""

from __future__ import annotations

import itertools

import numpy as np

from harness import tensormaps
from harness.anchors import KERNEL
from harness.errors import HarnessError
from harness.families.base import Attachment
from harness.families.pipeline import counted_kernel

from harness.families.gemm.problem import PROBLEM, split_counters, split_workspace_bytes, walk_m, walk_n
from harness.families.gemm.values import (as_f16, as_float, block_scales, exact_fp8_product, exact_product,
                                          measured_values)

SEED = 20261125


def _encode(case, dtype: str, address: int, rows: int, cols: int, box_rows: int, box_cols: int,
            promotion: bool, swizzle: int | None = 128) -> np.ndarray:
    """A 2-D map over a row-major rows x cols matrix of `dtype` elements (e4m3 as bytes), box box_rows x
    box_cols, 128-byte swizzle unless another is given (harness/tensormaps.py)."""
    size = 1 if dtype in ("e4m3", "e5m2") else 2
    return tensormaps.matrix(str(case), dtype, address, rows, cols, box_rows, box_cols, size, swizzle,
                             256 if promotion else None).view(np.uint64)


def problem(case, a: int, b: int, c: int, m: int, n: int, k: int, scales: tuple[int, int] = (0, 0),
            split: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The kernel's Problem argument for A, B, C at these addresses (row-major, K-major A and B), a block-scaled
    case's scales and a split-K case's workspace and counters. The maps hold M rows and N columns; the walk, whole tiles."""
    value = np.zeros(1, dtype=PROBLEM.dtype())
    value["a"] = _encode(case, case.a_dtype, a, m, k, case.a_box_rows, case.bk, True)
    value["b"] = _encode(case, case.b_dtype, b, n, k, case.bn // case.cluster, case.bk, True)
    value["c"] = _encode(case, case.out_dtype, c, m, n, case.wg_rows, case.c_box_cols, False, case.c_swizzle)
    value["c_ptr"], value["m"], value["n"], value["k"] = c, walk_m(case, m), walk_n(case, n), k
    value["c_cols"] = n  # the register epilogue's row pitch and last column (ptx/gemm.cu.in PARTIAL_N)
    value["scale_a"], value["scale_b"] = scales
    value["workspace"], value["counters"] = split
    return value


def split_buffers(cupy, case, m: int, n: int, k: int, blocks: int) -> tuple:
    """A split-K or stream-K problem's workspace (f32, uninitialised: each run writes its part before it is read)
    and counters (int32, zero: ptx/gemm.cu.in reduce_runs leaves them zero after every launch), for a launch of
    `blocks` CTAs; none without either (or a stream-K problem whose tiles fill whole waves)."""
    if case.splits == 1 and not split_counters(case, m, n, k, blocks):
        return None, None
    workspace = cupy.empty(split_workspace_bytes(case, m, n, k, blocks) // 4, dtype=cupy.float32)
    counters = cupy.zeros(split_counters(case, m, n, k, blocks), dtype=cupy.int32)
    return workspace, counters


def _measured(cupy, case):
    """The measured problem's A, B and (block-scaled) scales, drawn on the GPU from the family's seeds and the case's
    input kind: a pipeline case and the library case of its problem and inputs get the same values."""
    m, n, k = case.m, case.n, case.k
    a1 = measured_values(cupy, m, k, case.a_dtype, SEED, case.inputs)
    b1 = measured_values(cupy, n, k, case.b_dtype, SEED + 1, case.inputs)
    scales = block_scales(cupy, m, n, k, SEED + 2) if case.block_scaled else (None, None)
    return a1, b1, scales


def _call(case, m: int, n: int, k: int, scales: tuple[int, int] | None, fast_accum: bool = False):
    """(the library's plan, call(a, b, c): C = A . B^T on these device pointers): cuBLASLt's fp8 matmul on e4m3 codes
    (harness/anchors/cublaslt.py), else cublasGemmEx (harness/anchors/cublas.py)."""
    from harness.families.gemm.cases import FP8_LIBRARY

    if case.dtype in FP8_LIBRARY:
        from harness.anchors.cublaslt import CublasLtMatmul

        plan = CublasLtMatmul(case.a_dtype, case.b_dtype, case.out_dtype, m, n, k, fast_accum,
                              block_scales=scales if case.block_scaled else None)
        return plan, lambda a, b, c: plan(a, b, c)
    from harness.anchors.cublas import Library

    plan = Library(case.out_dtype)
    return plan, lambda a, b, c: plan(a, b, c, m, n, k)


def copies(cupy, case, device, a1, b1, c1) -> list[tuple]:
    """The measured problem's (A, B, C) for each turn of its launches (problem.placement_copies): itself, or for a cold
    placement it and copies of A and B (the same values at other addresses) with Cs of their own."""
    from harness.families.gemm.problem import placement_copies

    turns = placement_copies(case, device.l2_bytes)
    return [(a1, b1, c1)] + [(a1.copy(), b1.copy(), cupy.zeros_like(c1)) for _ in range(turns - 1)]


def in_turn(calls: list):
    """A host kernel that makes `calls[(i + 1) % len]` at its i-th launch: the library through a cold placement's
    copies in the order a module kernel's block takes them (Attachment.rotation: blocks of whole turns, each ending
    on the first copy, which a single launch of the kernel takes)."""
    turn = itertools.count(1)

    def call():
        calls[next(turn) % len(calls)]()

    return call


def attach_library(case, probe, device) -> Attachment:
    """A library case (an anchor): its call as the probe's host kernel KERNEL, on the check problem (A and B in
    the probe's input buffer, C its output buffer) at iters 0, else on the measured problem's inputs."""
    import cupy

    from harness.families.gemm.problem import check_problem, scale_offsets

    m0, n0, k0 = check_problem(case)
    a0 = probe.inputs.data.ptr
    b_at, scale_a_at, scale_b_at = scale_offsets(case)
    check_plan, check_call = _call(case, m0, n0, k0, (a0 + scale_a_at, a0 + scale_b_at), case.fast_accum)
    a1, b1, (scale_a1, scale_b1) = _measured(cupy, case)
    c1 = cupy.zeros((case.m, case.n), dtype=cupy.uint16)
    scales1 = (scale_a1.data.ptr, scale_b1.data.ptr) if case.block_scaled else None
    plan, call = _call(case, case.m, case.n, case.k, scales1, case.fast_accum)
    turns = copies(cupy, case, device, a1, b1, c1)
    measured = in_turn([lambda t=t: call(*(x.data.ptr for x in t)) for t in turns])

    def library(out, timing, iters):
        measured() if iters else check_call(a0, a0 + b_at, probe.out.data.ptr)

    return Attachment(resources=(turns, scale_a1, scale_b1, check_plan, plan), host_kernels={KERNEL: library},
                      period=len(turns))


def attach(case, probe, device) -> Attachment:
    """A pipeline case: its Problems, the library on the measured problem's inputs (KERNEL, the anchor: its library
    case's call, where that can be made here: cuBLASLt's needs nvmath-python) and the verification."""
    import cupy

    from harness.families.gemm.cases import FP8_LIBRARY
    from harness.families.gemm.configs import library as library_case
    from harness.families.gemm.problem import check_grid, check_problem, fp8_bound, grid, measured_bound, threads

    from harness.families.gemm.problem import scale_offsets

    m0, n0, k0 = check_problem(case)
    a0 = probe.inputs.data.ptr
    b_at, scale_a_at, scale_b_at = scale_offsets(case)
    b0 = a0 + b_at
    scales0 = (a0 + scale_a_at, a0 + scale_b_at) if case.block_scaled else (0, 0)
    c0 = probe.out.data.ptr
    m, n, k = case.m, case.n, case.k
    a1, b1, (scale_a1, scale_b1) = _measured(cupy, case)
    scales1 = (scale_a1.data.ptr, scale_b1.data.ptr) if case.block_scaled else (0, 0)
    c1 = cupy.zeros((m, n), dtype=cupy.uint16)
    reference = cupy.zeros((m, n), dtype=cupy.uint16)
    resources = [a1, b1, c1, reference, scale_a1, scale_b1]
    # cuBLAS's inputs: A and B themselves, or (fp8, which cublasGemmEx does not take) their values as f16
    a_ref, b_ref = (a1, b1) if case.dtype == case.out_dtype else (as_f16(cupy, a1, case.a_dtype),
                                                                  as_f16(cupy, b1, case.b_dtype))
    resources += [a_ref, b_ref]
    blocks, block = grid(case, device.sm_count), threads(case)
    split0, split1 = split_buffers(cupy, case, m0, n0, k0, check_grid(case)), split_buffers(cupy, case, m, n, k, blocks)
    resources += [*split0, *split1]
    pointers = lambda buffers: tuple(0 if x is None else x.data.ptr for x in buffers)
    check = problem(case, a0, b0, c0, m0, n0, k0, scales0, pointers(split0))
    turns = copies(cupy, case, device, a1, b1, c1)  # a cold placement's copies, taken in turn by both contenders
    resources.append(turns)
    measured = [problem(case, *(x.data.ptr for x in turn), m, n, k, scales1, pointers(split1)) for turn in turns]
    extra = (check, measured[0])
    host = {}
    # The anchor: the library on the measured problem's own inputs (fp8: cuBLASLt on the e4m3 codes, without fast
    # accumulation), into a C of its own (f16 and bf16: the reference the verification reads again)
    if library_case(case.dtype, (m, n, k), scaling=case.scaling).anchor.available():
        anchor_c = reference if case.dtype not in FP8_LIBRARY else cupy.zeros((m, n), dtype=cupy.uint16)
        plan, call = _call(case, m, n, k, scales1)
        resources += [anchor_c, plan]
        outputs = [(a1, b1, anchor_c)] + turns[1:]
        measured_call = in_turn([lambda t=t: call(*(x.data.ptr for x in t)) for t in outputs])

        def anchor(out, timing, iters):
            measured_call()

        host[KERNEL] = anchor

    if case.persistent and case.cluster > 1:  # a persistent grid's clusters must all run at once
        from harness.measure.launch import max_active_clusters

        fit = max_active_clusters(probe.module.get_function("probe_gemm"), block, case.smem_bytes(), case.cluster)
        if blocks // case.cluster > fit:
            raise HarnessError(f"a persistent grid of {blocks // case.cluster} clusters of {case.cluster}, but this GPU "
                               f"runs {fit} at once (the rest would be a second wave): ask for "
                               f".sms{fit * case.cluster} or fewer")
    reference_call = None if case.promote or case.inputs != "random" else _call(case, m, n, k, None)[1]
    library = lambda: reference_call(a_ref.data.ptr, b_ref.data.ptr, reference.data.ptr)

    def verify(out, timing, iters):
        """The measured problem once, then its reference (cuBLAS on the same inputs; fp8, integer and zero inputs: the
        exact product in f64); out[0] = the elements beyond the tolerance (NaN counts)."""
        scratch = cupy.zeros(blocks * 16, dtype=cupy.int64)
        c1.fill(0xFFFF)
        probe.enqueue("probe_gemm", blocks, block, 1, scratch)  # the attached (check, measured) and shared memory
        ours = as_float(cupy, c1, case.out_dtype)
        if case.promote:  # fp8: against the exact product, within the bound of the arithmetic (problem.fp8_bound)
            theirs, abs_sum = exact_fp8_product(cupy, a_ref, b_ref, (scale_a1, scale_b1) if case.block_scaled else None)
            bound = fp8_bound(cupy, theirs, abs_sum, k, case.bk // case.wgmma_k, case.bk,
                              f32_roundings=3 if case.block_scaled else 1)
            del abs_sum
        elif case.inputs == "random":
            library()
            theirs = as_float(cupy, reference, case.out_dtype)
            bound = measured_bound(cupy, case.inputs, case.out_dtype, theirs)
        else:  # integers or zeros: against the exact sum (problem.measured_bound)
            theirs = exact_product(cupy, a1, b1, case.dtype)
            bound = measured_bound(cupy, case.inputs, case.out_dtype, theirs)
        bad = ~(cupy.abs(ours - theirs) <= bound)
        out[0:1] = cupy.count_nonzero(bad).astype(cupy.uint32)

    host["probe_verify"] = verify
    rotation = (extra, *((check, p) for p in measured[1:])) if len(measured) > 1 else ()
    smem = {name: case.smem_bytes() for name in ("probe_gemm", counted_kernel("probe_gemm"))}
    return Attachment(extra_args=extra, period=len(turns), rotation=rotation, dynamic_smem=smem,
                      resources=tuple(resources), host_kernels=host)
