"""PTX element types on the host: sizes, and exact conversion to and from their bit patterns."""

from __future__ import annotations

import numpy as np

from harness.errors import SpecError

BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "f32": 4, "s32": 4}


def size_bytes(dtype: str) -> int:
    try:
        return BYTES[dtype]
    except KeyError:
        raise SpecError(f"unknown dtype {dtype!r}: expected one of {', '.join(BYTES)}") from None


def round_to(dtype: str, values: np.ndarray) -> np.ndarray:
    """Round float values to the nearest `dtype` value; returned as float64, exactly representable."""
    return decode(dtype, encode(dtype, values))


def encode(dtype: str, values: np.ndarray) -> np.ndarray:
    """Float values -> uint16 bit patterns of f16 or bf16 (round to nearest even)."""
    values = np.asarray(values, dtype=np.float64)
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounding = 0x7FFF + ((bits >> 16) & 1)  # round half to even on the dropped 16 bits
        return ((bits + rounding) >> 16).astype(np.uint16)
    raise SpecError(f"no host encoding for dtype {dtype!r} yet")


def decode(dtype: str, bits: np.ndarray) -> np.ndarray:
    """uint16 (f16/bf16) or uint32 (f32) bit patterns -> float64 values."""
    bits = np.asarray(bits)
    if dtype == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f32":
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    raise SpecError(f"no host decoding for dtype {dtype!r} yet")


def unit_roundoff(dtype: str) -> float:
    """Half a unit in the last place of 1.0: the relative error of one rounding."""
    mantissa_bits = {"f16": 10, "bf16": 7, "f32": 23, "tf32": 10}
    return 2.0 ** -(mantissa_bits[dtype] + 1)
