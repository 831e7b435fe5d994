"""The cuBLASLt fp8 anchor (harness/anchors/cublaslt.py) computes A . B^T: on random e4m3 inputs its C
matches CuPy's f32 matmul of the same values within a bound derived from the arithmetic, with fast
accumulation off and on; a wrong scale fails that check; a call captures into a CUDA graph.

The bound. Every e4m3 (and e5m2) value is an f16 value, so A and B as f16 -> f32 are the inputs' exact
values; a product of two of them has at most 4 x 4 = 8 significant bits: exact in f32. What is left:
  * the anchor's f32 accumulation of the K exact products: whatever the order (and blocking, split-K),
    |s - S| <= gamma_K * sum_k |a_k b_k|, gamma_K = K u / (1 - K u), u = 2^-24 (Higham, Thm 3.1 / eq. 3.5),
    S the exact sum, s the anchor's f32 sum;
  * CuPy's f32 matmul (the reference R; CUPY_TF32 off): the same, |R - S| <= gamma_K * sum_k |a_k b_k|;
  * one rounding of s to f16 (bf16) at the end: |C - s| <= ulp(|C|) / 2 (C's own ulp; where s rounds up
    to a power of two, s's ulp is half of C's, so this still holds; subnormals: the fixed spacing).
So |C - R| <= ulp(|C|)/2 + 2 gamma_K sum_k |a_k b_k|. sum_k |a_k b_k| is computed in f64, where it is exact
(every product is a multiple of 2^-18 and the sums stay below 2^13: 31 bits < 53). The sum-order term is
a worst case (any order): the tests report how much of it the errors use (max |C - R| over the bound).

Fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM) keeps the partial sums in the tensor cores' fp8
accumulator along all of K, which on Hopper is not a full f32 accumulator: the bound above does not hold
by construction. That test reports how many elements exceed the no-fast-accumulation bound and asserts
only that the result is the same product (see test_fast_accumulation).

`python tests/gpu/test_cublaslt.py` times the anchor (not a test): TFLOPS at 4096^3 and 8192^3.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np
import pytest

from harness.errors import HarnessError

SEED = 20261126


@pytest.fixture(scope="module")
def cupy():
    pytest.importorskip("nvmath.bindings.cublasLt", reason="nvmath-python is not installed (pip install '.[fp8]')")
    if os.environ.get("CUPY_TF32", "0") != "0":
        pytest.skip("CUPY_TF32 is set: CuPy's f32 matmul would not be an f32 reference")
    import cupy

    return cupy


def operands(cupy, m: int, n: int, k: int, b_dtype: str = "e4m3", seed: int = SEED):
    """A (e4m3 codes), B (b_dtype codes), and their values as f32, drawn as the GEMM family draws them."""
    from harness.families.gemm.values import as_f16, normal

    a = normal(cupy, m, k, "e4m3", seed)
    if b_dtype == "e4m3":
        b = normal(cupy, n, k, "e4m3", seed + 1)
        b_values = as_f16(cupy, b)
    else:  # e5m2 is f16's top byte (same exponent, 2 mantissa bits): truncate normal(0, 1) f16 values
        x = cupy.random.RandomState(seed + 1).standard_normal((n, k), dtype=cupy.float32)
        b = (x.astype(cupy.float16).view(cupy.uint16) >> 8).astype(cupy.uint8)
        b_values = b.astype(cupy.uint16) << 8
    as_f32 = lambda bits: bits.view(cupy.float16).astype(cupy.float32)  # noqa: E731
    return a, b, as_f32(as_f16(cupy, a)), as_f32(b_values)


def half_ulp(cupy, c, out_dtype: str):
    """Half the spacing of `out_dtype` at |c| (c: f32 values of out_dtype numbers), subnormals included."""
    mantissa_bits, min_exponent = {"f16": (10, -14), "bf16": (7, -126)}[out_dtype]
    _, exponent = cupy.frexp(cupy.maximum(cupy.abs(c), cupy.float32(2.0 ** min_exponent)))
    return cupy.ldexp(cupy.float32(1.0), exponent - 1 - mantissa_bits - 1)


def run_anchor(cupy, anchor, a, b, m: int, n: int):
    c = cupy.full((m, n), 0xFFFF, dtype=cupy.uint16)  # NaN: an element never written fails
    anchor(a.data.ptr, b.data.ptr, c.data.ptr)
    return c


def as_float(cupy, bits, out_dtype: str):
    from harness.families.gemm.values import as_float

    return as_float(cupy, bits, out_dtype)


def check(cupy, c_bits, a_values, b_values, out_dtype: str) -> dict:
    """C against the f32 reference and the bound of the module docstring; the numbers, for the report."""
    k = a_values.shape[1]
    u = 2.0 ** -24
    gamma = k * u / (1 - k * u)
    c = as_float(cupy, c_bits, out_dtype)
    reference = cupy.matmul(a_values, b_values.T)  # f32
    exact = cupy.matmul(a_values.astype(cupy.float64), b_values.T.astype(cupy.float64))  # exact (docstring)
    abs_sum = cupy.matmul(cupy.abs(a_values).astype(cupy.float64), cupy.abs(b_values).T.astype(cupy.float64))
    bound = half_ulp(cupy, c, out_dtype).astype(cupy.float64) + 2 * gamma * abs_sum
    err = cupy.abs(c.astype(cupy.float64) - reference.astype(cupy.float64))
    bad = ~(err <= bound)  # NaN and inf count
    # the anchor's own accumulation error (against the exact sum), beyond the final rounding
    accumulation = cupy.maximum(cupy.abs(c.astype(cupy.float64) - exact) - half_ulp(cupy, c, out_dtype), 0)
    return {"elements": c.size, "exceed": int(cupy.count_nonzero(bad)), "max_err": float(cupy.nanmax(err)),
            "max_err_over_bound": float(cupy.nanmax(err / bound)),
            "max_half_ulp": float(half_ulp(cupy, c, out_dtype).max()),
            "max_sum_order_term": float((2 * gamma * abs_sum).max()),
            "max_accumulation_err_vs_exact": float(cupy.nanmax(accumulation)),
            "rms_c": float(cupy.sqrt(cupy.mean(exact ** 2)))}


def report(label: str, stats: dict) -> str:
    line = (f"{label}: {stats['exceed']}/{stats['elements']} elements beyond the no-fast-accumulation bound; "
            f"max |C - R| {stats['max_err']:.4g} (max of err/bound {stats['max_err_over_bound']:.3g}; "
            f"half-ulp term up to {stats['max_half_ulp']:.3g}, sum-order term up to {stats['max_sum_order_term']:.3g}); "
            f"accumulation error vs the exact sum beyond half an ulp: max {stats['max_accumulation_err_vs_exact']:.4g}; "
            f"rms(C) {stats['rms_c']:.4g}")
    print(line)
    return line


SHAPES = [(2048, 2048, 2048), (256, 4096, 1024)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_f32_reference(cupy, shape):
    from harness.anchors.cublaslt import CublasLtMatmul

    m, n, k = shape
    a, b, av, bv = operands(cupy, m, n, k)
    anchor = CublasLtMatmul("e4m3", "e4m3", "f16", m, n, k, fast_accumulation=False)
    assert anchor.name == "cuBLASLt fp8 e4m3 x e4m3 -> f16, f32 accumulation (no fast accumulation)"
    stats = check(cupy, run_anchor(cupy, anchor, a, b, m, n), av, bv, "f16")
    report(f"{anchor.name} {m}x{n}x{k} (algorithm {anchor.algorithm})", stats)
    assert stats["exceed"] == 0, stats


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fast_accumulation(cupy, shape):
    """Reported, not hidden: how many elements exceed the no-fast-accumulation bound. Asserted: the same
    product (a wrong scale, a wrong layout or a wrong operand put nearly every element far past the bound,
    test_wrong_scale_fails): at most 1% of the elements beyond the bound, none beyond 4 times it."""
    from harness.anchors.cublaslt import CublasLtMatmul

    m, n, k = shape
    a, b, av, bv = operands(cupy, m, n, k)
    anchor = CublasLtMatmul("e4m3", "e4m3", "f16", m, n, k, fast_accumulation=True)
    assert "fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM on)" in anchor.name
    stats = check(cupy, run_anchor(cupy, anchor, a, b, m, n), av, bv, "f16")
    line = report(f"{anchor.name} {m}x{n}x{k} (algorithm {anchor.algorithm})", stats)
    if stats["exceed"]:
        warnings.warn(line)
    assert stats["exceed"] <= 0.01 * stats["elements"] and stats["max_err_over_bound"] <= 4, stats


@pytest.mark.gpu
@pytest.mark.parametrize("b_dtype,out_dtype", [("e5m2", "f16"), ("e4m3", "bf16")])
def test_other_types(cupy, b_dtype, out_dtype):
    from harness.anchors.cublaslt import CublasLtMatmul

    m, n, k = 256, 4096, 1024
    a, b, av, bv = operands(cupy, m, n, k, b_dtype)
    anchor = CublasLtMatmul("e4m3", b_dtype, out_dtype, m, n, k, fast_accumulation=False)
    stats = check(cupy, run_anchor(cupy, anchor, a, b, m, n), av, bv, out_dtype)
    report(f"{anchor.name} {m}x{n}x{k}", stats)
    assert stats["exceed"] == 0, stats


@pytest.mark.gpu
def test_wrong_scale_fails(cupy):
    """A scale of 2.0 on A doubles C: the check must see it (nearly every element beyond the bound)."""
    from harness.anchors.cublaslt import CublasLtMatmul

    m, n, k = 256, 4096, 1024
    a, b, av, bv = operands(cupy, m, n, k)
    anchor = CublasLtMatmul("e4m3", "e4m3", "f16", m, n, k, fast_accumulation=False, a_scale=2.0)
    assert "scales A 2 B 1" in anchor.name
    c = run_anchor(cupy, anchor, a, b, m, n)
    stats = check(cupy, c, av, bv, "f16")
    report(f"{anchor.name} {m}x{n}x{k} (must fail)", stats)
    assert stats["exceed"] > 0.9 * stats["elements"], stats
    # and it is the doubled product (to C's rounding): the scale is applied, to A's side, not ignored
    right = CublasLtMatmul("e4m3", "e4m3", "f16", m, n, k, fast_accumulation=False)
    doubled = as_float(cupy, run_anchor(cupy, right, a, b, m, n), "f16") * 2
    scaled = as_float(cupy, c, "f16")
    assert bool(cupy.all(cupy.abs(scaled - doubled) <= 2 * half_ulp(cupy, scaled, "f16")))


@pytest.mark.gpu
def test_call_captures_into_a_graph(cupy):
    """The call neither allocates nor synchronizes: it captures into a CUDA graph under global capture
    mode (which refuses both), on a stream of our own (CuPy's current stream), and the replay writes C."""
    from harness.anchors.cublaslt import CublasLtMatmul

    m, n, k = 256, 4096, 1024
    a, b, av, bv = operands(cupy, m, n, k)
    anchor = CublasLtMatmul("e4m3", "e4m3", "f16", m, n, k, fast_accumulation=False)
    expected = run_anchor(cupy, anchor, a, b, m, n)
    c = cupy.full((m, n), 0xFFFF, dtype=cupy.uint16)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeGlobal)
        for _ in range(3):
            anchor(a.data.ptr, b.data.ptr, c.data.ptr)
        graph = stream.end_capture()  # an allocation or a synchronization in the call fails the capture
        graph.launch(stream)
    stream.synchronize()
    assert bool(cupy.all(c == expected))


