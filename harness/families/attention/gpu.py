"""The attention family's GPU resources (Family.attach): the two problems' tensors and tensor maps, the kernel
arguments, and the host kernels (cuDNN's attention on the measured problem's inputs, the measured problem's
verification). Runs in the worker process, on the GPU only.

ptx/attention.cu.in takes two `Problem`s by value after the common four arguments: the check problem (Q, K, V in
the probe's input buffer, O in its output buffer) and the measured one (normal(0, 1) inputs drawn here, rounded to
the case's type). cuDNN's case (cases.CudnnCase, an anchor) has no module: attach_anchor gives its call as the
probe's host kernel anchors.KERNEL, on the same two problems.
"""

from __future__ import annotations

import numpy as np

from harness import tensormaps
from harness.dtypes import bf16_bits, encode
from harness.families.base import Attachment
from harness.families.attention.cases import PANEL, check_case
from harness.families.attention.problem import PROBLEM, SAMPLED_ROWS, bound, reference, tensor_elements

SEED = 20261127


def _map(case, address: int, rows: int, box_rows: int) -> np.ndarray:
    """A 3-D map over [batch x seq, heads, D] (2-byte elements), boxes of 64 columns x 1 head x box_rows, 128-byte
    swizzle (the template's 64-column panels)."""
    d, heads = case.head_dim, case.heads
    return tensormaps.tiled(str(case), 2, address, (d, heads, rows), (d * 2, heads * d * 2), (PANEL, 1, box_rows),
                            128, 256).view(np.uint64)


