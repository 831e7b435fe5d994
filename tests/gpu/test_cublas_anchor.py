"""The f16/bf16 anchor (harness/anchors/cublas.py Library, cublasGemmEx): through nvmath-python's cuBLAS
bindings with a workspace of its own it captures into a CUDA graph, so at small shapes its rounds are timed at
the GPU's rate and not at the host's dispatch rate (CuPy's bindings refuse a cuBLAS call during a capture). Its C
is that of a direct call, and CuPy's f32 matmul of the same f16 values agrees within the arithmetic's bound."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cupy():
    pytest.importorskip("nvmath.bindings.cublas", reason="nvmath-python is not installed (pip install '.[fp8]')")
    import cupy

    return cupy


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_the_anchor_captures_into_a_graph_and_replays_the_direct_result(cupy, dtype):
    from harness.anchors.cublas import Library
    from harness.families.gemm.values import as_float, normal

    m, n, k = 64, 4096, 2048  # a decode shape: the host's call costs more than the GPU's work
    a, b = normal(cupy, m, k, dtype, 1), normal(cupy, n, k, dtype, 2)
    library = Library(dtype)
    assert library.binding.startswith("nvmath")
    direct = cupy.zeros((m, n), dtype=cupy.uint16)
    library(a.data.ptr, b.data.ptr, direct.data.ptr, m, n, k)
    replayed = cupy.full((m, n), 0xFFFF, dtype=cupy.uint16)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeGlobal)
        for _ in range(3):
            library(a.data.ptr, b.data.ptr, replayed.data.ptr, m, n, k)
        graph = stream.end_capture()  # an allocation or a synchronization in the call fails the capture
        graph.launch(stream)
    stream.synchronize()
    assert bool(cupy.all(replayed == direct))
    # the product itself: f32 sums of exact products (|error| <= K u sum |a b| each, u = 2^-24, both sides) and
    # C's one rounding to the output type (half its ulp: 2^-11 relative for f16, 2^-8 for bf16)
    av, bv = as_float(cupy, a, dtype), as_float(cupy, b, dtype)
    reference = av @ bv.T
    bound = 2 * k * 2.0 ** -24 * (cupy.abs(av) @ cupy.abs(bv).T) + (2.0 ** -11 if dtype == "f16" else 2.0 ** -8) \
        * cupy.abs(reference) * 1.01 + 2.0 ** -24
    ours = as_float(cupy, direct, dtype)
    assert int(cupy.count_nonzero(cupy.abs(ours - reference) > bound)) == 0
    wrong = ours.copy()
    wrong[0, 0] += 1.0  # a wrong element fails the same bound
    assert int(cupy.count_nonzero(cupy.abs(wrong - reference) > bound)) == 1