def test_missing_nvmath_says_how_to_install(monkeypatch):
    """Without nvmath-python: one line that names the extra (no GPU needed)."""
    from harness.anchors.cublaslt import CublasLtMatmul

    monkeypatch.setitem(sys.modules, "nvmath", None)
    monkeypatch.setitem(sys.modules, "nvmath.bindings", None)
    with pytest.raises(HarnessError, match=r"pip install 'hopper-bench\[fp8\]'") as info:
        CublasLtMatmul("e4m3", "e4m3", "f16", 256, 256, 256, False)
    assert "\n" not in str(info.value)


# -- timing, for information (not a test) ------------------------------------------------------------

def time_anchor(cupy, anchor, a, b, c, calls: int = 50, repeats: int = 10, warmup_s: float = 1.0) -> list[float]:
    """TFLOPS of `calls` back-to-back calls between two CUDA events, `repeats` times, after warmup_s of calls."""
    import time

    flop = 2.0 * anchor.m * anchor.n * anchor.k * calls
    args = (a.data.ptr, b.data.ptr, c.data.ptr)
    deadline = time.perf_counter() + warmup_s
    while time.perf_counter() < deadline:
        for _ in range(calls):
            anchor(*args)
        cupy.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(calls):
            anchor(*args)
        end.record()
        end.synchronize()
        out.append(flop / (cupy.cuda.get_elapsed_time(start, end) * 1e-3) / 1e12)
    return out


def main() -> None:
    import cupy

    from harness.anchors.cublaslt import CublasLtMatmul

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    print(f"GPU {props['name'].decode()}, {props['multiProcessorCount']} SMs")
    for size in (4096, 8192):
        a, b, _, _ = operands(cupy, size, size, size)
        c = cupy.zeros((size, size), dtype=cupy.uint16)
        for fast in (False, True):
            anchor = CublasLtMatmul("e4m3", "e4m3", "f16", size, size, size, fast)
            tflops = time_anchor(cupy, anchor, a, b, c)
            print(f"{size}^3 {anchor.name}: median {np.median(tflops):.1f} TFLOPS "
                  f"(min {min(tflops):.1f}, max {max(tflops):.1f}; 10 x 50 calls; algorithm {anchor.algorithm}, "
                  f"workspace {anchor.workspace_bytes} B, cuBLASLt {anchor.version})")
        del a, b, c
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":  # PYTHONPATH=. python tests/gpu/test_cublaslt.py
    main()