def problem(case, q: int, k: int, v: int, o: int) -> np.ndarray:
    """The kernel's Problem for Q, K, V, O at these addresses ([batch, seq, heads, D] each)."""
    value = np.zeros(1, dtype=PROBLEM.dtype())
    rows = case.batch * case.seq
    value["q_map"] = _map(case, q, rows, case.bm)
    # a cluster's CTA loads a part of each block's K and V rows (ptx/attention.cu.in KV_PART) and multicasts it
    value["k_map"] = _map(case, k, rows, case.bn // case.cluster)
    value["v_map"] = _map(case, v, rows, case.bn // case.cluster)
    value["o_ptr"], value["m"], value["n"], value["k"] = o, case.rows, case.bn, case.seq
    value["seq"], value["heads"] = case.seq, case.heads
    value["o_map"] = _map(case, o, rows, 64)  # a consumer warpgroup's 64 rows a box (the TMA store's epilogue)
    return value


def normal(cupy, shape, dtype: str, seed: int):
    """normal(0, 1) values as the bit patterns of `dtype`, drawn on the GPU."""
    x = cupy.random.RandomState(seed).standard_normal(shape, dtype=cupy.float32)
    if dtype == "f16":
        return x.astype(cupy.float16).view(cupy.uint16)
    return bf16_bits(x.view(cupy.uint32), cupy)


def as_float64(cupy, bits, dtype: str):
    if dtype == "f16":
        return bits.view(cupy.float16).astype(cupy.float64)
    return (bits.astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)


def sampled_rows(cupy, seq: int, seed: int):
    """The first and last 64 query rows of a head and 128 drawn between them, ascending."""
    rng = np.random.default_rng(seed)
    middle = rng.choice(np.arange(64, seq - 64), size=min(SAMPLED_ROWS - 128, max(0, seq - 128)), replace=False)
    return cupy.asarray(np.unique(np.concatenate([np.arange(64), np.arange(seq - 64, seq), middle])))


def verified_heads(case) -> list[tuple[int, int]]:
    """(batch, head) pairs the verification computes: the first, the last, and one between."""
    return sorted({(0, 0), (case.batch - 1, case.heads - 1), (case.batch // 2, case.heads // 2)})


def _measured(cupy, case):
    """The measured problem's Q, K, V (normal(0, 1) as the case's type, seeded: a kernel case and cuDNN's case of
    the same problem draw the same) and O, poisoned."""
    shape = (case.batch, case.seq, case.heads, case.head_dim)
    q1, k1, v1 = (normal(cupy, shape, case.dtype, SEED + i) for i in range(3))
    return q1, k1, v1, cupy.full(shape, 0xFFFF, dtype=cupy.uint16)


def _verifier(case, run, q1, k1, v1, o1):
    """A host kernel: the measured problem once (`run()`, into o1), then the reference of the sampled rows of three
    heads in f64; out[0] = the elements beyond the bound (NaN counts)."""
    import cupy

    small = check_case(case)

    def verify(out, timing, iters):
        o1.fill(0xFFFF)
        run()
        bad = 0
        for b, h in verified_heads(case):
            rows = sampled_rows(cupy, case.seq, SEED + b * case.heads + h)
            q, k, v = (as_float64(cupy, t[b, :, h], case.dtype) for t in (q1, k1, v1))
            o, weighted, g = reference(cupy, q, k, v, case.causal, rows)
            ours = as_float64(cupy, o1[b, :, h][rows], case.dtype)
            limit = bound(cupy, case, case.seq, o, weighted, g)
            bad += int(cupy.count_nonzero(~(cupy.abs(ours - o) <= limit)))
        # the count as the case's type in word 0's lower half, every other word 0 (decoded: the count, then zeros)
        out[:tensor_elements(small) // 2].fill(0)
        out[0:1] = int(encode(case.dtype, np.array([min(bad, 60000)]))[0])

    return verify


def attach_anchor(case, probe, device) -> Attachment:
    """cuDNN's case (an anchor): its call as the probe's host kernel KERNEL, on the check problem (Q, K, V in the
    probe's input buffer, O its output buffer) at iters 0, else on the measured problem's inputs; and the measured
    problem's verification, as a kernel case's."""
    import cupy

    from harness.anchors import KERNEL, VERIFY
    from harness.anchors.cudnn import CudnnSdpa

    small = check_case(case)
    size = tensor_elements(small) * 2
    q0 = probe.inputs.data.ptr
    check_sdpa = CudnnSdpa(case.dtype, small.batch, small.seq, small.heads, small.head_dim, small.causal, small.scale)
    q1, k1, v1, o1 = _measured(cupy, case)
    sdpa = CudnnSdpa(case.dtype, case.batch, case.seq, case.heads, case.head_dim, case.causal, case.scale)

    def measured():
        sdpa(q1.data.ptr, k1.data.ptr, v1.data.ptr, o1.data.ptr)

    def library(out, timing, iters):
        if iters == 0:  # the check problem, into the probe's output
            check_sdpa(q0, q0 + size, q0 + 2 * size, out.data.ptr)
        else:
            measured()

    # no module: the call and the verification are its only kernels
    return Attachment(resources=(q1, k1, v1, o1, check_sdpa, sdpa),
                      host_kernels={KERNEL: library, VERIFY: _verifier(case, measured, q1, k1, v1, o1)})


def attach(case, probe, device) -> Attachment:
    import cupy

    from harness.anchors import KERNEL, VERIFY
    from harness.anchors import cudnn as anchor

    small = check_case(case)
    size = tensor_elements(small) * 2
    q0 = probe.inputs.data.ptr
    check = problem(small, q0, q0 + size, q0 + 2 * size, probe.out.data.ptr)
    shape = (case.batch, case.seq, case.heads, case.head_dim)
    q1, k1, v1, o1 = _measured(cupy, case)
    measured = problem(case, q1.data.ptr, k1.data.ptr, v1.data.ptr, o1.data.ptr)
    resources = [q1, k1, v1, o1]
    blocks, threads = case.tiles, case.threads

    host = {}
    if anchor.available():
        sdpa = anchor.CudnnSdpa(case.dtype, case.batch, case.seq, case.heads, case.head_dim, case.causal, case.scale)
        o_library = cupy.zeros(shape, dtype=cupy.uint16)
        resources += [sdpa, o_library]

        def library(out, timing, iters):
            sdpa(q1.data.ptr, k1.data.ptr, v1.data.ptr, o_library.data.ptr)

        host[KERNEL] = library

    def run():
        """The measured problem once, into o1: the probe's kernel with the attached (check, measured) and shared
        memory."""
        scratch = cupy.zeros(blocks * 16, dtype=cupy.int64)
        probe.enqueue("probe_attention", blocks, threads, 1, scratch)

    host[VERIFY] = _verifier(case, run, q1, k1, v1, o1)
    return Attachment(extra_args=(check, measured), dynamic_smem={"probe_attention": case.smem_bytes()},
                      resources=tuple(resources), host_kernels=host)
