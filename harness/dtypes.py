"""PTX element types on the host: sizes, exact values, and conversion to and from bit patterns.

Every value a probe reads is chosen exactly representable in its type (drawn from the type's own
values), so the float64 reference sees the very numbers the GPU multiplies.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from harness.errors import SpecError

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
        "f32": 32, "s32": 32, "f64": 64, "b16": 16}
BYTES = {name: bits // 8 for name, bits in BITS.items() if bits >= 8}
INTEGER_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "b1": (0, 1)}
# fp8 formats (PTX ISA, "Alternate floating-point data formats"): exponent bits, mantissa bits, bias.
FP8 = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}


def size_bytes(dtype: str) -> int:
    try:
        return BYTES[dtype]
    except KeyError:
        raise SpecError(f"unknown dtype {dtype!r}: expected one of {', '.join(BYTES)}") from None


@cache
def fp8_values(dtype: str) -> np.ndarray:
    """The value of each of the 256 codes of an fp8 type (NaN for NaN codes, inf for e5m2's infinities)."""
    exp_bits, man_bits, bias = FP8[dtype]
    codes = np.arange(256)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exponent = (codes >> man_bits) & ((1 << exp_bits) - 1)
    mantissa = codes & ((1 << man_bits) - 1)
    normal = (1 + mantissa / 2 ** man_bits) * 2.0 ** (exponent - bias)
    subnormal = mantissa / 2 ** man_bits * 2.0 ** (1 - bias)
    values = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exp_bits) - 1
    if dtype == "e4m3":  # no infinities; S.1111.111 is NaN
        values[top & (mantissa == (1 << man_bits) - 1)] = np.nan
    else:  # IEEE-like: all-ones exponent is inf (mantissa 0) or NaN
        values[top] = np.where(mantissa[top] == 0, sign[top] * np.inf, np.nan)
    return values


@cache
def _fp8_codes(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite values of an fp8 type in ascending order, and the code of each (zero: +0's code, 0): a sorted
    table that encode and round_to search, for whole arrays at once."""
    table = fp8_values(dtype)
    codes = np.array([c for c, v in enumerate(table) if np.isfinite(v) and not (v == 0 and c)])
    order = np.argsort(table[codes], kind="stable")
    return table[codes][order], codes[order].astype(np.uint8)


@cache
def _fp8_codes_by_f16(dtype: str) -> np.ndarray:
    """The fp8 code of each f16 bit pattern whose value `dtype` holds (either zero: +0's code, 0), -1 for every
    other: every finite fp8 value is an f16 value, so encode looks codes up by the f16 bits of its values (a
    table lookup, several times faster than a search of the sorted table)."""
    ordered, codes = _fp8_codes(dtype)
    table = np.full(1 << 16, -1, dtype=np.int16)
    table[ordered.astype(np.float16).view(np.uint16)] = codes
    table[np.float16(-0.0).view(np.uint16)] = table[0]
    return table


def _nearest_fp8(dtype: str, values: np.ndarray) -> np.ndarray:
    """The nearest finite `dtype` value to each of `values`; a tie goes to the value nearer zero (zero is +0),
    and a value that is not finite gives +0: what a search over every code in code order (the first nearest
    wins) gives, which tests/test_dtypes.py compares it with."""
    ordered, _ = _fp8_codes(dtype)
    at = np.searchsorted(ordered, values)  # ordered[at - 1] < value <= ordered[at]
    above = np.minimum(at, len(ordered) - 1)
    below = np.where(at == len(ordered), above, np.maximum(at - 1, 0))  # beyond either end: that end alone
    low, high = ordered[below], ordered[above]
    to_low, to_high = np.abs(values - low), np.abs(values - high)
    nearer_zero = np.where(np.abs(low) < np.abs(high), low, high)
    nearest = np.where(to_low < to_high, low, np.where(to_high < to_low, high, nearer_zero))
    return np.where(np.isfinite(values), nearest, 0.0)


def round_to(dtype: str, values: np.ndarray) -> np.ndarray:
    """The nearest `dtype` value to each of `values` (float64, exactly representable in `dtype`)."""
    values = np.asarray(values, dtype=np.float64)
    if dtype in FP8:
        return _nearest_fp8(dtype, values)
    if dtype in INTEGER_RANGE:
        low, high = INTEGER_RANGE[dtype]
        return np.clip(np.rint(values), low, high)
    if dtype == "f64":
        return values
    return decode(dtype, encode(dtype, values))


def bf16_bits(f32_bits, xp=np):
    """f32 bit patterns (uint32) -> the bf16 bit patterns (uint16) of the nearest value, ties to even: the one
    rounding of f32 to bf16 the project has, for NumPy arrays and (xp=cupy) for arrays on the GPU. NaN and
    infinity keep their class (a NaN's payload is not preserved); values beyond bf16's range round to infinity,
    as cvt.rn.bf16.f32 does."""
    bits = f32_bits.astype(xp.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)  # round half to even on the dropped 16 bits
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return xp.where(nan, (bits >> 16) | 0x40, (bits + rounding) >> 16).astype(xp.uint16)


def encode(dtype: str, values: np.ndarray) -> np.ndarray:
    """Values exactly representable in `dtype` -> unsigned bit patterns (uint8/16/32/64).

    f16/bf16/tf32 round to nearest even if the value is not representable."""
    values = np.asarray(values, dtype=np.float64)
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        return bf16_bits(values.astype(np.float32).view(np.uint32))
    if dtype == "tf32":  # f32 with the low 13 mantissa bits zero (PTX: the tensor core ignores them)
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounding = 0xFFF + ((bits >> 13) & 1)
        return (((bits + rounding) >> 13) << 13).astype(np.uint32)
    if dtype == "f32":
        return values.astype(np.float32).view(np.uint32)
    if dtype == "f64":
        return values.view(np.uint64)
    if dtype in FP8:
        with np.errstate(over="ignore", invalid="ignore"):  # beyond f16 (inf) or NaN: no code, refused below
            halves = values.astype(np.float16)
        codes = _fp8_codes_by_f16(dtype)[halves.view(np.uint16)]
        exact = (codes >= 0) & (halves == values)  # the value is that f16 value exactly, and the type holds it
        if not exact.all():  # the first value (in C order) that is none of the type's
            raise SpecError(f"{float(values[~exact].flat[0])} is not a {dtype} value")
        return codes.astype(np.uint8).reshape(values.shape)
    if dtype in INTEGER_RANGE:
        bits = BITS[dtype]
        return (values.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8 if bits <= 8 else np.uint32)
    raise SpecError(f"no host encoding for dtype {dtype!r}")


def decode(dtype: str, bits: np.ndarray) -> np.ndarray:
    """Bit patterns -> float64 values."""
    bits = np.asarray(bits)
    if dtype == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype in ("f32", "tf32"):
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if dtype == "f64":
        return bits.astype(np.uint64).view(np.float64)
    if dtype == "s32":
        return bits.astype(np.uint32).view(np.int32).astype(np.float64)
    if dtype in FP8:
        return fp8_values(dtype)[bits.astype(np.uint8)]
    raise SpecError(f"no host decoding for dtype {dtype!r}")


def unit_roundoff(dtype: str) -> float:
    """Half a unit in the last place of 1.0: the relative error of one rounding."""
    mantissa_bits = {"f16": 10, "bf16": 7, "f32": 23, "tf32": 10, "f64": 52}
    return 2.0 ** -(mantissa_bits[dtype] + 1)
