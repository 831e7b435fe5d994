"""The measured problem's values on the GPU, for the GEMM family's attachment (gpu.py) and its GPU tests: normal(0, 1)
inputs as the bit patterns of their type (fp8: the nearest value), integers or zeros, block scales, and the exact
products (f64) the checks compare against. Runs on the GPU only (CuPy passed in)."""

from __future__ import annotations

import numpy as np

from harness.dtypes import bf16_bits


def block_scales(cupy, m: int, n: int, k: int, seed: int):
    """A measured problem's block scales, uniform in [0.5, 2) f32, drawn on the GPU: A's [K / 128][M], B's
    [N / 128][K / 128] (cases.GemmCase.block_scaled)."""
    from harness.families.gemm.cases import SCALE_BLOCK

    state = cupy.random.RandomState(seed)
    draw = lambda *shape: (0.5 + 1.5 * state.random_sample(shape, dtype=cupy.float32)).astype(cupy.float32)
    return draw(k // SCALE_BLOCK, m), draw(n // SCALE_BLOCK, k // SCALE_BLOCK)


def normal(cupy, rows: int, cols: int, dtype: str, seed: int):
    """normal(0, 1) values as the bit patterns of `dtype`, drawn on the GPU (fp8: the nearest value)."""
    x = cupy.random.RandomState(seed).standard_normal((rows, cols), dtype=cupy.float32)
    if dtype in ("e4m3", "e5m2"):  # the nearest fp8 value, a tie to the lower one: the inputs' distribution, not a
        values, codes = _fp8_table(cupy, dtype)  # conversion under test (cuBLAS gets the same values)
        above = cupy.clip(cupy.searchsorted(values, x), 1, len(values) - 1)
        nearer = cupy.where(x - values[above - 1] <= values[above] - x, above - 1, above)
        return codes[nearer]
    if dtype == "f16":
        return x.astype(cupy.float16).view(cupy.uint16)
    return bf16_bits(x.view(cupy.uint32), cupy)


def measured_values(cupy, rows: int, cols: int, dtype: str, seed: int, inputs: str):
    """The measured problem's A or B as the bit patterns of `dtype` (f16 or bf16 where `inputs` is not random): normal(0, 1),
    integers in MEASURED_INTEGERS (uniform, seeded), or zeros, drawn on the GPU."""
    from harness.families.gemm.problem import MEASURED_INTEGERS

    if inputs == "random":
        return normal(cupy, rows, cols, dtype, seed)
    if inputs == "zero":
        return cupy.zeros((rows, cols), dtype=cupy.uint16)  # +0.0 in f16 and bf16
    low, high = MEASURED_INTEGERS
    x = cupy.random.RandomState(seed).randint(low, high + 1, size=(rows, cols)).astype(cupy.float32)
    return x.astype(cupy.float16).view(cupy.uint16) if dtype == "f16" else bf16_bits(x.view(cupy.uint32), cupy)


def exact_product(cupy, a_bits, b_bits, dtype: str):
    """A . B^T of 16-bit values in f64, by rows of A at a time (integer inputs: exact, every sum far below 2^53)."""
    a, b = as_float(cupy, a_bits, dtype).astype(cupy.float64), as_float(cupy, b_bits, dtype).astype(cupy.float64)
    rows = max(1, (1 << 27) // max(1, b.shape[0]))  # 1 GiB of f64 output a step
    product = cupy.empty((a.shape[0], b.shape[0]), dtype=cupy.float64)
    for r in range(0, a.shape[0], rows):
        product[r:r + rows] = a[r:r + rows] @ b.T
    return product


def _fp8_table(cupy, dtype: str):
    """An fp8 type's finite values in ascending order (one zero) and their codes, on the GPU."""
    from harness.dtypes import fp8_values

    table = fp8_values(dtype)
    codes = np.array([c for c, v in enumerate(table) if np.isfinite(v) and not (v == 0 and c)])
    order = np.argsort(table[codes])
    return cupy.asarray(table[codes][order], dtype=cupy.float32), cupy.asarray(codes[order], dtype=cupy.uint8)


def as_f16(cupy, codes, dtype: str = "e4m3"):
    """fp8 codes as the f16 bit patterns of the same values (every e4m3 and e5m2 value is an f16 value; the
    measured inputs hold no NaN or infinity)."""
    from harness.dtypes import fp8_values

    # NaN as 0, infinities kept (e5m2's: no overflow warning on the way to f16; the same bits as before)
    table = np.nan_to_num(fp8_values(dtype), posinf=np.inf, neginf=-np.inf).astype(np.float16).view(np.uint16)
    return cupy.asarray(table)[codes]


def as_float(cupy, bits, dtype: str):
    if dtype == "f16":
        return bits.view(cupy.float16).astype(cupy.float32)
    return (bits.astype(cupy.uint32) << 16).view(cupy.float32)


def exact_fp8_product(cupy, a_f16, b_f16, scales=None):
    """C = A . B^T and the sums of |products| of fp8 values (given as the f16 bit patterns of the same values), in
    f64, by rows of A at a time: a product of two e4m3 values has 8 significant bits and a sum of K of them up to
    2^14 more, well inside f64's 53, so both are exact. Block scales (A's, B's: problem.block_scaled_product): each
    element times its f32 scale first, exact in f64 (24 + 4 bits); their sums round at 2^-53, far below the bound."""
    a = as_f16_values(cupy, a_f16)
    b = as_f16_values(cupy, b_f16)
    if scales is not None:
        from harness.families.gemm.cases import SCALE_BLOCK

        scale_a, scale_b = (s.astype(cupy.float64) for s in scales)
        a *= cupy.repeat(scale_a.T, SCALE_BLOCK, axis=1)
        b *= cupy.repeat(cupy.repeat(scale_b, SCALE_BLOCK, axis=0), SCALE_BLOCK, axis=1)
    rows = max(1, (1 << 27) // max(1, b.shape[0]))  # 1 GiB of f64 output a step
    product = cupy.empty((a.shape[0], b.shape[0]), dtype=cupy.float64)
    abs_sum = cupy.empty_like(product)
    abs_b = cupy.abs(b)
    for r in range(0, a.shape[0], rows):
        block = a[r:r + rows]
        product[r:r + rows] = block @ b.T
        abs_sum[r:r + rows] = cupy.abs(block) @ abs_b.T
    return product, abs_sum


def as_f16_values(cupy, bits):
    return bits.view(cupy.float16).astype(cupy.float64)
